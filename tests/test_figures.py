"""One typed model per fact: ``RunSummary`` is summary.json, ``Comparison`` is ``compare --json``,
``TrialHead`` is the head of a line; the report, the gates, JUnit and the viewer read these, and the
viewer's figures are the report's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from simlab.cli.main import main
from simlab.report.build import build
from simlab.report.compare_runs import compare
from simlab.report.formats import render
from simlab.results.figures import Comparison, RunSummary
from simlab.runner.store import RunStore, encode_record
from simlab.transcript import TrialRecord
from simlab.transcript.head import TrialFigures, TrialHead
from simlab.transcript.row import record_head
from simlab.tui.data import RunIndex, RunInfo
from simlab.tui.summary import summarize as view_figures
from simlab.tui.summary import summarize_run
from tests.sample_runs import sample_record
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
    keys = list(json.loads(stored))  # state first (issue 24: what a report's first line says), then the keys
    assert keys == ["state", "schema_version", "run_id", "trials", "scenarios_count", "ungraded", "suite", "scenarios",
                    "violated_rules", "top_failing_checks", "attacks", "not_run_checks", "unjudged",
                    "error_causes", "check_errors", "invalid_by_simulator", "pins", "mixed_pins", "completeness",
                    "warnings", "divergence", "adk_criteria", "dataset", "failure_modes",
                    "failure_modes_more", "max_error_rate"]  # in the order they always had, new ones last


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


def test_every_stored_head_is_a_trial_head(demo: Path) -> None:
    store = RunStore(demo / "transcripts" / "demo")
    heads = list(store.iter_heads())
    records = list(store.records())
    assert len(heads) == len(records) == 30 and all(isinstance(h, TrialHead) for h in heads)
    for head, record in zip(heads, records):
        assert TrialHead.model_validate(record.head) == head == record_head(record)  # stored, read, computed
        assert head.row.checks == {c.name: c.status for c in record.checks}
        assert head.row.verdict == record.verdict and head.row.unit_id == record.unit_id


def test_a_stored_head_is_never_trusted_when_the_line_is_written_again() -> None:
    record = sample_record("r", "s", 1)
    raw = json.loads(encode_record(record))
    assert raw["head"] == record_head(record).model_dump(mode="json")
    for spoiled in ({**raw["head"], "v": 4}, {**raw["head"], "row": {"verdict": "fail"}}, {"v": 2}, None):
        again = TrialRecord.model_validate({**raw, "head": spoiled})
        assert json.loads(encode_record(again))["head"] == raw["head"]  # derived data: computed afresh


def test_a_trial_row_takes_check_columns_and_nothing_else() -> None:
    row = record_head(sample_record("r", "s", 2)).row.model_dump()
    assert TrialFigures.model_validate({**row, "check:extra": "pass"}).checks["extra"] == "pass"
    with pytest.raises(ValidationError, match=r"verdcit\n  String should match pattern '\^check:'"):
        TrialFigures.model_validate({**row, "verdcit": "pass"})
    with pytest.raises(ValidationError, match=r"check:x\n  Input should be a valid string"):
        TrialFigures.model_validate({**row, "check:x": 3})


def test_the_viewer_shows_the_figures_of_the_report(demo: Path) -> None:
    folder = demo / "transcripts" / "demo"
    summary = build(folder, write=False)
    run = RunInfo.load(folder)
    assert run.allow_unjudged() == ["rubric"] and summary.unjudged.counted_as_pass > 0
    progress = view_figures(RunIndex(run).read_all(), run.planned(), run.allow_unjudged())
    assert set(progress) == set(summary.scenarios)
    for sid, figures in summary.scenarios.items():
        shown = progress[sid].figures(list(figures.valid.pass_k))
        assert shown == figures  # the same model, the same numbers: unjudged trials counted as the report counts them
    overview = summarize_run(progress)
    assert overview.raw_pass_1 == summary.suite.raw.success.rate
    assert overview.pass_1 == summary.suite.valid.pass_k[1].pass_hat_k
    assert overview.pass_k == summary.suite.valid.pass_k[overview.k].pass_hat_k


def test_a_line_read_whole_must_be_a_trial_record_for_any_figure(demo: Path, monkeypatch, capsys) -> None:
    folder = demo / "transcripts" / "broken"
    folder.mkdir()
    shutil.copy(demo / "transcripts" / "demo" / "run.json", folder / "run.json")
    lines = (demo / "transcripts" / "demo" / "trials.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    del record["head"], record["transcript"]["scenario_id"]  # a hand edit, and no head to trust
    (folder / "trials.jsonl").write_text("\n".join([json.dumps(record)] + lines[1:]) + "\n")
    monkeypatch.chdir(demo)
    capsys.readouterr()
    assert main(["report", "broken"]) == 3
    err = capsys.readouterr().err
    assert "trials.jsonl:1:" in err and "is not a valid trial record (transcript.scenario_id: Field required)" in err
    index = RunIndex(RunInfo.load(folder))
    assert len(index.read_all()) == 29 and index.problem is not None and "transcript.scenario_id" in index.problem


def test_extending_the_curves_beyond_the_trials_keeps_them_whole_and_undefined(tmp_path: Path, monkeypatch) -> None:
    """A gate on pass^3 of a run of one trial per scenario: every k from 1 to 3 is on the curves
    (the reports show pass^2 too), None beyond the trials (n < k), never a hole and never 0."""
    from simlab.results.summary import CURVE_MAX_K, extend_curves

    write_project(tmp_path, scenarios=2, trials=1)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    summary = build(tmp_path / "transcripts" / "r", write=False)
    extend_curves(summary, 3)
    for view in (summary.suite.raw, summary.suite.valid, *(s.raw for s in summary.scenarios.values())):
        assert list(view.pass_k) == [1, 2, 3] and view.pass_hat_k[2] is None and view.pass_hat_k[3] is None
    assert render(summary, "markdown")  # no KeyError
    extend_curves(summary, CURVE_MAX_K + 50)  # far beyond the cap: the cap's points, then that k alone
    assert list(summary.suite.raw.pass_k) == [*range(1, CURVE_MAX_K + 1), CURVE_MAX_K + 50]


def test_the_pooled_change_leaves_out_scenarios_with_no_valid_trial_on_a_side(demo: Path) -> None:
    """A scenario with no valid trial in one run (all invalid, errors or unjudged) was pooled with
    its other side's trials: 12/12 → 4/25 read as −84 % where the one scenario compared fell 64 %."""
    from simlab.results.figures import Rate

    base, cand = (build(demo / "transcripts" / run, write=False) for run in ("demo", "other"))
    gone, *kept = sorted(set(base.scenarios) & set(cand.scenarios))
    blank = base.scenarios[gone].valid.model_copy(update={"success": Rate(c=0, n=0)})
    base.scenarios[gone] = base.scenarios[gone].model_copy(update={"valid": blank})
    result = compare(base, cand)
    assert result.pooled.base.n == sum(base.scenarios[s].valid.success.n for s in kept)
    assert result.pooled.candidate.n == sum(cand.scenarios[s].valid.success.n for s in kept)
    assert next(r for r in result.scenarios if r.scenario == gone).base.n == 0  # still listed, as no data
