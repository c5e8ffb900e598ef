"""What an agent's turn was waiting on when its time bound (``limits.max_turn_seconds``) ran out.

A turn that runs over its bound is the agent's failure when the agent's own code hung; it is its
provider's when the agent sat waiting for its model's answer (a provider slower than any bound, a
``Retry-After`` longer than the turn): an agent's provider failing is infrastructure, never the
agent's regression (``llm/agent_errors.py`` says the same of the errors a client raises).

At the deadline, before anything is cancelled, the blame follows what the turn's task was really
waiting on: its chain of awaits, then the future it is suspended on and whatever will resolve it
(a task it awaits, the children of a ``gather``, the tasks an ``asyncio.wait`` or a ``TaskGroup``
waits for: a task whose done-callbacks lead to that future; a job handed to a thread, whose frames
are read; failing those, a task whose frames hold the future: the sending end of a channel the turn
reads, as pydantic-ai's graph runs), and so on. A frame of a model client's code (``openai``,
``litellm``, ``anthropic``…) on that path means the turn was waiting on its provider. A client's
request merely in flight in some other task (a warm-up never awaited, a pooled connection kept
alive, LiteLLM's own tasks after a call) is not what the turn waited on: an agent hung in its own
code beside it is the agent's failure.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import sys
import threading
from collections.abc import Iterable, Iterator
from types import (
    AsyncGeneratorType,
    CoroutineType,
    FrameType,
    FunctionType,
    GeneratorType,
    MethodType,
    ModuleType,
)
from typing import Any

__all__ = [
    "MODEL_CLIENTS",
    "RETRY_WAIT",
    "TurnWatch",
    "described",
    "thread_waiting",
    "waited_model",
    "waiting_on",
]

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
# simlab's own wait before retrying a model agent's call or an HTTP agent's exchange that failed (a
# 429 with a long Retry-After): only that function, not the attempt it retries (a service that
# hangs on its own is the agent's)
RETRY_WAIT = ("simlab.llm.retry", "wait_out")
# the names an error gives them (a model client's is "its <client> client")
_SHOWN = {
    "agents.run_internal.model_retry": "the Agents SDK's retry of a model call",
    RETRY_WAIT[0]: "simlab's retry of a failed call",
}


def described(waiting: str) -> str:
    """What a turn was waiting on (``waiting_on``'s answer: a ``MODEL_CLIENTS`` prefix or
    ``RETRY_WAIT``'s module), as an error says it."""
    return _SHOWN.get(waiting, f"its {waiting} client")


def waited_model(waiting: str) -> str:
    """The model an error names for what the turn waited on (``described``, as a name)."""
    return _SHOWN.get(waiting, f"{waiting} client")


_IDLE = ("logging", "worker", "callback")  # a client's background tasks that sit in its code, idle
_REACH = 4  # how many references from a done-callback to the future it resolves (a closure's cell,
# a bound method's object and its __dict__, a partial's arguments)
_REACH_LOCALS = 8  # and from a task's frame to it (its sending end, the channel's state, the waiting
# receiver's event and the futures waiting on it)
_VISITS = 20_000  # the objects read from one task at most
_BUDGET = 200_000  # and in all, for one turn: reading them holds up the loop (every trial's clock)


class TurnWatch:
    """What one agent turn waited on when its bound ran out."""

    def __init__(self) -> None:
        self.waiting: str | None = None  # the model client the turn was waiting on

    def observe(self, task: asyncio.Task[Any] | None) -> None:
        """Read what the turn's task waits on (call it before cancelling it)."""
        self.waiting = waiting_on(task) if task is not None else None


def waiting_on(task: asyncio.Future[Any]) -> str | None:
    """The model client (a ``MODEL_CLIENTS`` prefix, or ``RETRY_WAIT``'s module) this task is
    waiting on, through the tasks and threads it awaits, or None."""
    others: list[asyncio.Task[Any]] | None = None  # the loop's other tasks, read once if needed
    budget = [_BUDGET]  # the objects the whole search may still read (it holds up the loop)
    seen: set[int] = set()
    todo: list[Any] = [task]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, threading.Thread):
            client = _client(_thread_frames(current))
            if client is not None:
                return client
            continue
        if isinstance(current, asyncio.Task):
            client = _client(_frames(current.get_coro()))
            if client is not None:
                return client
            current = getattr(current, "_fut_waiter", None)  # the future it is suspended on
            if current is None or isinstance(current, asyncio.Task) or id(current) in seen:
                todo.extend([current] if current is not None else [])  # an awaited task: its own
                continue
            seen.add(id(current))
        if others is None:  # the tasks in a model client's code first: they are what may be blamed
            others = [t for t in asyncio.all_tasks(current.get_loop()) if not t.done()]
            others.sort(key=lambda t: _client(_frames(t.get_coro())) is None)
        todo.extend(_resolvers(current, others, budget))
    return None


