"""The benches' shared repeat-and-record logic (``bench/_common.py``) and the workers bench's use of
the CLI. Not timed tests: the benches measure; these check that what they record is complete (every
figure with its spread and the machine block) and that the workers bench drives ``simlab run`` the
way a user's run is configured."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"


@pytest.fixture
def common() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("_common")
    finally:
        sys.path.remove(str(BENCH))


def test_ways_take_turns_in_every_round(common: ModuleType) -> None:
    order: list[str] = []
    seen: list[int] = []

    def way(name: str):  # type: ignore[no-untyped-def]
        return lambda: order.append(name) or len(order)

    found = common.interleaved(3, [("a", way("a")), ("b", way("b"))],
                               after_round=lambda i, so_far: seen.append(len(so_far["a"])))
    assert order == ["a", "b"] * 3  # interleaved, not a's three rounds then b's
    assert found == {"a": [1, 3, 5], "b": [2, 4, 6]} and seen == [1, 2, 3]


def test_a_figure_is_its_spread_with_one_summary_line(common: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    figures = common.Figures()
    figure = figures.add("graders", [2100.0, 1900.0, 2400.0, 2000.0], "trials/s", digits=0)
    assert figure == {"n": 4, "min": 1900.0, "median": 2050.0, "max": 2400.0, "unit": "trials/s"}
    assert capsys.readouterr().out == "graders: 2,050 trials/s (1,900 … 2,400 over 4)\n"
    assert figures.median("graders") == 2050.0 and figures.as_dict() == {"graders": figure}
    with pytest.raises(ValueError, match="no values"):
        figures.add("not run", [])


def test_saved_results_hold_the_figures_and_the_machine(common: ModuleType, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMLAB_BENCH_RESULTS", str(tmp_path))
    common = importlib.reload(common)  # where results go is read when the module loads
    try:
        figures = common.Figures()
        figures.add("x", [1.0, 2.0], "s")
        path = common.save("demo", {"figures": figures.as_dict()})
    finally:
        monkeypatch.delenv("SIMLAB_BENCH_RESULTS")
        importlib.reload(common)
    assert path == tmp_path / "demo.json"
    saved = json.loads(path.read_text())
    assert saved["figures"]["x"]["n"] == 2 and saved["figures"]["x"]["median"] == 1.5
    assert {"describe", "commit", "load_avg_1m", "load_avg_5m", "load_avg_15m", "cpus"} <= set(saved["machine"])
    assert not (BENCH / "results" / "demo.json").exists()


@pytest.fixture
def workers_bench(common: ModuleType) -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("bench_workers")
    finally:
        sys.path.remove(str(BENCH))


def test_the_workers_bench_points_the_project_at_the_server_as_a_user_would(workers_bench: ModuleType,
                                                                          tmp_path: Path) -> None:
    from simlab.specs.loader import load_config

    path = tmp_path / "simlab.yaml"
    path.write_text(workers_bench.HTTP_CONFIG.format(url="http://127.0.0.1:9/v1", key="SIMLAB_BENCH_KEY"))
    config = load_config(path)
    assert config.agent is not None and config.simulator is not None
    assert (config.agent.model, config.agent.api_base, config.agent.api_key_env) == (
        "openai/bench-agent", "http://127.0.0.1:9/v1", "SIMLAB_BENCH_KEY")
    assert (config.simulator.kind, config.simulator.model, config.simulator.api_base) == (
        "llm", "openai/bench-user", "http://127.0.0.1:9/v1")
    fake = workers_bench.Way("fake", 2, 16, 3, None).argv("r")
    assert fake[fake.index("--agent") + 1].startswith("{model: simlab-fake/")  # a whole mapping: no api_base kept
    assert fake[fake.index("--workers") + 1] == "2"


def test_the_workers_bench_reads_what_auto_chose_from_the_command(workers_bench: ModuleType, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from simlab.runner.workers import auto_workers

    for item in ("simlab.yaml", "scenarios", "personas", "examples"):
        source = REPO / item
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / item)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    _, err = workers_bench.simlab_run(["run", "--run-id", "auto", "--trials", "1", "--concurrency", "8",
                                       "--workers", "auto", "--no-progress"])
    chosen = workers_bench._AUTO_NOTE.search(err)
    assert chosen is not None, err
    assert int(chosen.group(1)) == auto_workers(8, 10) == 1
    assert workers_bench._AUTO_NOTE.search("run r: 10 scenarios; 2 workers (auto)").group(1) == "2"
