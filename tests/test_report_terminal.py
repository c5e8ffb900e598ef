"""The terminal report (issue 18): a capped curve column, the real width or a wide one when piped,
infrastructure failures told apart in "checks that fail most", one definition of a loop."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from simlab.cli.main import main
from simlab.graders.efficiency import efficiency_counts
from simlab.report.build import build
from simlab.report.fmt import CURVE_WIDTH, curve, resample
from simlab.report.terminal import PIPED_WIDTH, print_report
from simlab.results.frames import collect
from simlab.results.summary import summarize
from simlab.runner.store import RunStore
from simlab.transcript.head import TrialHead
from simlab.transcript.model import Transcript
from simlab.transcript.verdicts import CLASSES

REPO = Path(__file__).resolve().parents[1]
REFUND = "scenarios/retail/refund-damaged-card.yaml"


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def test_resample_keeps_both_ends_and_caps_the_width():
    values: list[float | None] = [i / 99 for i in range(100)]
    sampled = resample(values)
    assert len(sampled) == CURVE_WIDTH and sampled[0] == 0.0 and sampled[-1] == 1.0
    assert sampled == sorted(sampled)
    assert resample(values[:5]) == values[:5]
    assert len(curve(values)) == CURVE_WIDTH and len(curve([None] * 3)) == 3


def test_many_trials_keep_every_column_at_80_columns(project, capsys):
    assert main(["run", "--run-id", "many", "--no-progress", "--trials", "40", REFUND,
                 "scenarios/retail/store-credit-refused.yaml"]) == 0
    capsys.readouterr()
    out = io.StringIO()
    print_report(build(project / "transcripts/many", write=False), Console(file=out, width=80))
    text = out.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines())
    row = next(line for line in text.splitlines() if "refund-damaged-card" in line)
    cells = [c.strip() for c in row.split("│")]
    assert re.fullmatch(r"\d+/40", cells[2]) and re.fullmatch(r"\d+% \[\d+%–\d+%\]", cells[3])
    assert cells[-2] in {c.label for c in CLASSES.values()}  # the class is not squeezed out either
    assert "curve k=1…40" in text and len(cells[-3]) <= CURVE_WIDTH


def test_piped_output_is_not_wrapped_at_80_columns(project, capsys):
    assert main(["run", "--run-id", "one", "--no-progress", REFUND]) == 0
    capsys.readouterr()
    assert main(["report", "one"]) == 0
    lines = capsys.readouterr().out.splitlines()
    valid = next(line for line in lines if line.startswith("valid"))
    assert valid.endswith("unjudged trials left out)")  # one line, not cut mid-phrase at 80
    assert max(len(line) for line in lines) <= PIPED_WIDTH


def test_columns_still_sets_the_width_when_piped(project, capsys, monkeypatch):
    assert main(["run", "--run-id", "one", "--no-progress", REFUND]) == 0
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "70")
    assert main(["report", "one"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 70


def head(unit: str, verdict: str, failed: list[Any], termination: str = "goal_reached",
         loop: bool = False) -> TrialHead:
    scenario, _, trial = unit.partition("#")
    return TrialHead.model_validate({"v": 3, "row": {"run_id": "r", "unit_id": unit, "scenario_id": scenario, "persona_id": "p",
                            "trial": int(trial), "seed": 0, "agent": "a", "simulator": "rules", "verdict": verdict,
                            "termination": termination, "termination_detail": "", "cost_usd": None,
                            "policy_violations": 0, "loop": loop, "duration_s": 1.0},
            "failed": failed, "not_run": [], "unjudged": [], "errored": [], "attacks": {}})


def test_checks_failing_in_error_trials_are_marked_infrastructure():
    heads = [head("s#0", "fail", [["state", "state", True]]),
             head("s#1", "error", [["state", "state", True], ["termination", "efficiency", True]]),
             head("s#2", "error", [["termination", "efficiency", True]])]
    summary = summarize(collect(heads), run_id="r")
    ranked = {c.name: c for c in summary.top_failing_checks}
    assert (ranked["state"].failures, ranked["state"].in_error_trials) == (2, 1)
    assert (ranked["termination"].failures, ranked["termination"].in_error_trials) == (2, 2)
    out = io.StringIO()
    print_report(summary, Console(file=out, width=120))
    text = out.getvalue()
    assert "in error trials" in text and "infrastructure error" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("termination"))
    assert [c.strip() for c in row.split("│")][-2:] == ["2", "2"]


def test_a_turn_cap_is_a_termination_not_a_loop(project, capsys):
    assert main(["run", "--run-id", "one", "--no-progress", REFUND]) == 0
    capsys.readouterr()
    # a trial that repeated no call: trials are stored in the order they finish
    records = RunStore(project / "transcripts/one").records()
    record = next(r for r in records if r.transcript.termination.reason.value == "goal_reached")
    data = record.transcript.model_dump(mode="json")
    data["termination"] = {**data["termination"], "reason": "max_turns"}
    assert efficiency_counts(Transcript.model_validate(data))["loop"] is False
    out = io.StringIO()
    print_report(build(project / "transcripts/one", write=False), Console(file=out, width=160))
    assert "loops (one call repeated)" in out.getvalue()
    assert "terminations (how each trial ended)" in out.getvalue()