def thread_waiting(job: concurrent.futures.Future[Any]) -> str | None:
    """The model client (a ``MODEL_CLIENTS`` prefix) the thread running ``job`` is in, or None: a
    sync agent's turn cut off while its blocking client waited for the model's answer."""
    for thread in _threads_of(job):
        client = _client(_thread_frames(thread))
        if client is not None:
            return client
    return None


def _resolvers(future: asyncio.Future[Any], tasks: list[asyncio.Task[Any]], budget: list[int]) -> list[Any]:
    """What will resolve ``future``: a gather's children, the tasks whose done-callbacks lead to it
    (``asyncio.wait``, a ``TaskGroup``, ``shield``), the thread running the job it wraps; failing
    those, the tasks whose suspended frames hold it (the sending end of a channel the turn reads)."""
    found: list[Any] = list(getattr(future, "_children", None) or ())  # asyncio.gather
    for task in tasks:
        callbacks = [callback for callback, _ in getattr(task, "_callbacks", None) or ()]
        if _holds(callbacks, future, _REACH, budget):
            found.append(task)
    for callback, _ in getattr(future, "_callbacks", None) or ():  # wrap_future: it cancels its source
        for job in _found(callback, concurrent.futures.Future, _REACH, budget):
            found.extend(_threads_of(job))
    if not found:
        found = [task for task in tasks if _holds(_locals(task), future, _REACH_LOCALS, budget)]
    return found


def _locals(task: asyncio.Future[Any]) -> list[Any]:
    get_coro = getattr(task, "get_coro", None)
    return [value for frame in _frames(get_coro() if get_coro else None) for value in frame.f_locals.values()]


def _client(frames: Iterable[FrameType]) -> str | None:
    for frame in frames:
        module = str(frame.f_globals.get("__name__") or "")
        if (module, frame.f_code.co_name) == RETRY_WAIT:
            return module
        client = next((c for c in MODEL_CLIENTS if module == c or module.startswith(c + ".")), None)
        if client is not None and not any(word in module for word in _IDLE):
            return client
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


def _threads_of(job: concurrent.futures.Future[Any]) -> Iterator[threading.Thread]:
    """The threads running ``job`` (a ``concurrent.futures`` work item's future): an executor's, or
    the thread a sync agent's turn runs on."""
    stacks = sys._current_frames()
    for thread in threading.enumerate():
        if getattr(thread, "job", None) is job:  # a sync agent's own thread (sim/agent_thread.py)
            yield thread
            continue
        frame = stacks.get(thread.ident or -1)
        while frame is not None:
            module = frame.f_globals.get("__name__")
            if frame.f_code.co_name == "run" and module == "concurrent.futures.thread":
                if getattr(frame.f_locals.get("self"), "future", None) is job:
                    yield thread
                break
            frame = frame.f_back


def _thread_frames(thread: threading.Thread) -> Iterator[FrameType]:
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        yield frame
        frame = frame.f_back


def _holds(value: Any, target: Any, depth: int, budget: list[int]) -> bool:
    return any(found is target for found in _found(value, type(target), depth, budget))


def _found(value: Any, kind: type, depth: int, budget: list[int]) -> Iterator[Any]:
    """The objects of ``kind`` that ``value`` leads to in at most ``depth`` references (at most
    ``_VISITS`` objects read, and what is left of ``budget``), through what a callback or a frame
    holds (closure cells, a bound method's object, a partial's arguments, containers, an object's
    attributes and slots), never through modules, classes, a function's globals, or another task,
    coroutine or frame."""
    layer, seen = [value], {id(value)}
    for _ in range(depth + 1):
        following: list[Any] = []
        for item in layer:
            if isinstance(item, kind) and item is not value:
                yield item
                continue
            for inner in _held(item):
                if id(inner) not in seen and len(seen) < _VISITS and budget[0] > 0:
                    seen.add(id(inner))
                    budget[0] -= 1
                    following.append(inner)
        layer = following


_OPAQUE = (
    ModuleType,
    type,
    str,
    bytes,
    int,
    float,
    FrameType,
    CoroutineType,
    GeneratorType,
    AsyncGeneratorType,
    asyncio.Task,
    threading.Thread,
)


def _held(value: Any) -> list[Any]:
    if value is None or isinstance(value, _OPAQUE):
        return []
    if isinstance(value, FunctionType):
        return [c.cell_contents for c in value.__closure__ or () if _filled(c)]
    if isinstance(value, MethodType):
        return [value.__self__, value.__func__]
    return [v for v in gc.get_referents(value) if not isinstance(v, (ModuleType, type))]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True
