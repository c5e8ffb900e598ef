"""Runs on disk, read lazily: a catalog of run folders, and per run an index of its trials.

The index keeps one small ``TrialRow`` per trial (a view of its typed head) and where its line
is; a transcript is parsed in full only when it is opened. The trials come from the storage
layer's incremental reader (``runner/heads_tail.Tail``): its first read takes the lines the run's
index of heads holds and reads only the rest of the trials file, and ``RunIndex.read_new`` reads
only what was appended since the last call, so a run that is still being written can be
followed by polling.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from simlab.runner.heads_tail import Tail, gc_paused
from simlab.runner.lines import ReadNotes
from simlab.runner.store import planned_units
from simlab.tui.rows import TrialRow
from simlab.tui.summary import LiveProgress, ScenarioProgress

__all__ = ["RunIndex", "RunInfo", "discover_runs", "find_run"]

MANIFEST = "run.json"
TRIALS = "trials.jsonl"
BATCH = 2000  # rows per batch posted to the screens


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
        """The check kinds this run lets stay unjudged (its trials count as passes), as the report
        reads it."""
        kinds = self.manifest.get("allow_unjudged")
        return [str(k) for k in kinds] if isinstance(kinds, list) else []

    def planned(self) -> dict[str, int]:
        """scenario id → planned trials, in manifest order."""
        scenarios = (self.manifest.get("pins") or {}).get("scenarios") or {}
        if not isinstance(scenarios, dict):
            return {}
        return {
            str(sid): int((spec or {}).get("trials") or 0) if isinstance(spec, dict) else 0
            for sid, spec in scenarios.items()
        }


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

    Lines are read by the storage layer's incremental reader (``runner/heads_tail.Tail``), under
    the rule of every reader: each planned unit once; a line the rule refuses (not a trial, a unit
    stored twice with other contents, another run's trial) sets ``problem`` (the error ``simlab
    report`` gives), shown in place of the run's figures, and the reading goes on past it; a torn
    tail waits until it is whole; a file rewritten or replaced is read again from its start."""

    def __init__(self, info: RunInfo):
        self.info = info
        self.path = info.folder / TRIALS
        plan = planned_units(info.manifest) if info.manifest else None
        self.tail = Tail(self.path, ReadNotes(self.path, plan=plan), keep_going=True)
        self.rows: list[TrialRow] = []
        self._restarts = 0
        self.complete = False  # every line written so far has a row
        self.completed_at: float | None = None  # perf_counter when that first became true
        self._lock = threading.Lock()
        self._live: LiveProgress | None = None

    @property
    def offset(self) -> int:
        """Bytes of the trials file read: always the end of a whole line."""
        return self.tail.offset

    @property
    def notes(self) -> ReadNotes:
        return self.tail.notes

    @property
    def problem(self) -> str | None:
        """The first line the rule refused, as every other reader of the run would say it."""
        return str(self.tail.errors[0]) if self.tail.errors else None

    @property
    def bad_lines(self) -> int:
        return len(self.tail.errors)

    def changed(self) -> bool:
        """Cheap: has the file grown, shrunk, been replaced or rewritten since it was read?"""
        return self.tail.changed()

    def read_new(self, batch: int = BATCH) -> Iterator[list[TrialRow]]:
        """Index what was appended since the last read, in batches of rows; a torn last line
        waits. A file read again from its start (rewritten, replaced) starts a new list of rows."""
        with self._lock, gc_paused():  # many small objects, no cycles: runner/heads_tail.gc_paused
            trials = self.tail.read()
            if self.tail.restarts != self._restarts:
                self._restarts, self.rows = self.tail.restarts, []
            rows: list[TrialRow] = []
            for _, _, head, offset, length in trials:
                rows.append(TrialRow.of(head, offset, length))
                if len(rows) >= batch:
                    self.rows.extend(rows)
                    yield rows
                    rows = []
            if rows:
                self.rows.extend(rows)
                yield rows
            self.complete = True
            if self.completed_at is None:
                self.completed_at = time.perf_counter()

    def warnings(self) -> list[str]:
        """What the figures of this run leave out or cannot tell, as ``simlab report`` says it."""
        missing = (
            []
            if self.info.manifest
            else ["no run.json, so this run's plan and pins are unknown: its completeness cannot be checked"]
        )
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
