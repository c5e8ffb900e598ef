"""Runs on disk, read lazily: a catalog of run folders, and per run an index of its trials.

The index keeps one small ``TrialRow`` per line and the byte offset of the line; a transcript is
parsed in full only when it is opened. The first read takes the rows of the lines the run's index
of heads holds (``runner/heads_read.py``) and reads only the rest of the trials file.
``RunIndex.read_new`` reads only what was appended since the last call, so a run that is still
being written can be followed by polling.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from simlab.runner.heads_read import IndexedLines
from simlab.runner.lines import LineError, ReadNotes, UnitLedger, line_value, parse_head
from simlab.runner.store import planned_units
from simlab.tui.rows import TrialRow, row_from_head
from simlab.tui.summary import LiveProgress, ScenarioProgress

__all__ = ["RunIndex", "RunInfo", "discover_runs", "find_run"]

MANIFEST = "run.json"
TRIALS = "trials.jsonl"
CHUNK = 4 * 1024 * 1024


@dataclass
class RunInfo:
    """A run folder and what its manifest says (empty when it has none or it is unreadable)."""

    folder: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path) -> RunInfo:
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {}
        return cls(folder, manifest if isinstance(manifest, dict) else {})

    @property
    def key(self) -> str:
        """Identity inside the viewer: the folder (two folders may carry the same run id)."""
        return str(self.folder.resolve())

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.folder.name)

    @property
    def created_at(self) -> str:
        created = self.manifest.get("created_at")
        if isinstance(created, str) and created:
            return created
        path = self.folder / TRIALS if (self.folder / TRIALS).exists() else self.folder
        from datetime import datetime

        return datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")

    def pin(self, role: str) -> str:
        """The model or reference that played ``role`` (agent, simulator, judge), or ''."""
        pin = (self.manifest.get("pins") or {}).get(role)
        if not isinstance(pin, dict):
            return str(pin or "")
        if pin.get("model"):
            return str(pin["model"])
        if pin.get("python"):
            return f"python:{pin['python']}"
        return str(pin.get("kind") or pin.get("ref") or "")

    def allow_unjudged(self) -> list[str]:
        """The check kinds this run lets stay unjudged (its trials count as passes), as the report reads it."""
        kinds = self.manifest.get("allow_unjudged")
        return [str(k) for k in kinds] if isinstance(kinds, list) else []

    def planned(self) -> dict[str, int]:
        """scenario id → planned trials, in manifest order."""
        scenarios = (self.manifest.get("pins") or {}).get("scenarios") or {}
        if not isinstance(scenarios, dict):
            return {}
        return {str(sid): int((spec or {}).get("trials") or 0) if isinstance(spec, dict) else 0
                for sid, spec in scenarios.items()}


def _is_run(folder: Path) -> bool:
    return folder.is_dir() and ((folder / MANIFEST).exists() or (folder / TRIALS).exists())


def discover_runs(root: Path) -> list[RunInfo]:
    """Every run folder under ``root``, newest first."""
    if not root.is_dir():
        return []
    runs = [RunInfo.load(p) for p in root.iterdir() if _is_run(p)]
    return sorted(runs, key=lambda r: (r.created_at, r.run_id), reverse=True)


def find_run(root: Path, target: str | None) -> RunInfo | None:
    """A run folder path, a run id under ``root``, or (no target) the newest run."""
    if target:
        path = Path(target)
        if _is_run(path):
            return RunInfo.load(path)
        if _is_run(root / target):
            return RunInfo.load(root / target)
        return None
    runs = discover_runs(root)
    return runs[0] if runs else None


class RunIndex:
    """The trials of one run, as rows; grows as the run's file grows.

    Lines are read under the rule of every reader (``runner/lines.py``): each planned unit once; a
    bad line, a unit stored twice or a line without a transcript sets ``problem`` (the error
    ``simlab report`` gives), shown in place of the run's figures; a torn tail waits."""

    def __init__(self, info: RunInfo):
        self.info = info
        self.path = info.folder / TRIALS
        self._start_over()
        self.complete = False  # every line written so far has a row
        self.completed_at: float | None = None  # perf_counter when that first became true
        self._lock = threading.Lock()
        self._live: LiveProgress | None = None

    def _start_over(self) -> None:
        self.rows: list[TrialRow] = []
        self.offset = 0  # bytes consumed: always the end of a complete line
        self.lines = 0  # lines consumed (their numbers, for messages)
        self.bad_lines = 0
        self.problem: str | None = None
        self.notes = ReadNotes(self.path, plan=planned_units(self.info.manifest) if self.info.manifest else None)
        self._ledger = UnitLedger(self.path, self.notes)
        self._seen: tuple[int, int, int] | None = None  # (device, inode, mtime) when last read
        self._head = self._tail = b""  # the first and last bytes read: a rewritten file may not have them

    def changed(self) -> bool:
        """Cheap: has the file grown, shrunk, been replaced or rewritten since it was read?"""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return st.st_size != self.offset or (st.st_dev, st.st_ino, st.st_mtime_ns) != self._seen

    def _rewritten(self, st: os.stat_result, fh: Any) -> bool:
        """Whether what was read is no longer the front of the file (``simlab grade`` renames a new
        file over it; an editor may rewrite it in place, even to a larger size)."""
        if self._seen is None:
            return False
        if st.st_size < self.offset or (st.st_dev, st.st_ino) != self._seen[:2]:
            return True
        if st.st_size == self.offset:  # written without growing: nothing was appended, so rewritten
            return st.st_mtime_ns != self._seen[2]
        fh.seek(0)
        if fh.read(len(self._head)) != self._head:
            return True
        fh.seek(self.offset - len(self._tail))
        return fh.read(len(self._tail)) != self._tail

    def read_new(self, chunk: int = CHUNK) -> Iterator[list[TrialRow]]:
        """Index what was appended since the last read, in batches; a torn last line waits."""
        with self._lock:
            try:
                st = os.stat(self.path)
            except OSError:
                self._done()
                return
            size = st.st_size
            with open(self.path, "rb") as fh:
                if self._rewritten(st, fh):
                    self._start_over()
                self._seen = (st.st_dev, st.st_ino, st.st_mtime_ns)
                if self.offset == 0:
                    yield from self._from_index(fh)
                fh.seek(self.offset)
                while self.offset < size:
                    data = fh.read(min(chunk, size - self.offset))
                    if not data:
                        break
                    end = data.rfind(b"\n") + 1
                    if end == 0:  # one line longer than the chunk, or a torn tail
                        more = fh.readline()
                        if not more.endswith(b"\n"):
                            break
                        data, end = data + more, len(data) + len(more)
                    batch = self._scan(data[:end], self.offset)
                    self._tail = data[max(0, end - 256):end]
                    if not self._head:
                        self._head = data[:256]
                    self.offset += end
                    fh.seek(self.offset)
                    self.rows.extend(batch)
                    if batch:
                        yield batch
            self._done()

    def _from_index(self, fh: Any, batch: int = 2000) -> Iterator[list[TrialRow]]:
        """The rows of the lines the run's index of heads holds (``runner/heads_read.py``: every
        entry checked against the trials file), without reading their transcripts; the rest is
        read from the trials file as it grows."""
        index = IndexedLines(self.path)
        rows: list[TrialRow] = []
        for number, offset, length, head_bytes, line in index.verified():
            head = parse_head(head_bytes) if head_bytes is not None else None
            data = b""
            if head is None or not isinstance((head.get("row") or {}).get("unit_id"), str):
                head, data = None, line if line is not None else _read(fh, offset, length)
            self.lines = number
            row = self._row(data, 0, length, offset, head)
            if row is not None:
                rows.append(row)
            if len(rows) >= batch:
                yield self._consumed(fh, offset + length + 1, rows)
                rows = []
        if index.end > self.offset and (done := self._consumed(fh, index.end, rows)):
            yield done

    def _consumed(self, fh: Any, end: int, rows: list[TrialRow]) -> list[TrialRow]:
        """Rows taken from the index, up to ``end`` of the trials file: read as if read there."""
        self.offset = end
        self._head = _read(fh, 0, min(256, end))
        self._tail = _read(fh, max(0, end - 256), min(256, end))
        self.rows.extend(rows)
        return rows

    def _done(self) -> None:
        self.complete = True
        if self.completed_at is None:
            self.completed_at = time.perf_counter()

    def _scan(self, data: bytes, base: int) -> list[TrialRow]:
        rows: list[TrialRow] = []
        pos = 0
        while (end := data.find(b"\n", pos)) >= 0:
            self.lines += 1
            if data[pos:end].strip() and (row := self._row(data, pos, end, base + pos)) is not None:
                rows.append(row)
            pos = end + 1
        return rows

    def _row(self, data: bytes, pos: int, end: int, offset: int, head: Any = None) -> TrialRow | None:
        """The row of line ``self.lines`` (``data[pos:end]``, or its ``head`` already read), under
        the rule of every reader; None for a repeat, a unit outside the plan or a bad line."""
        try:
            if head is None:
                unit, head = line_value(data, pos, end, self.path, self.lines, "head")
            else:
                unit = head["row"]["unit_id"]
            if not self._ledger.admit_at(unit, self.lines, offset, end - pos):
                return None  # an identical repeat: counted once, noted
            if (identity := self.notes.run_identity()) is not None:  # a trial of this run (runner/identity.py)
                identity.check(self.path, self.lines, unit, head["row"])
            if self.notes.plan is not None and unit not in self.notes.plan:
                self.notes.unplanned.append((unit, self.lines))
                return None
            return row_from_head(head, offset, end - pos)
        except LineError as exc:  # the error every other reader stops at: shown, not hidden
            self.bad_lines += 1
            self.problem = self.problem or str(exc)
            return None

    def warnings(self) -> list[str]:
        """What the figures of this run leave out or cannot tell, as ``simlab report`` says it."""
        missing = [] if self.info.manifest else [
            "no run.json, so this run's plan and pins are unknown: its completeness cannot be checked"]
        return missing + self.notes.warnings()

    def progress(self) -> dict[str, ScenarioProgress]:
        """Per scenario, the figures of the rows read so far (the report's; see ``tui/summary.py``).
        Called from the screens: it adds only the rows read since the last call."""
        if self._live is None:
            self._live = LiveProgress(self.info.planned(), self.info.allow_unjudged())
        return self._live.update(self.rows)

    def read_all(self) -> list[TrialRow]:
        for _ in self.read_new():
            pass
        return self.rows

    def raw(self, row: TrialRow) -> bytes:
        with open(self.path, "rb") as fh:
            fh.seek(row.offset)
            return fh.read(row.length)

    def record(self, row: TrialRow) -> Any:
        """The full ``TrialRecord`` of one trial, parsed now; a file rewritten since it was indexed
        (``simlab grade``) is said so, and read again at the next poll."""
        from simlab.transcript import TrialRecord

        record = TrialRecord.model_validate_json(self.raw(row))
        if record.unit_id != row.unit_id:
            raise ValueError("the trials file was rewritten since it was read; it is being read again")
        return record


def _read(fh: Any, offset: int, length: int) -> bytes:
    fh.seek(offset)
    return bytes(fh.read(length))
