"""A synchronous agent's turn on a thread, so that the turn's bound (``limits.max_turn_seconds``,
``limits.max_seconds``) can cut off a ``def`` agent that hangs (blocked, or busy in a loop) as it
cuts off an async one.

The loop waits for the turn, as it waited when the agent ran on it: one sync turn at a time, the
trials' order and interleaving as before (a demo run stores its trials in the same order each time),
and the same thread turn after turn while the agent behaves, so an object bound to the thread that
made it (a ``sqlite3`` connection made in a turn) keeps working; one made when the agent's module
was imported belongs to the main thread. The wait ends at the bound: Python cannot kill a thread, so a
hung one is abandoned. The threads are daemons, never joined (not a ``ThreadPoolExecutor``'s,
which the interpreter and ``asyncio.run`` wait for at exit), so a thread stuck for good never keeps
a run from returning or the process from exiting."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import math
import os
import queue
import signal
import socket
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["POLL_S", "TURN_BOUND", "AgentThreads", "TurnBound", "TurnCutOff", "run_bounded", "wait_for_turn"]


_ABANDONED: weakref.WeakSet[concurrent.futures.Future[Any]] = weakref.WeakSet()  # jobs cut off


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
            if future in _ABANDONED:  # cut off at its bound: it retires, so that the thread which
                return  # took over stays the one every later turn runs on
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


@dataclass(frozen=True)
class TurnBound:
    """When the agent's turn must end, in the loop's time: its own bound and its trial's."""

    turn: float = math.inf  # limits.max_turn_seconds from the turn's start
    trial: float = math.inf  # limits.max_seconds from the trial's start


TURN_BOUND: contextvars.ContextVar[TurnBound | None] = contextvars.ContextVar(
    "simlab_turn_bound", default=None
)


class TurnCutOff(Exception):
    """A sync agent's turn ran past its bound (``by_trial``: the trial's, else the turn's); ``job``
    is what its thread still runs (``sim/turn_wait.thread_waiting`` reads what it waits on)."""

    def __init__(self, job: concurrent.futures.Future[Any], *, by_trial: bool) -> None:
        super().__init__("the agent's turn ran past its bound")
        self.job = job
        self.by_trial = by_trial


def wait_for_turn(job: concurrent.futures.Future[Any], seconds: float | None) -> bool:
    """Whether ``job`` finished within ``seconds`` (None: no bound). Tests put an event of theirs
    in its place (``tests/virtual_time.py``): a hang is decided by what they saw, not by a clock."""
    try:
        job.exception(timeout=seconds)  # waits on the job's own condition (the cheapest wait)
    except concurrent.futures.TimeoutError:
        return False
    return True


POLL_S = 0.1  # how often the waiting loop looks for a request to stop (Ctrl-C, a worker's SIGTERM)
_STOPS = frozenset({signal.SIGINT, signal.SIGTERM})


def run_bounded(func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)`` on the agent thread in a copy of the caller's context, the caller's thread
    waiting for it until the turn's bound (``TURN_BOUND``); past it, ``TurnCutOff`` and the thread
    is abandoned (it runs on, its result dropped), as it is on a request to stop the run, which
    ends the turn as cancelled. Without a bound, called where it is."""
    bound = TURN_BOUND.get()
    if bound is None:
        return func(*args)
    loop = asyncio.get_running_loop()
    if loop in _STOPPED:  # asked during another trial's turn: the loop has not stopped this one yet
        raise asyncio.CancelledError("the run was asked to stop")
    end = min(bound.turn, bound.trial)
    main = _main_task(loop)
    asked = main.cancelling() if main is not None else 0
    job = _THREADS.submit(contextvars.copy_context().run, func, *args)
    while not wait_for_turn(job, max(0.0, min(end - loop.time(), POLL_S))):
        if end - loop.time() <= 0:
            _ABANDONED.add(job)
            raise TurnCutOff(job, by_trial=bound.trial < bound.turn)
        if (main is not None and main.cancelling() > asked) or _stop_signal_waits(loop):
            _ABANDONED.add(job)
            _STOPPED.add(loop)
            raise asyncio.CancelledError("the run was asked to stop during a sync agent's turn")
    return job.result()


_STOPPED: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()  # loops asked to stop


def _main_task(loop: asyncio.AbstractEventLoop) -> asyncio.Task[Any] | None:
    """The task of ``loop`` that ``asyncio.run`` cancels on Ctrl-C (its handler holds it), or None.
    Nothing runs on the loop while it waits for a sync turn, so that task asked to cancel
    meanwhile was asked by the handler: the run is to stop."""
    handler = signal.getsignal(signal.SIGINT)
    task = handler.keywords.get("main_task") if isinstance(handler, functools.partial) else None
    return task if isinstance(task, asyncio.Task) and task.get_loop() is loop else None


def _stop_signal_waits(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether a stop signal for the loop's own handlers (a worker's SIGTERM) waits in the loop's
    self-pipe, unread (a selector loop's: a signal writes its number there)."""
    pipe = getattr(loop, "_ssock", None)
    if not isinstance(pipe, socket.socket):
        return False
    try:
        pending = pipe.recv(4096, socket.MSG_PEEK)
    except OSError:  # nothing there (the socket does not block)
        return False
    return any(byte in _STOPS for byte in pending)
