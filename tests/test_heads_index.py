"""``heads.jsonl``, the index of heads beside ``trials.jsonl`` (issue 19): written by a run and by
workers in the same group commit, used only where it agrees with the trials file, and never the
cause of a wrong report: every stale case below gives the report of the trials file read whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from simlab.cli.main import main
from simlab.errors import InfraError
from simlab.report.build import build
from simlab.report.digest import digest
from simlab.runner import heads_index, heads_read, heads_tail
from simlab.runner.heads_index import HEADER, HEADS
from simlab.runner.heads_read import IndexedLines
from simlab.runner.regrade import regrade
from simlab.runner.store import RunStore, encode_record
from simlab.transcript import Termination, TerminationReason
from simlab.tui.data import RunIndex, RunInfo
from tests.support import LazyModule, copy_demo, played_demo

if TYPE_CHECKING:
    import pandas as pd
else:
    pd: Any = LazyModule("pandas")  # imported by the first test that reads a frame, not at collection


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The retail demo (flaky agent: passes, failures, an attack), 3 trials, as a run leaves it."""
    return played_demo(tmp_path_factory)


def copy_run(folder: Path, into: Path, *, index: bool = True) -> Path:
    into.mkdir(parents=True)
    for name in ("run.json", "trials.jsonl", *([HEADS] if index else [])):
        shutil.copy(folder / name, into / name)
    return into


def figures(folder: Path) -> tuple[dict, pd.DataFrame]:
    """The report of a run: summary and results table (the run id, the folder's name, aside)."""
    summary = json.loads(build(folder).model_dump_json().replace(str(folder), "RUN"))  # paths in warnings
    summary.pop("run_id", None)
    return summary, pd.read_parquet(folder / "results.parquet")


def reference(folder: Path, tmp_path: Path) -> tuple[dict, pd.DataFrame]:
    """The report of the same trials file without any index: every line read the old way."""
    bare = tmp_path / "bare" / folder.name
    bare.parent.mkdir(parents=True, exist_ok=True)
    bare.mkdir()
    for name in ("run.json", "trials.jsonl"):
        shutil.copy(folder / name, bare / name)
    (bare / HEADS).unlink(missing_ok=True)
    return figures_without_index(bare)


def figures_without_index(folder: Path) -> tuple[dict, pd.DataFrame]:
    with pytest.MonkeyPatch.context() as mp:  # the index is neither read nor written
        mp.setattr(heads_read.IndexedLines, "verified", lambda self: iter(()))
        mp.setattr(heads_read.Catchup, "commit", lambda self: None)
        return figures(folder)


def same(a: tuple[dict, pd.DataFrame], b: tuple[dict, pd.DataFrame]) -> None:
    assert a[0] == b[0]
    pd.testing.assert_frame_equal(a[1], b[1])


def current(folder: Path) -> int:
    """How many lines the index holds, after checking it covers the whole trials file."""
    index = IndexedLines(folder / "trials.jsonl")
    held = sum(1 for _ in index.verified())
    assert index.whole and index.end == (folder / "trials.jsonl").read_bytes().rfind(b"\n") + 1  # a torn tail aside
    return held


def trial_lines(folder: Path) -> list[bytes]:
    return (folder / "trials.jsonl").read_bytes().splitlines(keepends=True)


