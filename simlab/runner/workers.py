"""``simlab run --workers N``: N forked processes that take the run's units one at a time.

One process tops out near 150–190 model calls/s through LiteLLM (its per-call bookkeeping is
CPU-bound), so a CPU-bound run needs more processes to use more cores. Design:

* The parent prepares, takes the run's lock, writes the manifest and plans; then it forks the
  workers (so they inherit the built agent, simulator, judge and the imported LiteLLM) and only
  listens: each worker sends one short line per finished trial through its own pipe, which
  drives the single progress bar.
* Units are handed out as workers ask, not dealt in fixed shares up front (a fixed share by id left
  the last worker with 54 units where the mean was 37.5 at 16 workers: the run waited on it). The
  parent writes each unit's index (4 bytes) into one pipe that every worker reads: a read of 4
  bytes takes exactly one index, so each unit is taken by exactly one worker, and no lock is held
  that a killed worker could leave behind. A worker takes its next unit when a slot of its own
  frees up; the parent keeps the pipe fed and closes it when every index is in (end of file: the
  workers take no more). A worker killed with units in flight leaves them unplayed, for a resume.
* Every worker appends its finished trials straight to the run's one ``trials.jsonl``: O_APPEND,
  ``flock`` on the data file around write + fsync, so lines never interleave and a trial is on
  disk before it is counted. A worker killed mid-line leaves a torn line; the next append (any
  worker's) cuts it under the lock, so the file stays whole lines. No merge step can be lost.
  Still under that lock, each group commit appends its lines' entries to ``heads.jsonl``
  (``heads_index.append_entries``).
* The parent keeps holding the run's ``.lock`` (the forked workers share that open lock, so it
  also stays held while a worker outlives a killed parent), keeping a second ``simlab run`` out.
  Workers die with the parent (``PR_SET_PDEATHSIG`` on Linux).
* Ctrl-C: workers ignore SIGINT; the parent turns it into SIGTERM, on which each worker cancels
  its trials in flight at their next await (never inside an append) and exits. A second Ctrl-C
  kills them. A permanent provider error in one worker stops all: exit 3.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import fcntl
import gc
import json
import multiprocessing
import os
import selectors
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simlab.errors import InfraError, UsageError
from simlab.llm.limits import share
from simlab.runner.execute import RunOutcome, execute
from simlab.runner.heads_index import append_entries
from simlab.runner.plan import WorkUnit
from simlab.runner.prepare import RunPlan
from simlab.transcript import TrialRecord

if TYPE_CHECKING:
    from simlab.llm.limits import ModelLimiter
    from simlab.llm.types import ChatModel

PR_SET_PDEATHSIG = 1
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux
TRIALS_PER_PROCESS = 16
"""What one process carries for ``--workers auto``: trials in flight per process. Through LiteLLM
over HTTP a call costs about 13 ms of CPU on the 2-vCPU machine of ``bench/`` (LiteLLM, the OpenAI
SDK and the HTTP client: ``bench/results/latency_http.json``), so one process tops out near 75
calls/s, which 15 trials in flight at 200 ms per answer reach. More trials in flight than this
want another process, on a core of their own. (It was 64, from the fake provider, which skips the
HTTP client and costs a quarter of that.)"""
_HELD = {signal.SIGINT, signal.SIGUSR1}
OnResult = Callable[[str], None]


def usable_cpus() -> int:
    """Cores this process may run on (its affinity, which a container or ``taskset`` narrows)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def auto_workers(concurrency: int, units: int, *, cpus: int | None = None) -> int:
    """``--workers auto``: one process per ``TRIALS_PER_PROCESS`` trials in flight, never more than
    the usable cores, the units to play, or fewer than one."""
    wanted = -(-max(1, concurrency) // TRIALS_PER_PROCESS)
    return max(1, min(wanted, cpus if cpus is not None else usable_cpus(), max(1, units)))


class LockedAppender:
    """Appends whole JSON lines to a trials file that several processes write at once."""

    def __init__(self, path: Any):
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)

    def append_lines(self, lines: list[bytes]) -> None:
        """Encoded records, written whole under the lock with one fsync."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            end = self._cut_torn_tail()
            try:
                view = memoryview(b"".join(lines))
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
            except BaseException as exc:
                os.ftruncate(self._fd, end)  # leave no half line for a resume to trust
                if isinstance(exc, OSError):
                    raise InfraError(
                        f"{self.path}: cannot write trial ({exc.strerror or exc}); the run stopped"
                    ) from None
                raise
            append_entries(Path(self.path), end, lines)  # the index of heads, in the same commit
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _cut_torn_tail(self) -> int:
        """The file's end after cutting a half line left by a killed writer (held under the lock)."""
        end = os.fstat(self._fd).st_size
        if end == 0 or os.pread(self._fd, 1, end - 1) == b"\n":
            return end
        pos = end
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            found = os.pread(self._fd, step, pos).rfind(b"\n")
            if found >= 0:
                pos += found + 1
                break
        os.ftruncate(self._fd, pos)
        return pos

    def close(self) -> None:
        os.close(self._fd)


