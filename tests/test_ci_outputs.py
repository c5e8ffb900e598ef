"""CI outputs (issue 18): the step summary wherever gates are decided, JUnit that names the
failing trials, and the exit codes of `simlab compare`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simlab.cli.main import main
from tests import test_gates

REFUND = "scenarios/retail/refund-damaged-card.yaml"
SKIPPER = "python:examples.retail_agents:agent_skipping_policy_check"


project = test_gates.project  # the demo project in a temporary folder, as the gate tests use it


def small_suite(project: Path, agent: str = "python:examples.retail_agents:careful_agent") -> str:
    path = project / "suites" / "small.yaml"
    path.write_text("id: small\nscenarios: ['../scenarios/retail/refund-damaged-card.yaml',"
                    " '../scenarios/retail/store-credit-refused.yaml']\n"
                    f"agent: {agent}\ntrials: 3\nallow_unjudged: [rubric]\ngates:\n"
                    "  - 'policy_violations == 0'\n  - {gate: 'pass^1 >= 0.5', scope: each}\n")
    return str(path)


def test_run_suite_and_gate_write_the_step_summary_gates_first(project, monkeypatch, capsys):
    step = project / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    suite = small_suite(project, SKIPPER)
    assert main(["run", "--suite", suite, "--run-id", "bad", "--no-progress"]) == 1
    text = step.read_text()
    assert text.startswith("### simlab gates `small`: a gate failed (exit 1)")
    gates, _, report = text.partition("### simlab run `bad`")
    assert "| policy\\_violations == 0 | ❌ fail |" in gates
    assert "refund-damaged-card: pass^1 = 0 violates \\>= 0.5" in gates
    assert "| scenario | pass |" in report  # the run's own table follows the gates
    step.unlink()
    assert main(["gate", "bad", "--suite", suite]) == 1
    assert step.read_text().startswith("### simlab gates `small`: a gate failed (exit 1)")
    capsys.readouterr()


def test_junit_names_failing_trials_their_transcripts_and_reasons(project, capsys):
    suite = small_suite(project, SKIPPER)
    assert main(["run", "--suite", suite, "--run-id", "bad", "--no-progress", "--junit", "bad.xml"]) == 1
    capsys.readouterr()
    root = ET.parse(project / "bad.xml").getroot()
    testsuite = root.find("testsuite")
    cases = {c.get("name"): c for c in testsuite.findall("testcase")}
    for name in ("refund-damaged-card", "store-credit-refused"):
        assert float(cases[name].get("time")) > 0  # the trials' summed durations
    assert float(testsuite.get("time")) == pytest.approx(
        sum(float(cases[n].get("time")) for n in ("refund-damaged-card", "store-credit-refused")), abs=0.01)
    failure = cases["refund-damaged-card"].find("failure")
    assert "refund-damaged-card#1" in failure.get("message")
    lines = (project / "transcripts/bad/trials.jsonl").read_text().splitlines()
    body = failure.text
    for trial in (1, 2, 3):
        head = f"refund-damaged-card#{trial}: fail — transcript "
        assert head in body
        where = body.split(head, 1)[1].split("\n", 1)[0]
        path, _, number = where.rpartition(":")
        assert Path(path).resolve() == (project / "transcripts/bad/trials.jsonl").resolve()
        assert f'"unit_id":"refund-damaged-card#{trial}"' in lines[int(number) - 1]
    assert "(policy): " in body or "(trajectory): " in body  # a failing check with its kind and reason


def test_junit_lists_failing_trials_without_a_failed_gate_in_system_out(project, capsys):
    path = project / "suites" / "nogate.yaml"
    path.write_text(f"id: nogate\nscenarios: ['../{REFUND}']\nagent: {SKIPPER}\ntrials: 2\n"
                    "allow_unjudged: [rubric]\ngates: ['error_rate <= 0.5']\n")
    assert main(["run", "--suite", str(path), "--run-id", "x", "--no-progress", "--junit", "x.xml"]) == 0
    capsys.readouterr()
    case = ET.parse(project / "x.xml").getroot().find("testsuite/testcase")
    assert case.find("failure") is None
    assert "refund-damaged-card#2: fail" in case.find("system-out").text


def test_compare_exit_codes(project, capsys):
    assert main(["run", "--run-id", "good", "--no-progress", "--trials", "6", REFUND]) == 0
    assert main(["run", "--run-id", "worse", "--no-progress", "--trials", "6", "--agent", SKIPPER, REFUND]) == 0
    capsys.readouterr()
    assert main(["compare", "good", "worse"]) == 0  # without the flag a regression is reported, not failed
    assert "verdict: regressed" in capsys.readouterr().out
    assert main(["compare", "good", "worse", "--fail-on-regression"]) == 1
    assert "regressed beyond noise (exit 1)" in capsys.readouterr().out
    assert main(["compare", "good", "worse", "--fail-on-regression", "--json"]) == 1
    assert main(["compare", "good", "good", "--fail-on-regression"]) == 3  # a run against itself: nothing checked
    # a margin larger than the drop is not a regression
    assert main(["compare", "good", "worse", "--fail-on-regression", "--margin", "1.0"]) == 0
    capsys.readouterr()


def test_compare_without_shared_data_exits_3(project, capsys):
    assert main(["run", "--run-id", "a", "--no-progress", REFUND]) == 0
    assert main(["run", "--run-id", "b", "--no-progress", "scenarios/retail/store-credit-refused.yaml"]) == 0
    capsys.readouterr()
    assert main(["compare", "a", "b"]) == 3
    assert "no data" in capsys.readouterr().out


def test_compare_fail_on_regression_is_inconclusive_on_an_incomplete_run(project, capsys):
    import json

    assert main(["run", "--run-id", "good", "--no-progress", "--trials", "6", REFUND]) == 0
    assert main(["run", "--run-id", "part", "--no-progress", "--trials", "6", "--agent", SKIPPER, REFUND]) == 0
    manifest = project / "transcripts/part/run.json"
    data = json.loads(manifest.read_text())
    data["pins"]["scenarios"]["refund-damaged-card"]["trials"] = 9
    manifest.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["compare", "good", "part", "--fail-on-regression"]) == 3
    assert "candidate run is incomplete (6 of 9" in capsys.readouterr().out


def test_junit_does_not_name_unjudged_trials_the_suite_counts_as_passes(project, capsys):
    suite = small_suite(project)  # allow_unjudged: [rubric]: offline rubric items leave trials unjudged
    assert main(["run", "--suite", suite, "--run-id", "good", "--no-progress", "--junit", "good.xml"]) == 0
    capsys.readouterr()
    stored = (project / "transcripts/good/trials.jsonl").read_text()
    assert '"verdict":"unjudged"' in stored  # there are such trials, and they count as passes
    for case in ET.parse(project / "good.xml").getroot().iter("testcase"):
        if case.get("name") != "suite gates":
            assert case.find("system-out") is None and case.find("failure") is None


def test_a_gate_on_pass_k_beyond_the_trials_writes_the_step_summary_with_pass_k_undefined(project, monkeypatch,
                                                                                           capsys):
    """`simlab run --suite S --trials 1` with a pass^3 gate and GITHUB_STEP_SUMMARY set crashed
    (KeyError: 2, exit 70, no summary): the gate asked for pass^3 beyond the curve, the markdown
    then showed pass^2, which was not on it. pass^k with n < k is undefined: shown as such."""
    step = project / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    path = project / "suites" / "k3.yaml"
    path.write_text(f"id: k3\nscenarios: ['../{REFUND}']\nagent: python:examples.retail_agents:careful_agent\n"
                    "trials: 1\nallow_unjudged: [rubric]\ngates: ['pass^3 >= 0.8']\n")
    assert main(["run", "--suite", str(path), "--run-id", "one", "--no-progress"]) == 3
    text = step.read_text()
    assert "| pass^3 \\>= 0.8 | ⚠️ inconclusive | n \\< k: too few trials \\(1 valid of 1 trials" in text
    assert "pass^2 – · pass^3 –" in text  # undefined, never 0 and never a crash
    step.unlink()
    assert main(["gate", "one", "--suite", str(path)]) == 3
    assert "pass^2 – · pass^3 –" in step.read_text()
    capsys.readouterr()


def test_a_suite_id_in_the_step_summary_s_code_span_shows_no_backslash() -> None:
    """A code span shows a backslash as written: the id is not markdown-escaped there."""
    from simlab.report.formats import md_code

    assert md_code("retail_smoke$v2") == "`retail_smoke$v2`"
    assert md_code("a`b") == "``a`b``"



def skips_or_is_down(inp):  # type: ignore[no-untyped-def]
    """Half the trials (by their seed) meet a provider that is down: an infrastructure error; the
    others skip the policy check: the agent's fail."""
    import httpx

    from examples.retail_agents import agent_skipping_policy_check

    if inp.seed % 2:
        raise httpx.RemoteProtocolError("the provider went away")
    return agent_skipping_policy_check(inp)


def test_junit_keeps_a_failed_gate_of_a_scenario_that_also_had_errors(project, capsys):
    """A scenario whose `scope: each` gate failed and that also had infrastructure errors was an
    <error> naming only the errors: the failed gate was in no line of the file."""
    path = project / "suites" / "mixed.yaml"
    path.write_text(f"id: mixed\nscenarios: ['../{REFUND}']\nagent: python:tests.test_ci_outputs:skips_or_is_down\n"
                    "trials: 6\nmax_error_rate: 1\nallow_unjudged: [rubric]\n"
                    "gates:\n  - {gate: 'pass^1 >= 0.5', scope: each}\n")
    code = main(["run", "--suite", str(path), "--run-id", "mixed", "--no-progress", "--junit", "mixed.xml"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL" in out
    case = next(c for c in ET.parse(project / "mixed.xml").getroot().iter("testcase")
                if c.get("name") == "refund-damaged-card")
    failure = case.find("failure")
    assert failure is not None and case.find("error") is None
    assert "pass^1 = 0" in failure.get("message") and "also: " in failure.get("message")
    assert "trials ended in an infrastructure error" in failure.get("message")
