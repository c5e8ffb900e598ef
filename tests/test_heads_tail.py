"""The incremental reader of a trials file (``runner/heads_tail.Tail``): after every read, the
trials it has given and its notes are those of one full ``lines.scan`` of the file as it is then,
whatever was appended (a line torn and completed later, identical repeats, units outside the plan,
a bad line), and a file truncated, replaced or rewritten is read again from its start."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from simlab.runner import heads_index
from simlab.runner.heads_index import HEADS
from simlab.runner.heads_tail import Tail, scan_heads
from simlab.runner.lines import LineError, ReadNotes, scan
from simlab.runner.store import encode_record
from tests.sample_runs import sample_record, write_sample_run


@pytest.fixture
def lines(tmp_path: Path) -> list[bytes]:
    """The sample run's lines (6 trials of 3 scenarios), each with its newline."""
    return (write_sample_run(tmp_path / "source") / "trials.jsonl").read_bytes().splitlines(keepends=True)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """An empty run of the sample's plan: run.json, no trials yet."""
    folder = write_sample_run(tmp_path / "fixture")
    (folder / "trials.jsonl").write_bytes(b"")
    return folder / "trials.jsonl"


def notes_of(notes: ReadNotes) -> tuple[Any, ...]:
    return notes.torn_tail, notes.torn_line, notes.duplicates, notes.unplanned, notes.warnings()


class Follower:
    """A ``Tail`` read after each change, its trials gathered as a caller keeps them."""

    def __init__(self, path: Path, plan: set[str] | None = None, **options: bool):
        self.plan = plan
        self.tail = Tail(path, ReadNotes(path, plan=plan), **options)
        self.trials: list[tuple[int, str, Any, int, int]] = []
        self.restarts = 0

    def read(self) -> None:
        new = self.tail.read()
        if self.tail.restarts != self.restarts:
            self.restarts, self.trials = self.tail.restarts, []
        self.trials += list(new)

    def matches_a_full_scan(self) -> None:
        path = self.tail.path
        notes = ReadNotes(path, plan=self.plan)
        want = list(scan(path, "head", notes))
        assert [(n, u, h) for n, u, h, _, _ in self.trials] == want
        assert notes_of(self.tail.notes) == notes_of(notes)
        data = path.read_bytes()
        for number, _, _, offset, length in self.trials:  # each trial's place is its line's
            assert data[offset:offset + length] == data.splitlines()[number - 1]
        assert self.tail.offset == data.rfind(b"\n") + 1  # all whole lines taken, a torn tail waits


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def test_it_equals_a_full_scan_after_every_append_a_torn_line_completed_later_included(
        run: Path, lines: list[bytes]) -> None:
    follower = Follower(run)
    follower.read()
    follower.matches_a_full_scan()
    for line in lines:
        cut = len(line) // 3
        for part in (line[:cut], line[cut:2 * cut], line[2 * cut:]):  # a writer's line in three writes
            append(run, part)
            follower.read()
            follower.matches_a_full_scan()
            assert bool(follower.tail.notes.torn_tail) == (not part.endswith(b"\n"))
    assert len(follower.trials) == 6 and follower.restarts == 0
    follower.read()  # nothing new: nothing given, nothing read
    assert len(follower.trials) == 6 and not follower.tail.changed()


def test_blank_lines_and_identical_repeats_are_counted_as_a_full_scan_counts_them(
        run: Path, lines: list[bytes]) -> None:
    follower = Follower(run)
    for piece in (lines[0], b"\n  \n", lines[1], lines[0], lines[2], lines[1], b"\n"):  # a retried group commit
        append(run, piece)
        follower.read()
        follower.matches_a_full_scan()
    assert [u for _, u, _, _, _ in follower.trials] == ["refund-damaged#1", "refund-damaged#2", "refund-damaged#3"]
    assert [(u, a, b) for u, a, b in follower.tail.notes.duplicates] == [
        ("refund-damaged#1", 1, 5), ("refund-damaged#2", 4, 7)]
    assert not follower.tail.changed()  # trailing blank lines are taken too


def test_units_outside_the_plan_are_left_out_and_noted_as_by_a_full_scan(run: Path, lines: list[bytes]) -> None:
    follower = Follower(run, plan={"refund-damaged#1", "final-sale#1"})
    for line in lines:
        append(run, line)
        follower.read()
        follower.matches_a_full_scan()
    assert [u for _, u, _, _, _ in follower.trials] == ["refund-damaged#1", "final-sale#1"]
    assert len(follower.tail.notes.unplanned) == 4


