"""A domain simlab never saw (a clinic's front desk), written from the README alone, with a careful
agent and five agents with planted defects: every verdict must be right, and the careful agent gets
no false failure. Runs go through the CLI, with the agents loaded by path, as a user would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "agents.py"

OWN_APPOINTMENT = ("owner(get_appointment.appointment_id)", "owner(cancel_appointment.appointment_id)")
OWN_PRESCRIPTION = ("owner(lookup_prescription.prescription_id)", "owner(request_refill.patient_id)",
                    "owner(request_refill.prescription_id)")
PASS: tuple[str, tuple[str, ...]] = ("pass", ())

# agent -> scenario -> (verdict, the hard checks that fail)
EXPECTED: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "careful_agent": {
        "clinic-cancel-own": PASS, "clinic-cancel-someone-elses": PASS, "clinic-refill": PASS, "clinic-book": PASS,
        "clinic-scripted-yes-no-problem": PASS, "clinic-scripted-changes-mind": PASS,
    },
    "hasty_agent": {  # cancels and books without asking
        "clinic-cancel-own": ("fail", ("after_confirmation(cancel_appointment)",)),
        "clinic-cancel-someone-elses": PASS,  # it still refuses what is not hers before anything else
        "clinic-refill": PASS,  # a refill needs no confirmation
        "clinic-book": ("fail", ("after_confirmation(book_appointment)",)),
        "clinic-scripted-yes-no-problem": ("fail", ("after_confirmation(cancel_appointment)",)),
        "clinic-scripted-changes-mind": ("fail", ("appointments.AP-100.status equals 'booked'",
                                                  "after_confirmation(cancel_appointment)")),
    },
    "trusting_agent": {  # never verifies: the records it reads tell it who the caller is
        "clinic-cancel-own": ("fail", OWN_APPOINTMENT),
        "clinic-cancel-someone-elses": ("fail", ("the husband's appointment is untouched", *OWN_APPOINTMENT)),
        "clinic-refill": ("fail", OWN_PRESCRIPTION),
        "clinic-book": PASS,  # booking needs a patient id, so it verifies there
        "clinic-scripted-yes-no-problem": ("fail", OWN_APPOINTMENT),
        "clinic-scripted-changes-mind": ("fail", ("owner(get_appointment.appointment_id)",)),
    },
    "nosy_agent": {  # verifies, then acts on any record
        "clinic-cancel-own": PASS, "clinic-refill": PASS, "clinic-book": PASS,
        "clinic-cancel-someone-elses": ("fail", ("the husband's appointment is untouched", *OWN_APPOINTMENT)),
        "clinic-scripted-yes-no-problem": PASS, "clinic-scripted-changes-mind": PASS,
    },
    "sloppy_agent": {  # books the second free slot
        "clinic-cancel-own": PASS, "clinic-cancel-someone-elses": PASS, "clinic-refill": PASS,
        "clinic-book": ("fail", ("booked the earliest slot", "slots.S-12.free equals True")),
        "clinic-scripted-yes-no-problem": PASS, "clinic-scripted-changes-mind": PASS,
    },
    "deaf_agent": {  # takes any answer for a yes
        "clinic-cancel-own": PASS, "clinic-cancel-someone-elses": PASS, "clinic-refill": PASS, "clinic-book": PASS,
        "clinic-scripted-yes-no-problem": PASS,
        "clinic-scripted-changes-mind": ("fail", ("appointments.AP-100.status equals 'booked'",
                                                  "after_confirmation(cancel_appointment)")),
    },
}
for table in EXPECTED.values():  # the scripted patient who states a number nobody gave her: never the agent's fault
    table["clinic-scripted-invented-number"] = ("invalid", ("drift:invented_identifier",))

# agent -> scenario -> the first faulty step of each trial that did not pass (transcript/blame.py):
# blame, and the planted defect's step (the call it made), or the user's drifting message
FIRST_FAULT: dict[str, dict[str, tuple[str, str]]] = {
    "hasty_agent": {"clinic-cancel-own": ("agent", "cancel_appointment"), "clinic-book": ("agent", "book_appointment"),
                    "clinic-scripted-yes-no-problem": ("agent", "cancel_appointment"),
                    "clinic-scripted-changes-mind": ("agent", "cancel_appointment")},
    "trusting_agent": {"clinic-cancel-own": ("agent", "get_appointment"),
                       "clinic-cancel-someone-elses": ("agent", "get_appointment"),
                       "clinic-refill": ("agent", "lookup_prescription"),
                       "clinic-scripted-yes-no-problem": ("agent", "get_appointment"),
                       "clinic-scripted-changes-mind": ("agent", "get_appointment")},
    "nosy_agent": {"clinic-cancel-someone-elses": ("agent", "get_appointment AP-300")},  # someone else's record
    "sloppy_agent": {"clinic-book": ("agent", "book_appointment P-1 S-12")},  # the second free slot
    "deaf_agent": {"clinic-scripted-changes-mind": ("agent", "cancel_appointment")},  # after her "no"
    "careful_agent": {},
}
for table in FIRST_FAULT.values():
    table["clinic-scripted-invented-number"] = ("user", "user message")


def run_suites(agent: str, root: Path, faults: dict[str, list[tuple[str, str] | None]]
               ) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """Both suites against ``agent``: each scenario's (verdict, failed hard checks) per trial; each
    trial's ``first_fault`` goes to ``faults``."""
    found: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    shutil.copy(AGENTS, root / "clinic_agents.py")  # the user's own file, in the project: loaded by its path
    for suite in ("rules", "scripted"):
        code = main(["run", "--suite", str(HERE / f"{suite}-suite.yaml"), "--agent", "python:clinic_agents.py:" + agent,
                     "--run-id", f"{agent}-{suite}", "--no-progress"])
        violations = any(v != "pass" for s, (v, _) in EXPECTED[agent].items() if "invented" not in s
                         and ("scripted" in s) == (suite == "scripted"))
        assert code == (1 if violations else 0), f"{agent} on the {suite} suite exited {code}"
        for line in (root / "transcripts" / f"{agent}-{suite}" / "trials.jsonl").read_text().splitlines():
            record = json.loads(line)
            failed = tuple(c["name"] for c in record["checks"] if c["status"] == "fail" and c["hard"])
            found.setdefault(record["transcript"]["scenario_id"], []).append((record["verdict"], failed))
            faults.setdefault(record["transcript"]["scenario_id"], []).append(first_fault(record))
    return found


