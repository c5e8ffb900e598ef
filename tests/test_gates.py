"""Gates, exit codes, JUnit and run comparison, on real demo runs."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    for name in ("scenarios", "personas", "examples", "suites"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_suite(project: Path, gates: str, extra: str = "", allow: str = "allow_unjudged: [rubric]\n") -> str:
    path = project / "suites" / "custom.yaml"
    path.write_text("id: custom\nscenarios: ['../scenarios/retail/refund-damaged-card.yaml',"
                    " '../scenarios/retail/store-credit-refused.yaml']\n"
                    f"agent: python:examples.retail_agents:careful_agent\ntrials: 3\n{allow}{extra}gates:\n{gates}")
    return str(path)


def test_nightly_passes_for_the_careful_agent(project, capsys):
    assert main(["run", "--suite", "suites/nightly.yaml", "--run-id", "good", "--no-progress",
                 "--junit", "good.xml"]) == 0
    assert "all gates held (exit 0)" in capsys.readouterr().out
    assert main(["gate", "good", "--suite", "suites/nightly.yaml"]) == 0


def test_nightly_fails_with_exit_1_and_a_reason_for_the_flaky_agent(project, capsys):
    code = main(["run", "--suite", "suites/nightly.yaml", "--run-id", "bad", "--no-progress",
                 "--agent", "python:examples.retail_agents:flaky_agent", "--junit", "bad.xml"])
    out = capsys.readouterr().out
    assert code == 1
    assert "policy_violations" in out and "violates == 0" in out and "a gate failed (exit 1)" in out
    root = ET.parse(project / "bad.xml").getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == 11  # ten scenarios and the suite gates
    assert int(suite.get("failures")) == sum(1 for c in cases if c.find("failure") is not None) >= 1
    assert int(suite.get("errors")) == sum(1 for c in cases if c.find("error") is not None) == 0
    gates_case = next(c for c in cases if c.get("name") == "suite gates")
    assert "policy_violations" in gates_case.find("failure").get("message")
    props = {p.get("name") for p in cases[0].find("properties")}
    assert {"pass^1", "cost_usd", "passes", "trials"} <= props


def test_undefined_metric_is_inconclusive_exit_3(project, capsys):
    suite = write_suite(project, '  - "pass^5 >= 0.5"\n')
    assert main(["run", "--suite", suite, "--run-id", "few", "--no-progress"]) == 3
    assert "n < k" in capsys.readouterr().out


def test_incomplete_run_is_inconclusive(project, capsys):
    suite = write_suite(project, '  - "pass^1 >= 0.5"\n')
    assert main(["run", "--suite", suite, "--run-id", "part", "--no-progress", "--partial-ok",
                 "scenarios/retail/refund-damaged-card.yaml"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # a long line goes on under its text
    assert "partial: 1 of 2 scenarios (accepted with --partial-ok" in shown
    # the suite plans more units than this run holds: gate it as if it were the suite's run
    manifest = project / "transcripts/part/run.json"
    data = json.loads(manifest.read_text())
    data["pins"]["scenarios"]["refund-damaged-card"]["trials"] = 6
    manifest.write_text(json.dumps(data))
    assert main(["gate", "part", "--suite", suite]) == 3
    assert "incomplete: 3 of 6" in capsys.readouterr().out


def test_usage_errors_exit_2(project, capsys):
    assert main(["gate", "nope", "--suite", "suites/nightly.yaml"]) == 2
    bad = project / "suites" / "bad.yaml"
    bad.write_text("id: bad\nscenarios: [x]\ngates: ['pass^3 >> 1']\n")
    assert main(["gate", "--suite", str(bad)]) == 2
    assert "bad.yaml:3: gates.0" in capsys.readouterr().err


def test_no_regression_gate_and_compare(project, capsys):
    suite = write_suite(project, "  - {no_regression_vs: base}\n")
    # the baseline run itself: compared with itself it cannot regress, so the check did not run (it held)
    assert main(["run", "--suite", suite, "--run-id", "base", "--no-progress"]) == 3
    assert "the baseline is run base itself (the same run id)" in " ".join(capsys.readouterr().out.split())
    assert main(["compare", "base", "base", "--fail-on-regression"]) == 3
    assert "the baseline is run base itself" in " ".join(capsys.readouterr().out.split())
    assert main(["run", "--suite", suite, "--run-id", "same", "--no-progress"]) == 0
    assert "no regression beyond noise" in capsys.readouterr().out
    flaky = main(["run", "--suite", suite, "--run-id", "worse", "--no-progress",
                  "--agent", "python:examples.retail_agents:flaky_agent"])
    out = capsys.readouterr().out
    assert flaky in (0, 1)  # 6 trials may or may not show a drop beyond noise; the gate says which
    assert ("the drop is beyond noise" in out) == (flaky == 1)
    assert main(["compare", "base", "worse"]) == 0
    out = capsys.readouterr().out
    assert "pooled" in out and "verdict:" in out


def test_a_gate_on_pass_0_is_a_spec_error_naming_the_file(project, capsys):
    """k counts trials: pass^0 passed validation, then every gate on it was "n < k" (exit 3)."""
    suite = write_suite(project, '  - "pass^0 >= 0.5"\n')
    assert main(["validate", suite]) == 2
    err = capsys.readouterr().err
    assert "custom.yaml" in err and "pass^0: k counts trials, so it is 1 or more" in err


def test_compare_refuses_different_simulator_pins(project, capsys):
    assert main(["run", "--run-id", "a", "--no-progress", "scenarios/retail/refund-damaged-card.yaml"]) == 0
    assert main(["run", "--run-id", "b", "--no-progress", "--simulator", "scripted",
                 "scenarios/retail/refund-damaged-card.yaml"]) == 0
    capsys.readouterr()
    assert main(["compare", "a", "b"]) == 2
    assert "simulator" in capsys.readouterr().err
    assert main(["compare", "a", "b", "--allow-different-pins"]) == 0


def test_a_failed_gate_beats_an_undecidable_one_on_a_complete_run():
    from simlab.report.gates import GateReport, GateResult

    report = GateReport([GateResult("pass^3 >= 0.8", "fail", 0.0, "pass^3 = 0"),
                         GateResult("cost_per_success <= 0.05", "inconclusive", None, "cost_per_success is unknown")])
    assert report.exit_code == 1
    report.problems.append("run incomplete: 3 of 6 trials finished")
    assert report.exit_code == 3  # the failure may be the missing trials' doing
    report.results[0] = GateResult("policy_violations == 0", "fail", 2.0, "policy_violations = 2")
    assert report.exit_code == 3  # one rule: a run that cannot stand for its plan is inconclusive, whatever failed


def test_a_shard_of_a_suite_defers_the_gates_to_the_merged_run(project, capsys):
    assert main(["run", "--suite", "suites/nightly.yaml", "--run-id", "sh", "--shard", "1/2", "--no-progress"]) == 0
    assert "check the gates after merging the shards" in capsys.readouterr().err


def test_passing_each_scenario_gates_are_listed_and_unknown_runs_are_named(project, capsys):
    assert main(["run", "--suite", "suites/nightly.yaml", "--run-id", "good", "--no-progress"]) == 0
    assert "(each scenario) — all 10 scenarios" in capsys.readouterr().out
    assert main(["report", "nope"]) == 2
    assert "recent runs: good" in capsys.readouterr().err


def test_the_report_ends_a_run_over_its_error_budget_as_the_run_did(tmp_path, monkeypatch, capsys):
    """Infrastructure errors over the run's budget: ``simlab run`` said incomplete (exit 3), and so
    does every later ``simlab report`` (it said the run was fine, exit 0), under the budget the run
    kept in run.json (``max_error_rate``; default RUN_MAX_ERROR_RATE)."""
    import json

    from simlab.cli.main import main
    from simlab.runner.store import encode_record
    from tests.sample_runs import sample_manifest, sample_record

    monkeypatch.chdir(tmp_path)
    records = [sample_record("errs", "s", trial) for trial in (1, 2, 3, 4)]
    for record in records[:2]:
        record.verdict = "error"
    for budget, code in ((None, 3), (0.6, 0)):
        folder = tmp_path / "transcripts" / "errs"
        folder.mkdir(parents=True, exist_ok=True)
        manifest = sample_manifest("errs", {"s": 4})
        if budget is not None:
            manifest["max_error_rate"] = budget
        (folder / "run.json").write_text(json.dumps(manifest))
        (folder / "trials.jsonl").write_bytes(b"".join(encode_record(r) for r in records))
        (folder / "heads.jsonl").unlink(missing_ok=True)
        capsys.readouterr()
        assert main(["report", "errs"]) == code, budget
        err = capsys.readouterr().err
        assert ("incomplete: infrastructure errors in 2 of 4 trials (50.0% > budget 10.0%)" in err) == (code == 3)


LEAK = """id: leak
title: the user gives the card number they were told to keep
domain: retail
persona: impatient-terse
user:
  goal: Get order A123 refunded to the card.
  opening: my order A123 arrived broken. refund it.
  known_facts: {order_id: A123, email: dana@example.com}
  never_reveal: {card_number: "4242 4242 4242 4242"}
  script: ["my order A123 arrived broken. refund it.", "my card is 4242 4242 4242 4242", "yes"]