def test_a_bad_line_is_the_error_of_a_full_scan_and_stays_one(run: Path, lines: list[bytes]) -> None:
    other = lines[0].replace(b'"verdict":"pass"', b'"verdict":"fail"', 1)  # the same unit, other contents
    append(run, b"".join(lines[:2]) + other)
    with pytest.raises(LineError) as scanned:
        list(scan(run, "head"))
    tail = Tail(run)
    with pytest.raises(LineError) as tailed:
        list(tail.read())
    assert str(tailed.value) == str(scanned.value) and ":3: unit 'refund-damaged#1' is stored twice" in str(
        scanned.value)
    append(run, lines[2])
    with pytest.raises(LineError, match=":3: unit"):  # every later read says it again
        list(tail.read())
    going = Tail(run, keep_going=True)  # the viewer: the error kept, the other trials read
    assert [u for _, u, _, _, _ in going.read()] == ["refund-damaged#1", "refund-damaged#2", "refund-damaged#3"]
    assert [str(e) for e in going.errors] == [str(scanned.value)]


def test_a_line_of_another_run_is_refused_as_by_a_full_scan(run: Path) -> None:
    append(run, encode_record(sample_record("other-run", "refund-damaged", 1)))
    with pytest.raises(LineError) as scanned:
        list(scan(run, "head"))
    going = Tail(run, keep_going=True)
    assert list(going.read()) == [] and [str(e) for e in going.errors] == [str(scanned.value)]
    assert "field run_id is 'other-run'" in str(scanned.value)


@pytest.mark.parametrize("change", ["truncated", "replaced", "rewritten in place", "rewritten larger"])
def test_a_file_truncated_replaced_or_rewritten_is_read_again_from_its_start(
        run: Path, lines: list[bytes], change: str) -> None:
    follower = Follower(run)
    append(run, b"".join(lines[:4]))
    follower.read()
    assert len(follower.trials) == 4
    if change == "truncated":  # cut back by hand
        os.truncate(run, len(b"".join(lines[:2])))
        later = lines[2:]
    elif change == "replaced":  # simlab grade: a new file renamed over the old one
        new = run.with_name("new.jsonl")
        new.write_bytes(b"".join(lines[3:5]))
        os.replace(new, run)
        later = lines[5:]
    elif change == "rewritten in place":  # the same size: an editor's save, a verdict flipped
        data = run.read_bytes().replace(b'"verdict":"pass"', b'"verdict":"fail"', 1)
        os.utime(run, ns=(0, 0))
        run.write_bytes(data)
        later = lines[4:]
    else:  # another front, and longer
        run.write_bytes(b"".join([lines[1], lines[0], *lines[2:5]]))
        later = lines[5:]
    assert follower.tail.changed()
    follower.read()
    assert follower.restarts == 1
    follower.matches_a_full_scan()
    append(run, b"".join(later))  # and it goes on growing
    follower.read()
    follower.matches_a_full_scan()
    assert follower.restarts == 1 and len(follower.trials) == len(run.read_bytes().splitlines())


def test_a_file_that_is_not_there_yet_is_read_once_it_is(tmp_path: Path, lines: list[bytes]) -> None:
    folder = write_sample_run(tmp_path / "later")
    path = folder / "trials.jsonl"
    path.unlink()
    follower = Follower(path)
    follower.read()
    assert follower.trials == [] and not follower.tail.changed()
    path.write_bytes(b"".join(lines[:3]))
    follower.read()
    follower.matches_a_full_scan()
    assert len(follower.trials) == 3 and follower.restarts == 0


def test_the_first_read_takes_the_index_and_later_reads_only_what_was_appended(
        run: Path, lines: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    run.write_bytes(b"".join(lines[:4]))
    list(scan_heads(run))  # the first full read writes the index of heads
    assert len((run.parent / HEADS).read_bytes().splitlines()) == 1 + 4
    from simlab.runner import heads_tail

    whole: list[int] = []
    real = heads_tail.line_value
    monkeypatch.setattr(heads_tail, "line_value", lambda data, start, end, path, number, parse: (
        whole.append(number), real(data, start, end, path, number, parse))[1])
    follower = Follower(run)
    follower.read()
    assert whole == [] and len(follower.trials) == 4  # every head from the index, checked
    append(run, b"".join(lines[4:]))
    heads_index.append_entries(run, len(b"".join(lines[:4])), lines[4:])
    follower.read()
    follower.matches_a_full_scan()
    assert whole == [5, 6]  # the appended lines, read once each


def test_scan_heads_is_one_full_read(run: Path, lines: list[bytes]) -> None:
    run.write_bytes(b"".join(lines) + lines[0][:50])
    notes = ReadNotes(run)
    want = ReadNotes(run)
    assert [(n, u, h) for n, u, h, _, _ in scan_heads(run, notes)] == list(scan(run, "head", want))
    assert notes_of(notes) == notes_of(want) and notes.torn_line == 7


def test_each_head_read_is_the_typed_head_written(run: Path, lines: list[bytes]) -> None:
    run.write_bytes(b"".join(lines))
    for (_, unit, head, _, _), line in zip(Tail(run).read(), lines, strict=True):
        assert head.model_dump(mode="json") == json.loads(line)["head"] and head.row.unit_id == unit


def test_a_bulk_read_pauses_the_cyclic_collector_and_gives_it_back_as_it_was() -> None:
    import gc

    from simlab.runner.heads_tail import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
