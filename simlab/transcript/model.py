"""The transcript: everything one trial did, in order.

Events form one discriminated union keyed by ``type``. Each event carries ``turn`` (the
conversation turn it belongs to; a turn is one user message and the agent's whole answer to it)
so a check can point at it. The list index of an event in ``Transcript.events`` is its stable
address (``event`` in a check).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

from simlab.transcript.checks import Check
from simlab.transcript.framework_events import GraphState, GraphStep, Handoff, PendingToolCall

TRANSCRIPT_SCHEMA_VERSION = 1
RECORD_SCHEMA_VERSION = 2  # 2: the line carries a ``head`` (see ``transcript/row.py``)

Role = Literal["agent", "simulator", "judge", "author"]  # author: simlab generate's drafts, never in a trial


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


MAX_TOKENS = 10**12  # more tokens than any call could hold: a provider's count beyond it is corrupt
# the one definition of a plausible token count: an integer (not a bool, a float or a string) from 0
# to MAX_TOKENS. What a provider or a framework reports goes through ``token_count`` (anything else is
# unknown); a stored ``Usage`` (trials.jsonl, a cache entry, triage.json) holding anything else does
# not validate, so a reader of a hand-edited line says file, line and field (runner/lines.record_of)
TokenCount = Annotated[int, Strict(), Field(ge=0, le=MAX_TOKENS)]


MAX_COST_USD = 1e9  # more than any call could cost (10^12 tokens at $1,000 a million): beyond is corrupt
# the one definition of a plausible cost: a finite number (not a bool or a string) from 0 to
# MAX_COST_USD; what a provider or a price gives goes through ``cost_usd``, a stored one must fit
CostUsd = Annotated[float, Strict(), Field(ge=0, le=MAX_COST_USD, allow_inf_nan=False)]


def cost_usd(value: Any) -> float | None:
    """A cost as a provider, LiteLLM or a stated price gave it, or None (unknown) when it is not a
    plausible cost (``CostUsd``): not a number, negative, not finite or beyond ``MAX_COST_USD``. A
    sum of costs beyond the bound is unknown too."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_COST_USD:
        return None  # NaN fails the comparison too
    return float(value)


def token_count(value: Any) -> int | None:
    """A token count as a provider or a framework reported it, or None (unknown) when it is not a
    plausible count (``TokenCount``): not an integer, negative, or beyond ``MAX_TOKENS`` (a hostile
    or broken server's figure is no figure; stored as it came, it would overflow every report's
    int64). A sum of counts beyond the bound is unknown too."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return None
    return value


class Usage(_Model):
    """What one model call (or a sum of them) cost. ``None`` means unknown, never zero."""

    input_tokens: TokenCount | None = Field(
        None, description="Prompt tokens; None when the provider did not say."
    )
    output_tokens: TokenCount | None = Field(None, description="Completion tokens; None when unknown.")
    cached_tokens: TokenCount | None = Field(
        None, description="Prompt tokens served from the provider cache."
    )
    cost_usd: CostUsd | None = Field(None, description="Cost in USD; None when the price is unknown.")
    latency_s: float = Field(0.0, description="Wall-clock seconds of the call, retries included.")
    retries: int = Field(0, description="How many times the call was retried after a transient error.")
    retry_wait_s: float = Field(0.0, description="Seconds spent waiting between retries.")
    # written only when set: a run without the cache stores the same bytes as before
    cached: bool = Field(
        False,
        exclude_if=lambda v: not v,
        description="Served from simlab's response cache (--cache): cost 0, no call made.",
    )
    original_cost_usd: CostUsd | None = Field(
        None,
        exclude_if=lambda v: v is None,
        description="A cached answer's cost when it was first bought (for reference; None otherwise).",
    )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of several calls' usage, from zero tokens and $0 (an unknown part stays unknown)."""
        total = cls(input_tokens=0, output_tokens=0, cost_usd=0.0)
        for usage in usages:
            total = total + usage
        return total

    def __add__(self, other: Usage) -> Usage:
        def add(a: float | int | None, b: float | int | None) -> Any:
            return None if a is None or b is None else a + b

        return Usage(
            input_tokens=token_count(add(self.input_tokens, other.input_tokens)),
            output_tokens=token_count(add(self.output_tokens, other.output_tokens)),
            cached_tokens=token_count(add(self.cached_tokens, other.cached_tokens)),
            cost_usd=cost_usd(add(self.cost_usd, other.cost_usd)),
            latency_s=self.latency_s + other.latency_s,
            retries=self.retries + other.retries,
            retry_wait_s=self.retry_wait_s + other.retry_wait_s,
        )


class UserMessage(_Model):
    """A message of the simulated user, with any control signal already stripped out."""

    type: Literal["user"] = "user"
    turn: int
    text: str


