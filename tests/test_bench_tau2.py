"""``bench/bench_tau2.py`` (simlab and τ²-bench side by side): where τ²-bench is not installed it
measures nothing and says so, in its output and in its result file, never with a figure; its
synthetic τ² results file holds the simulations it claims. Not timed: the bench measures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / "bench_tau2.py"), "--results-dir", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_without_tau2_nothing_is_measured_and_the_file_says_so(tmp_path: Path) -> None:
    done = _run(tmp_path, "--tau2-python", sys.executable)  # simlab's own venv: no tau2 there
    assert done.returncode == 0, done.stderr
    assert "τ²-bench not installed: not measured" in done.stdout
    assert "cannot import tau2" in done.stdout
    written = json.loads((tmp_path / "tau2.json").read_text())
    assert written["measured"] is False and "not measured" in written["reason"]
    assert not {"play", "reporting"} & written.keys()


def test_a_missing_python_or_none_given_is_not_measured_either(tmp_path: Path) -> None:
    done = _run(tmp_path, "--tau2-python", str(tmp_path / "no-such-python"))
    assert done.returncode == 0 and "τ²-bench not installed: not measured" in done.stdout
    env = {k: v for k, v in os.environ.items() if k != "SIMLAB_TAU2_PYTHON"}
    done = _run(tmp_path, env=env)
    assert done.returncode == 0 and "no --tau2-python or SIMLAB_TAU2_PYTHON given" in done.stdout
    assert json.loads((tmp_path / "tau2.json").read_text())["measured"] is False


def test_the_synthetic_tau2_results_hold_tasks_times_trials_simulations(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from bench_tau2 import tau2_synthetic
    finally:
        sys.path.remove(str(BENCH))
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"info": {"num_trials": 1}, "tasks": [],
                                "simulations": [{"id": "a", "task_id": "33", "trial": 0, "messages": []},
                                                {"id": "b", "task_id": "34", "trial": 0, "messages": []}]}))
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"id": str(i)} for i in range(5)]))
    size = tau2_synthetic(seed, tmp_path / "out" / "results.json", 3, 4, tasks)
    run = json.loads((tmp_path / "out" / "results.json").read_text())
    assert size == (tmp_path / "out" / "results.json").stat().st_size
    assert [t["id"] for t in run["tasks"]] == ["0", "1", "2"] and run["info"]["num_trials"] == 4
    sims = run["simulations"]
    assert len(sims) == 12 and len({s["id"] for s in sims}) == 12
    assert sorted((s["task_id"], s["trial"]) for s in sims) == [(str(t), n) for t in range(3) for n in range(4)]
