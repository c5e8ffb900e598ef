"""Transcript model: a discriminated union of events, usage, termination."""

from simlab.transcript.checks import Check, CheckKind, CheckStatus, Verdict
from simlab.transcript.framework_events import GraphState, GraphStep, Handoff, PendingToolCall
from simlab.transcript.model import (
    TRANSCRIPT_SCHEMA_VERSION,
    AgentMessage,
    ErrorEvent,
    Event,
    InvalidCall,
    ModelCall,
    Pin,
    Signal,
    Termination,
    TerminationReason,
    ToolCall,
    ToolResult,
    Transcript,
    TrialRecord,
    Usage,
    UserMessage,
)

__all__ = [
    "Check",
    "CheckKind",
    "CheckStatus",
    "Verdict",
    "TRANSCRIPT_SCHEMA_VERSION",
    "AgentMessage",
    "ErrorEvent",
    "Event",
    "GraphState",
    "GraphStep",
    "Handoff",
    "PendingToolCall",
    "InvalidCall",
    "ModelCall",
    "Pin",
    "Signal",
    "Termination",
    "TerminationReason",
    "ToolCall",
    "ToolResult",
    "Transcript",
    "TrialRecord",
    "Usage",
    "UserMessage",
]
