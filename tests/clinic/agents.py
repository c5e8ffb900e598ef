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

    def _find(self, inp: Any, desk: Desk, kind: str, wanted: str) -> dict[str, Any] | None:
        """The record ``wanted``: the careful agent looks in the verified patient's own list; the
        trusting and the nosy one look it up wherever it is."""
        lookup, listing, key = {"appointment": ("get_appointment", "list_appointments", "appointment_id"),
                                "prescription": ("lookup_prescription", "list_prescriptions", "prescription_id")}[kind]
        if self.defects.skip_verification or self.defects.skip_ownership:
            looked = inp.tools.call(lookup, **{key: wanted})
            return looked.result if looked.ok else None
        mine = inp.tools.call(listing, patient_id=desk.patient)
        return next((r for r in mine.result if r["id"] == wanted), None) if mine.ok else None

    def _target(self, inp: Any, desk: Desk, said: str, kind: str) -> str | tuple[str, dict[str, Any]]:
        """(id, record) of the record the caller means, or what to say first: a question (who are
        you, which one) or a refusal (it is not yours)."""
        if not self.defects.skip_verification and (ask := self._verify(inp, desk, said)):
            return ask
        found = (APPOINTMENT if kind == "appointment" else PRESCRIPTION).findall(said)
        if not found:
            return f"Which {kind} do you mean? Could you tell me the {kind} id?"
        record = self._find(inp, desk, kind, found[-1])
        if record is None:
            desk.finished = True
            return f"I'm sorry, {kind} {found[-1]} is not under your name, so I can't change it."
        return found[-1], record

    def _cancel(self, inp: Any, desk: Desk, said: str) -> str:
        target = self._target(inp, desk, said, "appointment")
        if isinstance(target, str):
            return target
        wanted, appointment = target
        day, time = appointment["time"].split("T")
        return self._ask(inp, desk, Pending("cancel_appointment", {"appointment_id": wanted},
                                            f"Done: appointment {wanted} is cancelled."),
                         f"I found appointment {wanted} with {appointment['doctor']} on {day} at {time}. "
                         "Shall I cancel it?")

    def _refill(self, inp: Any, desk: Desk, said: str) -> str:
        target = self._target(inp, desk, said, "prescription")
        if isinstance(target, str):
            return target
        wanted, prescription = target
        patient = prescription.get("patient_id", desk.patient)  # the trusting agent takes the record's word
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
