"""``simlab run --replay RUN`` plays RUN's scenarios with RUN's trial counts, scenario by scenario
(its help and docs/how-to/replay.md say so), so every unit meets its recording: a recording whose
scenarios ran different numbers of trials is replayed unit for unit, with no trial that has no
recording to play (an infrastructure error, and a run that exits 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.runner.store import RunStore
from tests.support import write_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_project(tmp_path, scenarios=2, trials=2)
    with open(tmp_path / "scenarios" / "s1.yaml", "a") as fh:
        fh.write("trials: 3\n")  # its own count: kv-0 plays 2 trials, kv-1 plays 3
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _plan(project: Path, run: str) -> dict[str, int]:
    manifest = json.loads((project / "transcripts" / run / "run.json").read_text())
    return {sid: pin["trials"] for sid, pin in manifest["pins"]["scenarios"].items()}


def test_a_replay_plays_each_scenario_with_the_recordings_own_trial_count(project: Path, capsys):
    assert main(["run", "--run-id", "base", "--no-progress"]) == 0
    assert _plan(project, "base") == {"kv-0": 2, "kv-1": 3}
    assert main(["run", "--replay", "base", "--run-id", "again", "--no-progress"]) == 0
    assert _plan(project, "again") == {"kv-0": 2, "kv-1": 3}
    records = list(RunStore(project / "transcripts" / "again").records())
    assert sorted(r.unit_id for r in records) == ["kv-0#1", "kv-0#2", "kv-1#1", "kv-1#2", "kv-1#3"]
    assert {r.verdict for r in records} == {"pass"}
    capsys.readouterr()
    assert main(["compare", "base", "again", "--fail-on-regression"]) == 0
    assert "0 of 5 shared trials differ" in capsys.readouterr().out
    assert main(["run", "--replay", "base", "--run-id", "two", "--trials", "1", "--no-progress"]) == 0
    assert _plan(project, "two") == {"kv-0": 1, "kv-1": 1}  # --trials still sets every scenario's
