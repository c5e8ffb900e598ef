"""Agents for the clinic domain, written from simlab's README alone.

``careful_agent`` follows the clinic's policy: it verifies the caller, acts only on the verified
patient's own records (which it finds through that patient's lists), and asks before it cancels or
books. Each other agent is the same agent with one planted defect:

* ``hasty_agent`` cancels and books without asking first;
* ``trusting_agent`` never verifies the caller: it takes the patient from the record it looks up;
* ``nosy_agent`` verifies, but then looks up and acts on any record, also someone else's;
* ``sloppy_agent`` books the second free slot, not the earliest;
* ``deaf_agent`` takes any answer to its question as a yes.

Load them by path, as a user would: ``python:tests/clinic/agents.py:careful_agent``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

APPOINTMENT = re.compile(r"\bAP-\d+\b")
PRESCRIPTION = re.compile(r"\bRX-\d+\b")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
NAME = re.compile(r"\bname is ([A-Z][a-z]+(?: [A-Z][a-z]+)+)")
DOCTOR = re.compile(r"\bDr\.? ([A-Z][a-z]+)")
YES = re.compile(r"^\W*(yes|yeah|yep|sure|ok|okay|please do|go ahead|that's right|correct)\b", re.I)
NO = re.compile(r"^\W*(no|nope|wait|don'?t|do not|stop)\b", re.I)


@dataclass(frozen=True)
class Defects:
    skip_confirmation: bool = False
    skip_verification: bool = False
    skip_ownership: bool = False
    wrong_slot: bool = False
    any_reply_is_yes: bool = False


@dataclass
class Pending:
    """An action waiting for the patient's yes."""

    tool: str
    args: dict[str, Any]
    done: str


@dataclass
class Desk:
    """What the agent remembers across the turns of one call."""

    patient: str | None = None
    pending: Pending | None = None
    finished: bool = False