def spy_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every read of a file the old way, line by line (``lines.block_lines``): (file, from)."""
    calls: list[tuple[str, int]] = []
    real = heads_read.block_lines

    def spy(path: Path, start: int = 0, *args):  # type: ignore[no-untyped-def]
        calls.append((Path(path).name, start))
        return real(path, start, *args)

    monkeypatch.setattr(heads_read, "block_lines", spy)  # the index
    monkeypatch.setattr(heads_tail, "block_lines", spy)  # the trials file past it
    return calls


# -- written by the run ----------------------------------------------------------------------


def test_a_run_writes_one_entry_per_trial_line(demo: Path) -> None:
    entries = (demo / HEADS).read_bytes().splitlines(keepends=True)
    assert entries[0] == HEADER and len(entries) == 1 + len(trial_lines(demo)) == 31
    offset = 0
    for entry, line in zip(entries[1:], trial_lines(demo)):
        held = json.loads(entry)
        assert (held["o"], held["n"]) == (offset, len(line) - 1)
        assert held["h"] == json.loads(line)["head"]
        offset += len(line)
    assert current(demo) == 30


def test_workers_write_the_index_in_their_group_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_demo(tmp_path)
    monkeypatch.chdir(root)
    assert main(["run", "--run-id", "w", "--trials", "3", "--workers", "2", "--concurrency", "4",
                 "--no-progress"]) in (0, 1)
    folder = root / "transcripts" / "w"
    assert current(folder) == len(trial_lines(folder)) == 30


def test_the_report_is_the_same_with_and_without_the_index_and_reads_no_transcript(
        demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = copy_run(demo, tmp_path / "runs" / "demo")
    want = reference(folder, tmp_path)
    reads = spy_reads(monkeypatch)
    same(figures(folder), want)
    size = (folder / "trials.jsonl").stat().st_size
    assert [r for r in reads if r[0] == "trials.jsonl"] == [("trials.jsonl", size)]  # only past its end
    trials = digest(folder, heads=True)
    assert sum(len(kept) for kept in trials.failed.values()) and all(
        t.reasons for kept in trials.failed.values() for t in kept)  # failed lines are read where they are
    assert [r for r in reads if r[0] == "trials.jsonl"][-1] == ("trials.jsonl", size)


def test_a_missing_index_is_built_by_the_first_report(demo: Path, tmp_path: Path) -> None:
    folder = copy_run(demo, tmp_path / "runs" / "demo", index=False)
    same(figures(folder), reference(demo, tmp_path))
    assert (folder / HEADS).read_bytes() == (demo / HEADS).read_bytes()


def test_the_viewer_takes_its_rows_from_the_index(demo: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    bare = copy_run(demo, tmp_path / "bare", index=False)
    indexed = copy_run(demo, tmp_path / "indexed")
    want = RunIndex(RunInfo.load(bare)).read_all()
    reads = spy_reads(monkeypatch)
    monkeypatch.setattr("simlab.runner.heads_tail.line_value", lambda *a: pytest.fail("a line was read whole"))
    index = RunIndex(RunInfo.load(indexed))
    assert index.read_all() == want and reads and index.offset == (indexed / "trials.jsonl").stat().st_size
    assert index.problem is None and not index.changed()


def test_the_viewer_follows_a_run_past_its_index_and_never_trusts_a_stale_one(demo: Path, tmp_path: Path) -> None:
    lines = trial_lines(demo)
    live = copy_run(demo, tmp_path / "live")
    (live / "trials.jsonl").write_bytes(b"".join(lines[:20]))
    (live / HEADS).write_bytes(b"".join((demo / HEADS).read_bytes().splitlines(keepends=True)[:21]))
    index = RunIndex(RunInfo.load(live))
    assert len(index.read_all()) == 20
    with open(live / "trials.jsonl", "ab") as fh:  # the run goes on: a group commit, then its entries
        fh.write(b"".join(lines[20:]))
    heads_index.append_entries(live / "trials.jsonl", sum(map(len, lines[:20])), lines[20:])
    assert index.changed() and len(index.read_all()) == 30
    assert index.rows == RunIndex(RunInfo.load(copy_run(demo, tmp_path / "bare", index=False))).read_all()
    stale = copy_run(demo, tmp_path / "stale")
    rewrite_same_size(stale)
    want = RunIndex(RunInfo.load(copy_run(stale, tmp_path / "stale-bare", index=False))).read_all()
    assert RunIndex(RunInfo.load(stale)).read_all() == want
    assert [r.verdict for r in want] != [r.verdict for r in index.rows]  # the flipped verdict is seen


# -- stale, short or broken: the report of the trials file, and the index made current ---------


def truncate_mid_line(folder: Path) -> None:
    lines = trial_lines(folder)
    (folder / "trials.jsonl").write_bytes(b"".join(lines[:20]) + lines[20][:500])


def drop_trials(folder: Path) -> None:
    """An index longer than the file: the trials file lost its last lines (its index did not)."""
    (folder / "trials.jsonl").write_bytes(b"".join(trial_lines(folder)[:17]))


def rewrite_same_size(folder: Path) -> None:
    """A rewrite that keeps every line where it was: one verdict flipped to another of its length,
    in the head and in the record (``pass`` → ``fail``), as a regrade by an older simlab might."""
    lines = trial_lines(folder)
    at = next(i for i, line in enumerate(lines) if b'"verdict":"pass"' in line)
    lines[at] = lines[at].replace(b'"verdict":"pass"', b'"verdict":"fail"')
    (folder / "trials.jsonl").write_bytes(b"".join(lines))


def reorder(folder: Path) -> None:
    lines = trial_lines(folder)
    (folder / "trials.jsonl").write_bytes(b"".join(lines[10:] + lines[:10]))


def extra_tail(folder: Path) -> None:
    """Trials appended without their entries (an older simlab resumed the run)."""
    entries = (folder / HEADS).read_bytes().splitlines(keepends=True)
    (folder / HEADS).write_bytes(b"".join(entries[:21]))


def garbage_line(folder: Path) -> None:
    entries = (folder / HEADS).read_bytes().splitlines(keepends=True)
    entries[8] = b'{"o":12,"n":"x"}\n'
    (folder / HEADS).write_bytes(b"".join(entries))


def wrong_offsets(folder: Path) -> None:
    entries = [json.loads(e) for e in (folder / HEADS).read_bytes().splitlines()[1:]]
    entries[5]["o"] += 1
    (folder / HEADS).write_bytes(HEADER + b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n"
                                                   for e in entries))


def torn_index(folder: Path) -> None:
    """A crash in the middle of the index's own write."""
    data = (folder / HEADS).read_bytes()
    (folder / HEADS).write_bytes(data[:len(data) - 700])


