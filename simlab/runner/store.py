"""A run on disk: ``run.json`` (manifest with every pin) and ``trials.jsonl`` (one line per trial).

Trials are appended and fsynced as each one ends, so a crash loses at most the trial in flight.
A torn last line (a crash mid-write) is cut off before anything is appended again. One process
holds the run's lock at a time. Any failure of the disk (full, read-only, gone) becomes an
``InfraError`` (exit 3) and leaves no partial line behind: appends go straight to the file
descriptor (no buffer that a later close could flush half of) and a failed write is cut back.
Text that UTF-8 cannot hold (lone surrogates, e.g. undecodable bytes from a model or a tool) is
stored with U+FFFD in their place rather than losing the trial.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simlab.errors import InfraError
from simlab.redact import mask_tree
from simlab.runner import heads_index, heads_tail
from simlab.runner.lines import (
    LineError,
    ReadNotes,
    encode_record,
    last_line_start,
    parse_record,
    read_head,
    record_of,
    scan,
    temp_path,
)
from simlab.runner.plan import unit_id_of
from simlab.transcript import TrialRecord
from simlab.transcript.head import TrialHead

__all__ = [
    "Appender",
    "LineError",
    "ReadNotes",
    "Repair",
    "RunStore",
    "clean_leftovers",
    "encode_record",
    "finished_unit_ids",
    "planned_units",
    "read_head",
    "temp_path",
    "write_atomic",
]

MANIFEST_SCHEMA_VERSION = 1
MANIFEST = "run.json"
TRIALS = "trials.jsonl"
RETIRED = "retired.jsonl"  # lines moved out of trials.jsonl to be played again (errors, on resume)
LOCK = ".lock"


@dataclass
class Repair:
    """What ``repair_torn_tail`` did: bytes cut off the end, and why."""

    cut_bytes: int = 0
    reason: str = ""


class RunStore:
    def __init__(self, folder: Path):
        self.folder = folder
        self.trials_path = folder / TRIALS
        self.retired_path = folder / RETIRED
        self.manifest_path = folder / MANIFEST
        self._lock_fd: int | None = None

    # -- lock -----------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the run's lock or refuse: two writers would interleave lines."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InfraError(
                f"{self.folder}: cannot create the run folder or its lock ({_why(exc)})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise InfraError(
                    f"{self.folder}: another simlab process is writing this run; wait for it or use another "
                    "--run-id"
                ) from None
            raise InfraError(f"{self.folder}: cannot lock the run ({_why(exc)})") from None
        try:  # the pid is a courtesy for people looking at the folder; the flock is the lock
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        except OSError:
            pass
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- manifest -------------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any] | None:
        if not self.manifest_path.exists():
            return None
        try:
            manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InfraError(
                f"{self.manifest_path}: unreadable manifest ({exc}); move it away or use another run id"
            ) from None
        if not isinstance(manifest, dict):
            raise InfraError(
                f"{self.manifest_path}: not a run manifest (a JSON object); move it away or use "
                "another run id"
            )
        return manifest

    def planned_units(self, manifest: dict[str, Any] | None = None) -> set[str] | None:
        """The unit ids this run planned, from ``run.json`` (None without one): what every reader
        counts completeness in, never lines."""
        manifest = self.read_manifest() if manifest is None else manifest
        return None if manifest is None else planned_units(manifest)

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        manifest = mask_tree(manifest)  # an api_base with a password in it stays off the disk
        write_atomic(
            self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )

    # -- trials ---------------------------------------------------------------------------
    def has_trials(self) -> bool:
        """Whether anything is stored in ``trials.jsonl`` (even a torn line)."""
        try:
            return self.trials_path.stat().st_size > 0
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise InfraError(f"{self.trials_path}: cannot read ({_why(exc)})") from None

    def repair_torn_tail(self) -> Repair:
        """Cut a last line without its newline, left by a crash mid-write (the one rule of
        ``lines.py``: a complete line that is bad is an error for every reader, never cut here)."""
        try:
            return self._repair()
        except OSError as exc:
            raise InfraError(f"{self.trials_path}: cannot repair the end of the file ({_why(exc)})") from None

    def _repair(self) -> Repair:
        path = self.trials_path
        if not path.exists():
            return Repair()
        size, keep_to = last_line_start(path)
        if size == 0 or keep_to == size:
            return Repair()
        with open(path, "rb+") as fh:
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return Repair()
            fh.truncate(keep_to)
            fh.flush()
            os.fsync(fh.fileno())
        return Repair(cut_bytes=size - keep_to, reason="last line has no newline (interrupted write)")

    def iter_raw(self, notes: ReadNotes | None = None) -> Iterator[dict[str, Any]]:
        """Each stored trial, parsed whole, each unit once, in file order (``lines.py``: a torn
        tail is skipped, a bad line elsewhere is an error)."""
        for _, _, raw in scan(self.trials_path, "raw", notes):
            yield raw

    def iter_heads(self, notes: ReadNotes | None = None) -> Iterator[TrialHead]:
        """Each stored trial's head, typed, each unit once, in file order, without parsing
        transcripts (``heads_tail.scan_heads``: from the index of heads, or from the front of each
        line). A line without a valid head (record schema 1, a hand edit) is parsed whole and its
        head computed, so the result is the same."""
        for _, _, head, _, _ in heads_tail.scan_heads(self.trials_path, notes):
            yield head

    def finished_unit_ids(self, notes: ReadNotes | None = None) -> set[str]:
        """The unit ids stored so far, without parsing whole lines (see ``finished_unit_ids``)."""
        return finished_unit_ids(self.trials_path, notes)

    def finished_units(self) -> dict[str, str | None]:
        """unit_id → termination reason of every stored trial."""
        return {
            raw["unit_id"]: (raw["transcript"].get("termination") or {}).get("reason")
            for raw in self.iter_raw()
        }

    def error_unit_ids(self) -> set[str]:
        """The units whose stored verdict is ``error`` (infrastructure): not finished work, so a
        resume plays them again. Read from each line's head, under the one line rule."""
        return {
            unit
            for _, unit, head, _, _ in heads_tail.scan_heads(self.trials_path)
            if head.row.verdict == "error"
        }

    def retire(self, unit_ids: set[str]) -> int:
        """Move the lines of ``unit_ids`` out of ``trials.jsonl`` into ``retired.jsonl``, so the
        units can be played again and the trials file keeps one line per unit. The lines reach
        ``retired.jsonl`` (fsynced) before the trials file is replaced (a new file, fsynced, renamed
        over it): a crash in between leaves a line in both, never in neither. Needs the run's lock
        (and a repaired tail). Returns how many lines moved."""
        if not unit_ids or not self.trials_path.exists():
            return 0
        tmp = temp_path(self.trials_path)
        index = heads_index.IndexBuilder(self.trials_path)
        moved: list[bytes] = []
        try:
            with open(tmp, "wb") as dst:
                for _, unit, line in scan(self.trials_path, "line"):
                    if unit in unit_ids:
                        moved.append(line)
                    else:
                        dst.write(line)
                        index.add(line)
                dst.flush()
                os.fsync(dst.fileno())
            if moved:
                retired = Appender(self.retired_path)
                try:
                    retired.append_lines(moved)
                finally:
                    retired.close()
                heads_index.replace_trials(tmp, self.trials_path, index)
                _fsync_dir(self.folder)
        except OSError as exc:
            raise InfraError(
                f"{self.trials_path}: cannot set trials aside to play them again ({_why(exc)})"
            ) from None
        finally:
            tmp.unlink(missing_ok=True)
            index.discard()
        return len(moved)

    def earlier_attempts(self) -> dict[str, list[dict[str, Any]]]:
        """unit id → its retired attempts (oldest first): verdict, termination, detail, start time.
        A line retired twice (a crash between the two steps of ``retire``) counts once."""
        attempts: dict[str, list[dict[str, Any]]] = {}
        if not self.retired_path.exists():
            return attempts
        seen: set[bytes] = set()
        try:
            with open(self.retired_path, "rb") as fh:
                for number, line in enumerate(fh, 1):
                    if not line.endswith(b"\n") or line in seen:
                        continue
                    seen.add(line)
                    raw = parse_record(line, self.retired_path, number)
                    t = raw["transcript"]
                    termination = t.get("termination") or {}
                    attempts.setdefault(raw["unit_id"], []).append(
                        {
                            "verdict": raw.get("verdict"),
                            "termination": termination.get("reason"),
                            "detail": termination.get("detail", ""),
                            "started_at": t.get("started_at", ""),
                        }
                    )
        except OSError as exc:
            raise InfraError(f"{self.retired_path}: cannot read ({_why(exc)})") from None
        return attempts

    def records(self, notes: ReadNotes | None = None) -> Iterator[TrialRecord]:
        """Each stored trial as a ``TrialRecord``; one that does not validate is a ``LineError``.
        ``notes`` (with a plan: units outside it left out) collects what the read skipped."""
        for number, _, raw in scan(self.trials_path, "raw", notes):
            yield record_of(raw, self.trials_path, number)

    def open_appender(self) -> Appender:
        """The appender of ``trials.jsonl``, which keeps its index of heads (``heads_index``)."""
        return Appender(self.trials_path, index=True)


