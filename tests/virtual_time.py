"""An event loop whose clock is virtual, so tests about timeouts never depend on the machine's speed.

``loop.time()`` (which ``asyncio.timeout``, ``asyncio.sleep`` and every timer use) starts at 0 and
moves only when nothing can run now: no callback is ready, no file descriptor has news, and no job
the loop handed to a thread (``run_in_executor``) is still at work. Then it jumps straight to the
next timer. Work takes no virtual time at all, however slow the machine: a call cut off after 0.05 s
is one that waits for something that never comes, never one that was merely slow; a 3600 s hang
"passes" in an instant.

Use it with the ``virtual_time`` fixture (``tests/conftest.py``): every ``asyncio.run`` in the test,
also inside ``simlab.cli.main.main``, then runs on such a loop, and a sync agent's turn, which the
loop waits for on its own thread (``sim/agent_thread.py``), is waited for by ``wait_for_turn``: it
reaches its bound at once when the turn hangs for good, as the test declares it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import selectors
import threading
from collections.abc import Callable
from typing import Any


class _Selector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    """Polls the real selector; where the loop would wait for a timer, it advances the clock."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list[Any]:
        loop = self.loop
        busy = loop is not None and loop.busy  # read before polling: what made it idle is then in the poll
        events = super().select(0)
        if events or timeout == 0 or loop is None:
            return events
        if busy or timeout is None:  # a thread will answer (or only I/O can wake us): wait for real
            return super().select(None if timeout is None else 0.05)
        loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        selector = _Selector()
        super().__init__(selector)
        selector.loop = self
        self.now = 0.0
        self.jobs: set[object] = set()  # jobs handed to threads, not back yet and not set aside

    @property
    def busy(self) -> int:
        return len(self.jobs)

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += max(0.0, seconds)

    def turn_hung(self, job: object) -> bool:
        """Whether a sync agent's turn (``job``) hangs for good: it said so (``wait_on_the_test``)."""
        with _HUNG_LOCK:
            return job in _HUNG

    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        job = object()
        self.jobs.add(job)

        def work() -> Any:
            _job.current = (self, job)
            try:
                return func(*args)
            finally:
                _job.current = None

        future = super().run_in_executor(executor, work)
        future.add_done_callback(lambda _: self.jobs.discard(job))
        return future


_job = threading.local()  # the (loop, job) a thread is working on


def wait_on_the_test(release: threading.Event) -> None:
    """Block the job this thread runs for a virtual-time loop until ``release`` is set, and tell the
    loop not to wait for it: its time may jump meanwhile (a thread hung for good, as the loop sees
    it). On a sync agent's thread, its turn reaches its bound at once (``wait_for_turn``). Raises
    when not called on such a job (code run on the loop's own thread blocks the loop)."""
    current = getattr(_job, "current", None)
    turn = getattr(threading.current_thread(), "job", None)  # a sync agent's turn (sim/agent_thread.py)
    if current is not None:
        loop, job = current
        loop.call_soon_threadsafe(loop.jobs.discard, job)
    elif turn is not None:
        with _HUNG_LOCK:
            _HUNG.add(turn)
    else:
        raise RuntimeError("not on a thread running a job for the virtual-time loop")
    release.wait()


_HUNG: set[object] = set()  # sync agents' turns that said they hang for good
_HUNG_LOCK = threading.Lock()


def wait_for_turn(job: concurrent.futures.Future[Any], seconds: float | None) -> bool:
    """``sim/agent_thread.wait_for_turn`` on the virtual clock: whether the sync agent's turn
    ``job`` finished; when the loop says it hangs for good (``turn_hung``), its bound is reached at
    once (the clock jumps by ``seconds``) and it did not. The loop's thread waits meanwhile."""
    loop = asyncio.get_running_loop()
    hung = getattr(loop, "turn_hung", None)
    while not job.done():
        if hung is not None and hung(job):
            loop.advance(seconds or 0.0)  # type: ignore[attr-defined]
            return False
        concurrent.futures.wait([job], timeout=0.005)  # a poll of the job and the test's signal
    return True


class VirtualTimePolicy(asyncio.DefaultEventLoopPolicy):  # type: ignore[misc, valid-type]
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return VirtualTimeLoop()
