"""``heads.jsonl``: an index of the heads of ``trials.jsonl``, kept beside it so that a report or the
viewer reads 1.8 KB a trial instead of 20 KB (issue 19: 100,000 trials in < 5 s).

It is derived data; ``trials.jsonl`` stays the only source of truth, and the index is used only
where it provably agrees with it:

- The first line is ``{"simlab_heads":INDEX_VERSION,"head_v":HEAD_VERSION}``; an index of another
  version is ignored and rebuilt. Then one line per trial line, in file order:
  ``{"o":OFFSET,"n":LENGTH,"p":HEAD_AT,"h":{…head…}}`` (the line's offset in ``trials.jsonl``, its
  length without the newline, where its head starts within it, and the head's own bytes), or
  ``{"o":OFFSET,"n":LENGTH}`` for a line not in simlab's own shape (read whole, as every reader
  reads it).
- A reader (``heads_read.py``, for ``heads_tail.py``) checks every entry against ``trials.jsonl``
  without reading transcripts: the line's
  framing up to the head, the head byte for byte, ``,"transcript":{`` after it, the ``}`` and
  newline that end the line, and that the lines follow one another (blank lines between them
  checked blank). The first entry that does not hold (a file rewritten, truncated, an index longer
  than the file, a garbage or torn index line) ends the index's use: the rest of ``trials.jsonl``
  is read the old way (``lines.block_lines``, the one line rule), and so is any tail past the
  index. What was read the old way is written back (appended, or the index rewritten atomically).
- The writer (``store.Appender``, ``workers.LockedAppender``) appends a group commit's entries
  after its trial lines are on disk, under the index's ``flock``, only where the index ends exactly
  where those lines begin; otherwise it leaves the gap to the next reader. A crash between the two
  writes leaves an index that is short, never wrong. Commands that rewrite ``trials.jsonl``
  (resume's retire, ``grade``, ``merge``) write the index beside the new file
  (``IndexBuilder``) and put it in place after it (``replace_trials``).
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path
from typing import Any

from simlab.errors import InfraError
from simlab.runner.lines import head_span, last_line_start, temp_path
from simlab.transcript.head import HEAD_VERSION

HEADS = "heads.jsonl"
INDEX_VERSION = 1
HEADER = b'{"simlab_heads":%d,"head_v":%d}\n' % (INDEX_VERSION, HEAD_VERSION)
ENTRY = re.compile(rb'\{"o":(\d+),"n":(\d+)(?:,"p":(\d+),"h":)?')


def index_path(trials: Path) -> Path:
    return trials.with_name(HEADS)


def entry(offset: int, data: bytes | bytearray, start: int, end: int) -> bytes:
    """The index line of the trial line ``data[start:end]`` (no newline) found at ``offset``."""
    span = head_span(data, start, end)
    if span is None:
        return b'{"o":%d,"n":%d}\n' % (offset, end - start)
    return b'{"o":%d,"n":%d,"p":%d,"h":%s}\n' % (
        offset,
        end - start,
        span[0] - start,
        data[span[0] : span[1]],
    )


def entries(offset: int, lines: list[bytes]) -> bytes:
    """The index lines of whole trial lines (each with its newline) written from ``offset`` on."""
    out = []
    for line in lines:
        out.append(entry(offset, line, 0, len(line) - 1))
        offset += len(line)
    return b"".join(out)


# -- writing ---------------------------------------------------------------------------------


def append_entries(trials: Path, start: int, lines: list[bytes]) -> None:
    """After ``lines`` reached ``trials`` at ``start`` (fsynced): their entries, under the index's
    flock, where the index ends at ``start`` (a new index where ``start`` is 0). Never raises: an
    index not written is one a reader rebuilds. Not fsynced: a reader checks what it finds."""
    path = index_path(trials)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | (os.O_CREAT if start == 0 else 0), 0o644)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        ends = covered(path, fd)
        if ends == start or (ends is None and start == 0 and os.fstat(fd).st_size == 0):
            write_all(fd, (HEADER if ends is None else b"") + entries(start, lines))
    except OSError:
        pass
    finally:
        os.close(fd)  # and its flock


def covered(path: Path, fd: int) -> int | None:
    """Where in ``trials.jsonl`` the index ends: after its last entry's line (0 for a header
    alone), or None when it has no header of this version or does not end in a whole line."""
    if os.pread(fd, len(HEADER), 0) != HEADER or os.stat(path).st_ino != os.fstat(fd).st_ino:
        return None  # another version, or replaced since it was opened (a reader's rebuild)
    size, last = last_line_start(path)
    if size == len(HEADER):
        return 0
    if os.pread(fd, 1, size - 1) != b"\n":
        return None
    match = ENTRY.match(os.pread(fd, 64, last))
    return None if match is None else int(match[1]) + int(match[2]) + 1


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class TempIndex:
    """An index written to a temporary file beside the real one: a failure to write drops it (an
    index not written is one a reader rebuilds), and so does ``discard`` when it was not used."""

    def __init__(self, trials: Path):
        self.target = index_path(trials)
        self.tmp: Path | None = temp_path(self.target)
        self._fh: Any = None
        try:
            self._fh = open(self.tmp, "wb")
        except OSError:
            self.discard()

    def write(self, data: bytes) -> None:
        if self._fh is not None:
            try:
                self._fh.write(data)
            except OSError:
                self.discard()

    def close(self) -> Path | None:
        """The finished file, or None when it could not be written."""
        if self._fh is None:
            return None
        try:
            self._fh.close()
        except OSError:
            self.discard()
            return None
        self._fh = None
        return self.tmp

    def discard(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:
                pass
            self._fh = None
        if self.tmp is not None:
            try:
                self.tmp.unlink(missing_ok=True)
            except OSError:
                pass
            self.tmp = None


class IndexBuilder(TempIndex):
    """The index of a trials file being written anew (``retire``, ``grade``, ``merge``): fed each
    line as it is written, its temporary file is put in place by ``replace_trials``."""

    def __init__(self, trials: Path):
        super().__init__(trials)
        self._offset = 0
        self.write(HEADER)

    def add(self, line: bytes) -> None:
        self.write(entry(self._offset, line, 0, len(line) - 1))
        self._offset += len(line)


def replace_trials(new_trials: Path, trials: Path, index: IndexBuilder | None) -> None:
    """Put a rewritten trials file in place, and its index after it: the old index goes first, so
    a crash in between leaves no index (rebuilt by the next reader), never a stale one."""
    built = index.close() if index is not None else None
    try:
        index_path(trials).unlink(missing_ok=True)
    except OSError as exc:
        if built is not None:
            built.unlink(missing_ok=True)
        raise InfraError(
            f"{index_path(trials)}: cannot remove the index of a trials file being replaced "
            f"({exc.strerror or exc}); remove it by hand"
        ) from None
    os.replace(new_trials, trials)
    if built is not None:
        try:
            os.replace(built, index_path(trials))
        except OSError:
            built.unlink(missing_ok=True)
