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
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InfraError(f"{self.folder}: cannot create the run folder or its lock ({_why(exc)})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise InfraError(
                    f"{self.folder}: another simlab process is writing this run; wait for it or use another --run-id"
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
            raise InfraError(f"{self.manifest_path}: unreadable manifest ({exc}); move it away or use another "
                             "run id") from None
        if not isinstance(manifest, dict):
            raise InfraError(f"{self.manifest_path}: not a run manifest (a JSON object); move it away or use "
                             "another run id")
        return manifest

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_atomic(self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    # -- trials ---------------------------------------------------------------------------
    def repair_torn_tail(self) -> Repair:
        """Cut an incomplete or unparsable last line left by a crash mid-write."""
        try:
            return self._repair()
        except OSError as exc:
            raise InfraError(f"{self.trials_path}: cannot repair the end of the file ({_why(exc)})") from None

    def _repair(self) -> Repair:
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
        """Parsed lines, streamed (flat memory), skipping a torn last line; a bad line elsewhere is
        an error. pydantic-core's JSON parser is faster than ``json``; ``json`` reads what it cannot
        (lone surrogates)."""
        from pydantic_core import from_json

        path = self.trials_path
        if not path.exists():
            return
        try:
            with open(path, "rb") as fh:
                for number, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        value = from_json(line)
                    except ValueError:
                        try:
                            value = json.loads(line)
                        except ValueError:
                            if not line.endswith(b"\n") and fh.read(1) == b"":
                                return  # torn tail from a crash: ignored here, repaired before the next append
                            raise InfraError(f"{path}:{number}: not valid JSON; the file was edited or "
                                             "corrupted") from None
                    if not isinstance(value, dict) or not isinstance(value.get("unit_id"), str):
                        raise InfraError(f"{path}:{number}: not a trial record (no unit_id); the file was "
                                         "edited or corrupted")
                    yield value
        except OSError as exc:
            raise InfraError(f"{path}: cannot read ({_why(exc)})") from None

    def finished_unit_ids(self) -> set[str]:
        """The unit ids stored so far, without parsing whole lines (see ``finished_unit_ids``)."""
        return finished_unit_ids(self.trials_path)

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
    """Appends one JSON line per trial, written and fsynced before the call returns.

    Unbuffered on purpose: a failed write is cut back to where the line began, and nothing is left
    in a buffer for ``close`` to flush (half a line) after the disk filled up.
    """

    def __init__(self, path: Path):
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InfraError(f"{path}: cannot open for writing ({_why(exc)})") from None

    def append(self, record: TrialRecord) -> None:
        if self._fd is None:
            raise InfraError(f"{self.path}: the trials file is closed")
        line = encode_record(record)
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            view = memoryview(line)
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

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass  # everything was fsynced already


_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_record(record: TrialRecord) -> bytes:
    """One JSON line. Lone surrogates (undecodable bytes) become U+FFFD instead of failing."""
    try:
        return record.model_dump_json(exclude_none=False).encode("utf-8") + b"\n"
    except (ValueError, UnicodeError):  # pydantic's serialization error is a ValueError
        data = _fix_text(record.model_dump(mode="json", exclude_none=False))
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _fix_text(value: Any) -> Any:
    if isinstance(value, str):
        if _SURROGATE.search(value):
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, dict):
        return {_fix_text(k): _fix_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fix_text(v) for v in value]
    return value


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


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
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise InfraError(f"{path}: cannot write ({_why(exc)})") from None


# -- the fast resume scan -------------------------------------------------------------------

_PREFIX = re.compile(rb'\{"schema_version":\d+,"unit_id":"([^"\\]*)"')


def finished_unit_ids(path: Path) -> set[str]:
    """The unit ids stored in a trials file, read fast enough for a resume of 100,000 units.

    simlab writes every line as ``{"schema_version":N,"unit_id":"…",…}``, so the id is read from
    the start of the line and the rest is skipped: the file is read in blocks and never split
    into line objects (1.6 GB for 100,000 trials). A line in any other shape (a hand edit,
    another writer) is parsed in full, and one that is not a trial record is an error unless it
    is a torn last line (ignored, like ``RunStore.iter_raw``; ``repair_torn_tail`` cuts it
    before anything is appended).
    """
    done: set[str] = set()
    if not path.exists():
        return done
    number = 0
    data, block = bytearray(), bytearray(_BLOCK)  # reused: fresh 4 MB buffers would cost page faults
    with open(path, "rb") as fh:
        while size := fh.readinto(block):
            data += memoryview(block)[:size]
            pos = 0
            while (end := data.find(b"\n", pos)) >= 0:
                number += 1
                match = _PREFIX.match(data, pos, end)
                if match and data[end - 1] == 0x7D:  # "}"
                    done.add(match.group(1).decode("utf-8"))
                elif data[pos:end].strip():
                    _slow_line(bytes(data[pos:end]), path, number, False, done)
                pos = end + 1
            del data[:pos]  # cheap: a bytearray drops its head without moving the rest
    if data.strip():
        _slow_line(bytes(data), path, number + 1, True, done)
    return done


_BLOCK = 1 << 22


def _slow_line(line: bytes, path: Path, number: int, last: bool, done: set[str]) -> None:
    try:
        done.add(str(json.loads(line)["unit_id"]))
    except (ValueError, KeyError, TypeError):
        if not last:
            raise InfraError(f"{path}:{number}: not a trial record; the file was edited or corrupted") from None
        # a torn tail from a crash: not a finished unit