def older_schema(folder: Path) -> None:
    data = (folder / HEADS).read_bytes()
    (folder / HEADS).write_bytes(data.replace(HEADER, b'{"simlab_heads":0,"head_v":2}\n', 1))


def blank_lines(folder: Path) -> None:
    """Blank lines between trials (a hand edit): the rule skips them, the index steps over them."""
    lines = trial_lines(folder)
    (folder / "trials.jsonl").write_bytes(b"".join(lines[:4]) + b"\n  \n" + b"".join(lines[4:]))
    (folder / HEADS).unlink()
    build(folder)  # the index of the file with its blank lines
    lines = trial_lines(folder)
    (folder / "trials.jsonl").write_bytes(b"".join(lines) + b"\n" + lines[3])  # and a repeat, identical


@pytest.mark.parametrize("spoil", [truncate_mid_line, drop_trials, rewrite_same_size, reorder, extra_tail,
                                   garbage_line, wrong_offsets, torn_index, older_schema, blank_lines])
def test_a_stale_index_never_changes_the_report(demo: Path, tmp_path: Path, spoil) -> None:  # type: ignore[no-untyped-def]
    folder = copy_run(demo, tmp_path / "runs" / "demo")
    spoil(folder)
    want = reference(folder, tmp_path)
    same(figures(folder), want)
    complete = [line for line in trial_lines(folder) if line.endswith(b"\n") and line.strip()]
    assert current(folder) == len(complete)  # the index holds the file again, every line of it
    same(figures(folder), want)  # and the next report, through it, agrees


def test_a_rewrite_with_the_same_offsets_is_caught_entry_by_entry(demo: Path, tmp_path: Path) -> None:
    folder = copy_run(demo, tmp_path / "runs" / "demo")
    rewrite_same_size(folder)
    index = IndexedLines(folder / "trials.jsonl")
    held = sum(1 for _ in index.verified())
    assert held < 30 and not index.whole  # the flipped line's head differs from the index's
    summary = build(folder)
    assert summary == build(folder) and summary.model_dump(mode="json")["trials"] == 30


