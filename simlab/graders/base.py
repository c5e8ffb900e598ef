"""Checks and verdicts: the vocabulary every grader speaks.

A check is one verdict of one grader on one transcript. Its ``status`` is pass, fail, not_run
(e.g. no judge model configured: never counted as a pass) or error (the grader itself could not
decide: a judge that kept answering malformed JSON). A trial's verdict combines its checks
(``verdict_of``); what each verdict means is defined once, in ``transcript/verdicts.py``, with the
precedence rule ``verdict_of`` applies (``PRECEDENCE``, in order):

1. error: the trial ended in an infrastructure error;
2. fail: a hard policy check failed at an agent event before the first failed drift check's event
   and before a domain tool crashed: what the agent did before anything else went wrong is its own,
   and no later drift or crash may hide it;
3. error: a domain tool crashed (``tool_crashes``; the check ``tool_crash:TOOL`` names it): the
   tool's fault, not the agent's or the user's;
4. fail: the agent crashed, hung past its turn limit or looped (``blame.agent_failed``): no user
   input excuses that, so no drift before it hides it;
5. invalid: a hard drift check failed: the simulated user's drift could have caused the outcome
   (the drift checks themselves do not fail where the user kept to its script or the agent ended
   the conversation: ``drift.py``). A drift that came after the outcome (``details["after_outcome"]``:
   the user accepted what the agent had already reported done) makes the trial invalid only when
   no agent check failed;
6. fail: a hard check failed; 7. error: a hard check could not be decided; 8. unjudged: a hard
   check did not run; 9. pass.

A drift check that points at no event is taken to have been there from the simulated user's first
message. tests/test_verdict_precedence.py holds a table of cases.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simlab.env.domain import Domain
from simlab.specs import Persona, Scenario
from simlab.transcript import AgentMessage, ErrorEvent, ToolResult, Transcript
from simlab.transcript.blame import agent_failed, causal_drift
from simlab.transcript.checks import Check, CheckKind, CheckStatus, Verdict

__all__ = [
    "Check",
    "CheckKind",
    "CheckStatus",
    "GradeContext",
    "Verdict",
    "check_at",
    "initial_snapshot",
    "scenario_memo",
    "tool_crashes",
    "verdict_of",
]


@dataclass
class GradeContext:
    """Everything a grader may look at. Judges get a chat model; deterministic graders ignore it."""

    transcript: Transcript
    scenario: Scenario
    domain: Domain
    judge: Any = None  # a simlab.llm ChatModel, or None when no judge is configured
    persona: Persona | None = None  # the resolved persona (a scenario may name it by id)
    memo: dict[str, Any] = field(default_factory=dict)
    """What every trial of one scenario shares (initial state, reference replay): a caller that
    grades many trials passes the same dict to all trials of a scenario, and it is computed once."""


def tool_crashes(transcript: Transcript) -> list[tuple[int, str, ErrorEvent]]:
    """(event index, tool name, error event) of every call where a domain tool misbehaved: it
    raised (a bug in the domain's code), hung past ``tool_timeout_s``, returned what cannot be
    recorded, or left an invalid state. A scenario's injected faults are not among them."""
    out, tool = [], "?"
    for i, event in enumerate(transcript.events):
        if isinstance(event, ToolResult):
            tool = event.name
        elif isinstance(event, ErrorEvent) and event.source == "tool":
            out.append((i, tool, event))
    return out


# the checks of the agent's conduct whose failure at an agent event no later drift or crash excuses: a
# policy rule, a rubric item the judge's answer placed there (by the event its reason cites), and
# the groundedness of the agent's reply
AGENT_RULES = frozenset({"policy", "rubric", "groundedness"})


def verdict_of(transcript: Transcript, checks: list[Check]) -> Verdict:
    """The trial's verdict from its checks, by the precedence rule above (``verdicts.PRECEDENCE``)."""
    if transcript.termination.reason.value == "error":
        return "error"
    hard = [c for c in checks if c.hard]
    drift = [c for c in hard if c.kind == "drift" and c.status == "fail"]
    causal = causal_drift(drift)
    crashes = tool_crashes(transcript)
    start = transcript.history_events
    cut = min(
        [start if c.event is None else c.event for c in causal] + [i for i, _, _ in crashes],
        default=len(transcript.events),
    )
    if any(
        c.kind in AGENT_RULES and c.status == "fail" and c.event is not None and c.event < cut for c in hard
    ):
        return "fail"
    if crashes:
        return "error"
    if agent_failed(transcript):  # a crash, a hang or a loop of the agent's: no drift excuses it
        return "fail"
    if causal or (drift and not any(c.status == "fail" for c in hard if c.kind != "drift")):
        return "invalid"
    if any(c.status == "fail" for c in hard):
        return "fail"
    if any(c.status == "error" for c in hard):
        return "error"
    if any(c.status == "not_run" for c in hard):
        return "unjudged"
    return "pass"


def last_agent_message(transcript: Transcript) -> int | None:
    """The index of the agent's last message in the transcript, or None when it never spoke."""
    return next(
        (
            i
            for i in range(len(transcript.events) - 1, -1, -1)
            if isinstance(transcript.events[i], AgentMessage)
        ),
        None,
    )


def check_at(transcript: Transcript, index: int | None) -> dict[str, Any]:
    """``event``, ``turn`` and ``call_id`` for a check that points at ``transcript.events[index]``."""
    if index is None:
        return {}
    event = transcript.events[index]
    return {"event": index, "turn": getattr(event, "turn", None), "call_id": getattr(event, "call_id", None)}


def scenario_memo(ctx: GradeContext, name: str, compute: Callable[[GradeContext], Any]) -> Any:
    """``compute(ctx)``, kept in ``ctx.memo`` under ``name``. Return immutable values only: every
    trial of the scenario gets the same object."""
    if name not in ctx.memo:
        ctx.memo[name] = compute(ctx)
    return ctx.memo[name]


def initial_snapshot(ctx: GradeContext) -> dict[str, Any]:
    """A fresh copy of the scenario's initial state as JSON data (raises like ``build_state``)."""
    data = scenario_memo(
        ctx,
        "initial_state",
        lambda c: marshal.dumps(c.domain.build_state(c.scenario.initial_state).model_dump(mode="json")),
    )
    return marshal.loads(data)  # marshal: the fastest copy of JSON data