@dataclasses.dataclass
class _Worker:
    index: int
    process: Any
    fd: int
    buffer: bytes = b""
    final: dict[str, Any] | None = None


class WorkerPool:
    """Forks the workers (``start``), then gathers their results (``wait``)."""

    def __init__(
        self,
        plan: RunPlan,
        units: list[WorkUnit],
        workers: int,
        *,
        agent: Any,
        simulator: Any,
        judge: ChatModel | None = None,
        limiter: ModelLimiter | None = None,
    ):
        self.plan, self.agent, self.simulator, self.judge, self.limiter = (
            plan,
            agent,
            simulator,
            judge,
            limiter,
        )
        self.units = units
        self.count = max(1, min(workers, len(units)))
        self.dealer = _Dealer(len(units))
        self.workers: list[_Worker] = []
        self.outcome = RunOutcome()
        self.interrupted = False
        self._fatal: str | None = None
        self._spent = 0.0

    def start(self) -> None:
        if "fork" not in multiprocessing.get_all_start_methods():
            raise UsageError(
                "--workers needs a system that can fork processes (Linux, macOS); use --shard "
                "to split a run across separate commands instead"
            )
        context = multiprocessing.get_context("fork")
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)  # none between fork and the worker's handlers
        # the collector would touch every inherited object: copy-on-write copies of the whole heap
        gc.freeze()
        try:
            self.dealer.feed()  # the first indexes are in the pipe before any worker asks
            for index in range(self.count):
                read_fd, write_fd = os.pipe()
                process = context.Process(
                    target=_child,
                    name=f"simlab-worker-{index + 1}",
                    args=(self, index, write_fd, read_fd, os.getpid()),
                )
                process.start()
                os.close(write_fd)
                self.workers.append(_Worker(index, process, read_fd))
        finally:
            gc.unfreeze()
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
            self.dealer.started()

    def wait(self, on_result: OnResult | None = None) -> RunOutcome:
        """Until every worker has ended. Raises ``InfraError`` when one hit a permanent error."""
        selector = selectors.DefaultSelector()
        for worker in self.workers:
            selector.register(worker.fd, selectors.EVENT_READ, worker)
        if self.dealer.writer is not None:
            selector.register(self.dealer.writer, selectors.EVENT_WRITE, self.dealer)
        open_pipes = len(self.workers)
        while open_pipes:
            try:
                for key, _ in selector.select():
                    if key.data is self.dealer:  # room in the pipe of units: the next indexes
                        if self.dealer.feed():
                            selector.unregister(key.fd)
                            self.dealer.close()
                        continue
                    if not self._read(key.data, on_result):
                        selector.unregister(key.fd)
                        os.close(key.fd)
                        open_pipes -= 1
            except KeyboardInterrupt:
                if self.interrupted:  # a second Ctrl-C: stop waiting for trials in flight
                    self._signal(signal.SIGKILL)
                else:
                    self.interrupted = True
                    self._signal(signal.SIGTERM)
        if self.dealer.writer is not None:
            selector.unregister(self.dealer.writer)
            self.dealer.close()
        for worker in self.workers:
            worker.process.join()
        self._finish()
        return self.outcome

    def _read(self, worker: _Worker, on_result: OnResult | None) -> bool:
        data = os.read(worker.fd, 65536)
        worker.buffer += data
        *lines, worker.buffer = worker.buffer.split(b"\n")
        for line in lines:
            self._handle(worker, json.loads(line), on_result)
        return bool(data)

    def _handle(self, worker: _Worker, message: dict[str, Any], on_result: OnResult | None) -> None:
        kind = message["t"]
        if kind == "trial":
            self.outcome.finished += 1
            reason = message["reason"]
            self.outcome.reasons[reason] = self.outcome.reasons.get(reason, 0) + 1
            self._spend(message.get("cost") or 0.0)
            if on_result:
                on_result(message["label"])
        elif kind == "fatal":
            if self._fatal is None:
                self._fatal = message["message"]
                self._signal(signal.SIGTERM)
            worker.final = message
        else:
            worker.final = message

    def _spend(self, cost: float) -> None:
        budget = self.plan.max_run_cost_usd
        self._spent += cost
        if budget is not None and self._spent >= budget and not self.outcome.stopped_by:
            self.outcome.stopped_by = (
                f"the run budget of ${budget:g} is spent (${self._spent:.4f}); no new trial was started"
            )
            self._signal(signal.SIGUSR1)

    def _signal(self, signum: int) -> None:
        if signum != signal.SIGUSR1:  # stopping: no unit is handed out any more
            self.dealer.close()
        for worker in self.workers:
            if worker.process.is_alive():
                try:
                    os.kill(worker.process.pid, signum)
                except ProcessLookupError:
                    pass

    def _finish(self) -> None:
        if self._fatal is not None:
            raise InfraError(self._fatal)
        for worker in self.workers:
            final = worker.final or {}
            if final.get("t") == "crash":
                raise InfraError(f"worker {worker.index + 1} failed: {final.get('message')}")
            if final.get("stopped_by") and not self.outcome.stopped_by:
                self.outcome.stopped_by = final["stopped_by"]
            code = worker.process.exitcode
            if worker.final is None and not self.interrupted and not self.outcome.stopped_by:
                how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                self.outcome.stopped_by = (
                    f"worker {worker.index + 1} of {len(self.workers)} died ({how}); its "
                    "finished trials are saved"
                )


