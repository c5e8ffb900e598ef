"""Transcript model: a discriminated union of events, usage, termination."""

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
    "TRANSCRIPT_SCHEMA_VERSION",
    "AgentMessage",
    "ErrorEvent",
    "Event",
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
