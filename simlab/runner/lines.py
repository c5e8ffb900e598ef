"""The one module that writes and reads the bytes of ``trials.jsonl``, and the one rule by which
every reader reads it: report, gate, compare, grade, resume, merge and the viewer.

- A trial line is one JSON object with a ``unit_id`` (a non-empty string) and a ``transcript``
  (an object). ``encode_record`` writes it as
  ``{"schema_version":N,"unit_id":"…","head":{…},"transcript":{…},…}``, framing those four keys
  itself, in that order, whatever the order of the record's fields; the fast readers
  (``read_unit``, ``read_head``) read just that framing, and a test writes a record and reads it
  back through each of them. A line in exactly that shape is read from its head and its framing
  (it starts with one record, holds no second one, ends with ``}``), any other line is parsed in
  full (a line without a head, record schema 1, gets the head the writer would have computed).
  The fast path may give up; it may not be wrong.
- A reader of a trial's figures (its head) needs more of a line parsed in full: a valid trial
  record (``TrialRecord``), or the line is an error naming what is wrong.
- The last line of a file without its newline is a torn tail (a crash mid-write): every reader
  skips it and says so, and the next ``simlab run`` cuts it. Any other line that is not a trial
  line, a torn line in the middle included (a killed shard concatenated before another), is an
  error naming the file and the line (exit 3).
- ``heads_index.py`` keeps an index of the heads beside the file (``heads.jsonl``), which
  ``heads_read.py`` checks entry by entry against these bytes before use; whatever it does not
  hold is read by this rule. ``heads_tail.Tail`` reads the heads of a file by this rule as it grows
  (the viewer), and once to its end (``scan_heads``: every other reader of heads).
- A head is given typed (``transcript/head.TrialHead``, validated from its bytes); one that does not
  validate is not trusted, and its line is read whole.
- A unit is stored once. A second line for the same unit is an error naming the unit and both
  lines, unless the two lines are byte-identical: then the later one is dropped, with a warning.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic_core import to_json

from simlab.errors import InfraError
from simlab.redact import holds_secret, map_strings, mask_tree
from simlab.runner.identity import RunIdentity, load_identity, row_of_record
from simlab.transcript.head import HEAD_VERSION, TrialHead
from simlab.transcript.model import TrialRecord
from simlab.transcript.row import record_head

_BLOCK = 1 << 22
_PREFIX = re.compile(rb'\{"schema_version":\d+,"unit_id":"([^"\\]*)"')
_RECORD_START = b'{"schema_version":'
_ANY_PREFIX = re.compile(rb'\{"schema_version":\d+,"unit_id":"')
_HEAD_KEY = re.compile(rb'\{"schema_version":\d+,"unit_id":"(?:[^"\\]|\\.)*","head":')
_HEAD_END = b',"transcript":{'
_FRAMED = ("schema_version", "unit_id", "head", "transcript")  # the keys encode_record writes first, in order
FIX = "fix or delete that line (a killed shard: resume it before merging)"

Parse = Literal["unit", "head", "raw", "line"]


class LineError(InfraError):
    """A line of a trials file that no reader may trust (exit 3): the message names file and line."""


class TrialMismatch(LineError):
    """A line that is not a trial of the run beside it (``identity.py``): another run's, another
    seed's or agent's, or stored under another unit's id. Exit 3, as for any line no reader may
    trust: the run's files cannot stand for the run, and no figure of it may be shown or gated."""


