"""A scenario's ``history:``: the conversation a trial starts from, played into its environment.

Why here (the env layer): the history's tool calls run on the trial's own ``Environment``, so that
their writes hold as if the agent had made them; the graders replay them the same way to get the
state the trial started from (``start_state``). History events carry turn 0 and come first in the
transcript (``Transcript.history_events`` counts them): live turns start at 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from simlab.env.domain import Domain, Environment
from simlab.specs.scenario import HistoryItem, Scenario
from simlab.transcript import AgentMessage, ToolCall, ToolResult, UserMessage

HISTORY_TURN = 0


class HistoryError(Exception):
    """A history tool call failed when run on the initial state (a scenario bug)."""

    def __init__(self, index: int, problem: str):
        super().__init__(f"history[{index}]: {problem}")
        self.index, self.problem = index, problem


@dataclass
class PlayedHistory:
    """What the history became: transcript events, the plain conversation (what simulators and agents
    see as ``messages``) and the same in OpenAI chat format with the tool calls (``AgentInput.history``)."""

    events: list[Any] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    chat: list[dict[str, Any]] = field(default_factory=list)


def play_history(env: Environment, items: list[HistoryItem]) -> PlayedHistory:
    """Run the history's tool calls on ``env`` (writes change its state) and build its events.
    Raises ``HistoryError`` naming the step whose call failed."""
    played = PlayedHistory()
    for i, item in enumerate(items):
        if item.user is not None:
            played.events.append(UserMessage(turn=HISTORY_TURN, text=item.user))
            played.messages.append({"role": "user", "content": item.user})
            played.chat.append({"role": "user", "content": item.user})
        elif item.agent is not None:
            played.events.append(AgentMessage(turn=HISTORY_TURN, text=item.agent))
            played.messages.append({"role": "assistant", "content": item.agent})
            played.chat.append({"role": "assistant", "content": item.agent})
        else:
            _play_call(env, i, item, played)
    return played


def _play_call(env: Environment, i: int, item: HistoryItem, played: PlayedHistory) -> None:
    name = str(item.tool)
    outcome = env.execute(name, dict(item.args))
    if not outcome.ok:
        raise HistoryError(i, f"{name} failed when run on the initial state: {outcome.error}")
    call_id = f"history-{i}"
    raw = json.dumps(item.args, sort_keys=True, default=str)
    result = item.result if "result" in item.model_fields_set else outcome.result
    played.events.append(
        ToolCall(
            turn=HISTORY_TURN,
            call_id=call_id,
            name=name,
            arguments=dict(item.args),
            raw_arguments=raw,
            access=outcome.access.value if outcome.access else None,
        )
    )
    played.events.append(ToolResult(turn=HISTORY_TURN, call_id=call_id, name=name, ok=True, result=result))
    played.chat.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}],
        }
    )
    played.chat.append(
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": result if isinstance(result, str) else json.dumps(result, default=str),
        }
    )


def start_state(domain: Domain, scenario: Scenario) -> BaseModel:
    """The state a trial of ``scenario`` starts its live turns from: the initial state with the
    history's calls run on it. Raises ``ValidationError`` (a bad initial state) or ``HistoryError``."""
    env = Environment(domain, domain.build_state(scenario.initial_state))
    if scenario.history:
        play_history(env, scenario.history)
    return env.state
