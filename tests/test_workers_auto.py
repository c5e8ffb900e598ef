"""``--workers auto``: one process per 16 trials in flight, never more than the usable cores or the
units to play; the run says how many it chose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import simlab.runner.workers as workers
from simlab.cli.main import main
from simlab.runner.workers import TRIALS_PER_PROCESS, auto_workers
from tests.support import write_project


@pytest.mark.parametrize("concurrency, units, cpus, expected", [
    (8, 100, 16, 1),        # a small run: one process carries it
    (16, 100, 16, 1),
    (17, 100, 16, 2),
    (64, 1000, 16, 4),      # 64 in flight: four processes of 16
    (256, 1000, 16, 16),
    (256, 1000, 2, 2),      # ... but never more than the cores
    (256, 3, 16, 3),        # ... or the units to play
    (4096, 10_000, 8, 8),
    (1, 0, 4, 1),           # nothing to play: still one
])
def test_auto_sizes_by_concurrency_cores_and_units(concurrency, units, cpus, expected) -> None:
    assert TRIALS_PER_PROCESS == 16
    assert auto_workers(concurrency, units, cpus=cpus) == expected


def test_usable_cpus_counts_the_cores_this_process_may_use(monkeypatch) -> None:
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert workers.usable_cpus() == 3
    monkeypatch.delattr(workers.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: None)
    assert workers.usable_cpus() == 1  # unknown: one, never zero processes


def test_a_run_with_workers_auto_plays_every_unit_once(tmp_path: Path, monkeypatch, capsys) -> None:
    write_project(tmp_path, scenarios=2, trials=4)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(workers, "usable_cpus", lambda: 2)
    assert main(["run", "--run-id", "auto", "--no-progress", "--workers", "auto", "--concurrency", "128"]) == 0
    assert "; 2 workers (auto)" in capsys.readouterr().err
    lines = (tmp_path / "transcripts" / "auto" / "trials.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["unit_id"] for line in lines) == sorted(f"kv-{s}#{t}" for s in range(2)
                                                                            for t in range(1, 5))
    assert main(["run", "--run-id", "small", "--no-progress", "--workers", "auto", "--concurrency", "8"]) == 0
    assert "; 1 worker (auto)" in capsys.readouterr().err


def test_a_bad_workers_value_is_a_usage_error(tmp_path: Path, monkeypatch, capsys) -> None:
    write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--workers", "many"])
    assert exit_.value.code == 2
    assert "expected a number of processes or auto, got 'many'" in capsys.readouterr().err
