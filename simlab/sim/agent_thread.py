"""A synchronous agent's turn on a thread of its own, so that the event loop stays free and the
turn's bound (``limits.max_turn_seconds``, ``limits.max_seconds``) can cut off a ``def`` agent that
hangs (blocked, or busy in a loop) as it cuts off an async one.

Python cannot kill a thread: a hung one is abandoned. The threads are daemons, never joined (not a
``ThreadPoolExecutor``'s, which the interpreter and ``asyncio.run`` wait for at exit), so a thread
stuck for good never keeps a run from returning or the process from exiting. A thread is reused
while it behaves (a hand-over costs a few microseconds; starting a thread, ~0.1 ms)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["AgentThreads", "call_on_thread"]


class _AgentThread(threading.Thread):
    def __init__(self, idle: queue.SimpleQueue[_AgentThread]) -> None:
        super().__init__(name="simlab-agent", daemon=True)
        self.jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.job: concurrent.futures.Future[Any] | None = None  # what it runs now (sim/turn_wait.py reads it)
        self._idle = idle
        self.start()

    def run(self) -> None:
        while True:
            future, func, args = self.jobs.get()
            self.job = future
            if not future.set_running_or_notify_cancel():
                self.job = None
                self._idle.put(self)
                continue
            value: Any = None
            error: BaseException | None = None
            try:
                value = func(*args)
            except BaseException as exc:  # handed to the caller (StopTrial included)
                error = exc
            self.job = None
            self._idle.put(self)  # back in service only once it has returned; idle before the caller
            # hears of it, so that its next turn finds this thread and never starts one more
            if error is None:
                future.set_result(value)
            else:
                future.set_exception(error)
            del future, func, args, value, error


class AgentThreads(concurrent.futures.Executor):
    """Runs each job on an idle daemon thread, or on a new one when none is idle."""

    def __init__(self) -> None:
        self._idle: queue.SimpleQueue[_AgentThread] = queue.SimpleQueue()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if kwargs:
            return self.submit(lambda: fn(*args, **kwargs))
        try:
            worker = self._idle.get_nowait()
        except queue.Empty:
            worker = _AgentThread(self._idle)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        worker.jobs.put((future, fn, args))
        return future

    def forget(self) -> None:
        """A forked child (``--workers``) has none of its parent's threads."""
        self._idle = queue.SimpleQueue()


_THREADS = AgentThreads()
os.register_at_fork(after_in_child=_THREADS.forget)


async def call_on_thread(func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)`` on an agent thread, in a copy of the caller's context; cancelling the await
    abandons the thread (it runs on, its result dropped)."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_THREADS, context.run, func, *args)
