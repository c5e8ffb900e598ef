"""First steps and everyday commands: `simlab init` gives a project green on its first run,
`simlab runs` lists runs, `simlab tools` shows a domain, `-k`/`--tags` select scenarios and
`--list` shows the plan with where each trial count comes from."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.errors import UsageError
from simlab.runner.select import keyword_filter

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("library_domain", "library_agent"):  # the starter's modules, imported from this project
        sys.modules.pop(name, None)


def test_init_writes_a_project_that_is_green_on_its_first_run(empty: Path, capsys) -> None:
    assert main(["init"]) == 0
    assert "next: simlab run" in capsys.readouterr().out
    for name in ("simlab.yaml", "library_domain.py", "library_agent.py", "personas/reader.yaml",
                 "scenarios/borrow-available.yaml", "scenarios/borrow-on-loan.yaml", "suites/smoke.yaml",
                 "schemas/scenario.json"):
        assert (empty / name).is_file(), name
    assert main(["validate"]) == 0
    assert main(["run", "--run-id", "first", "--no-progress"]) == 0
    records = [json.loads(x) for x in (empty / "transcripts/first/trials.jsonl").read_text().splitlines()]
    assert len(records) == 6 and {r["verdict"] for r in records} == {"pass"}
    assert main(["run", "--suite", "suites/smoke.yaml", "--run-id", "smoke", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["init"]) == 2  # never over a project
    assert "already exist" in capsys.readouterr().err


def test_runs_lists_each_run_with_its_completeness_and_figures(empty: Path, capsys) -> None:
    assert main(["init"]) == 0
    assert main(["run", "--run-id", "one", "--no-progress"]) == 0
    assert main(["run", "--run-id", "two", "--no-progress", "--trials", "1", "-k", "happy"]) == 0
    capsys.readouterr()
    assert main(["runs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["run", "created", "trials", "pass^1", "pass^3"]
    one = next(line for line in lines if line.startswith("one "))
    two = next(line for line in lines if line.startswith("two "))
    assert "6/6" in one and "100%" in one and "python:library_agent:librarian" in one
    assert "1/1" in two and "–" in two  # one trial: pass^3 is undefined, never 0


def test_tools_shows_a_domains_tools_and_seed_data(capsys) -> None:
    assert main(["tools", "retail", "--state"]) == 0
    out = capsys.readouterr().out
    assert "issue_refund  [WRITE]" in out and "lookup_order  [READ]" in out and "order_id: string" in out
    assert '"A123"' in out  # the seed data
    assert main(["tools", "no_such_domain_xyz"]) == 2


def test_k_and_tags_select_scenarios_and_list_shows_the_plan(tmp_path: Path, monkeypatch, capsys) -> None:
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--list", "-k", "refund and not card"]) == 0
    out = capsys.readouterr().out
    assert "already-refunded" in out and "refund-damaged-card" not in out and "store-credit-refused" not in out
    assert "(from the scenario file)" in out  # every retail scenario names its trials
    (tmp_path / "scenarios/retail/already-refunded.yaml").write_text(
        (tmp_path / "scenarios/retail/already-refunded.yaml").read_text().replace("\ntrials: 4\n", "\n"))
    assert main(["run", "--list", "-k", "already"]) == 0
    assert "4 trials  (from simlab.yaml)" in capsys.readouterr().out
    assert not (tmp_path / "transcripts").exists()  # --list plays nothing
    assert main(["run", "--dry-run", "--tags", "permission", "--trials", "2"]) == 0
    out = capsys.readouterr().out
    assert "other-customers-order" in out and "2 trials  (from --trials)" in out and "already-refunded" not in out
    assert main(["run", "--list", "-k", "refund and ("]) == 2


@pytest.mark.parametrize("expression, words, expected", [
    ("refund", ["refund-damaged-card"], True),
    ("refund and not card", ["refund-damaged-card"], False),
    ("card or credit", ["store-credit-wanted"], True),
    ("not (card or credit)", ["already-refunded", "Already refunded", "duplicate"], True),
    ("DUPLICATE", ["already-refunded", "duplicate"], True),
])
def test_keyword_expressions(expression: str, words: list[str], expected: bool) -> None:
    assert keyword_filter(expression)(words) is expected


@pytest.mark.parametrize("bad", ["", "and", "a and", "(a", "a )", "a b"])
def test_bad_keyword_expressions_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError):
        keyword_filter(bad)
