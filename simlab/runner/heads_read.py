"""Reading ``heads.jsonl`` (``heads_index.py`` says what it holds): each entry checked against
``trials.jsonl`` before its head is used (``IndexedLines``); what a reader (``heads_tail.Tail``)
reads past it by the one line rule (``lines.py``) is written back into the index (``Catchup``)."""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simlab.runner.heads_index import ENTRY, HEADER, TempIndex, covered, index_path, write_all
from simlab.runner.lines import block_lines

_HEAD_KEY = re.compile(rb'\{"schema_version":\d+,"unit_id":"(?:[^"\\]|\\.)*","head":')
_PLAIN_HEAD_KEY = re.compile(
    rb'\{"schema_version":\d+,"unit_id":"[^"\\]*","head":'
)  # _HEAD_KEY, fast: no escapes
_HEAD_END = b',"transcript":{'
_MAX_GAP = 1 << 16  # blank bytes between two indexed lines beyond which the index is not trusted


class IndexedLines:
    """The lines of a trials file through its index: ``verified()`` gives the indexed lines that
    hold, ``end``/``number`` say where they stop (a line start, and the lines before it)."""

    def __init__(self, trials: Path):
        self.trials, self.path = trials, index_path(trials)
        self.end = 0  # bytes of trials.jsonl covered by the lines given so far
        self.number = 0  # their line numbers so far (blank lines count)
        self.index_ok = 0  # bytes of the index that hold (header and the entries given)
        self.whole = False  # every line of the index held: a tail may be appended to it

    def verified(self) -> Iterator[tuple[int, int, int, bytes | None, bytes | None]]:
        """``(number, offset, length, head bytes, line bytes)`` per indexed line that agrees with
        the trials file, in order: the head's bytes, or (a line not in simlab's shape) the line."""
        try:
            fd = os.open(self.trials, os.O_RDONLY)
        except OSError:
            return
        try:
            yield from self._verified(fd)
        except OSError:
            return
        finally:
            os.close(fd)

    def _verified(self, fd: int) -> Iterator[tuple[int, int, int, bytes | None, bytes | None]]:
        """The loop of ``verified``, kept tight (a report of 100,000 trials runs it 100,000 times):
        each entry costs one read of the trials file, from the end of the line before it (its
        ``}`` and newline) to just past its own head."""
        if not self.path.exists():
            return
        pread, entry_at = os.pread, ENTRY.match
        held: tuple[int, int, int, bytes | None, bytes | None] | None = None  # checked but for its end
        held_index = 0
        whole = True
        for _, at, buf, start, end, last in block_lines(self.path):
            if not self.index_ok:
                if at != 0 or bytes(buf[start : end + 1]) != HEADER:
                    return
                self.index_ok = end - start + 1
                continue
            match = None if last or buf[end - 1] != 0x7D else entry_at(buf, start, end)
            if match is None:
                whole = False
                break
            offset, length = int(match[1]), int(match[2])
            before, lead = (held[1] + held[2] + 1, 2) if held is not None else (self.end, 0)
            if offset < before or offset - before > _MAX_GAP or length < 1:
                whole = False
                break
            headed = match[3] is not None
            at_head = int(match[3]) if headed else 0
            if headed:
                size = offset - before + lead + at_head + (end - 1 - match.end()) + len(_HEAD_END)
            else:
                size = offset - before + lead + length + 1
            data = pread(fd, size, before - lead)
            if len(data) != size or (lead and not _ended(data, held)):
                whole = False
                break
            line = lead + offset - before
            number = (held[0] if held is not None else self.number) + 1
            if line > lead:  # blank lines between: the rule skips them, and counts them
                gap = data[lead:line]
                if gap.strip() or not gap.endswith(b"\n"):
                    whole = False
                    break
                number += gap.count(b"\n")
            checked = _checked(data, buf, match, line, at_head, size, (number, offset, length))
            if checked is None:
                whole = False
                break
            if held is not None:
                yield held
                self.end, self.number, self.index_ok = held[1] + held[2] + 1, held[0], held_index
            held, held_index = checked, at + end - start + 1
        if held is not None:
            if not _ended(pread(fd, 2, held[1] + held[2] - 1), held):
                return
            yield held
            self.end, self.number, self.index_ok = held[1] + held[2] + 1, held[0], held_index
        self.whole = whole and self.index_ok > 0


def _checked(
    data: bytes, buf: Any, match: Any, line: int, at_head: int, size: int, where: tuple[int, int, int]
) -> tuple[int, int, int, bytes | None, bytes | None] | None:
    """The entry as ``verified`` yields it, when the trials file's bytes read for it (``data``: its
    line from ``line``) agree with the index's entry (``buf`` at ``match``); None when they do not."""
    if match[3] is None:  # a line not in simlab's shape: one whole line
        if data.find(b"\n", line) != size - 1:
            return None
        return (*where, None, data[line:-1])
    head = data[line + at_head : -len(_HEAD_END)]  # the trials file's own bytes, as the index has them
    framing = _PLAIN_HEAD_KEY.match(data, line, line + at_head) or _HEAD_KEY.match(data, line, line + at_head)
    if (
        framing is None
        or framing.end() != line + at_head
        or not buf.startswith(head, match.end())
        or not data.endswith(_HEAD_END)
    ):
        return None
    return (*where, head, None)


def _ended(data: bytes, held: Any) -> bool:
    """Whether the bytes before the next line end the ``held`` line as its kind must: ``}`` and a
    newline after a line in simlab's shape, a newline after any other."""
    return data[:2] == b"}\n" if held[3] is not None else data[1:2] == b"\n"


def read_line(path: Path, offset: int, length: int) -> bytes:
    """The line an index entry places at ``offset`` (without its newline)."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


class Catchup(TempIndex):
    """The entries a reader read the old way, written to a temporary file, then appended to an
    index that holds whole (under its flock, if nobody changed it since) or put in place of one
    that did not."""

    def __init__(self, trials: Path, index: IndexedLines):
        super().__init__(trials)
        self.index, self.added = index, 0
        if index.whole or self._fh is None:
            return
        self.write(HEADER)
        try:
            if index.index_ok > len(HEADER):
                with open(self.target, "rb") as old:
                    old.seek(len(HEADER))
                    _copy(old, self._fh, index.index_ok - len(HEADER))
        except OSError:
            self.discard()

    def add(self, line: bytes) -> None:
        self.write(line)
        self.added += 1

    def commit(self) -> None:
        if self.index.whole and not self.added:
            return
        done = self.close()
        if done is None:
            return
        try:
            if not self.index.whole:
                os.replace(done, self.target)
                return
            fd = os.open(self.target, os.O_RDWR | os.O_APPEND)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if covered(self.target, fd) == self.index.end:
                    with open(done, "rb") as src:
                        while chunk := src.read(1 << 22):
                            write_all(fd, chunk)
            finally:
                os.close(fd)
        except OSError:
            pass


def _copy(src: Any, dst: Any, count: int) -> None:
    while count > 0:
        chunk = src.read(min(count, 1 << 22))
        if not chunk:
            raise OSError("the index changed while it was read")
        dst.write(chunk)
        count -= len(chunk)