class Appender:
    """Appends whole JSON lines, written and fsynced before the call returns.

    Unbuffered on purpose: a failed write is cut back to where its lines began, and nothing is left
    in a buffer for ``close`` to flush (half a line) after the disk filled up.
    """

    def __init__(self, path: Path, *, index: bool = False):
        self.path, self._index = path, index  # index: keep heads.jsonl beside it (a trials file)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InfraError(f"{path}: cannot open for writing ({_why(exc)})") from None

    def append_lines(self, lines: list[bytes]) -> None:
        """Append encoded records (``encode_record``) with one write and one fsync: a burst of
        trials that end together costs the disk one flush, not one each."""
        if self._fd is None:
            raise InfraError(f"{self.path}: the trials file is closed")
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            view = memoryview(b"".join(lines))
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, start)  # leave no half line for a resume to trust
                os.fsync(self._fd)
            except OSError:
                pass  # the torn tail is cut by repair_torn_tail before the next append
            raise InfraError(f"{self.path}: cannot write trial ({_why(exc)}); the run stopped") from None
        if self._index:
            heads_index.append_entries(self.path, start, lines)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass  # everything was fsynced already


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


_TEMP = re.compile(r"^\.(?P<name>.+?)(?:\.(?P<pid>\d+)\.[0-9a-f]{8})?\.(?:tmp|regrade)$")


