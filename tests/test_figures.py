"""One typed model per fact: ``RunSummary`` is summary.json, ``Comparison`` is ``compare --json``;
the report, the gates, JUnit and compare read these."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.report.build import build
from simlab.report.compare_runs import compare
from simlab.report.formats import render
from simlab.results.figures import Comparison, RunSummary
from tests.support import copy_demo, write_project


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The retail demo, 3 trials: passes, failures, policy violations, and hard rubric items left
    unjudged (no judge), which its simlab.yaml lets count as passes (``allow_unjudged: [rubric]``)."""
    root = copy_demo(tmp_path_factory.mktemp("demo"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        assert main(["run", "--run-id", "demo", "--trials", "3", "--no-progress"]) in (0, 1)
        assert main(["run", "--run-id", "other", "--trials", "2", "--seed", "7", "--no-progress"]) in (0, 1)
    return root


def test_the_summary_is_a_run_summary_and_dumps_back_unchanged(tmp_path: Path, monkeypatch) -> None:
    write_project(tmp_path, scenarios=2, trials=3)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    summary = build(tmp_path / "transcripts" / "r", write=False)
    assert isinstance(summary, RunSummary)
    raw = json.loads(summary.to_json())
    assert RunSummary.model_validate(raw) == summary and summary.model_dump(mode="json") == raw
    assert summary.suite.pass_hat_k[3] == raw["suite"]["valid"]["pass_k"]["3"]["pass_hat_k"]
    assert summary.scenarios["kv-0"].raw.success.n == 3 and summary.mixed_pins == []


def test_summary_json_and_report_json_are_the_typed_summary(demo: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(demo)
    capsys.readouterr()
    assert main(["report", "demo", "--json"]) == 0
    printed = capsys.readouterr().out
    stored = (demo / "transcripts" / "demo" / "summary.json").read_text()
    summary = build(demo / "transcripts" / "demo", write=False)
    assert printed == stored == summary.to_json() + "\n" == render(summary, "json")
    assert RunSummary.model_validate_json(printed) == summary
    keys = list(json.loads(stored))  # the keys in the order summary.json has always had
    assert keys == ["schema_version", "run_id", "trials", "scenarios_count", "ungraded", "suite", "scenarios",
                    "violated_rules", "top_failing_checks", "attacks", "not_run_checks", "unjudged",
                    "error_causes", "check_errors", "invalid_by_simulator", "pins", "mixed_pins", "completeness",
                    "warnings"]


def test_compare_gives_a_typed_comparison_and_prints_it_as_json(demo: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(demo)
    base, cand = (build(demo / "transcripts" / run, write=False) for run in ("demo", "other"))
    result = compare(base, cand)
    assert isinstance(result, Comparison) and result.pooled.base.n == sum(
        s.valid.success.n for s in base.scenarios.values())
    assert {r.scenario for r in result.scenarios} == set(base.scenarios) & set(cand.scenarios)
    capsys.readouterr()
    assert main(["compare", "demo", "other", "--json"]) == 0
    assert Comparison.model_validate_json(capsys.readouterr().out) == result