class _Dealer:
    """The pipe of unit indexes (4 bytes each, little-endian) that every worker reads from."""

    CHUNK = 1024  # indexes per write: 4 KiB, PIPE_BUF on Linux, so a write lands whole or not at all

    def __init__(self, total: int):
        self.total, self.sent = total, 0
        self.reader, self.writer = os.pipe()
        try:  # a bigger pipe holds more of the run (1 MiB: 262,144 units) before the parent must feed it
            fcntl.fcntl(self.writer, F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        os.set_blocking(self.writer, False)

    def feed(self) -> bool:
        """Write as many indexes as the pipe takes; True when every index is in."""
        while self.writer is not None and self.sent < self.total:
            end = min(self.total, self.sent + self.CHUNK)
            data = b"".join(i.to_bytes(4, "little") for i in range(self.sent, end))
            try:
                os.write(self.writer, data)
            except BlockingIOError:
                return False
            self.sent = end
        return True

    def started(self) -> None:
        """The workers are forked: the parent reads no index; with all of them in, end of file."""
        os.close(self.reader)
        if self.sent == self.total:
            self.close()

    def close(self) -> None:
        if self.writer is not None:
            os.close(self.writer)
            self.writer = None  # type: ignore[assignment]


def _taken(units: list[WorkUnit], fd: int) -> Iterator[WorkUnit]:
    """The units this worker takes, one index read at a time, until the pipe is closed and empty."""
    while True:
        try:
            data = os.read(fd, 4)
        except OSError:
            return
        if len(data) != 4:  # end of file: every unit is taken (or the run is stopping)
            return
        yield units[int.from_bytes(data, "little")]


# ------------------------------------------------------------------------------------ in the worker


def _child(pool: WorkerPool, index: int, write_fd: int, read_fd: int, parent: int) -> None:
    stop: list[str] = []
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent turns Ctrl-C into SIGTERM
    signal.signal(signal.SIGUSR1, lambda *_: stop.append("the run budget is spent"))  # until the loop's own
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)
    os.close(read_fd)
    if pool.dealer.writer is not None:
        os.close(pool.dealer.writer)  # only the parent feeds the pipe: end of file when it closes its end
    _die_with_parent(parent)
    count = pool.count
    if pool.limiter is not None:  # the run's (or this shard's) limits, divided between its workers
        pool.limiter.divide(count, index)
    plan = dataclasses.replace(
        pool.plan, concurrency=share(pool.plan.concurrency, count, index), max_run_cost_usd=None
    )
    appender = LockedAppender(plan.folder / "trials.jsonl")

    def send(message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode("utf-8")
        try:
            while data:
                data = data[os.write(write_fd, data) :]
        except OSError:  # the parent is gone: start no new trial (Linux also sends SIGTERM)
            stop.append("the parent process is gone")

    def on_trial(record: TrialRecord) -> None:
        cost = record.transcript.known_cost_usd()
        send(
            {
                "t": "trial",
                "label": record.verdict or record.transcript.termination.reason.value,
                "reason": record.transcript.termination.reason.value,
                "cost": cost,
            }
        )

    async def main() -> RunOutcome:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        loop.add_signal_handler(signal.SIGUSR1, lambda: stop.append("the run budget is spent"))
        return await execute(
            plan,
            _taken(pool.units, pool.dealer.reader),
            pool.agent,
            pool.simulator,
            appender,
            on_trial=on_trial,
            judge=pool.judge,
            stop=lambda: stop[0] if stop else None,
        )

    code = 0
    try:
        outcome = asyncio.run(main())
        send({"t": "done", "stopped_by": outcome.stopped_by})
    except asyncio.CancelledError:
        send({"t": "done", "stopped_by": None, "cancelled": True})
    except InfraError as exc:
        send({"t": "fatal", "message": str(exc)})
        code = exc.exit_code
    except BaseException as exc:  # a bug: tell the parent in one line, not a traceback per worker
        send({"t": "crash", "message": f"{type(exc).__name__}: {exc}"})
        code = 70
    finally:
        appender.close()
        os.close(write_fd)
        sys.stdout.flush()
    os._exit(code)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGTERM this worker when the parent dies (a killed parent leaves no orphans)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: workers notice the closed pipe when they write
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


__all__ = ["LockedAppender", "WorkerPool"]
