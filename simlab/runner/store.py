"""A run on disk: ``run.json`` (manifest with every pin) and ``trials.jsonl`` (one line per trial).

Trials are appended and fsynced as each one ends, so a crash loses at most the trial in flight.
A torn last line (a crash mid-write) is cut off before anything is appended again. One process
holds the run's lock at a time.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from simlab.errors import InfraError
from simlab.transcript import TrialRecord

MANIFEST_SCHEMA_VERSION = 1
MANIFEST = "run.json"
TRIALS = "trials.jsonl"
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
        self.manifest_path = folder / MANIFEST
        self._lock_fd: int | None = None

    # -- lock -----------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the run's lock or refuse: two writers would interleave lines."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InfraError(
                f"{self.folder}: another simlab process is writing this run; wait for it or use another --run-id"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
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
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InfraError(f"{self.manifest_path}: unreadable manifest ({exc}); move it away or use another run id") from None

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_atomic(self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    # -- trials ---------------------------------------------------------------------------
    def repair_torn_tail(self) -> Repair:
        """Cut an incomplete or unparsable last line left by a crash mid-write."""
        path = self.trials_path
        if not path.exists() or path.stat().st_size == 0:
            return Repair()
        with open(path, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            # find the start of the last line
            pos, chunk = size, 65536
            tail = b""
            while pos > 0:
                step = min(chunk, pos)
                pos -= step
                fh.seek(pos)
                tail = fh.read(step) + tail
                if tail[:-1].count(b"\n") >= 1:
                    break
            body = tail[:-1] if tail.endswith(b"\n") else tail
            last_start = body.rfind(b"\n") + 1
            last = tail[last_start:]
            keep_to = pos + last_start
            reason = ""
            if not last.endswith(b"\n"):
                reason = "last line has no newline (interrupted write)"
            else:
                try:
                    json.loads(last)
                except ValueError:
                    reason = "last line is not valid JSON"
            if not reason:
                return Repair()
            fh.truncate(keep_to)
            fh.flush()
            os.fsync(fh.fileno())
            return Repair(cut_bytes=size - keep_to, reason=reason)

    def iter_raw(self) -> Iterator[dict[str, Any]]:
        """Parsed lines, skipping a torn last line; a bad line elsewhere is an error."""
        if not self.trials_path.exists():
            return
        with open(self.trials_path, "rb") as fh:
            lines = fh.readlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError:
                if number == len(lines) and not line.endswith(b"\n"):
                    return  # torn tail from a crash: ignored here, repaired before the next append
                raise InfraError(f"{self.trials_path}:{number}: not valid JSON; the file was edited or corrupted") from None

    def finished_units(self) -> dict[str, str | None]:
        """unit_id → termination reason of every stored trial. Reads only what it needs."""
        done: dict[str, str | None] = {}
        for raw in self.iter_raw():
            done[raw["unit_id"]] = (raw.get("transcript") or {}).get("termination", {}).get("reason")
        return done

    def records(self) -> Iterator[TrialRecord]:
        for raw in self.iter_raw():
            yield TrialRecord.model_validate(raw)

    def open_appender(self) -> "Appender":
        return Appender(self.trials_path)


class Appender:
    """Appends one JSON line per trial, flushed and fsynced before the call returns."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "ab")

    def append(self, record: TrialRecord) -> None:
        line = record.model_dump_json(exclude_none=False).encode("utf-8") + b"\n"
        start = self._fh.tell()
        try:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            self._fh.truncate(start)  # leave no half line for a resume to trust
            raise InfraError(f"{self.path}: cannot write trial ({exc.strerror or exc}); the run stopped") from None

    def close(self) -> None:
        self._fh.close()


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InfraError(f"{path}: cannot write ({exc.strerror or exc})") from None
