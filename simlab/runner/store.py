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
from simlab.transcript.row import HEAD_VERSION, record_head, trial_head

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
        an error."""
        path = self.trials_path
        if not path.exists():
            return
        try:
            with open(path, "rb") as fh:
                for number, line in enumerate(fh, 1):
                    if line.strip():
                        value = _parse_line(line, path, number, last=not line.endswith(b"\n") and fh.read(1) == b"")
                        if value is None:
                            return
                        yield value
        except OSError as exc:
            raise InfraError(f"{path}: cannot read ({_why(exc)})") from None

    def iter_heads(self) -> Iterator[dict[str, Any]]:
        """Each stored trial's ``head`` (``transcript/row.py``), in file order, without parsing
        transcripts: the head is read from the front of its line. A line without one (an older
        file, a hand edit) is parsed whole and its head computed, so the result is the same."""
        path = self.trials_path
        if not path.exists():
            return
        try:
            for number, data, start, end, last in _block_lines(path):
                head = None if last else read_head(data, start, end)  # a torn tail is judged whole
                if head is None:
                    raw = _parse_line(bytes(data[start:end]), path, number, last)
                    if raw is None:
                        return
                    head = trial_head(raw)
                yield head
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

    def error_unit_ids(self) -> set[str]:
        """The units whose stored verdict is ``error`` (infrastructure): not finished work, so a
        resume plays them again. Read from each line's head without parsing transcripts."""
        found: set[str] = set()
        if not self.trials_path.exists():
            return found
        try:
            for number, data, start, end, last in _block_lines(self.trials_path):
                if last:
                    continue  # a torn tail: cut by repair_torn_tail, never a finished trial
                head = read_head(data, start, end)
                if head is None:
                    raw = _parse_line(bytes(data[start:end]), self.trials_path, number, last)
                    head = trial_head(raw) if raw is not None else None
                if head is not None and head["row"].get("verdict") == "error":
                    found.add(str(head["row"].get("unit_id")))
        except OSError as exc:
            raise InfraError(f"{self.trials_path}: cannot read ({_why(exc)})") from None
        return found

    def retire(self, unit_ids: set[str]) -> int:
        """Move the lines of ``unit_ids`` out of ``trials.jsonl`` into ``retired.jsonl``, so the
        units can be played again and the trials file keeps one line per unit. The lines reach
        ``retired.jsonl`` (fsynced) before the trials file is replaced (a new file, fsynced, renamed
        over it): a crash in between leaves a line in both, never in neither. Needs the run's lock.
        Returns how many lines moved."""
        if not unit_ids or not self.trials_path.exists():
            return 0
        tmp = self.trials_path.with_name(f".{TRIALS}.retire-{os.getpid()}")
        moved: list[bytes] = []
        try:
            with open(self.trials_path, "rb") as src, open(tmp, "wb") as dst:
                for line in src:
                    match = _PREFIX.match(line)
                    unit = match.group(1).decode("utf-8") if match else _unit_of(line)
                    if unit in unit_ids and line.endswith(b"\n"):
                        moved.append(line)
                    else:
                        dst.write(line)
                dst.flush()
                os.fsync(dst.fileno())
            if moved:
                retired = Appender(self.retired_path)
                try:
                    retired.append_lines(moved)
                finally:
                    retired.close()
                os.replace(tmp, self.trials_path)
                _fsync_dir(self.folder)
        except OSError as exc:
            raise InfraError(f"{self.trials_path}: cannot set trials aside to play them again ({_why(exc)})") from None
        finally:
            tmp.unlink(missing_ok=True)
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
                    raw = _parse_line(line, self.retired_path, number, last=False)
                    if raw is None:
                        continue
                    t = raw.get("transcript") or {}
                    termination = t.get("termination") or {}
                    attempts.setdefault(raw["unit_id"], []).append({
                        "verdict": raw.get("verdict"), "termination": termination.get("reason"),
                        "detail": termination.get("detail", ""), "started_at": t.get("started_at", "")})
        except OSError as exc:
            raise InfraError(f"{self.retired_path}: cannot read ({_why(exc)})") from None
        return attempts

    def records(self) -> Iterator[TrialRecord]:
        for raw in self.iter_raw():
            yield TrialRecord.model_validate(raw)

    def open_appender(self) -> "Appender":
        return Appender(self.trials_path)


