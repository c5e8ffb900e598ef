"""What an agent's turn was waiting on when its time bound (``limits.max_turn_seconds``) ran out.

A turn that runs over its bound is the agent's failure when the agent's own code hung; it is its
provider's when the agent sat waiting for its model's answer (a provider slower than any bound, a
``Retry-After`` longer than the turn): an agent's provider failing is infrastructure, never the
agent's regression (``llm/agent_errors.py`` says the same of the errors a client raises).

At the deadline, before anything is cancelled, every task of the turn is read where it is
suspended: the turn's own task and the tasks started inside it (a framework runs its nodes, its
model requests and its tools in tasks of its own; they are known by a context variable they
inherit, registered by a task factory on the loop, put there while a watch is active and taken off
when the last one ends: the loop, a user's included, gets its own factory back). A task suspended
inside a model client's code (``openai``, ``litellm``, ``anthropic``…) means the turn was waiting
on its provider.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["MODEL_CLIENTS", "TurnWatch", "waiting_on"]

# module prefixes of model clients: a frame of one of them, suspended, is a request in flight (or
# its retry's wait: the clients' own, and the Agents SDK's retries of a model call)
MODEL_CLIENTS = (
    "agents.run_internal.model_retry",
    "openai",
    "anthropic",
    "litellm",
    "google.genai",
    "google.api_core",
    "mistralai",
    "groq",
    "cohere",
)
_SHOWN = {"agents.run_internal.model_retry": "Agents SDK model retry"}  # the name an error gives it
_IDLE = ("logging", "worker", "callback")  # a client's background tasks that sit in its code, idle
_TURN: contextvars.ContextVar[TurnWatch | None] = contextvars.ContextVar("simlab_turn", default=None)
_WATCHED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Installed] = weakref.WeakKeyDictionary()


class TurnWatch:
    """The tasks of one agent turn, and what they waited on when its bound ran out."""

    def __init__(self) -> None:
        self.tasks: weakref.WeakSet[asyncio.Future[Any]] = weakref.WeakSet()
        self.waiting: str | None = None  # the model client a task of the turn was suspended in

    def __enter__(self) -> TurnWatch:
        self._loop = asyncio.get_running_loop()
        _watch_tasks(self._loop)
        self._token = _TURN.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _TURN.reset(self._token)
        _unwatch_tasks(self._loop)

    def observe(self, task: asyncio.Task[Any] | None) -> None:
        """Read the turn's tasks where they are suspended (call it before cancelling them)."""
        tasks = [task] if task is not None else []
        self.waiting = waiting_on(tasks + [t for t in list(self.tasks) if not t.done()])


class _Installed:
    """simlab's factory on one loop: the factory it replaced, and how many watches are active."""

    def __init__(self, factory: Any, previous: Any) -> None:
        self.factory = factory
        self.previous = previous
        self.active = 0


def _watch_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """A task factory that registers each task started inside a turn with that turn's watch; it
    hands the making of the task to the loop's own factory, if it had one."""
    installed = _WATCHED.get(loop)
    if installed is None:
        previous = loop.get_task_factory()

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
            if previous is not None:
                task = previous(loop, coro, **kwargs)
            else:
                task = asyncio.Task(coro, loop=loop, **kwargs)
            context = kwargs.get("context")
            watch = context.get(_TURN) if context is not None else _TURN.get()
            if watch is not None:
                watch.tasks.add(task)
            return task

        loop.set_task_factory(factory)
        installed = _WATCHED[loop] = _Installed(factory, previous)
    installed.active += 1


def _unwatch_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """One watch of this loop ended; the last one gives the loop its own factory back (unless
    someone put another in the meantime: theirs stays)."""
    installed = _WATCHED.get(loop)
    if installed is None:
        return
    installed.active -= 1
    if installed.active > 0:
        return
    del _WATCHED[loop]
    if loop.get_task_factory() is installed.factory:
        loop.set_task_factory(installed.previous)


def waiting_on(tasks: list[Any]) -> str | None:
    """The model client (a ``MODEL_CLIENTS`` prefix) one of these tasks is suspended in, or None."""
    for task in tasks:
        for frame in _frames(task.get_coro()):
            module = str(frame.f_globals.get("__name__") or "")
            client = next((c for c in MODEL_CLIENTS if module == c or module.startswith(c + ".")), None)
            if client is not None and not any(word in module for word in _IDLE):
                return _SHOWN.get(client, client)
    return None


def _frames(awaitable: Any) -> Iterator[FrameType]:
    """The frames of a suspended coroutine and of what it awaits, outermost first (through
    generators and async generators, whose ``asend`` objects hold their generator)."""
    for _ in range(500):
        if awaitable is None:
            return
        frame = _first(awaitable, ("cr_frame", "gi_frame", "ag_frame"))
        if frame is None:  # an async generator's asend/athrow: its generator is among its referents
            inner = [r for r in gc.get_referents(awaitable) if getattr(r, "ag_frame", None) is not None]
            if not inner:
                return
            awaitable = inner[0]
            continue
        yield frame
        awaitable = _first(awaitable, ("cr_await", "gi_yieldfrom", "ag_await"))


def _first(value: Any, names: tuple[str, ...]) -> Any:
    return next((getattr(value, n) for n in names if getattr(value, n, None) is not None), None)
