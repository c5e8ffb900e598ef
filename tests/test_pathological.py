"""Pathological inputs and races: a huge torn line, concurrent reports, a kill -9 mid-write, a file
rewritten under the viewer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.results import frames
from simlab.runner import store as store_module
from simlab.runner.store import RunStore, clean_leftovers, temp_path, write_atomic
from simlab.tui.data import RunIndex, RunInfo
from tests.support import write_project


def test_cutting_a_huge_torn_line_reads_it_backwards_in_bounded_memory(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    good = b'{"schema_version":2,"unit_id":"a#1","transcript":{}}\n'
    torn = b'{"schema_version":2,"unit_id":"a#2","transcript":{"events":["' + b"x" * 20_000_000
    (folder / "trials.jsonl").write_bytes(good + torn)
    tracemalloc.start()
    try:
        repair = RunStore(folder).repair_torn_tail()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert repair.cut_bytes == len(torn) and (folder / "trials.jsonl").read_bytes() == good
    assert peak < 1_000_000  # chunks of 64 KB, never the 20 MB line (nor copies of it growing)
    assert RunStore(folder).repair_torn_tail().cut_bytes == 0  # whole lines are never cut


def test_a_complete_bad_last_line_is_not_cut_but_named(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "trials.jsonl").write_bytes(b'{"schema_version":2,"unit_id":"a#1","transcript":{}}\nnot json\n')
    assert RunStore(folder).repair_torn_tail().cut_bytes == 0
    from simlab.runner.lines import LineError

    with pytest.raises(LineError, match=r"trials.jsonl:2: not valid JSON"):
        RunStore(folder).finished_unit_ids()


@pytest.mark.parametrize("writer", ["table", "text"])
def test_two_writers_of_one_derived_file_never_share_a_temporary_file(tmp_path: Path, monkeypatch, writer) -> None:
    """Two ``simlab report`` at once: the second writes and renames while the first is mid-write."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = tmp_path / ("results.parquet" if writer == "table" else "summary.json")
    nested: list[bool] = []
    if writer == "table":
        real = pq.write_table

        def write_table(table, where, *args, **kwargs):
            real(table, where, *args, **kwargs)
            if not nested:  # the other process runs from start to end right now
                nested.append(True)
                frames.write_table(target, pa.table({"x": [2]}))

        monkeypatch.setattr(pq, "write_table", write_table)
        frames.write_table(target, pa.table({"x": [1]}))
        assert pq.read_table(target).column("x").to_pylist() == [1]
    else:
        real_replace = os.replace

        def replace(src, dst):
            if not nested:
                nested.append(True)
                write_atomic(target, "second\n")
            real_replace(src, dst)

        monkeypatch.setattr(store_module.os, "replace", replace)
        write_atomic(target, "first\n")
        assert target.read_text() == "first\n"
    assert nested and [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left
    assert temp_path(target) != temp_path(target) and str(os.getpid()) in temp_path(target).name


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_leftovers_of_a_killed_grade_or_report_are_cleaned_by_the_next_command(tmp_path, monkeypatch) -> None:
    write_project(tmp_path, scenarios=1, trials=2)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    folder = tmp_path / "transcripts" / "r"
    pid = dead_pid()
    killed = [".trials.jsonl.regrade", ".results.parquet.tmp", f".results.parquet.{pid}.0a1b2c3d.tmp",
              f".trials.jsonl.{pid}.0a1b2c3d.regrade", f".summary.json.{pid}.deadbeef.tmp"]
    running = f".summary.json.{os.getppid()}.0a1b2c3d.tmp"  # a process that is still alive
    for name in [*killed, running]:
        (folder / name).write_text("half")
    assert main(["report", "r", "--json"]) == 0
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != ".lock") == [running]
    (folder / killed[0]).write_text("half")
    assert main(["grade", "r", "--json"]) == 0
    assert not (folder / killed[0]).exists()
    assert clean_leftovers(folder) == []


def test_the_viewer_notices_a_file_rewritten_under_it(tmp_path, monkeypatch) -> None:
    write_project(tmp_path, scenarios=2, trials=3)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    folder = tmp_path / "transcripts" / "r"
    index = RunIndex(RunInfo.load(folder))
    assert {r.verdict for r in index.read_all()} == {"pass"} and not index.changed()
    scenario = tmp_path / "scenarios" / "s0.yaml"  # an expectation changes; `simlab grade` rewrites the file
    scenario.write_text(scenario.read_text() + "expect:\n  state:\n    - {path: items.k0, equals: a-longer-value}\n")
    before = (folder / "trials.jsonl").stat().st_size
    assert main(["grade", "r", "--json"]) == 0
    assert (folder / "trials.jsonl").stat().st_size > before  # larger: a size check alone reads garbage
    assert index.changed()
    rows = index.read_all()
    assert index.problem is None and index.bad_lines == 0 and len(rows) == 6
    assert sorted(r.verdict for r in rows) == ["fail"] * 3 + ["pass"] * 3
    assert all(index.record(r).unit_id == r.unit_id for r in rows)  # every transcript opens


def test_the_viewer_notices_a_rewrite_in_place_of_the_same_size(tmp_path, monkeypatch) -> None:
    write_project(tmp_path, scenarios=1, trials=2)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    path = tmp_path / "transcripts" / "r" / "trials.jsonl"
    index = RunIndex(RunInfo.load(path.parent))
    first = [r.unit_id for r in index.read_all()]
    lines = path.read_bytes().splitlines(keepends=True)
    with open(path, "r+b") as fh:  # the same bytes in another order, written over the file in place
        fh.write(b"".join(reversed(lines)))
    os.utime(path, ns=(0, 10**9))  # a new modification time, as any write gives
    assert index.changed()
    assert [r.unit_id for r in index.read_all()] == list(reversed(first)) and index.problem is None
    assert json.loads(index.raw(index.rows[0]))["unit_id"] == first[-1]