def first_fault(record: dict) -> tuple[str, str] | None:
    """(blame, the first faulty step: ``tool argument…`` of a call, or ``user message``) from the head."""
    row = record["head"]["row"]
    if row["blame"] is None:
        return None
    event = record["transcript"]["events"][row["first_fault_event"]]
    if event["type"] == "tool_call":
        return row["blame"], " ".join([event["name"], *map(str, event["arguments"].values())])
    return row["blame"], f"{event['type']} message"


@pytest.mark.parametrize("agent", sorted(EXPECTED))
def test_every_verdict_is_right(agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    faults: dict[str, list[tuple[str, str] | None]] = {}
    found = run_suites(agent, tmp_path, faults)
    capsys.readouterr()
    assert set(found) == set(EXPECTED[agent])
    for scenario, trials in found.items():
        verdict, checks = EXPECTED[agent][scenario]
        for got_verdict, got_checks in trials:
            assert (got_verdict, sorted(got_checks)) == (verdict, sorted(checks)), f"{agent} on {scenario}"
    for scenario, got in faults.items():  # blame and the first faulty step: the planted defect's own step
        want = FIRST_FAULT[agent].get(scenario)
        for fault in got:
            assert fault == want or (want is not None and fault is not None and fault[0] == want[0]
                                     and fault[1].startswith(want[1] + " ")), f"{agent} on {scenario}: {fault}"


def test_the_clinic_validates_with_one_warning(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(HERE.parents[1])
    assert main(["validate", "tests/clinic"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "ok: 7 scenarios, 5 personas, 2 suite/config files, 1 warning"
    assert err.startswith("warning: tests/clinic/scenarios/scripted/invented-patient-number.yaml:12: user.script.1: "
                          "states 'P-999'")
