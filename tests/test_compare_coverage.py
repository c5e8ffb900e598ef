"""A regression check that could not look at part of its base: the candidate played fewer scenarios
than the base run (one scenario against a whole nightly). The scenarios only the base has are not
compared, so a pass would say nothing about them: ``compare --fail-on-regression`` and a
``no_regression_vs`` gate are inconclusive (exit 3) naming them, unless the part is accepted by
name (``--partial-ok``). Scenarios only the candidate has are said too; they cannot regress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simlab.cli.main import main

NIGHTLY = "suites/nightly.yaml"
CARD = "scenarios/retail/refund-damaged-card.yaml"


@pytest.fixture
def project(pinned_demo_project: Path) -> Path:
    assert main(["run", "--suite", NIGHTLY, "--run-id", "base", "--no-progress"]) == 0
    careful = ["--agent", "python:examples.retail_agents:careful_agent", "--simulator", "rules"]
    assert main(["run", CARD, "--run-id", "one", "--trials", "4", "--no-progress", *careful]) == 0
    return pinned_demo_project


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, " ".join((out + err).split())


def test_a_candidate_of_fewer_scenarios_than_the_base_is_no_pass(project, capsys):
    code, text = cli(capsys, "compare", "base", "one", "--fail-on-regression")
    assert code == 3, text
    assert "not compared" in text and "already-refunded" in text and "--partial-ok" in text, text
    code, text = cli(capsys, "compare", "base", "one", "--fail-on-regression", "--partial-ok")
    assert code == 0, text
    assert "not compared" in text and "already-refunded" in text and "accepted" in text, text
    code, out = cli(capsys, "compare", "base", "one", "--fail-on-regression", "--json")
    data = json.loads(out)
    assert code == 3 and "already-refunded" in data["only_in_base"], out
    assert any("not compared" in w for w in data["warnings"]), out


def test_scenarios_only_the_candidate_has_are_said_and_are_no_reason_to_withhold(project, capsys):
    code, text = cli(capsys, "compare", "one", "base", "--fail-on-regression")
    assert code == 0, text
    assert "only in candidate" in text and "already-refunded" in text, text


def _suite(project: Path, name: str, scenarios: str) -> str:
    text = (project / NIGHTLY).read_text()
    text = text[: text.index("gates:")] + "gates:\n  - {no_regression_vs: base}\n"
    text = text.replace('"../scenarios/retail/*.yaml"', f'"../scenarios/retail/{scenarios}"')
    (project / f"suites/{name}.yaml").write_text(text.replace("id: retail-nightly", f"id: retail-{name}"))
    return f"suites/{name}.yaml"


def test_a_no_regression_gate_against_a_base_of_more_scenarios_is_inconclusive(project, capsys):
    suite = _suite(project, "refunds", "refund-*.yaml")  # the suite now plays 2 of the base's 10
    assert main(["run", "--suite", suite, "--run-id", "r", "--no-progress"]) == 3
    code, text = cli(capsys, "gate", "r", "--suite", suite)
    assert code == 3, text
    assert "INCONCLUSIVE no regression vs base" in text and "not compared" in text, text
    assert "already-refunded" in text, text


def test_a_no_regression_gate_on_a_part_accepted_by_name_says_what_it_left_out(project, capsys):
    suite = _suite(project, "noreg", "*.yaml")
    part = ["-k", "refund-damaged-card", "--partial-ok"]
    assert main(["run", "--suite", suite, "--run-id", "p", "--no-progress", *part]) == 0
    code, text = cli(capsys, "gate", "p", "--suite", suite)
    assert code == 0, text
    assert "PASS no regression vs base" in text and "9 of the base run's 10 scenarios were not compared" in text
    assert "accepted with --partial-ok" in text, text
