"""Events that only an agent built with a framework produces: the steps of a LangGraph graph, its
state at the end of a turn, a handoff between OpenAI Agents SDK agents, and the tool call a
single-step probe stopped before it ran. They are members of the transcript's event union
(``transcript/model.py``); transcripts written before they existed read as before."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GraphStep(_Model):
    """A LangGraph node finished and wrote this update to the graph state (a node transition)."""

    type: Literal["graph_step"] = "graph_step"
    turn: int
    node: str = Field(description="The node's name; a node inside a subgraph is 'parent/node'.")
    update: dict[str, Any] | None = Field(
        None,
        description="What the node wrote, as JSON data. Messages are shown short (type, the first 300 "
        "characters of the text, tool calls) and only the first time they appear (see 'omitted').",
    )
    omitted: int = Field(0, description="Messages in the update already shown in an earlier step, left out.")


class GraphState(_Model):
    """The graph's state at the end of the agent's turn (the last one is the final graph state)."""

    type: Literal["graph_state"] = "graph_state"
    turn: int
    values: dict[str, Any] = Field(
        description="The state's channels as JSON data; a list of messages is recorded as its length (the "
        "messages themselves are the transcript's other events)."
    )
    next: list[str] = Field(
        default_factory=list, description="Nodes still to run (non-empty: the graph paused)."
    )


class Handoff(_Model):
    """One agent handed the conversation to another (OpenAI Agents SDK handoffs). Policy rules name it
    as the pseudo-tool ``handoff:<target>``."""

    type: Literal["handoff"] = "handoff"
    turn: int
    call_id: str
    source: str = Field(description="The agent that handed off.")
    target: str = Field(description="The agent that took over.")


class PendingToolCall(_Model):
    """The single-step probe: the agent's first decision for the opening message, taken on a throwaway
    copy of the agent and never run. The real conversation starts afresh after it."""

    type: Literal["pending_tool_call"] = "pending_tool_call"
    turn: int
    name: str | None = Field(
        None, description="The tool the agent decided to call; None: it answered in text."
    )
    arguments: dict[str, Any] | None = Field(None, description="Its arguments; None when they were not JSON.")
    raw_arguments: str = ""
    call_id: str | None = None
    stopped_at: str = Field(
        description="How it was stopped before running: 'interrupt_before:<node>' (a "
        "LangGraph interrupt) or 'tool_boundary' (the tool refused to run)."
    )
    reply: str | None = Field(None, description="The text the agent answered with instead of a tool call.")


FRAMEWORK_EVENTS = (GraphStep, GraphState, Handoff, PendingToolCall)
