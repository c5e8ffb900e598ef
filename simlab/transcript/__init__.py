"""Transcript model: a discriminated union of events, usage, termination."""

from simlab.transcript.checks import Check, CheckKind, CheckStatus, Verdict
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
