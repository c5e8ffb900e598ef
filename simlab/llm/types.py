"""simlab's own small types for model calls. Nothing here imports LiteLLM."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from simlab.transcript import Pin, Usage

Message = dict[str, Any]  # OpenAI chat format: role, content, tool_calls, tool_call_id


@dataclass
class ToolCallRequest:
    """A tool call as the model wrote it; ``arguments`` is the raw JSON text (may be invalid)."""

    id: str
    name: str
    arguments: str


@dataclass
class ChatResult:
    text: str | None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None


class ModelErrorKind(str, Enum):
    AUTH = "auth"  # 401/403: permanent, stops the run
    NOT_FOUND = "not_found"  # unknown model: permanent, stops the run
    BAD_REQUEST = "bad_request"  # 400: permanent, stops the run
    CONTEXT_WINDOW = "context_window"  # ends the trial with its own termination reason
    TRANSIENT = "transient"  # retries exhausted: the trial is an error, the run goes on
    TIMEOUT = "timeout"  # per-call timeout after retries: like transient
    UNREACHABLE = "unreachable"  # no connection (refused, DNS): retried; if it never answered, stops the run

    @property
    def permanent(self) -> bool:
        """Errors no trial should be blamed for: the run stops, nothing is recorded for them."""
        return self in (
            ModelErrorKind.AUTH,
            ModelErrorKind.NOT_FOUND,
            ModelErrorKind.BAD_REQUEST,
            ModelErrorKind.UNREACHABLE,
        )

    @property
    def retryable(self) -> bool:
        return self in (ModelErrorKind.TRANSIENT, ModelErrorKind.TIMEOUT, ModelErrorKind.UNREACHABLE)


class ModelError(Exception):
    """A model call failed for good. Carries the role and model so the message can name them."""

    def __init__(
        self,
        kind: ModelErrorKind,
        message: str,
        *,
        role: str = "",
        model: str = "",
        usage: Usage | None = None,
    ):
        self.kind = kind
        self.role = role
        self.model = model
        self.usage = usage or Usage()
        super().__init__(message)

    def describe(self) -> str:
        who = f"{self.role} model {self.model}" if self.role else f"model {self.model}"
        return f"{who}: {self.kind.value}: {self}"


@runtime_checkable
class ChatModel(Protocol):
    """One async chat call. Implementations: ``LiteLLMModel`` and the test doubles in ``fakes``."""

    role: str
    model: str

    def pin(self) -> Pin: ...

    async def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, seed: int | None = None
    ) -> ChatResult: ...
