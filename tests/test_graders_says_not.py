"""``expect.agent_says_not`` (issue 28): a deterministic way to forbid a pattern in the agent's own
words. A match fails a hard policy check at the first agent message that matches, and blame and
the first faulty step land there; no match passes; a bad regex is a load error naming file, line
and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.graders.base import verdict_of
from simlab.graders.says import says_not_check
from simlab.specs.expect import SaysNot
from simlab.transcript.blame import diagnose
from simlab.transcript.model import AgentMessage, Pin, Termination, TerminationReason, Transcript, UserMessage

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/retail/refund-damaged-card.yaml"


def transcript(*events: UserMessage | AgentMessage, history: int = 0) -> Transcript:
    return Transcript(run_id="r", unit_id="s#1", scenario_id="s", persona_id="p", domain="retail", trial=1, seed=1,
                      agent=Pin(kind="python", ref="a:b"), simulator=Pin(kind="rules", ref="rules"),
                      events=list(events), history_events=history,
                      termination=Termination(reason=TerminationReason("goal_reached"), turn=2))


CHAT = (UserMessage(turn=1, text="when does my money arrive? I guarantee you I need it"),  # 0: the user's words
        AgentMessage(turn=1, text="Refunds take a few days."),                             # 1
        UserMessage(turn=2, text="ok"),                                                    # 2
        AgentMessage(turn=2, text="I GUARANTEE it arrives by Friday."),                    # 3: the first match
        AgentMessage(turn=3, text="Guaranteed, again."))                                   # 4


def test_a_match_fails_at_the_first_agent_message_that_matches_and_blame_lands_there() -> None:
    t = transcript(*CHAT)
    check = says_not_check(SaysNot(pattern=r"guarantee", name="no-guarantee"), t)
    assert (check.name, check.kind, check.status, check.hard) == ("agent_says_not:no-guarantee", "policy", "fail", True)
    assert (check.event, check.turn) == (3, 2)  # not the user's "guarantee" at event 0
    assert "'I GUARANTEE it arrives by Friday.' at turn 2" in check.reason and check.details["match"] == "GUARANTEE"
    verdict = verdict_of(t, [check])
    fault = diagnose(t, [check], verdict)
    assert verdict == "fail" and fault is not None
    assert (fault.blame, fault.event) == ("agent", 3)
    assert fault.mode == "agent: policy agent_says_not:no-guarantee"


def test_no_match_passes_case_and_history_respected() -> None:
    t = transcript(*CHAT)
    assert says_not_check(SaysNot(pattern="GUARANTEE", case_sensitive=True), t).event == 3
    assert says_not_check(SaysNot(pattern="Guaranteed", case_sensitive=True), t).event == 4
    passed = says_not_check(SaysNot(pattern=r"\bpromise\b"), t)
    assert passed.status == "pass" and passed.event is None and passed.name == r"agent_says_not:\bpromise\b"
    given = transcript(*CHAT, history=4)  # the first four events are the scenario's given history
    assert says_not_check(SaysNot(pattern="guarantee"), given).event == 4
    soft = says_not_check(SaysNot(pattern="friday", hard=False), t)
    assert soft.status == "fail" and not soft.hard and verdict_of(t, [soft]) == "pass"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def scenario_with(project: Path, block: str) -> Path:
    text = SCENARIO.read_text().replace("expect:\n", "expect:\n" + block, 1)
    path = project / "scenarios" / "says.yaml"
    path.write_text(text)
    return path


def test_a_run_fails_the_trial_at_the_agents_message(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario_with(project, "  agent_says_not:\n"
                                  "    - {pattern: 'ending \\d{4}', name: no-card-digits}\n"
                                  "    - {pattern: 'guarantee'}\n")
    assert main(["run", str(path), "--run-id", "says", "--trials", "1", "--no-progress",
                 "--agent", "python:examples.retail_agents:careful_agent", "--simulator", "rules"]) == 0
    record = json.loads((project / "transcripts/says/trials.jsonl").read_text().splitlines()[0])
    checks = {c["name"]: c for c in record["checks"] if c["name"].startswith("agent_says_not:")}
    digits, guarantee = checks["agent_says_not:no-card-digits"], checks["agent_says_not:guarantee"]
    event = record["transcript"]["events"][digits["event"]]
    assert digits["status"] == "fail" and event["type"] == "agent" and "ending 4242" in event["text"]
    assert not any("ending 4242" in e.get("text", "") for e in record["transcript"]["events"][:digits["event"]]
                   if e["type"] == "agent")  # the first such message
    assert guarantee["status"] == "pass"
    row = record["head"]["row"]
    assert record["verdict"] == "fail" and row["blame"] == "agent"
    assert row["first_fault_event"] == digits["event"] and row["policy_violations"] >= 1
    assert "agent_says_not:no-card-digits" in capsys.readouterr().out  # among the checks that fail most


def test_a_bad_regex_is_a_load_error_naming_file_line_and_field(project: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    scenario_with(project, "  agent_says_not:\n    - {pattern: 'refund (by', name: no-date}\n")
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if "agent_says_not" in line)
    assert line.startswith("scenarios/says.yaml:29: expect.agent_says_not.0.pattern: ")
    assert "missing ), unterminated subpattern" in line and "Traceback" not in err
