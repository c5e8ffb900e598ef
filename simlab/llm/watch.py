"""Completions without choices that the agent's own LiteLLM calls received during its turn.

A provider (or a proxy in front of it) may answer 200 with a completion that holds no choice. That
is the provider's failure, but some clients cannot say so: the Agents SDK's ``LitellmModel`` reads
it as an output of no item, exactly as it reads an empty message, and the agent replies nothing;
an agent of its own reading ``choices[0]`` crashes on it. Only the raw completion tells the two
apart, so while an agent's turn runs (``watched``), every completion LiteLLM returns
(``acompletion`` and ``completion``, simlab's own model agent's calls included) is looked at, and
the ones without choices are noted for the turn. The loop then blames an empty reply or a crash
of that turn on the provider (``no_choices``). Outside a watched turn, the look is one
context-variable read. LiteLLM is wrapped once, when a turn starts after it was imported (it is
never imported here for this).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from collections.abc import Iterator
from typing import Any

from simlab.llm.client import _get
from simlab.llm.types import ModelError, ModelErrorKind

__all__ = ["no_choices", "watched"]

_SEEN: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("simlab_no_choices", default=None)
_wrapped = False


@contextlib.contextmanager
def watched() -> Iterator[list[str]]:
    """The models whose completions came back without choices while the block ran (in its task,
    the tasks it starts and the threads that copy its context)."""
    if not _wrapped and "litellm" in sys.modules:
        _wrap(sys.modules["litellm"])
    seen: list[str] = []
    token = _SEEN.set(seen)
    try:
        yield seen
    finally:
        _SEEN.reset(token)


def no_choices(seen: list[str]) -> ModelError:
    """The provider's failure a turn's completions without choices stand for."""
    models = ", ".join(dict.fromkeys(seen))
    return ModelError(
        ModelErrorKind.TRANSIENT,
        f"the agent's model answered a completion without choices ({models}): the provider's answer "
        "held no reply, so the agent had none to give",
        role="agent",
        model=seen[0],
    )


def _wrap(litellm: Any) -> None:
    global _wrapped
    _wrapped = True
    for name in ("acompletion", "completion"):
        original = getattr(litellm, name, None)
        if original is None or getattr(original, "_simlab_watched", False):
            continue
        wrapper = _async_wrapper(original) if name == "acompletion" else _sync_wrapper(original)
        wrapper._simlab_watched = True
        setattr(litellm, name, wrapper)


def _async_wrapper(original: Any) -> Any:
    @functools.wraps(original)
    async def acompletion(*args: Any, **kwargs: Any) -> Any:
        response = await original(*args, **kwargs)
        _note(response, args, kwargs)
        return response

    return acompletion


def _sync_wrapper(original: Any) -> Any:
    @functools.wraps(original)
    def completion(*args: Any, **kwargs: Any) -> Any:
        response = original(*args, **kwargs)
        _note(response, args, kwargs)
        return response

    return completion


def _note(response: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    seen = _SEEN.get()
    if seen is None or kwargs.get("stream"):  # not in a turn, or a stream (read by its caller)
        return
    if not _get(response, "choices"):
        seen.append(str(kwargs.get("model") or (args[0] if args else "") or "unknown"))