class AgentMessage(_Model):
    """The agent's text reply that ends its part of a turn."""

    type: Literal["agent"] = "agent"
    turn: int
    text: str


class ToolCall(_Model):
    """The agent asked for a tool. ``arguments`` is None when ``raw_arguments`` was not JSON."""

    type: Literal["tool_call"] = "tool_call"
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""
    access: Literal["read", "write"] | None = Field(
        None, description="The tool's kind; None for unknown tools."
    )
    outside: bool = Field(
        False,
        exclude_if=lambda v: not v,
        description="Run by a tool of the agent's own (a framework's tool node), not by the "
        "domain: the trial's state never saw it (written only when true).",
    )


class ToolResult(_Model):
    """What the tool returned (``ok``) or the error the agent was shown instead."""

    type: Literal["tool_result"] = "tool_result"
    turn: int
    call_id: str
    name: str
    ok: bool
    result: Any = None
    error: str | None = None


class InvalidCall(_Model):
    """A call that never ran: unknown tool, arguments that are not JSON or fail the schema."""

    type: Literal["invalid_call"] = "invalid_call"
    turn: int
    call_id: str
    name: str
    reason: str


class Signal(_Model):
    """A control signal: the user stopped, gave up, or asked for a transfer; the agent transferred."""

    type: Literal["signal"] = "signal"
    turn: int
    role: Literal["user", "agent"]
    signal: Literal["stop", "give_up", "transfer"]


class ModelCall(_Model):
    """One model call (after retries) made on behalf of a role."""

    type: Literal["model_call"] = "model_call"
    turn: int
    role: Role
    model: str
    usage: Usage
    error: str | None = None


class ErrorEvent(_Model):
    """Something broke that is not the agent's fault or is unrecoverable for this trial."""

    type: Literal["error"] = "error"
    turn: int
    source: str = Field(description="Where it broke: agent, simulator, judge, tool, lab.")
    kind: str = Field(
        description="auth | bad_request | not_found | transient | context_window | timeout | crash"
        " | read_wrote | invalid_state | bad_result | empty_message | budget (the simulated user's model"
        " crossed the trial's token or cost limit)"
    )
    message: str


class ToolFault(_Model):
    """A fault the scenario injected into a tool call (its ``faults:`` block): the ``tool_result``
    with the same ``call_id`` is what the agent met instead of the tool's own answer. Not an error
    of the lab or of the domain: the trial goes on, and the graders see how the agent coped."""

    type: Literal["tool_fault"] = "tool_fault"
    turn: int
    call_id: str
    name: str = Field(description="The tool.")
    kind: Literal["error", "timeout", "override", "stale"]
    call_number: int = Field(description="Which call of the tool in the trial it hit (1 = the first).")
    fault: int = Field(description="The fault's index in the scenario's faults: list.")


Event = Annotated[
    UserMessage
    | AgentMessage
    | ToolCall
    | ToolResult
    | InvalidCall
    | Signal
    | ModelCall
    | ErrorEvent
    | ToolFault
    | GraphStep
    | GraphState
    | Handoff
    | PendingToolCall,
    Field(discriminator="type"),
]


class TerminationReason(str, Enum):
    GOAL_REACHED = "goal_reached"  # the user said the goal is met (stop signal)
    USER_GAVE_UP = "user_gave_up"
    AGENT_TRANSFERRED = "agent_transferred"
    MAX_TURNS = "max_turns"  # turn cap: a fail, never a silent pass
    AGENT_LOOP = "agent_loop"  # same tool and arguments three times in a row
    BUDGET_EXCEEDED = "budget_exceeded"  # tokens, cost or wall time per trial
    CONTEXT_WINDOW = "context_window"  # the agent's model: the agent's failure
    AGENT_ERROR = "agent_error"  # the agent under test raised: its failure, not the lab's
    ERROR = "error"  # infrastructure: retries exhausted, a dead endpoint, the simulator's model, a lab crash
    DIVERGED = "diverged"  # a replay stopped: the agent's turn no longer matched the recording
    OBSERVED = "observed"  # an imported production conversation: it ended where its record ends
    SCRIPT_ENDED = "script_ended"  # the user had no lines left (a script, a recording) and signalled nothing


class Termination(_Model):
    reason: TerminationReason
    detail: str = ""
    turn: int = 0


class Pin(_Model):
    """Exactly what played a role: kind, model or reference, and its settings."""

    kind: str = Field(
        description="llm | python | http | langgraph | openai_agents | pydantic_ai | rules | scripted"
    )
    ref: str = Field(description="Model string or module:attr.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Temperature, api_base, seed… never secrets."
    )


def spends_nothing_unseen(kind: str | None, settings: dict[str, Any]) -> bool:
    """Whether a role that recorded no model call spent nothing: a model (its calls are all
    recorded), a deterministic simulator, or a Python agent that declares ``uses_models = False``.
    Any other Python agent may call models simlab cannot see: its spend is unknown."""
    return kind in ("llm", "scripted", "rules") or (kind == "python" and settings.get("uses_models") is False)


