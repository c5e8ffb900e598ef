"""Failure modes of a run (results/modes.py) and the "why trials failed" section on every surface
(report/why.py): every trial that did not pass is in exactly one mode, a mode's weight is the
headline recomputed with its trials as passes, and terminal, markdown, HTML and JSON show the same
modes; ``compare`` names the modes new, fixed, grown and shrunk."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from simlab.report.build import build
from simlab.report.compare_runs import compare, mode_changes
from simlab.report.digest import digest
from simlab.report.formats import render
from simlab.report.html import html_report, trial_anchor
from simlab.report.terminal import print_report
from simlab.report.why import mode_lines
from simlab.results.figures import FailureMode, RunSummary
from simlab.results.stats import pass_hat_k
from simlab.transcript.blame import BLAMES
from simlab.transcript.verdicts import passes
from tests.support import played_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunSummary, list[dict]]:
    folder = played_demo(tmp_path_factory)
    summary = build(folder, write=False)
    records = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    return folder, summary, records


def not_passed(summary: RunSummary, records: list[dict]) -> list[dict]:
    allowed = summary.unjudged.allowed_kinds
    return [r for r in records if not passes(r["verdict"], [k for _, k in r["head"]["unjudged"]], allowed)]


def test_every_trial_that_did_not_pass_has_a_blame_a_step_and_one_mode(demo) -> None:
    _, summary, records = demo
    failed = not_passed(summary, records)
    assert failed and summary.failure_modes
    for r in failed:
        row = r["head"]["row"]
        assert row["blame"] in BLAMES and row["failure_mode"].startswith(row["blame"] + ": ")
        step = r["transcript"]["events"][row["first_fault_event"]]
        assert step["turn"] == row["first_fault_turn"]
    for r in records:
        if r["verdict"] == "pass":
            assert r["head"]["row"]["blame"] is None and r["head"]["row"]["failure_mode"] is None
    assert sum(m.trials for m in summary.failure_modes) == len(failed)  # the demo's modes are few: all kept
    assert summary.failure_modes_more == 0 and len(summary.failure_modes) <= 12
    counts = [m.trials for m in summary.failure_modes]
    assert counts == sorted(counts, reverse=True)
    first = summary.failure_modes[0]
    members = [r for r in failed if r["head"]["row"]["failure_mode"] == first.mode]
    assert first.representative == members[0]["unit_id"] and first.scenarios == sorted(
        {r["head"]["row"]["scenario_id"] for r in members})


def test_a_modes_weight_is_the_headline_with_its_trials_as_passes(demo) -> None:
    _, summary, records = demo
    failed = not_passed(summary, records)
    for mode in summary.failure_modes:
        gained: dict[str, int] = {}
        for r in failed:
            if r["head"]["row"]["failure_mode"] == mode.mode:
                gained[r["head"]["row"]["scenario_id"]] = gained.get(r["head"]["row"]["scenario_id"], 0) + 1
        for k, value in mode.without.items():
            by_hand = [pass_hat_k(s.passes + gained.get(sid, 0), s.n, k) for sid, s in summary.scenarios.items()]
            defined = [v for v in by_hand if v is not None]
            assert value == pytest.approx(sum(defined) / len(defined))
            assert value >= (summary.suite.raw.pass_k[k].pass_hat_k or 0)


def test_every_surface_shows_the_same_modes(demo) -> None:
    folder, summary, _ = demo
    out = io.StringIO()
    print_report(summary, Console(file=out, width=200, color_system=None))
    text, markdown = out.getvalue(), render(summary, "markdown")
    page = html_report(summary, digest(folder, allow_unjudged=summary.unjudged.allowed_kinds, records=True))
    assert [m.model_dump() for m in RunSummary.model_validate_json(render(summary, "json")).failure_modes] == [
        m.model_dump() for m in summary.failure_modes]
    for line in mode_lines(summary, 3):  # the step summary's top three
        assert line.cells[3] in text and line.cells[5] in text
        assert all(cell.replace("_", "\\_").replace("#", "\\#").replace("(", "\\(").replace(")", "\\)")
                   in markdown for cell in line.cells[3:4])
        anchor = trial_anchor(line.mode.representative)
        assert f'href="#{anchor}"' in page and f'id="{anchor}"' in page  # the link reaches its transcript


def mode(name: str, trials: int) -> FailureMode:
    return FailureMode(mode=f"agent: {name}", blame="agent", trials=trials, scenarios=["s"], verdicts={"fail": trials},
                       representative="s#1")


def test_compare_names_modes_new_fixed_grown_and_shrunk(demo) -> None:
    _, summary, _ = demo
    base = summary.model_copy(update={"trials": 100, "failure_modes": [mode("a", 10), mode("b", 5), mode("c", 4)]})
    cand = summary.model_copy(update={"trials": 50, "failure_modes": [mode("a", 10), mode("c", 1), mode("d", 2)]})
    changes = {m.mode.removeprefix("agent: "): (m.status, m.base, m.candidate) for m in mode_changes(base, cand)}
    assert changes == {"a": ("grew", 10, 10), "b": ("fixed", 5, 0), "c": ("shrank", 4, 1), "d": ("new", 0, 2)}
    cut = cand.model_copy(update={"failure_modes_more": 3})  # beyond its kept modes: unknown, never 0
    assert {m.mode: m.status for m in mode_changes(base, cut)}["agent: b"] == "unknown"
    same = compare(summary, summary, allow_different_pins=True)
    assert {m.status for m in same.modes} == {"same"}


def test_the_viewer_counts_the_same_modes_as_the_report(demo) -> None:
    """One meaning: the viewer's mode picker counts the trials each mode has in the report, and an
    unjudged trial that the run counts as a pass (allow_unjudged) is in no mode there either."""
    from simlab.transcript.head import TrialHead
    from simlab.tui.filters import mode_counts
    from simlab.tui.rows import TrialRow

    _, summary, records = demo
    rows = [TrialRow.of(TrialHead.model_validate(r["head"])) for r in records]
    assert any(r.failure_mode and not r.failed(summary.unjudged.allowed_kinds) for r in rows)  # the demo has such
    assert mode_counts(rows, summary.unjudged.allowed_kinds) == {m.mode: m.trials for m in summary.failure_modes}
