"""Blame, first faulty step and failure mode of a trial (transcript/blame.py), one row per kind of
fault: whose fault it is follows the verdict's precedence (graders/base.verdict_of decides the
verdict here, so the two can never disagree), and the step is the one the fault is at."""

from __future__ import annotations

from typing import Any

import pytest

from simlab.graders.base import verdict_of
from simlab.graders.drift import KINDS
from simlab.transcript import Check
from simlab.transcript.blame import BLAMES, diagnose
from simlab.transcript.model import (
    AgentMessage,
    ErrorEvent,
    Pin,
    Termination,
    TerminationReason,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
)


def transcript(*events: Any, end: str = "goal_reached") -> Transcript:
    return Transcript(run_id="r", unit_id="s#1", scenario_id="s", persona_id="p", domain="retail", trial=1, seed=1,
                      agent=Pin(kind="python", ref="a:b"), simulator=Pin(kind="rules", ref="rules"),
                      events=list(events), termination=Termination(reason=TerminationReason(end), turn=3))


def call(turn: int, name: str, access: str = "read", **arguments: Any) -> ToolCall:
    return ToolCall(turn=turn, call_id=f"c{turn}{name}", name=name, arguments=arguments, access=access)  # type: ignore[arg-type]


def ok(turn: int, name: str) -> ToolResult:
    return ToolResult(turn=turn, call_id=f"c{turn}{name}", name=name, ok=True, result={})


def check(name: str, kind: str, status: str = "fail", **more: Any) -> Check:
    return Check(name=name, kind=kind, status=status, **more)  # type: ignore[arg-type]


CHAT = (UserMessage(turn=1, text="refund A123 please"),          # 0
        call(1, "lookup_order", order_id="A123"), ok(1, "lookup_order"),  # 1, 2
        AgentMessage(turn=1, text="Shall I refund it?"),          # 3
        UserMessage(turn=2, text="yes"),                          # 4
        call(2, "issue_refund", "write", order_id="A123", method="store_credit"), ok(2, "issue_refund"),  # 5, 6
        AgentMessage(turn=2, text="Done: refunded."))             # 7