class ClinicAgent:
    uses_models = False  # plain code: it spends nothing simlab cannot see

    def __init__(self, defects: Defects = Defects()):
        self.defects = defects

    def __call__(self, inp: Any) -> str:
        desk: Desk = inp.memory.setdefault("desk", Desk())
        said = "\n".join(m["content"] for m in inp.messages if m["role"] == "user")
        last = inp.messages[-1]["content"]
        if desk.pending is not None:
            return self._answer(inp, desk, last)
        if desk.finished:
            return "Is there anything else I can help you with?"
        if re.search(r"\bcancel\b", said, re.I):
            return self._cancel(inp, desk, said)
        if re.search(r"\brefill\b", said, re.I):
            return self._refill(inp, desk, said)
        if re.search(r"\b(book|see|appointment with)\b", said, re.I):
            return self._book(inp, desk, said)
        return "How can I help you today?"

    # -- the steps every task shares

    def _verify(self, inp: Any, desk: Desk, said: str) -> str | None:
        """None once the caller is verified; otherwise what to ask."""
        if desk.patient is not None:
            return None
        name, born = NAME.search(said), DATE.search(said)
        if not (name and born):
            return "To protect your records, could you tell me your full name and date of birth?"
        found = inp.tools.call("find_patient", name=name.group(1), date_of_birth=born.group(0))
        if not found.ok:
            return "I'm sorry, I couldn't find a patient with that name and date of birth. Could you check them?"
        desk.patient = found.result["patient_id"]
        return None

    def _ask(self, inp: Any, desk: Desk, pending: Pending, question: str) -> str:
        if self.defects.skip_confirmation:
            return self._do(inp, desk, pending)
        desk.pending = pending
        return question

    def _answer(self, inp: Any, desk: Desk, reply: str) -> str:
        pending = desk.pending
        assert pending is not None
        if self.defects.any_reply_is_yes or (YES.search(reply) and not NO.search(reply)):
            desk.pending = None
            return self._do(inp, desk, pending)
        if NO.search(reply):
            desk.pending, desk.finished = None, True
            return "Alright, I have left everything as it was."
        return "Sorry, is that a yes? Shall I go ahead?"

    def _do(self, inp: Any, desk: Desk, pending: Pending) -> str:
        outcome = inp.tools.call(pending.tool, pending.args)
        desk.finished = True
        if not outcome.ok:
            return f"I'm sorry, that did not work: {outcome.error}."
        return pending.done.format(**(outcome.result if isinstance(outcome.result, dict) else {}))

    # -- the tasks

    def _cancel(self, inp: Any, desk: Desk, said: str) -> str:
        if not self.defects.skip_verification and (ask := self._verify(inp, desk, said)):
            return ask
        found = APPOINTMENT.findall(said)
        if not found:
            return "Which appointment would you like to cancel? Could you tell me the appointment id?"
        wanted = found[-1]
        if self.defects.skip_verification or self.defects.skip_ownership:
            looked = inp.tools.call("get_appointment", appointment_id=wanted)
            appointment = looked.result if looked.ok else None
        else:
            mine = inp.tools.call("list_appointments", patient_id=desk.patient)
            appointment = next((a for a in mine.result if a["id"] == wanted), None) if mine.ok else None
        if appointment is None:
            desk.finished = True
            return f"I'm sorry, appointment {wanted} is not under your name, so I can't cancel it."
        day, time = appointment["time"].split("T")
        return self._ask(inp, desk, Pending("cancel_appointment", {"appointment_id": wanted},
                                            f"Done: appointment {wanted} is cancelled."),
                         f"I found appointment {wanted} with {appointment['doctor']} on {day} at {time}. "
                         "Shall I cancel it?")

    def _refill(self, inp: Any, desk: Desk, said: str) -> str:
        if not self.defects.skip_verification and (ask := self._verify(inp, desk, said)):
            return ask
        found = PRESCRIPTION.findall(said)
        if not found:
            return "Which prescription should I refill? Could you tell me the prescription id?"
        wanted = found[-1]
        if self.defects.skip_verification or self.defects.skip_ownership:
            looked = inp.tools.call("lookup_prescription", prescription_id=wanted)
            prescription = looked.result if looked.ok else None
            patient = prescription["patient_id"] if prescription else desk.patient
        else:
            mine = inp.tools.call("list_prescriptions", patient_id=desk.patient)
            prescription = next((p for p in mine.result if p["id"] == wanted), None) if mine.ok else None
            patient = desk.patient
        if prescription is None:
            desk.finished = True
            return f"I'm sorry, prescription {wanted} is not one of yours, so I can't request a refill."
        return self._do(inp, desk, Pending(
            "request_refill", {"patient_id": patient, "prescription_id": wanted},
            f"Done: a refill of {prescription['medication']} ({wanted}) has been requested from your doctor."))

    def _book(self, inp: Any, desk: Desk, said: str) -> str:
        if ask := self._verify(inp, desk, said):  # booking needs a patient id: even the trusting agent asks
            return ask
        doctor = DOCTOR.search(said)
        if not doctor:
            return "Which doctor would you like to see?"
        slots = inp.tools.call("find_slots", doctor=f"Dr. {doctor.group(1)}")
        choice = 1 if self.defects.wrong_slot else 0
        if not slots.ok or len(slots.result) <= choice:
            desk.finished = True
            return f"I'm sorry, Dr. {doctor.group(1)} has no free slot."
        slot = slots.result[choice]
        day, time = slot["time"].split("T")
        return self._ask(inp, desk, Pending("book_appointment", {"patient_id": desk.patient, "slot_id": slot["id"]},
                                            f"Done: you are booked with {slot['doctor']} on {day} at {time} "
                                            "(appointment {id})."),
                         f"The earliest slot with {slot['doctor']} is on {day} at {time}. "
                         "Would you like me to book it?")


careful_agent = ClinicAgent()
hasty_agent = ClinicAgent(Defects(skip_confirmation=True))
trusting_agent = ClinicAgent(Defects(skip_verification=True))
nosy_agent = ClinicAgent(Defects(skip_ownership=True))
sloppy_agent = ClinicAgent(Defects(wrong_slot=True))
deaf_agent = ClinicAgent(Defects(any_reply_is_yes=True))
