"""``RunSummary`` is summary.json as a typed model: what the report builds validates into it and
dumps back to the same JSON, and the figures read as attributes."""

from __future__ import annotations

import json
from pathlib import Path

from simlab.cli.main import main
from simlab.report.build import build
from simlab.results.figures import RunSummary
from tests.support import write_project


def test_the_summary_is_a_run_summary_and_dumps_back_unchanged(tmp_path: Path, monkeypatch) -> None:
    write_project(tmp_path, scenarios=2, trials=3)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    raw = json.loads(json.dumps(build(tmp_path / "transcripts" / "r", write=False), default=str))
    summary = RunSummary.model_validate(raw)
    assert summary.model_dump(mode="json") == raw
    assert summary.suite.pass_hat_k[3] == raw["suite"]["valid"]["pass_k"]["3"]["pass_hat_k"]
    assert summary.scenarios["kv-0"].raw.success.n == 3 and summary.mixed_pins == []