agent_context: {signed_in_customer: C-17, channel: chat}
expect:
  state:
    - {path: "refunds[order_id=A123].method", equals: original_card, name: refunded to the card}
  forbidden: [issue_store_credit]
"""


def test_a_count_gate_on_a_run_with_no_valid_trial_is_inconclusive(project, capsys):
    """Every trial invalid (the scripted user drifts): no policy was judged, so "0 violations"
    holds nothing. Before, the gate passed (exit 0) and so did the pytest plugin's scenario."""
    import simlab
    from simlab.testing import scenario_result

    (project / "scenarios" / "leak").mkdir()
    (project / "scenarios" / "leak" / "leak.yaml").write_text(LEAK)
    suite = project / "suites" / "leak.yaml"
    suite.write_text("id: leak\nscenarios: ['../scenarios/leak/*.yaml']\nsimulator: scripted\n"
                     "agent: python:examples.retail_agents:careful_agent\ntrials: 2\n"
                     "gates:\n  - 'policy_violations == 0'\n  - 'loop_rate <= 0.1'\n")
    assert main(["run", "--suite", str(suite), "--run-id", "leak", "--no-progress"]) == 3
    out = " ".join(capsys.readouterr().out.split())  # as wide as the terminal: lines may wrap
    assert "policy_violations = 0 counts no valid trial: 0 valid of 2 trials (2 invalid, 0 errors" in out
    assert main(["gate", "leak", "--suite", str(suite)]) == 3
    result = scenario_result(simlab.load_run("transcripts/leak"), "leak", ["policy_violations == 0"])
    assert result.inconclusive and not result.passed
    assert "policy_violations counts no valid trial: 0 valid of 2 trials" in "\n".join(result.lines)


