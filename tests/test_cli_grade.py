"""`simlab grade`, `simlab report` and `simlab calibrate` through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from simlab.cli.main import main
from simlab.llm.fakes import register_fake, unregister_fake
from tests.support import write_project

FIXTURES = Path(__file__).parent / "fixtures" / "calibration"
REPO = Path(__file__).resolve().parents[1]


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_regrade_after_changing_an_expectation_reports_the_change(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=1, trials=3)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    trials = tmp_path / "transcripts/r/trials.jsonl"
    assert {r["verdict"] for r in records(trials)} == {"pass"}
    scenario = tmp_path / "scenarios/s0.yaml"
    scenario.write_text(scenario.read_text() + "expect:\n  state:\n    - {path: items.k0, equals: other}\n")
    capsys.readouterr()
    code = ("import sys, json; from simlab.cli.main import main; rc = main(['grade', 'r', '--json']); "
            "assert 'litellm' not in sys.modules, 'litellm imported'; sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr  # deterministic checks make no model call
    out = json.loads(done.stdout)
    assert out["verdict_changes"] == {"pass → fail": 3}
    assert any("items.k0 equals 'other': absent → fail" in line for line in out["check_changes"])
    after = records(trials)
    assert {r["verdict"] for r in after} == {"fail"} and len(after) == 3
    failed = [c for c in after[0]["checks"] if c["status"] == "fail"]
    assert failed[0]["reason"]
    assert not list((tmp_path / "transcripts/r").glob(".*regrade*"))  # temporary file renamed away


def test_report_formats_and_step_summary(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=2, trials=3)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    capsys.readouterr()
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    assert main(["report", "r", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)  # only JSON on stdout
    assert summary["schema_version"] == 1 and summary["trials"] == 6
    assert summary["scenarios"]["kv-0"]["raw"]["pass_k"]["3"]["pass_hat_k"] == 1.0
    assert summary["scenarios"]["kv-0"]["raw"]["pass_k"].get("4") is None  # n < k: undefined, not 0
    assert "| kv-0 | 3/3 |" in step.read_text()
    assert main(["report", "r", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("scenario,n,passes")
    assert (tmp_path / "transcripts/r/results.parquet").exists()
    assert json.loads((tmp_path / "transcripts/r/summary.json").read_text())["run_id"] == "r"


def test_report_of_an_unknown_run_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["report", "nope"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err


def test_calibrate_through_the_real_litellm_path(monkeypatch, capsys):
    def judge(messages, tools=None, **_):
        return json.dumps({"verdict": "yes", "reason": "looks fine"})

    model = register_fake("calibrate-judge", judge)
    try:
        assert main(["calibrate", str(FIXTURES / "LABELS.yaml"), "--judge", model]) == 0
    finally:
        unregister_fake("calibrate-judge")
    out = capsys.readouterr().out
    assert "kappa" in out.lower() and "false pass" in out.lower()
