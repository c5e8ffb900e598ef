"""The LLM layer: the only place that talks to LiteLLM, and it does so lazily.

Importing this package is cheap: LiteLLM is loaded on the first real call (``load_litellm``),
so ``simlab validate``/``report``/``view`` never pay for it.
"""

from simlab.llm.client import LiteLLMModel, make_model, parse_response
from simlab.llm.fakes import (
    FAKE_PROVIDER,
    FunctionModel,
    ScriptedModel,
    ScriptExhaustedError,
    register_fake,
    register_fake_provider,
    unregister_fake,
)
from simlab.llm.family import is_pinned, model_family, same_family
from simlab.llm.lazy import load_litellm
from simlab.llm.limits import ModelLimiter
from simlab.llm.retry import RetryPolicy, classify, retry_after_seconds
from simlab.llm.types import ChatModel, ChatResult, Message, ModelError, ModelErrorKind, ToolCallRequest

__all__ = [
    "FAKE_PROVIDER",
    "ChatModel",
    "ChatResult",
    "FunctionModel",
    "LiteLLMModel",
    "Message",
    "ModelError",
    "ModelErrorKind",
    "ModelLimiter",
    "RetryPolicy",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ToolCallRequest",
    "classify",
    "is_pinned",
    "load_litellm",
    "make_model",
    "model_family",
    "parse_response",
    "register_fake",
    "register_fake_provider",
    "retry_after_seconds",
    "same_family",
    "unregister_fake",
]