def test_a_bad_line_is_the_same_error_with_the_index(demo: Path, tmp_path: Path) -> None:
    folder = copy_run(demo, tmp_path / "runs" / "demo")
    lines = trial_lines(folder)
    lines.insert(25, b'{"unit_id": "x#1"}\n')
    (folder / "trials.jsonl").write_bytes(b"".join(lines))
    with pytest.raises(InfraError, match=r"trials.jsonl:26: .*no transcript"):
        build(folder)


# -- crashes and resumes -----------------------------------------------------------------------


def test_a_crash_between_the_two_writes_leaves_a_short_index_that_the_next_readers_fill(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_demo(tmp_path / "p")
    monkeypatch.chdir(root)
    real, calls = heads_index.append_entries, []

    def crash_on_the_second(trials: Path, start: int, lines: list[bytes]) -> None:
        calls.append(len(lines))
        if len(calls) == 2:  # the trials of this commit are on disk; the process dies before the index
            raise InfraError("simulated crash between the two writes")
        real(trials, start, lines)

    monkeypatch.setattr(heads_index, "append_entries", crash_on_the_second)
    assert main(["run", "--run-id", "c", "--trials", "3", "--concurrency", "1", "--no-progress"]) == 3
    folder = root / "transcripts" / "c"
    stored = len(trial_lines(folder))
    index = IndexedLines(folder / "trials.jsonl")
    assert sum(1 for _ in index.verified()) == calls[0] < stored and index.whole  # short, not wrong
    same(figures(copy_run(folder, tmp_path / "short" / "c")), reference(folder, tmp_path))  # the tail read the old way
    monkeypatch.setattr(heads_index, "append_entries", real)
    assert main(["run", "--run-id", "c", "--trials", "3", "--concurrency", "1", "--no-progress"]) in (0, 1)
    assert len(trial_lines(folder)) == 30
    assert current(folder) == 30  # the resume's own read filled the gap, and its writer lined up after it
    same(figures(folder), reference(folder, tmp_path / "after"))


def test_a_resume_that_retires_error_lines_rewrites_the_index_with_the_trials(
        demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_demo(tmp_path / "p")
    folder = copy_run(demo, root / "transcripts" / "demo")
    records = list(RunStore(folder).records())
    for record in records[3:6]:  # three trials that ended in an infrastructure error
        record.verdict = "error"
        record.transcript.termination = Termination(reason=TerminationReason.ERROR, detail="provider down")
    (folder / "trials.jsonl").write_bytes(b"".join(encode_record(r) for r in records))
    assert len(RunStore(folder).error_unit_ids()) == 3  # a reader: the index follows the edited file
    assert current(folder) == 30
    monkeypatch.chdir(root)
    assert main(["run", "--run-id", "demo", "--trials", "3", "--no-progress"]) in (0, 1)
    assert len((folder / "retired.jsonl").read_bytes().splitlines()) == 3
    assert current(folder) == 30  # retire's index, then the replayed trials' entries: no reader needed
    same(figures(folder), reference(folder, tmp_path))


def test_grade_and_merge_write_the_index_of_the_file_they_write(demo: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_demo(tmp_path / "p")
    folder = copy_run(demo, root / "transcripts" / "demo")
    (folder / "trials.jsonl").write_bytes(b"".join(trial_lines(folder)[:12]))  # the index is stale now
    monkeypatch.chdir(root)
    store = RunStore(folder)
    store.lock()
    try:
        regrade(store, Path("personas"))
    finally:
        store.unlock()
    assert current(folder) == 12  # before any reader
    same(figures(folder), reference(folder, tmp_path))
    assert main(["merge", "merged", "transcripts/demo"]) == 0
    assert current(root / "transcripts" / "merged") == 12