CASES: dict[str, tuple[Transcript, list[Check], str, str, int | None, str]] = {
    # name: (transcript, checks, verdict, blame, first faulty event, mode)
    "policy rule at the offending call": (
        transcript(*CHAT), [check("before(check_refund_policy, issue_refund)", "policy", event=5, turn=2)],
        "fail", "agent", 5, "agent: policy before(check_refund_policy, issue_refund) at issue_refund"),
    "wrong value: the write that put it": (
        transcript(*CHAT), [check("refunds[order_id=A123].method equals 'original_card'", "state",
                                  details={"path": "refunds[order_id=A123].method"})],
        "fail", "agent", 5, "agent: state refunds[order_id=A#].method equals 'original_card' at issue_refund"),
    "missing write: where it was due": (
        transcript(*CHAT[:4], AgentMessage(turn=1, text="Bye.")), [check("refund issued", "state",
                                                                         details={"path": "refunds[order_id=Z9]"})],
        "fail", "agent", 4, "agent: state refund issued"),
    "an explicit step beats a fallback": (
        transcript(*CHAT), [check("refund issued", "state"),
                            check("trajectory:in_order", "trajectory", event=1, turn=1)],
        "fail", "agent", 1, "agent: trajectory in_order at lookup_order"),
    "a loop: its first repeated call": (
        transcript(UserMessage(turn=1, text="hi"), call(1, "lookup_order", order_id="A1"), ok(1, "lookup_order"),
                   call(1, "find", query="x"), ok(1, "find"), call(1, "find", query="x"), ok(1, "find"),
                   call(1, "find", query="x"), end="agent_loop"),
        [check("termination", "efficiency", event=7, turn=1)],
        "fail", "agent", 3, "agent: efficiency termination agent_loop at find"),
    "the user drifted": (
        transcript(*CHAT[:4], UserMessage(turn=2, text="my card is 4111")),
        [check("drift:invented_identifier", "drift", event=4, turn=2), check("refund issued", "state")],
        "invalid", "user", 4, "user: drift invented_identifier"),
    "a policy breach before the drift is the agent's": (
        transcript(*CHAT, UserMessage(turn=3, text="also my order 77")),
        [check("forbidden(issue_refund)", "policy", event=5, turn=2), check("drift:invented_identifier", "drift",
                                                                             event=8, turn=3)],
        "fail", "agent", 5, "agent: policy forbidden(issue_refund) at issue_refund"),
    "a domain tool crashed": (
        transcript(*CHAT[:2], ToolResult(turn=1, call_id="c1lookup_order", name="lookup_order", ok=False, error="x"),
                   ErrorEvent(turn=1, source="tool", kind="crash", message="KeyError"), AgentMessage(turn=1, text="?")),
        [check("tool_crash:lookup_order", "custom", "error", event=3)],
        "error", "tool", 3, "tool: lookup_order crashed (crash)"),
    "the provider failed": (
        transcript(*CHAT[:1], ErrorEvent(turn=1, source="agent", kind="transient", message="503 after 4 retries"),
                   end="error"), [],
        "error", "provider", 1, "provider: agent transient"),
    "the simulator's model failed": (
        transcript(*CHAT[:4], ErrorEvent(turn=2, source="simulator", kind="auth", message="401"), end="error"), [],
        "error", "provider", 4, "provider: simulator auth"),
    "simlab itself broke": (
        transcript(*CHAT[:1], ErrorEvent(turn=1, source="lab", kind="crash", message="bug"), end="error"), [],
        "error", "lab", 1, "lab: lab crash"),
    "a judge that could not decide": (
        transcript(*CHAT), [check("rubric:polite", "rubric", "error")],
        "error", "judge", 7, "judge: rubric polite could not be decided"),
    "no judge: unjudged": (
        transcript(*CHAT), [check("rubric:polite", "rubric", "not_run")],
        "unjudged", "judge", 7, "judge: rubric polite did not run"),
    "a predicate that raised": (
        transcript(*CHAT), [check("predicate", "state", "error")],
        "error", "lab", 7, "lab: state predicate could not be decided"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_blame_and_first_faulty_step(name: str) -> None:
    t, checks, verdict, blame, event, mode = CASES[name]
    assert verdict_of(t, checks) == verdict
    fault = diagnose(t, checks, verdict)
    assert fault is not None and fault.blame in BLAMES
    assert (fault.blame, fault.event, fault.mode) == (blame, event, mode)
    assert fault.turn == t.events[event].turn  # type: ignore[union-attr]


def test_a_pass_and_an_ungraded_trial_have_no_fault() -> None:
    assert diagnose(transcript(*CHAT), [check("x", "state", "pass")], "pass") is None
    assert diagnose(transcript(*CHAT), [], None) is None


@pytest.mark.parametrize("kind", KINDS)
def test_every_drift_kind_is_the_users_fault_at_its_message(kind: str) -> None:
    t = transcript(*CHAT[:4], UserMessage(turn=2, text="something the user should not have said"))
    checks = [check(f"drift:{kind}", "drift", event=4, turn=2), check("refund issued", "state")]
    verdict = verdict_of(t, checks)
    fault = diagnose(t, checks, verdict)
    assert verdict == "invalid" and fault is not None
    assert (fault.blame, fault.event, fault.mode) == ("user", 4, f"user: drift {kind}")


def test_an_invalid_trial_is_blamed_on_the_drift_that_made_it_so_not_one_after_the_outcome() -> None:
    """A drift after the outcome cannot have caused it (verdict_of leaves it out); the user's
    fault is the later drift that did. Before, the earliest drift of all was named."""
    t = transcript(*CHAT[:5], UserMessage(turn=3, text="my card is 4242 4242 4242 4242"))
    checks = [check("drift:accepted_rejected", "drift", event=4, turn=2, details={"after_outcome": True}),
              check("drift:revealed_secret", "drift", event=5, turn=3), check("refund issued", "state")]
    verdict = verdict_of(t, checks)
    fault = diagnose(t, checks, verdict)
    assert verdict == "invalid" and fault is not None
    assert (fault.blame, fault.event, fault.mode) == ("user", 5, "user: drift revealed_secret")


# a judge's checks are the judge's whatever their kind: the drift judge's are kind ``drift``, the ADK
# judge's kind ``custom``; a malformed answer or no judge model is the judge's, never the lab's
JUDGED = [
    ("drift_llm:persona", "drift", "drift_llm", "judge: drift drift_llm:persona"),
    ("drift_llm:kept_secrets", "drift", None, "judge: drift drift_llm:kept_secrets"),  # before Check.grader
    ("adk:final_response_match_v2", "custom", "adk_judge", "judge: custom adk:final_response_match_v#"),
]


@pytest.mark.parametrize(("name", "kind", "grader", "mode"), JUDGED)
@pytest.mark.parametrize(("status", "verdict", "what"), [("error", "error", "could not be decided"),
                                                         ("not_run", "unjudged", "did not run")])
def test_a_judges_check_of_any_kind_that_was_not_decided_is_the_judges(
    name: str, kind: str, grader: str | None, mode: str, status: str, verdict: str, what: str
) -> None:
    checks = [check(name, kind, status, grader=grader), check("refund issued", "state", "pass")]
    t = transcript(*CHAT)
    assert verdict_of(t, checks) == verdict
    fault = diagnose(t, checks, verdict)
    assert fault is not None and (fault.blame, fault.mode) == ("judge", f"{mode} {what}")


def test_the_judge_graders_blame_knows_are_the_registered_judges() -> None:
    import simlab.adk.judge  # noqa: F401  (registers adk_judge)
    from simlab.graders.registry import BUILTINS, registered
    from simlab.transcript.blame import JUDGE_GRADERS

    judges = {name for name in (*BUILTINS, "adk_judge") if (info := registered(name)) is not None and info.judge}
    assert set(JUDGE_GRADERS) == judges