class ObservedFrom(_Model):
    """Where an observed trial (an imported production conversation) came from."""

    format: str = Field(description="The import format: openai (message JSONL) or otlp (OTLP JSON spans).")
    source: str = Field(description="File and place in it: path:line, or path and trace id.")
    conversation_id: str = Field(
        description="The conversation's own id in the source (line id, trace id, session)."
    )
    feedback: list[Any] = Field(
        default_factory=list, description="User feedback the source carried, as given."
    )
    negative_feedback: bool = Field(
        False, description="Whether that feedback was negative (thumbs down, score < 0)."
    )
    error: str | None = Field(None, description="An error the source recorded (a span with error status).")
    redactions: int = Field(0, description="How many PII matches were masked before the trial was written.")
    hidden: dict[str, int] = Field(
        default_factory=dict,
        description="Model calls whose input or output the source left unrecorded, by side (input, output): "
        "what was said there is missing, so the text cannot be judged.",
    )


class ReplayInfo(_Model):
    """A trial that replayed the user turns of a recorded one: which, and where the agent diverged."""

    run: str = Field(description="The run the recording came from.")
    unit_id: str = Field(description="The recorded trial.")
    divergence: str = Field(description="What counted as diverging: never | tools.")
    then: str = Field(description="What followed a divergence: stop, or the simulator that took over.")
    diverged_turn: int | None = Field(
        None, description="The first agent turn that differed from the recording; None when none did."
    )
    reason: str = Field("", description="How that turn differed.")


class Transcript(_Model):
    """One trial, complete: what was said, done, spent, and why it ended."""

    schema_version: int = TRANSCRIPT_SCHEMA_VERSION
    run_id: str
    unit_id: str = Field(description="scenario_id#trial: the unit's identity inside its run.")
    scenario_id: str
    persona_id: str
    domain: str
    trial: int
    seed: int
    agent: Pin
    simulator: Pin
    agent_context: dict[str, Any] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    history_events: int = Field(
        0,
        ge=0,
        description="How many of the first events are the scenario's history "
        "(turn 0): given, not played; live turns start at 1.",
    )
    termination: Termination
    final_state: dict[str, Any] | None = None
    observed: ObservedFrom | None = Field(
        None,
        description="Set for an observed trial: an imported conversation "
        "(no simulator, no environment, tool results as recorded).",
    )
    replay: ReplayInfo | None = Field(
        None, description="Set when the user turns were replayed from a recording."
    )
    started_at: str = ""
    duration_s: float | None = Field(
        0.0,
        description="Wall-clock seconds of the trial; None when unknown (an "
        "imported conversation whose source has no times).",
    )

    def usage_by_role(self) -> dict[str, Usage]:
        """Sum of model-call usage per role; roles with no call are absent. A sum with any
        unknown part is unknown (None), never a silent undercount."""
        totals: dict[str, Usage] = {}
        for event in self.events:
            if isinstance(event, ModelCall):
                totals[event.role] = totals[event.role] + event.usage if event.role in totals else event.usage
        return totals

    def known_cost_usd(self) -> float:
        """The cost of the calls whose price is known: a lower bound, for budgets that must stop a
        run (an unknown price cannot be counted; reports show it as unknown)."""
        return sum(
            e.usage.cost_usd for e in self.events if isinstance(e, ModelCall) and e.usage.cost_usd is not None
        )

    def user_turns(self) -> int:
        return sum(1 for e in self.events if isinstance(e, UserMessage))

    def tool_calls(self) -> list[ToolCall]:
        return [e for e in self.events if isinstance(e, ToolCall)]


class TrialRecord(_Model):
    """One line of ``trials.jsonl``: a transcript plus the checks graded on it."""

    schema_version: int = RECORD_SCHEMA_VERSION
    unit_id: str
    head: dict[str, Any] | None = Field(
        None,
        description="A TrialHead (transcript/head.py) as stored: derived when the line is written "
        "(transcript/row.py: the trial's flat figures), so readers need not parse the "
        "transcript; computed afresh whenever the line is written again. Kept as the stored "
        "dict: typing it on every record read measured 2-8 % slower (TrialHead.model_validate "
        "types it; record_head computes it).",
    )
    transcript: Transcript
    checks: list[Check] = Field(default_factory=list, description="Filled by the graders.")
    verdict: str | None = Field(
        None, description="pass | fail | invalid | error | unjudged; None until graded."
    )
    attempt: int = Field(
        1,
        ge=1,
        description="1 + the earlier attempts of this unit that ended in an "
        "infrastructure error and were played again on resume.",
    )
    earlier_attempts: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Those earlier attempts: verdict, termination and its detail, start time "
        "(the whole lines are kept in retired.jsonl).",
    )
