"""Why a trial did not pass: whose fault it was, the first step that went wrong, and its failure mode.

Derived from the trial alone (its termination, its error events and its checks), deterministically
and at no model cost, when its head is computed (``row.record_head``). The rule follows the
precedence of the verdict (``verdicts.PRECEDENCE``), so the blame never contradicts the verdict:

=========================================================  ============  ===========================
the trial                                                  blame         first faulty step
=========================================================  ============  ===========================
ended in an infrastructure error (termination ``error``)   ``provider``  the error event
  … raised by a model or service a role calls (agent,
  simulator, judge); ``tool`` when a domain tool's call
  broke it; ``user`` when the simulator's own code
  raised; ``lab`` when simlab itself did
a hard check of the agent's conduct (policy, a placed      ``agent``     the offending call
  rubric item, groundedness) failed before any drift or
  crash
a domain tool crashed (``error``, ``tool_crash:TOOL``)     ``tool``      the crash
the agent crashed, hung past its turn limit or looped      ``agent``     where its failing hard
  (``agent_failed``: ``fail`` even after a drift)                        checks point
``invalid``: the simulated user drifted                    ``user``      the drifting message
``fail``: a hard check failed                              ``agent``     the earliest step the
                                                                         failing hard checks point at
``error``: a hard check could not be decided               ``judge`` (a judge's check), else ``lab``
``unjudged``: a hard check did not run                     ``judge`` (a judge's check), else ``lab``
=========================================================  ============  ===========================

A scenario's injected tool faults (``faults:``) test the agent: a failure after one is the agent's.
Where a failing check names no event, the step is found from the transcript: a state check points
at the last write whose arguments name a part of the failing path (the write that put the wrong
value), else at the agent's last message (where the expected write was due); a loop points at its
first repeated call; anything else at the agent's last message.

A judge's check (``judge_decides``) is one of a judge's kind or given by one of simlab's judge
graders (the drift judge's are kind ``drift``): a malformed answer or no judge model is the judge's.

A **failure mode** is the trial's signature: blame, the deciding check's kind and name (numbers
replaced by ``#``, so the same rule on other orders is one mode), and the tool at the faulty step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from simlab.transcript.checks import Check
from simlab.transcript.model import AgentMessage, ErrorEvent, ToolCall, ToolResult, Transcript

BLAMES: Final = ("agent", "user", "tool", "provider", "judge", "lab")
JUDGE_KINDS: Final = frozenset({"rubric", "groundedness"})  # kinds of check only a judge model decides
# simlab's graders that ask the judge model (``@grader(..., judge=True)``), whatever the kind of their
# checks: the drift judge's are ``drift``, the ADK judge's ``custom`` (tests/test_blame.py keeps this
# equal to the registry's)
JUDGE_GRADERS: Final = frozenset({"rubric", "groundedness", "drift_llm", "adk_judge"})
MODEL_SOURCES: Final = frozenset(
    {"agent", "simulator", "judge"}
)  # ErrorEvent.source of a role's model or service
_NUMBERS = re.compile(r"\d+")


AGENT_TURN_TIMEOUT: Final = "the agent's turn ran over"  # how a hung agent's trial ends (sim/loop.py)
AGENT_OWN_ENDS: Final = frozenset({"agent_error", "agent_loop"})  # the agent raised; it repeated a call


def causal_drift(drift: list[Check]) -> list[Check]:
    """The failing drift checks that came before the outcome (``details["after_outcome"]``: a drift
    after it cannot have caused it), as the verdict and the blame read them."""
    return [c for c in drift if not c.details.get("after_outcome")]


def agent_failed(transcript: Transcript) -> str | None:
    """How the trial ended by the agent's own failure, which no user input excuses (a crash, a hang
    past its turn limit, a loop), or None. The verdict's precedence puts it before the user's drift
    (``verdicts.PRECEDENCE``): a drifting user never hides it."""
    end = transcript.termination
    reason = end.reason.value
    if reason in AGENT_OWN_ENDS:
        return reason
    if reason == "budget_exceeded" and end.detail.startswith(AGENT_TURN_TIMEOUT):
        return "agent_timeout"
    return None


@dataclass(frozen=True, slots=True)
class Fault:
    """Whose fault a trial that did not pass is, where it first went wrong, and its mode."""

    blame: str
    event: int | None  # index into transcript.events of the first faulty step
    turn: int | None
    mode: str


def diagnose(transcript: Transcript, checks: list[Check], verdict: str | None) -> Fault | None:
    """The fault of a trial whose verdict is not a pass (None for a pass or an ungraded trial)."""
    if verdict in (None, "pass"):
        return None
    events = transcript.events
    if transcript.termination.reason.value == "error":
        return _infra(transcript)
    hard = [c for c in checks if c.hard]
    crashes = [i for i, e in enumerate(events) if isinstance(e, ErrorEvent) and e.source == "tool"]
    if verdict == "fail":
        agent_checks = [c for c in hard if c.status == "fail" and c.kind != "drift"]
        if agent_checks:
            return _earliest(transcript, "agent", agent_checks)
    if verdict == "error" and crashes:
        error = events[crashes[0]]
        assert isinstance(error, ErrorEvent)
        return _at(
            transcript,
            "tool",
            crashes[0],
            f"tool: {_tool_before(transcript, crashes[0])} crashed ({error.kind})",
        )
    if verdict == "fail" and agent_failed(transcript):  # its failing checks name none (a hand-picked set)
        return _at(
            transcript,
            "agent",
            len(events) - 1 if events else None,
            f"agent: efficiency termination {transcript.termination.reason.value}",
        )
    if verdict == "invalid":
        drift = [c for c in hard if c.status == "fail" and c.kind == "drift"]
        if drift:
            return _earliest(transcript, "user", causal_drift(drift) or drift)
    if verdict in ("error", "unjudged"):
        status = "error" if verdict == "error" else "not_run"
        undecided = [c for c in hard if c.status == status]
        if undecided:
            check = undecided[0]
            blame = "judge" if judge_decides(check) else "lab"
            what = "could not be decided" if status == "error" else "did not run"
            return _at(
                transcript,
                blame,
                _last_agent_message(transcript),
                f"{blame}: {check.kind} {_plain(check.name, check.kind)} {what}",
            )
    failing = [c for c in hard if c.status == "fail"]  # a verdict these checks do not explain (a hand edit)
    return (
        _earliest(transcript, "agent", failing)
        if failing
        else _at(
            transcript,
            "lab",
            len(events) - 1 if events else None,
            f"lab: {verdict} without a failing hard check",
        )
    )


def judge_decides(check: Check) -> bool:
    """Whether a judge model decides ``check``: its kind is a judge's, or one of simlab's judge graders
    gave it (a check stored before ``Check.grader`` existed: the drift judge's by its name)."""
    if check.kind in JUDGE_KINDS or check.grader in JUDGE_GRADERS:
        return True
    return check.grader is None and check.name.startswith("drift_llm:")


def _infra(transcript: Transcript) -> Fault:
    events = transcript.events
    index = next((i for i in range(len(events) - 1, -1, -1) if isinstance(events[i], ErrorEvent)), None)
    if index is None:
        return _at(
            transcript, "lab", len(events) - 1 if events else None, "lab: error without an error event"
        )
    error = events[index]
    assert isinstance(error, ErrorEvent)
    if error.source == "simulator" and error.kind == "crash":  # its code, not a provider: the user's side
        return _at(transcript, "user", index, "user: simulator crash")
    if error.source in MODEL_SOURCES:
        return _at(transcript, "provider", index, f"provider: {error.source} {error.kind}")
    if error.source == "tool":
        return _at(transcript, "tool", index, f"tool: {_tool_before(transcript, index)} {error.kind}")
    return _at(transcript, "lab", index, f"lab: {error.source} {error.kind}")


def _earliest(transcript: Transcript, blame: str, checks: list[Check]) -> Fault:
    """The check that points at the earliest step decides the step and the mode; a check whose
    step is only a fallback (the agent's last message) decides only when no check points anywhere."""
    located = [(*_step_of(transcript, c), n, c) for n, c in enumerate(checks)]
    step, _, _, check = min(
        located, key=lambda item: (not item[1], item[0] if item[0] is not None else 1 << 62, item[2])
    )
    name = _plain(check.name, check.kind)
    if check.name == "termination" and check.kind == "efficiency":
        name = f"termination {transcript.termination.reason.value}"
    tool = _tool_at(transcript, step)
    return _at(transcript, blame, step, f"{blame}: {check.kind} {name}" + (f" at {tool}" if tool else ""))


def _step_of(transcript: Transcript, check: Check) -> tuple[int | None, bool]:
    """(the step a check points at, whether it points there itself rather than by fallback)."""
    if check.kind in ("efficiency", "budget") and transcript.termination.reason.value == "agent_loop":
        return _loop_start(transcript), True
    if check.event is not None and 0 <= check.event < len(transcript.events):
        return check.event, True
    write = _write_for(transcript, check) if check.kind == "state" else None
    return (write, True) if write is not None else (_last_agent_message(transcript), False)


def _write_for(transcript: Transcript, check: Check) -> int | None:
    """The last write whose arguments name a part of a failing path (its keys or ids)."""
    paths = [check.details.get("path")] + [
        d.get("path") for d in check.details.get("diff_entries") or [] if isinstance(d, dict)
    ]
    parts = {
        p for path in paths if isinstance(path, str) for p in re.split(r"[.\[\]/=\"' ]+", path) if len(p) > 1
    }
    for i in range(len(transcript.events) - 1, -1, -1):
        event = transcript.events[i]
        if isinstance(event, ToolCall) and event.access == "write" and parts & _values(event.arguments):
            return i
    return None


def _values(arguments: dict[str, Any] | None) -> set[str]:
    return {str(v) for v in (arguments or {}).values() if isinstance(v, (str, int))}


def _loop_start(transcript: Transcript) -> int | None:
    """The first call of the run of identical calls the trial ended in."""
    calls = [(i, e) for i, e in enumerate(transcript.events) if isinstance(e, ToolCall)]
    if not calls:
        return _last_agent_message(transcript)
    start, last = calls[-1]
    for i, call in reversed(calls[:-1]):
        if (call.name, call.raw_arguments, call.arguments) != (last.name, last.raw_arguments, last.arguments):
            break
        start = i
    return start


def _last_agent_message(transcript: Transcript) -> int | None:
    events = transcript.events
    found = next((i for i in range(len(events) - 1, -1, -1) if isinstance(events[i], AgentMessage)), None)
    return found if found is not None else (len(events) - 1 if events else None)


def _tool_at(transcript: Transcript, index: int | None) -> str | None:
    if index is None:
        return None
    event = transcript.events[index]
    return (
        getattr(event, "name", None)
        if event.type in ("tool_call", "tool_result", "invalid_call", "tool_fault")
        else None
    )


def _tool_before(transcript: Transcript, index: int) -> str:
    return next(
        (e.name for e in reversed(transcript.events[:index]) if isinstance(e, (ToolResult, ToolCall))), "?"
    )


def _at(transcript: Transcript, blame: str, index: int | None, mode: str) -> Fault:
    turn = getattr(transcript.events[index], "turn", None) if index is not None else None
    return Fault(
        blame=blame, event=index, turn=turn if turn is not None else transcript.termination.turn, mode=mode
    )


def _plain(name: str, kind: str) -> str:
    """A check's name without its kind in front (``rubric:polite``) and with its numbers as ``#``."""
    return _NUMBERS.sub("#", name.removeprefix(f"{kind}:"))