class Appender:
    """Appends whole JSON lines, written and fsynced before the call returns.

    Unbuffered on purpose: a failed write is cut back to where its lines began, and nothing is left
    in a buffer for ``close`` to flush (half a line) after the disk filled up.
    """

    def __init__(self, path: Path):
        self.path = path
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

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass  # everything was fsynced already


_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_record(record: TrialRecord) -> bytes:
    """One JSON line, with its ``head`` derived afresh (``transcript/row.py``) so it always agrees
    with the checks and events beside it. Lone surrogates (undecodable bytes) become U+FFFD
    instead of failing."""
    record = record.model_copy(update={"head": record_head(record)})
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


def _unit_of(line: bytes) -> str | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value.get("unit_id") if isinstance(value, dict) else None


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
    the start of the line and the rest is skipped (``_block_lines``). A line in any other shape
    (a hand edit, another writer) is parsed in full, and one that is not a trial record is an
    error unless it is a torn last line (ignored, like ``RunStore.iter_raw``;
    ``repair_torn_tail`` cuts it before anything is appended).
    """
    done: set[str] = set()
    if not path.exists():
        return done
    for number, data, start, end, last in _block_lines(path):
        match = _PREFIX.match(data, start, end)
        if match and not last and data[end - 1] == 0x7D:  # "}"
            done.add(match.group(1).decode("utf-8"))
        elif (raw := _parse_line(bytes(data[start:end]), path, number, last)) is not None:
            done.add(raw["unit_id"])
    return done


_BLOCK = 1 << 22


def _block_lines(path: Path) -> Iterator[tuple[int, bytearray, int, int, bool]]:
    """``(number, buffer, start, end, last)`` for each non-blank line of a file, ``last`` when it
    has no newline (a torn tail). The file is read in reused 4 MB blocks and never split into line
    objects (1.6 GB for 100,000 trials); the buffer is only valid until the next line."""
    number = 0
    data, block = bytearray(), bytearray(_BLOCK)  # reused: fresh 4 MB buffers would cost page faults
    with open(path, "rb") as fh:
        while size := fh.readinto(block):
            data += memoryview(block)[:size]
            pos = 0
            while (end := data.find(b"\n", pos)) >= 0:
                number += 1
                if end > pos and (data[pos] == 0x7B or data[pos:end].strip()):  # "{": no copy to test
                    yield number, data, pos, end, False
                pos = end + 1
            del data[:pos]  # cheap: a bytearray drops its head without moving the rest
    if data.strip():
        yield number + 1, data, 0, len(data), True


_HEAD_KEY = re.compile(rb'\{"schema_version":\d+,"unit_id":"(?:[^"\\]|\\.)*","head":')
_HEAD_END = b',"transcript":{"schema_version":'


def read_head(data: bytes | bytearray, start: int = 0, end: int | None = None) -> dict[str, Any] | None:
    """The head at the front of a line, or None when the line has none (or not in that shape).

    Only the head is parsed. It ends where the transcript begins: ``,"transcript":{`` cannot occur
    inside it, as every quote within a JSON string is escaped and no key of the head or its row
    named ``transcript`` holds an object (``transcript/row.py``).
    """
    from pydantic_core import from_json

    end = len(data) if end is None else end
    match = _HEAD_KEY.match(data, start, end)
    if match is None or data[end - 1] != 0x7D:  # "}"
        return None
    stop = data.find(_HEAD_END, match.end(), end)
    if stop < 0:
        return None
    try:
        head = from_json(data[match.end():stop])
    except ValueError:
        return None
    return head if isinstance(head, dict) and head.get("v") == HEAD_VERSION else None


def _parse_line(line: bytes, path: Path, number: int, last: bool) -> dict[str, Any] | None:
    """A whole trial line parsed; None for a torn last line (ignored here, repaired before the
    next append). pydantic-core's JSON parser is faster than ``json``; ``json`` reads what it
    cannot (lone surrogates)."""
    from pydantic_core import from_json

    try:
        value = from_json(line)
    except ValueError:
        try:
            value = json.loads(line)
        except ValueError:
            if last:
                return None
            raise InfraError(f"{path}:{number}: not valid JSON; the file was edited or corrupted") from None
    if not isinstance(value, dict) or not isinstance(value.get("unit_id"), str):
        if last:
            return None
        raise InfraError(f"{path}:{number}: not a trial record (no unit_id); the file was edited or corrupted")
    return value