@dataclass
class ReadNotes:
    """What a read skipped, for the warnings beside its figures."""

    path: Path
    plan: set[str] | None = None  # when given, units outside it are left out (and noted)
    torn_tail: int = 0  # bytes of a torn last line (skipped)
    torn_line: int = 0  # its line number
    duplicates: list[tuple[str, int, int]] = field(default_factory=list)  # (unit, first line, repeat)
    unplanned: list[tuple[str, int]] = field(default_factory=list)  # (unit, line) not in the plan
    # what every line must carry to be this run's trial (identity.py); "auto": from the run.json beside it
    identity: RunIdentity | Literal["auto"] | None = "auto"

    def run_identity(self) -> RunIdentity | None:
        """The identity each line is checked against, read once from the manifest beside the file."""
        if self.identity == "auto":
            self.identity = load_identity(self.path)
        return self.identity

    def warnings(self) -> list[str]:
        out = self.identity.warnings(self.path.parent) if isinstance(self.identity, RunIdentity) else []
        if self.unplanned:
            shown = ", ".join(f"{unit!r} (line {number})" for unit, number in self.unplanned[:3])
            more = f" and {len(self.unplanned) - 3} more" if len(self.unplanned) > 3 else ""
            out.append(
                f"{self.path}: {len(self.unplanned)} stored trials are not in this run's plan (run.json) and "
                f"are left out of every figure: {shown}{more}"
            )
        if self.torn_tail:
            out.append(
                f"{self.path}:{self.torn_line}: a torn last line ({self.torn_tail} bytes, a crash mid-write) "
                "was skipped; `simlab run` with the same run id cuts it and plays that unit again"
            )
        for unit, first, repeat in self.duplicates[:5]:
            out.append(
                f"{self.path}: unit {unit!r} is stored twice, identically (lines {first} and {repeat}): "
                "counted once"
            )
        if len(self.duplicates) > 5:
            out.append(f"{self.path}: … and {len(self.duplicates) - 5} more identical repeats, counted once")
        return out


class UnitLedger:
    """Where each unit of a file is stored: the duplicate rule."""

    def __init__(self, path: Path, notes: ReadNotes):
        self.path, self.notes = path, notes
        self.seen: dict[str, tuple[int, int, int]] = {}  # unit → (line, offset, length)

    def admit(self, unit: str, number: int, offset: int, line: bytes | memoryview) -> bool:
        """True for a unit seen the first time, False for a byte-identical repeat (dropped and
        noted); a different line for a unit already seen is an error."""
        first = self.seen.get(unit)
        if first is None:
            self.seen[unit] = (number, offset, len(line))
            return True
        before_number, before_offset, before_length = first
        if before_length == len(line) and _read_at(self.path, before_offset, before_length) == bytes(line):
            self.notes.duplicates.append((unit, before_number, number))
            return False
        raise LineError(
            f"{self.path}:{number}: unit {unit!r} is stored twice, on lines {before_number} and "
            f"{number}, with different contents; a run holds one trial per unit. Keep the line you "
            "trust and delete the other, or merge shards with `simlab merge`, which refuses overlaps"
        )

    def admit_at(self, unit: str, number: int, offset: int, length: int) -> bool:
        """``admit`` for a line known by its place in the file (an index of heads): its bytes are
        read only when its unit was seen before."""
        if unit not in self.seen:
            self.seen[unit] = (number, offset, length)
            return True
        return self.admit(unit, number, offset, _read_at(self.path, offset, length))


