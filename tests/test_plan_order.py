"""The trials a report names are chosen in plan order (scenario, then trial number), never in the
order the trials were stored: trials finish in any order, and a merge stores its shards one after
another. The same trials stored in another order read the same: each failure mode's trial to read
first, JUnit's failing trials, the HTML's, the pytest plugin's and compare's per-trial differences."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.report.digest import digest
from simlab.report.first_difference import trial_differences
from simlab.runner.heads_index import HEADS
from tests.support import played_demo


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return played_demo(tmp_path_factory, trials=4)


def restored(demo_run: Path, into: Path, order) -> Path:
    """The demo project copied with its run's lines put in ``order`` (a function of the lines), the
    files derived from them left out (they are rebuilt)."""
    shutil.copytree(demo_run.parents[1], into)
    folder = into / "transcripts" / demo_run.name
    for derived in (HEADS, "results.parquet", "summary.json"):
        (folder / derived).unlink(missing_ok=True)
    path = folder / "trials.jsonl"
    path.write_text("".join(order(path.read_text(encoding="utf-8").splitlines(keepends=True))), encoding="utf-8")
    return folder


def key(line: str) -> tuple[str, int]:
    row = json.loads(line)["head"]["row"]
    return (row["scenario_id"], row["trial"])


def in_plan_order(lines: list[str]) -> list[str]:
    return sorted(lines, key=key)


def backwards(lines: list[str]) -> list[str]:  # an order a merge of shards might give
    return sorted(lines, key=key, reverse=True)


def readings(folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> dict:
    monkeypatch.chdir(folder.parents[1])
    assert main(["report", folder.name, "--json"]) in (0, 1)
    modes = [(m["mode"], m["representative"]) for m in json.loads(capsys.readouterr().out)["failure_modes"]]
    suite = folder.parents[1] / "suite.yaml"
    suite.write_text("id: s\nscenarios: ['scenarios/retail/*.yaml']\ngates:\n"
                     "  - {gate: 'pass^1 >= 0.9', scope: each}\n")
    main(["gate", folder.name, "--suite", "suite.yaml", "--junit", "junit.xml"])
    capsys.readouterr()
    junit = ET.parse(folder.parents[1] / "junit.xml").getroot()
    failures = sorted(e.get("message") or "" for e in junit.iter() if e.tag in ("failure", "error"))
    named = {sid: [t.unit_id for t in kept] for sid, kept in digest(folder, keep=1).failed.items()}
    return {"modes": modes, "junit": failures, "digest": named}


def test_the_same_trials_stored_in_another_order_read_the_same(
    demo_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ordered = readings(restored(demo_run, tmp_path / "plan", in_plan_order), monkeypatch, capsys)
    reversed_ = readings(restored(demo_run, tmp_path / "back", backwards), monkeypatch, capsys)
    assert ordered == reversed_
    assert ordered["modes"] and any("trials that did not pass" in m for m in ordered["junit"])
    for sid, units in ordered["digest"].items():  # each scenario's named trials, first trial first
        numbers = [int(u.rsplit("#", 1)[1]) for u in units]
        assert numbers == sorted(numbers), sid


def test_compare_names_differing_trials_in_plan_order(demo_run: Path, tmp_path: Path) -> None:
    base = restored(demo_run, tmp_path / "a", backwards)
    found = trial_differences(base, base)
    assert [unit for unit, _ in found] == sorted(
        (unit for unit, _ in found), key=lambda u: (u.rsplit("#", 1)[0], int(u.rsplit("#", 1)[1]))
    )
    assert len(found) > 8
