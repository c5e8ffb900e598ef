"""Scenario: one case a simulated user plays against the agent."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from simlab.specs.base import SPEC_ID, Regex, SpecModel
from simlab.specs.expect import Expect
from simlab.specs.faults import ToolFault
from simlab.specs.persona import Persona


class UserSpec(SpecModel):
    """What the simulated user wants, knows, and must keep to itself."""

    goal: str = Field(description="The hidden goal, in the user's terms. The agent never sees it.")
    known_facts: dict[str, Any] = Field(
        default_factory=dict, description="Facts the user can tell when asked: {name: value}."
    )
    never_reveal: dict[str, Any] = Field(
        default_factory=dict,
        description="Facts the user must never say: {name: value} (a list of values is accepted too).",
    )
    success_phrases: list[Regex] = Field(
        default_factory=list,
        description="Regexes (case-insensitive): an agent reply matching one means the goal is met.",
    )
    reject_phrases: list[Regex] = Field(
        default_factory=list,
        description="Regexes: offers the user refuses (e.g. 'store credit').",
    )
    give_up_phrases: list[Regex] = Field(
        default_factory=list,
        description="Regexes: an agent reply matching one makes the goal hopeless (the user gives up).",
    )
    opening: str | None = Field(
        None, description="A fixed first message; otherwise the simulator writes one."
    )
    script: list[str] = Field(default_factory=list, description="User turns for the scripted simulator.")

    @field_validator("never_reveal", mode="before")
    @classmethod
    def _list_to_mapping(cls, value: Any) -> Any:
        """``[the card number, {pin: 1234}]`` becomes ``{the card number: ..., pin: 1234}``."""
        if not isinstance(value, list):
            return value
        mapping: dict[str, Any] = {}
        for item in value:
            if isinstance(item, dict):
                mapping.update({str(k): v for k, v in item.items()})
            elif isinstance(item, list):
                raise ValueError("give facts as text or {name: value}, not nested lists")
            else:
                mapping[str(item)] = item
        return mapping


class HistoryItem(SpecModel):
    """One step of the conversation a trial starts from: a user message, an agent message, or a tool
    call the agent made (run on the initial state when the trial starts, so its writes hold)."""

    user: str | None = Field(None, description="A message the user sent.")
    agent: str | None = Field(None, description="A message the agent sent.")
    tool: str | None = Field(None, description="A tool the agent called (a tool of the scenario's domain).")
    args: dict[str, Any] = Field(default_factory=dict, description="The call's arguments (with tool).")
    result: Any = Field(
        None,
        description="The result the agent saw (with tool); default: what the tool returns "
        "when the call is run on the initial state.",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> HistoryItem:
        given = [k for k in ("user", "agent", "tool") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of user, agent or tool" + (f" (got {', '.join(given)})" if given else "")
            )
        if self.tool is None and ("args" in self.model_fields_set or "result" in self.model_fields_set):
            raise ValueError("args and result belong to a tool step")
        return self

    @property
    def kind(self) -> str:
        return "user" if self.user is not None else "agent" if self.agent is not None else "tool"


class Limits(SpecModel):
    """Run-time caps: hitting one ends the trial with ``budget_exceeded``."""

    max_tokens: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0)
    max_seconds: float | None = Field(
        1800,
        gt=0,
        description="Wall seconds of one trial (default 1800: every agent is bounded); null: no limit.",
    )
    max_agent_steps: int = Field(10, ge=1, description="Tool-call rounds within one agent turn.")
    max_tool_result_bytes: int = Field(
        1_000_000,
        ge=1,
        description="The longest tool result kept (as JSON); a longer one is cut, and the agent is told.",
    )
    max_reply_bytes: int = Field(
        2_000_000,
        ge=1,
        description="The longest reply of one agent turn (UTF-8 bytes); a longer one is the agent's "
        "failure (agent_error), kept as its start.",
    )
    max_turn_seconds: float | None = Field(
        300,
        gt=0,
        description="Wall seconds of one agent turn (default 300: "
        "a hung agent ends its trial); null: no limit.",
    )


class Scenario(SpecModel):
    """One case: who the user is, what they want, the starting state, and what must be true."""

    id: str = Field(pattern=SPEC_ID)
    title: str
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    domain: str = Field(description="Built-in domain name or an importable module (module or module:attr).")
    persona: str | Persona = Field(description="A persona id from personas/, or an inline persona.")
    user: UserSpec
    agent_context: dict[str, Any] = Field(
        default_factory=dict, description="Told to the agent up front: signed-in customer, channel, role…"
    )
    initial_state: dict[str, Any] = Field(
        default_factory=dict, description="Overrides deep-merged over the domain's seed data."
    )
    history: list[HistoryItem] = Field(
        default_factory=list,
        description="Earlier user and agent messages and tool calls the trial starts from "
        "(mid-conversation): the "
        "agent sees them, their tool calls run on the initial state first, graders see them as history.",
    )
    max_turns: int = Field(12, ge=1, le=500)
    trials: int | None = Field(None, ge=1, le=10_000, description="Trials per run; default from simlab.yaml.")
    limits: Limits = Field(default_factory=Limits)
    expect: Expect = Field(default_factory=Expect)
    faults: list[ToolFault] = Field(
        default_factory=list,
        description="Tool faults injected on purpose, deterministically: a tool fails, times "
        "out, or answers overridden or stale data on its Nth call or with a "
        "seeded probability (recorded as tool_fault events).",
    )

    @property
    def persona_id(self) -> str:
        return self.persona if isinstance(self.persona, str) else self.persona.id
