"""The one reader of a trials file's heads: ``Tail``, which reads a file as it grows, and
``scan_heads``, one read of it to the end (report, gate, compare, the digest, resume's error scan).

A ``Tail`` applies the rule of every reader (``lines.py``: torn tail skipped, bad line an error
naming file and line, a unit stored once, each line a trial of the run in its ``run.json``,
units outside the plan left out) and remembers where it stopped, so the viewer follows a run
being written by reading only what was appended. After every read, the trials it has given are
those ``lines.scan(path, "head")`` gives of the file as it is then, and its notes are scan's.

- The first read takes the lines the index of heads holds (``heads_read.IndexedLines``: each
  entry checked against the trials file), then reads the rest line by line.
- A last line without its newline is not taken: it is noted as a torn tail and read again by the
  next read, which takes it once it is whole.
- A file that shrank, was replaced (another inode: ``simlab grade`` renames a new file over it) or
  was rewritten in place (its first bytes or the bytes before where the last read stopped differ,
  or it kept its size and got a new mtime) is read again from its start: ``restarts`` counts it,
  the ledger and the notes start afresh, and a caller drops the trials it had. A file that is gone
  reads as nothing new until it is back.
- A line the rule refuses raises ``LineError``, as ``scan`` does, and every later read raises it
  again until the file is replaced or rewritten. With ``keep_going`` (the viewer: the error shown
  in place of the run's figures, the other trials browsable) the error is kept in ``errors`` and
  the read goes on past that line.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simlab.errors import InfraError
from simlab.runner.heads_index import entry
from simlab.runner.heads_read import Catchup, IndexedLines, read_line
from simlab.runner.identity import RunIdentity
from simlab.runner.lines import (
    LineError,
    ReadNotes,
    UnitLedger,
    block_lines,
    figures_of,
    line_value,
    parse_head,
)
from simlab.transcript.head import TrialHead

Trial = tuple[int, str, TrialHead, int, int]  # (line number, unit id, head, offset, length)
_EDGE = 256  # bytes at the front of the file and before where a read stopped, kept to see a rewrite


class Tail:
    """The trials of one file, read as it grows (module docstring)."""

    def __init__(
        self,
        path: Path,
        notes: ReadNotes | None = None,
        *,
        keep_going: bool = False,
        write_back: bool = False,
    ):
        self.path = path
        self.keep_going = keep_going
        self.write_back = write_back and not keep_going  # the index is written only after a faultless read
        self.restarts = 0
        self._plan = notes.plan if notes is not None else None
        self._start_over(notes)

    def _start_over(self, notes: ReadNotes | None = None) -> None:
        self.notes = notes if notes is not None else ReadNotes(self.path, plan=self._plan)
        self.ledger = UnitLedger(self.path, self.notes)
        self.offset = 0  # bytes taken: always the end of a whole line
        self.number = 0  # the lines up to there, blank ones included
        self.errors: list[LineError] = []  # with keep_going: the lines refused, in order
        self._failed: LineError | None = None  # without it: the error every later read raises again
        self._seen: tuple[int, int, int] | None = None  # (device, inode, mtime) after the last read
        self._front = self._back = b""
        self._identity: RunIdentity | None = None  # what each line must carry, read once per read
        self._planned: set[str] | None = None

    def changed(self) -> bool:
        """Cheap (one ``stat``): has the file grown, shrunk, been replaced or rewritten since the
        last read? A torn tail keeps it true until the line is whole."""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return st.st_size != self.offset or (st.st_dev, st.st_ino, st.st_mtime_ns) != self._seen

    def read(self) -> Iterator[Trial]:
        """The trials appended since the last read, in file order, each ``(line number, unit id,
        head, offset, length)``. A rewrite is looked for now, before the first trial is asked for."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return iter(())
        except OSError as exc:
            raise InfraError(f"{self.path}: cannot read ({exc.strerror or exc})") from None
        if self._rewritten(st):
            self.restarts += 1
            self._start_over()
        return self._read(st.st_size)

    def _rewritten(self, st: os.stat_result) -> bool:
        if self._seen is None:
            return False
        if (st.st_dev, st.st_ino) != self._seen[:2] or st.st_size < self.offset:
            return True
        if st.st_size == self.offset:  # written without growing: nothing appended, so rewritten
            return st.st_mtime_ns != self._seen[2]
        return (
            _pread(self.path, 0, len(self._front)) != self._front
            or _pread(self.path, self.offset - len(self._back), len(self._back)) != self._back
        )

    def _read(self, size: int) -> Iterator[Trial]:
        if self._failed is not None:
            raise self._failed
        self.notes.torn_tail = self.notes.torn_line = 0  # seen again below if it is still torn
        self._identity, self._planned = self.notes.run_identity(), self.notes.plan
        out = None
        try:
            if self.offset == 0 and self.number == 0:
                index = IndexedLines(self.path)
                yield from self._indexed(index)
                out = Catchup(self.path, index) if self.write_back else None
            yield from self._lines(size, out)
            if out is not None:
                out.commit()
        except OSError as exc:
            raise InfraError(f"{self.path}: cannot read ({exc.strerror or exc})") from None
        finally:
            if out is not None:
                out.discard()
            self._mark()

    def _indexed(self, index: IndexedLines) -> Iterator[Trial]:
        """The lines the index of heads holds, without reading their transcripts."""
        path = self.path
        for number, offset, length, head_bytes, line in index.verified():
            head = parse_head(head_bytes) if head_bytes is not None else None
            try:
                if head is None:  # a line not in simlab's shape, or a head that does not validate
                    data = line if line is not None else read_line(path, offset, length)
                    unit, head = line_value(data, 0, length, path, number, "head")
                else:
                    unit = head.row.unit_id
                trial = self._take(
                    number, unit, head, offset, length, self.ledger.admit_at(unit, number, offset, length)
                )
            except LineError as exc:
                self._refused(exc)
                trial = None
            self.offset, self.number = offset + length + 1, number
            if trial is not None:
                yield trial
        self.offset, self.number = index.end, index.number

    def _lines(self, size: int, out: Catchup | None) -> Iterator[Trial]:
        """The lines from where the last read stopped to ``size``, read under the one line rule."""
        path, reached = self.path, [self.offset, self.number]
        for number, offset, data, start, end, last in block_lines(
            path, self.offset, self.number, size, reached
        ):
            if last:  # a torn tail: skipped by every reader, cut by the next run, taken here once whole
                self.notes.torn_tail, self.notes.torn_line = end - start, number
                break
            try:
                unit, head = line_value(data, start, end, path, number, "head")
                if out is not None:
                    out.add(entry(offset, data, start, end))
                admitted = self.ledger.admit(unit, number, offset, memoryview(data)[start:end])
                trial = self._take(number, unit, head, offset, end - start, admitted)
            except LineError as exc:
                self._refused(exc)
                trial = None
            self.offset, self.number = offset + end - start + 1, number
            if trial is not None:
                yield trial
        self.offset, self.number = reached

    def _take(
        self, number: int, unit: str, head: TrialHead, offset: int, length: int, admitted: bool
    ) -> Trial | None:
        """The trial of one line the ledger has seen, or None: an identical repeat, or a unit
        outside the plan (both noted)."""
        if not admitted:
            return None
        if self._identity is not None:
            self._identity.check(self.path, number, unit, figures_of(head))
        if self._planned is not None and unit not in self._planned:
            self.notes.unplanned.append((unit, number))
            return None
        return number, unit, head, offset, length

    def _refused(self, exc: LineError) -> None:
        exc = exc.with_traceback(None)  # kept: its frames would keep the read's buffer from being reused
        if not self.keep_going:
            self._failed = exc
            raise exc
        self.errors.append(exc)

    def _mark(self) -> None:
        """Remember the file as this read left it, to tell an append from a rewrite next time."""
        try:
            st = os.stat(self.path)
        except OSError:
            return
        self._seen = (st.st_dev, st.st_ino, st.st_mtime_ns)
        self._front = _pread(self.path, 0, min(_EDGE, self.offset))
        self._back = _pread(self.path, max(0, self.offset - _EDGE), min(_EDGE, self.offset))


def _pread(path: Path, offset: int, length: int) -> bytes:
    if length <= 0:
        return b""
    with open(path, "rb") as fh:
        return os.pread(fh.fileno(), length, offset)


def scan_heads(path: Path, notes: ReadNotes | None = None) -> Iterator[Trial]:
    """``lines.scan(path, "head", notes)`` through the index, with each line's place: ``(number,
    unit, head, offset, length)``: one ``Tail`` read to the end. What the index does not cover is
    read the old way and written back (a rebuild where there is no index)."""
    return Tail(path, notes, write_back=True).read()


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a bulk read of heads (the report's table, the
    viewer's index): a head and what a reader keeps of it hold no reference cycle, so each pass
    during the read would only scan again what was kept (4 % of a report of 10,000 trials,
    bench/results/report_ab.json); whatever is garbage is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