def _read_at(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def block_lines(
    path: Path, start: int = 0, number: int = 0, stop: int | None = None, reached: list[int] | None = None
) -> Iterator[tuple[int, int, bytearray, int, int, bool]]:
    """``(number, offset, buffer, start, end, last)`` for each non-blank line of a file: ``offset``
    is where the line starts in the file, ``last`` says it has no newline (a torn tail). The file
    is read in reused 4 MB blocks and never split into line objects (1.6 GB for 100,000 trials);
    the buffer is only valid until the next line. ``start`` (a line start) and ``number`` (the
    lines before it) read only the rest of a file: the tail past its index of heads, or past what
    an incremental read (``heads_tail.Tail``) took before. ``stop`` reads no byte past it (the
    size a reader saw); ``reached``, once the lines are all given, holds ``[offset, number]``: the
    end of the last whole line (the start of a torn tail) and the lines up to it, blank included."""
    base = start  # the file offset of data[0]
    data, block = bytearray(), bytearray(_BLOCK)  # reused: fresh 4 MB buffers would cost page faults
    left = -1 if stop is None else stop - start  # bytes still to read; -1: to the end of the file
    with open(path, "rb") as fh:
        fh.seek(start)
        while left and (
            size := fh.readinto(block if left < 0 or left >= _BLOCK else memoryview(block)[:left])
        ):
            left -= size if left > 0 else 0
            data += memoryview(block)[:size]
            pos = 0
            while (end := data.find(b"\n", pos)) >= 0:
                number += 1
                if end > pos and (data[pos] == 0x7B or data[pos:end].strip()):  # "{": no copy to test
                    yield number, base + pos, data, pos, end, False
                pos = end + 1
            del data[:pos]  # cheap: a bytearray drops its head without moving the rest
            base += pos
    if reached is not None:
        reached[:] = [base, number]
    if data.strip():
        yield number + 1, base, data, 0, len(data), True


def _second_record(data: bytes | bytearray, pos: int, end: int) -> bool:
    """Whether another record starts in ``data[pos:end]``: two lines run together (a torn line
    followed by the next one). Inside a JSON string every quote is escaped, so the prefix can only
    be structure; a look-alike inside a tool result sends the line to the full parse, which decides."""
    while (found := data.find(_RECORD_START, pos, end)) >= 0:
        if _ANY_PREFIX.match(data, found, end):
            return True
        pos = found + 1
    return False


def read_head(data: bytes | bytearray, start: int = 0, end: int | None = None) -> TrialHead | None:
    """The head at the front of a line, or None when the line is not in simlab's own shape.

    Only the head is parsed. It ends where the transcript begins: ``,"transcript":{`` cannot occur
    inside it, as every quote within a JSON string is escaped and no key of the head or its row
    named ``transcript`` holds an object (``transcript/row.py``).
    """
    end = len(data) if end is None else end
    span = head_span(data, start, end)
    return None if span is None else parse_head(data[span[0] : span[1]])


def head_span(data: bytes | bytearray, start: int, end: int) -> tuple[int, int] | None:
    """Where the head of a line in simlab's own shape lies (``read_head``), unparsed, or None."""
    match = _HEAD_KEY.match(data, start, end)
    if match is None or data[end - 1] != 0x7D:  # "}"
        return None
    stop = data.find(_HEAD_END, match.end(), end)
    if stop < 0 or _second_record(data, stop + len(_HEAD_END), end):
        return None
    return match.end(), stop


_validate_head = TrialHead.__pydantic_validator__.validate_json  # model_validate_json, less its wrapper


def parse_head(text: bytes | bytearray) -> TrialHead | None:
    """A head's bytes as the typed head every reader above this layer gets, or None when they are
    not a valid head of this version (then the line is parsed whole and its head computed: the
    fast path gives up, it is never wrong). pydantic-core validates the bytes straight into the
    model, with no dict between."""
    try:
        head: TrialHead = _validate_head(text)
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None
    return head


def _head_row(text: bytes | bytearray) -> dict[str, Any] | None:
    """The row of a head's bytes as a dict, for the identity check alone (``scan``'s unit and line
    reads, which yield no head and need five of its fields): cheaper than the model."""
    from pydantic_core import from_json

    try:
        head = from_json(text)
    except ValueError:
        return None
    if not isinstance(head, dict) or head.get("v") != HEAD_VERSION or not isinstance(head.get("row"), dict):
        return None
    return head["row"]


def read_unit(data: bytes | bytearray, start: int, end: int) -> str | None:
    """The unit id at the front of a line in simlab's own shape, or None (then parse in full)."""
    match = _PREFIX.match(data, start, end)
    if match is None or data[end - 1] != 0x7D:
        return None
    transcript = data.find(_HEAD_END, match.end(), end)  # a line without a transcript is parsed, and refused
    if transcript < 0 or _second_record(data, transcript + len(_HEAD_END), end):
        return None
    return match.group(1).decode("utf-8")


def parse_record(line: bytes | bytearray, path: Path, number: int) -> dict[str, Any]:
    """A whole trial line, parsed and checked (a unit id, a transcript), or ``LineError``.
    pydantic-core's JSON parser is faster than ``json``; ``json`` reads what it cannot (lone
    surrogates)."""
    from pydantic_core import from_json

    try:
        value = from_json(line)
    except ValueError:
        try:
            value = json.loads(line)
        except ValueError:
            raise LineError(
                f"{path}:{number}: not valid JSON (a line cut short, or two lines run together): the "
                f"file was edited or corrupted; {FIX}"
            ) from None
    if not isinstance(value, dict) or not isinstance(value.get("unit_id"), str) or not value["unit_id"]:
        raise LineError(
            f"{path}:{number}: not a trial record (no unit_id); the file was edited or corrupted; {FIX}"
        )
    if not isinstance(value.get("transcript"), dict):
        keys = ", ".join(sorted(value)) if isinstance(value, dict) else ""
        raise LineError(
            f"{path}:{number}: trial {value['unit_id']!r} has no transcript (the line holds only {keys}); "
            "a trial line holds its whole transcript: restore the line, or delete it and run the same "
            "run id again to play that unit"
        )
    return value


def record_of(raw: dict[str, Any], path: Path, number: int) -> TrialRecord:
    """The ``TrialRecord`` of a parsed line; one that does not validate is a ``LineError``."""
    from pydantic import ValidationError

    try:
        return TrialRecord.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        value = first.get("input")
        scalar = value is None or isinstance(value, (bool, int, float))  # as the file writes it
        shown = f" is {json.dumps(value)[:40]}" if scalar else ""
        raise LineError(
            f"{path}:{number}: trial {raw['unit_id']!r} is not a valid trial record ({where}{shown}: "
            f"{first['msg']}); the file was edited or corrupted; {FIX}"
        ) from None


def head_of(raw: dict[str, Any], path: Path, number: int) -> TrialHead:
    """The head of a parsed line without one (record schema 1, a hand edit, a head that is not
    valid), computed as the writer computes it (``transcript/row.record_head``). A record whose
    figures no head can hold (an integer beyond 64 bits: ``head.Int64``) is a ``LineError``."""
    from pydantic import ValidationError

    record = record_of(raw, path, number)
    try:
        return record_head(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(["head", *(["row"] if exc.title == "TrialFigures" else []), *map(str, first["loc"])])
        raise LineError(
            f"{path}:{number}: trial {raw['unit_id']!r}: its figures do not fit a head ({where} is "
            f"{_short(first.get('input'))}: {first['msg']}); the file was edited or corrupted; {FIX}"
        ) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def line_value(
    data: bytes | bytearray, start: int, end: int, path: Path, number: int, parse: Parse
) -> tuple[str, Any]:
    """``(unit id, value)`` of one complete line under the rule: the value is the unit id, the
    head, or the whole parsed record, as ``parse`` asks."""
    if parse == "unit":
        unit = read_unit(data, start, end)
        if unit is not None:
            return unit, unit
    elif parse == "head":
        head = read_head(data, start, end)
        if head is not None:
            return head.row.unit_id, head
    raw = parse_record(bytes(data[start:end]), path, number)
    if parse == "head":
        return raw["unit_id"], head_of(raw, path, number)
    return raw["unit_id"], raw["unit_id"] if parse == "unit" else raw


def scan(path: Path, parse: Parse, notes: ReadNotes | None = None) -> Iterator[tuple[int, str, Any]]:
    """``(line number, unit id, value)`` of every trial of a file, each unit once, under the rule
    (module docstring): the value is the unit id, the head, the parsed record, or the line's own
    bytes (``line``, checked like ``unit``). ``notes`` collects what was skipped."""
    notes = notes if notes is not None else ReadNotes(path)
    if not path.exists():
        return
    ledger = UnitLedger(path, notes)
    identity = (
        notes.run_identity() if parse != "unit" else None
    )  # "unit": resume's scan, checked by its heads
    try:
        for number, offset, data, start, end, last in block_lines(path):
            if last:  # a torn tail: skipped by every reader, cut by the next run
                notes.torn_tail, notes.torn_line = end - start, number
                return
            unit, value = line_value(data, start, end, path, number, "unit" if parse == "line" else parse)
            if not ledger.admit(unit, number, offset, memoryview(data)[start:end]):
                continue
            if identity is not None:
                identity.check(path, number, unit, _row(value, parse, data, start, end, path, number))
            if notes.plan is not None and unit not in notes.plan:
                notes.unplanned.append((unit, number))
                continue
            yield number, unit, bytes(data[start : end + 1]) if parse == "line" else value
    except OSError as exc:
        raise InfraError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _row(
    value: Any, parse: Parse, data: bytes | bytearray, start: int, end: int, path: Path, number: int
) -> Mapping[str, Any]:
    """The figures of a line that ``RunIdentity.check`` reads: its head's row, or its transcript's."""
    if parse == "head":
        return figures_of(value)
    if parse == "raw":
        return row_of_record(value)
    span = head_span(data, start, end)
    row = None if span is None else _head_row(data[span[0] : span[1]])
    if row is not None:
        return row
    return row_of_record(parse_record(bytes(data[start:end]), path, number))


def figures_of(head: TrialHead) -> Mapping[str, Any]:
    """A typed head's row as the mapping ``RunIdentity.check`` reads (its fields, not copied)."""
    return vars(head.row)


_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_record(record: TrialRecord) -> bytes:
    """One JSON line, framed as the readers of this module read it (module docstring), with its
    ``head`` computed afresh (``transcript/row.record_head``) so it always agrees with the checks
    and events beside it. Lone surrogates (undecodable bytes) become U+FFFD instead of failing.
    Every trial simlab stores passes here, so this is where secrets are masked
    (``redact.mask_values``): values of credential-named environment variables and credentials
    inside URLs, wherever in the record they are."""
    head = record_head(record)
    try:
        rest = record.model_dump_json(exclude=set(_FRAMED)).encode("utf-8")  # {"checks":…,"verdict":…,…}
        line = b"".join(
            (
                b'{"schema_version":',
                to_json(record.schema_version),
                b',"unit_id":',
                to_json(record.unit_id),
                b',"head":',
                head.model_dump_json().encode("utf-8"),
                b',"transcript":',
                record.transcript.model_dump_json().encode("utf-8"),
                b"," + rest[1:] if rest != b"{}" else b"}",
                b"\n",
            )
        )
    except (ValueError, UnicodeError):  # pydantic's serialization error is a ValueError
        line = _line(_fix_text(_framed(record, head)))
    if holds_secret(line):  # rare: a key echoed in an agent's exception, a password in an api_base URL
        line = _line(mask_tree(json.loads(line)))
    return line


def _framed(record: TrialRecord, head: Any) -> dict[str, Any]:
    data = record.model_dump(mode="json", exclude_none=False)
    data["head"] = head.model_dump(mode="json")
    return {key: data.pop(key) for key in _FRAMED} | data


def _line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _fix_text(value: Any) -> Any:
    return map_strings(value, _fix_string)


def _fix_string(value: str) -> str:
    if _SURROGATE.search(value):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def last_line_start(path: Path, chunk: int = 1 << 16) -> tuple[int, int]:
    """``(size, start of the last line)`` of a file, read backwards in chunks: linear in the length
    of the last line, whatever it is, with memory of one chunk."""
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        pos = size - 1 if size else 0  # the last byte may be the last line's own newline
        while pos > 0:
            step = min(chunk, pos)
            fh.seek(pos - step)
            found = fh.read(step).rfind(b"\n")
            if found >= 0:
                return size, pos - step + found + 1
            pos -= step
        return size, 0


def temp_path(path: Path, kind: str = "tmp") -> Path:
    """A temporary file beside ``path``, unique to this process and call: concurrent commands never
    share one, and ``store.clean_leftovers`` can tell from its name whether its writer still runs."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.{kind}")