def test_a_run_played_under_other_limits_than_the_suite_sets_is_inconclusive(project, capsys):
    """A trial past a limit is a fail, so a run played under looser limits cannot stand for a
    suite that sets tighter ones. Before, the gate passed (exit 0) where the suite's run failed."""
    loose = write_suite(project, '  - "pass^1 >= 0.5"\n')
    assert main(["run", "--suite", loose, "--run-id", "loose", "--no-progress"]) == 0
    tight = project / "suites" / "tight.yaml"
    tight.write_text(Path(loose).read_text().replace("id: custom", "id: tight")
                     + "limits: {max_agent_steps: 1}\n")
    capsys.readouterr()
    assert main(["gate", "loose", "--suite", str(tight)]) == 3
    assert "played under other limits than suite 'tight' sets" in " ".join(capsys.readouterr().out.split())
    assert main(["gate", "loose", "--suite", loose]) == 0  # the suite it was played from


def test_simlab_gate_prints_what_the_runs_report_warns_of(project, capsys):
    """A copied folder, a unit stored twice: `simlab report` warned, `simlab gate` said nothing."""
    suite = write_suite(project, '  - "pass^1 >= 0.5"\n')
    assert main(["run", "--suite", suite, "--run-id", "orig", "--no-progress"]) == 0
    shutil.copytree(project / "transcripts" / "orig", project / "transcripts" / "copy")
    trials = project / "transcripts" / "copy" / "trials.jsonl"
    trials.write_text(trials.read_text() + trials.read_text().splitlines(keepends=True)[0])
    capsys.readouterr()
    assert main(["gate", "copy", "--suite", suite]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning: transcripts/copy: the folder is named 'copy' but its run.json is run 'orig'" in out
    assert "is stored twice, identically (lines 1 and 7): counted once" in out


def test_the_gates_advice_fits_the_run(project, capsys):
    """A run of scenarios that are not the suite's cannot be accepted with --partial-ok: the advice
    says so. A run without run.json has no players to hold to the suite's: only its missing
    manifest is said (before, also "play the suite without --simulator")."""
    suite = write_suite(project, '  - "pass^1 >= 0.5"\n')
    assert main(["run", "--run-id", "other", "--no-progress", "--trials", "3",
                 "scenarios/retail/refund-damaged-card.yaml", "scenarios/retail/already-refunded.yaml"]) == 0
    capsys.readouterr()
    assert main(["gate", "other", "--suite", suite]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "scenarios played are not the suite's" in out and "--partial-ok accepts no other" in out
    assert "accept the part by name" not in out
    assert main(["run", "--suite", suite, "--run-id", "whole", "--no-progress"]) == 0
    (project / "transcripts" / "whole" / "run.json").unlink()
    capsys.readouterr()
    assert main(["gate", "whole", "--suite", suite]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "no run.json" in out and "simulator" not in out and "judge" not in out