def clean_leftovers(folder: Path) -> list[Path]:
    """Remove the temporary files of commands that died in this folder (a kill -9 during grade or
    report); those of a process still running are left alone."""
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for path in entries:
        match = _TEMP.match(path.name)
        if match is None or (match["pid"] and _alive(int(match["pid"]))):
            continue
        try:
            path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it."""
    tmp = temp_path(path)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise InfraError(f"{path}: cannot write ({_why(exc)})") from None


def planned_units(manifest: dict[str, Any]) -> set[str] | None:
    """The unit ids a manifest planned (its scenarios and their trials, or the list ``planned_units``
    where it gives one: a graded sample of observed trials), or None when it does not say."""
    listed = manifest.get("planned_units")
    if isinstance(listed, list):
        return {str(unit) for unit in listed}
    scenarios = (manifest.get("pins") or {}).get("scenarios")
    if not isinstance(scenarios, dict):
        return None
    try:
        trials = {str(sid): int(pin["trials"]) for sid, pin in scenarios.items()}
    except (KeyError, TypeError, ValueError):
        return None
    return {unit_id_of(sid, trial) for sid, count in trials.items() for trial in range(1, count + 1)}


# -- the fast resume scan -------------------------------------------------------------------


def finished_unit_ids(path: Path, notes: ReadNotes | None = None) -> set[str]:
    """The unit ids stored in a trials file, read fast enough for a resume of 100,000 units.

    simlab writes every line as ``{"schema_version":N,"unit_id":"…",…}``, so the id is read from
    the start of the line and the rest is only searched for a second record (``lines.py``); a
    line in any other shape is parsed in full. The rule of every reader holds: a torn tail is
    ignored (``repair_torn_tail`` cuts it before anything is appended), a bad line elsewhere or a
    unit stored twice with different contents is an error.
    """
    return {unit for _, unit, _ in scan(path, "unit", notes)}
