"""Which verdict wins when several things went wrong (``graders/base.verdict_of``, written down in
``transcript/verdicts.PRECEDENCE`` and README's *Verdicts*): infrastructure first; then what the
agent did wrong before anything else did; then a crashed domain tool; then the agent's own crash,
hang or loop; then the user's drift; then
the agent's failure; then checks that could not be decided or did not run."""

from __future__ import annotations

from typing import Any

import pytest

from simlab.graders.base import Check, verdict_of
from simlab.transcript import (
    AgentMessage,
    ErrorEvent,
    Pin,
    Signal,
    Termination,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
)
from simlab.transcript.verdicts import PRECEDENCE, VERDICTS

CRASH_AT = 7


def transcript(*, crash: bool = False, reason: str = "goal_reached", detail: str = "") -> Transcript:
    events: list[Any] = [
        UserMessage(turn=1, text="Please change my name to Robin."),  # 0
        ToolCall(turn=1, call_id="c1", name="set_name", arguments={"name": "Bob"}, access="write"),  # 1
        ToolResult(turn=1, call_id="c1", name="set_name", ok=True),  # 2
        AgentMessage(turn=1, text="Changed it to Bob."),  # 3
        UserMessage(turn=2, text="My account is ZX-9001."),  # 4: where the user drifts
        ToolCall(turn=2, call_id="c2", name="set_tz", arguments={"tz": "Europe/Paris"}, access="write"),  # 5
        ToolResult(turn=2, call_id="c2", name="set_tz", ok=False, error="tool crashed: KeyError: 'x'"),  # 6
    ]
    if crash:
        events.append(ErrorEvent(turn=2, source="tool", kind="crash", message="tool crashed: KeyError: 'x'"))  # 7
    events += [AgentMessage(turn=2, text="Sorry."), Signal(turn=3, role="user", signal="stop")]
    return Transcript(run_id="r", unit_id="s#1", scenario_id="s", persona_id="p", domain="d", trial=1, seed=1,
                      agent=Pin(kind="python", ref="a"), simulator=Pin(kind="llm", ref="u"), events=events,
                      termination=Termination(reason=reason, detail=detail), final_state={})


def check(kind: str, status: str = "fail", event: int | None = None, hard: bool = True) -> Check:
    return Check(name=f"{kind}-{status}-{event}", kind=kind, status=status, event=event, hard=hard)  # type: ignore[arg-type]


OK = check("state", "pass")
STATE = check("state")  # an outcome: points at no event
POLICY_EARLY = check("policy", event=1)  # the agent's own act, before the user drifted at 4
POLICY_LATE = check("policy", event=8)
DRIFT = check("drift", event=4)
DRIFT_NOWHERE = check("drift")
AFTER_OUTCOME = check("drift", event=9).model_copy(update={"details": {"after_outcome": True}})  # "thanks" to "Done"
TRAJECTORY_EARLY = check("trajectory", event=1)  # "nearest call" of a missing one: an outcome, not an act
JUDGE_ERROR = check("rubric", "error")
NOT_RUN = check("rubric", "not_run")
TERMINATION = check("efficiency", event=9)  # the termination check: the agent crashed, looped or hung
HUNG = "the agent's turn ran over 300 s (limits.max_turn_seconds)"

CASES: list[tuple[str, dict[str, Any], list[Check], str]] = [
    ("every hard check held", {}, [OK], "pass"),
    ("a soft failure only scores", {}, [OK, check("state", hard=False)], "pass"),
    ("a soft drift failure only scores", {}, [OK, check("drift", event=4, hard=False)], "pass"),
    ("the agent failed an outcome", {}, [STATE], "fail"),
    ("the user drifted, nothing else", {}, [OK, DRIFT], "invalid"),
    ("drift could have caused the failed outcome", {}, [STATE, DRIFT], "invalid"),
    ("a policy violation before the drift is the agent's own", {}, [POLICY_EARLY, DRIFT], "fail"),
    ("a drift after the outcome hides no failure", {}, [STATE, AFTER_OUTCOME], "fail"),
    ("a drift after the outcome, nothing else failed", {}, [OK, AFTER_OUTCOME], "invalid"),
    ("a policy violation after the drift may be the drift's doing", {}, [POLICY_LATE, DRIFT], "invalid"),
    ("a drift of unknown position counts from the first user message", {}, [POLICY_EARLY, DRIFT_NOWHERE],
     "invalid"),
    ("an outcome check pointing early is not an act", {}, [TRAJECTORY_EARLY, DRIFT], "invalid"),
    ("infrastructure first", {"reason": "error"}, [POLICY_EARLY, DRIFT], "error"),
    ("infrastructure even when every check held", {"reason": "error"}, [OK], "error"),
    ("a crashed domain tool is the tool's fault", {"crash": True}, [STATE], "error"),
    ("a crashed tool outranks a later drift", {"crash": True}, [STATE, check("drift", event=9)], "error"),
    ("a crashed tool outranks an earlier drift", {"crash": True}, [STATE, DRIFT], "error"),
    ("a crashed tool leaves no trial passed", {"crash": True}, [OK], "error"),
    ("a policy violation before the crash is the agent's own", {"crash": True}, [POLICY_EARLY], "fail"),
    ("a policy violation after the crash may be the crash's doing", {"crash": True}, [POLICY_LATE], "error"),
    ("a failure outranks a check nobody could decide", {}, [STATE, JUDGE_ERROR], "fail"),
    ("a check nobody could decide", {}, [OK, JUDGE_ERROR], "error"),
    ("drift outranks a check nobody could decide", {}, [DRIFT, JUDGE_ERROR], "invalid"),
    ("a check that did not run", {}, [OK, NOT_RUN], "unjudged"),
    ("a failure outranks a check that did not run", {}, [STATE, NOT_RUN], "fail"),
    ("drift outranks a check that did not run", {}, [DRIFT, NOT_RUN], "invalid"),
    ("undecided outranks not run", {}, [JUDGE_ERROR, NOT_RUN], "error"),
    ("the agent's crash after a drift is its own", {"reason": "agent_error"}, [TERMINATION, DRIFT], "fail"),
    ("the agent's loop after a drift is its own", {"reason": "agent_loop"}, [TERMINATION, DRIFT], "fail"),
    ("the agent's hang after a drift is its own", {"reason": "budget_exceeded", "detail": HUNG},
     [TERMINATION, DRIFT], "fail"),
    ("a trial's own budget after a drift may be the drift's doing", {"reason": "budget_exceeded"},
     [TERMINATION, DRIFT], "invalid"),
    ("a turn cap after a drift may be the drift's doing", {"reason": "max_turns"}, [TERMINATION, DRIFT],
     "invalid"),
    ("a crashed tool outranks the agent's crash", {"crash": True, "reason": "agent_error"},
     [TERMINATION, DRIFT], "error"),
]


@pytest.mark.parametrize(("what", "shape", "checks", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_verdict_precedence(what: str, shape: dict[str, Any], checks: list[Check], expected: str) -> None:
    assert verdict_of(transcript(**shape), checks) == expected


def test_the_cases_cover_every_verdict_and_every_rule() -> None:
    assert {c[3] for c in CASES} == set(VERDICTS)
    assert [v for v, _, _ in PRECEDENCE] == [
        "error", "fail", "error", "fail", "invalid", "fail", "error", "unjudged", "pass"]
    assert transcript(crash=True).events[CRASH_AT].type == "error"
