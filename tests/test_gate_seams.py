"""A gate meets a run that is not the suite's as it stands now: a scenario or persona file edited
after the run. The run played another version of the suite's scenarios, so its figures say nothing
about the suite's: the gate is inconclusive (exit 3) on every surface (terminal, JUnit, the step
summary, ``simlab.Run.gate``), naming the scenario, never a pass."""

from __future__ import annotations

from pathlib import Path

import pytest

import simlab
from simlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]
NIGHTLY = "suites/nightly.yaml"
CARD = "scenarios/retail/refund-damaged-card.yaml"


@pytest.fixture
def project(pinned_demo_project: Path) -> Path:
    return pinned_demo_project


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, " ".join((out + err).split())


def _gate_everywhere(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tag: str
) -> tuple[int, str, str, str, int]:
    step = project / f"step-{tag}.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    junit = project / f"gate-{tag}.xml"
    code, text = cli(capsys, "gate", "n", "--suite", NIGHTLY, "--junit", str(junit))
    api = simlab.load_run("n", project=project).gate(NIGHTLY).exit_code
    return code, text, step.read_text(), junit.read_text(), api


def test_a_gate_on_a_run_of_an_older_version_of_a_scenario_is_inconclusive(project, capsys, monkeypatch):
    assert main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress"]) == 0
    code, _, _, _, api = _gate_everywhere(project, capsys, monkeypatch, "before")
    assert (code, api) == (0, 0)  # the run is the suite's as long as its files are the ones it played
    path = project / CARD
    path.write_text(path.read_text().replace("equals: original_card", "equals: store_credit"))
    code, text, step, junit, api = _gate_everywhere(project, capsys, monkeypatch, "edited")
    assert (code, api) == (3, 3), text
    assert "refund-damaged-card" in text and "changed since the run" in text, text
    assert "changed since the run" in step and "inconclusive (exit 3)" in step
    assert "changed since the run" in junit and "<error" in junit


def test_a_gate_after_a_persona_file_changed_is_inconclusive(project, capsys, monkeypatch):
    assert main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress"]) == 0
    persona = project / "personas/impatient-terse.yaml"
    persona.write_text(persona.read_text() + "\n# edited after the run\n")
    code, text, step, junit, api = _gate_everywhere(project, capsys, monkeypatch, "persona")
    assert (code, api) == (3, 3), text
    assert "persona" in text and "changed since the run" in text, text
    assert "refund-damaged-card" in text


# -- a regression check on runs that cannot stand for their plan ---------------------------------

DOWN = '''
import httpx

from examples.retail_agents import careful_agent


def agent(inp):
    """The careful agent, whose own model provider drops every fourth seed's connection."""
    if inp.seed % 4 == 0:
        raise httpx.RemoteProtocolError("server disconnected")
    return careful_agent(inp)


agent.uses_models = False
'''


def _noreg_suite(project: Path, baseline: str) -> str:
    text = (project / NIGHTLY).read_text()
    text = text[: text.index("gates:")] + f"gates:\n  - {{no_regression_vs: {baseline}}}\n"
    (project / "suites/noreg.yaml").write_text(text.replace("id: retail-nightly", "id: retail-noreg"))
    return "suites/noreg.yaml"


def test_a_regression_check_against_an_incomplete_baseline_is_inconclusive_in_gate_and_compare(
    project, capsys
):
    assert main(["run", "--suite", NIGHTLY, "--run-id", "base", "--no-progress"]) == 0
    assert main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress"]) == 0
    suite = _noreg_suite(project, "base")
    assert cli(capsys, "gate", "n", "--suite", suite)[0] == 0  # a whole baseline: the gate decides
    path = project / "transcripts/base/trials.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]))  # the baseline was cut short
    code, text = cli(capsys, "compare", "base", "n", "--fail-on-regression")
    assert code == 3 and "incomplete" in text, text
    code, text = cli(capsys, "gate", "n", "--suite", suite)
    assert code == 3 and "INCONCLUSIVE no regression vs base" in text and "incomplete" in text, text


def test_a_regression_check_on_runs_with_infrastructure_errors_is_inconclusive(project, capsys):
    (project / "agents_down.py").write_text(DOWN)
    assert main(["run", "--suite", NIGHTLY, "--run-id", "base", "--no-progress"]) == 0
    down = ["--agent", "python:agents_down:agent"]
    assert main(["run", "--suite", NIGHTLY, "--run-id", "down", "--no-progress", *down]) == 3
    code, text = cli(capsys, "compare", "base", "down", "--fail-on-regression")
    assert code == 3 and "infrastructure errors" in text and "candidate" in text, text
    code, text = cli(capsys, "compare", "down", "base", "--fail-on-regression")
    assert code == 3 and "infrastructure errors" in text and "base" in text, text
    assert cli(capsys, "compare", "base", "down")[0] == 0  # without --fail-on-regression: compared
    code, text = cli(capsys, "gate", "base", "--suite", _noreg_suite(project, "down"))
    assert code == 3 and "INCONCLUSIVE no regression vs down" in text, text
    assert "infrastructure errors" in text, text


# -- a suite-wide figure that leaves scenarios out ----------------------------------------------

DRIFTING = """\
id: drift-opening
title: The user's opening states a ticket id it was never given, so every trial is invalid
domain: retail
persona: impatient-terse
user:
  goal: Get order A123 refunded to the original card.
  opening: "my order A123 arrived broken, ticket TK-55123. refund it to my card"
  known_facts: {order_id: A123}
agent_context: {signed_in_customer: C-17, channel: chat}
max_turns: 6
expect:
  state:
    - {path: "refunds[order_id=A123].method", equals: original_card}
"""

TWO = """\
id: two
scenarios: [{files}]
agent: python:examples.retail_agents:careful_agent
simulator: rules
trials: 4
allow_unjudged: [rubric]
gates:
  - "{gate}"
"""


@pytest.mark.parametrize("gate", ["pass^3 >= 0.8", "success >= 0.8", "pass@2 >= 0.8"])
def test_a_suite_figure_undefined_in_one_scenario_is_inconclusive_not_a_mean_of_the_rest(
    project, capsys, monkeypatch, gate
):
    (project / "scenarios/drift-opening.yaml").write_text(DRIFTING)
    files = '"../scenarios/retail/refund-damaged-card.yaml"'
    (project / "suites/one.yaml").write_text(TWO.format(files=files, gate=gate).replace("id: two", "id: one"))
    (project / "suites/two.yaml").write_text(
        TWO.format(files=files + ', "../scenarios/drift-opening.yaml"', gate=gate)
    )
    assert main(["run", "--suite", "suites/one.yaml", "--run-id", "one", "--no-progress"]) == 0
    step = project / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    capsys.readouterr()
    code = main(["run", "--suite", "suites/two.yaml", "--run-id", "two", "--no-progress", "--junit", "two.xml"])
    out, err = capsys.readouterr()
    text = " ".join((out + err).split())
    assert code == 3, text  # every trial of drift-opening is invalid: the gate judged one scenario of two
    assert "undefined in 1 of 2 scenarios" in text and "drift-opening" in text, text
    assert "undefined in 1 of 2 scenarios" in step.read_text()
    assert "undefined in 1 of 2 scenarios" in (project / "two.xml").read_text()
    assert simlab.load_run("two", project=project).gate("suites/two.yaml").exit_code == 3


def test_a_scenario_with_fewer_trials_by_design_leaves_the_suites_own_run_decided(project, capsys):
    card = (project / CARD).read_text()
    short = card.replace("id: refund-damaged-card", "id: card-short").replace("trials: 8", "trials: 2")
    (project / "scenarios/card-short.yaml").write_text(short)
    files = '"../scenarios/retail/refund-damaged-card.yaml", "../scenarios/card-short.yaml"'
    suite = TWO.format(files=files, gate="pass^3 >= 0.5").replace("trials: 4\n", "")
    (project / "suites/two.yaml").write_text(suite)
    code, text = cli(capsys, "run", "--suite", "suites/two.yaml", "--run-id", "two", "--no-progress")
    assert code == 0, text  # card-short plays 2 trials by its own file: pass^3 is not its figure
    assert "undefined in" not in text, text
    assert simlab.load_run("two", project=project).gate("suites/two.yaml").exit_code == 0


# -- a suite that adds graders, gating a run graded without them ---------------------------------

LEAKY = '''
from examples.retail_agents import careful_agent
from simlab import AgentReply


def agent(inp):
    """The careful agent, which also writes the customer's e-mail address into every reply."""
    reply = careful_agent(inp)
    return AgentReply(reply.text + " (your email dana@example.com is on file)", transfer=reply.transfer)


agent.uses_models = False
'''

PII = """\
id: pii
scenarios: ["../scenarios/retail/refund-damaged-card.yaml"]
agent: python:leaky:agent
simulator: rules
trials: 2
allow_unjudged: [rubric]
graders:
  - use: examples.graders:no_pii
    params: {fields: [email]}
gates:
  - "pass^1 >= 0.5"
"""


def test_a_gate_on_a_run_graded_without_the_suites_graders_is_inconclusive(project, capsys):
    (project / "leaky.py").write_text(LEAKY)
    (project / "suites/pii.yaml").write_text(PII)
    code, text = cli(capsys, "run", "--suite", "suites/pii.yaml", "--run-id", "suite", "--no-progress")
    assert code == 1 and "no_pii" in text, text  # the suite's own grader fails the leaking agent
    plain = ["scenarios/retail/refund-damaged-card.yaml", "--agent", "python:leaky:agent", "--trials", "2"]
    assert main(["run", *plain, "--run-id", "plain", "--no-progress"]) == 0
    code, text = cli(capsys, "gate", "plain", "--suite", "suites/pii.yaml")
    assert code == 3, text  # its checks never included no_pii: the figures cannot stand for the suite
    assert "graders" in text and "examples.graders:no_pii" in text, text
    assert simlab.load_run("plain", project=project).gate("suites/pii.yaml").exit_code == 3
    assert cli(capsys, "gate", "suite", "--suite", "suites/pii.yaml")[0] == 1


# -- trials that were never graded ---------------------------------------------------------------


def _ungrade_every_other_trial(folder: Path) -> None:
    """Half the trials lose their checks and verdict, as a run stored before it was graded keeps
    them; written by simlab's own encoder, the heads index dropped (it is derived)."""
    import json

    from simlab.runner.lines import encode_record
    from simlab.transcript import TrialRecord

    path = folder / "trials.jsonl"
    lines = []
    for n, line in enumerate(path.read_text().splitlines()):
        record = TrialRecord.model_validate(json.loads(line))
        if n % 2 == 0:
            record.checks, record.verdict = [], None
        lines.append(encode_record(record).decode("utf-8"))
    path.write_text("".join(lines))
    (folder / "heads.jsonl").unlink(missing_ok=True)


def test_a_gate_on_a_run_with_ungraded_trials_is_inconclusive(project, capsys):
    text = (project / NIGHTLY).read_text()
    gates = 'gates:\n  - {gate: "pass^1 >= 0.5", scope: each}\n  - "policy_violations == 0"\n'
    (project / NIGHTLY).write_text(text[: text.index("gates:")] + gates)
    assert main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress"]) == 0
    assert main(["run", "--suite", NIGHTLY, "--run-id", "base", "--no-progress"]) == 0
    _ungrade_every_other_trial(project / "transcripts/n")
    code, text = cli(capsys, "gate", "n", "--suite", NIGHTLY)
    assert code == 3 and "20 of 40 trials are not graded" in text, text
    assert "grade them first (simlab grade n)" in text and "grade-traces" not in text, text  # its origin's
    code, text = cli(capsys, "compare", "base", "n", "--fail-on-regression")
    assert code == 3 and "not graded" in text, text
    assert main(["grade", "n"]) == 0  # graded again: the gate decides
    assert cli(capsys, "gate", "n", "--suite", NIGHTLY)[0] == 0


# -- JUnit says what the exit code says ----------------------------------------------------------


def test_junit_of_a_gate_inconclusive_per_scenario_is_not_all_green(project, capsys):
    import xml.etree.ElementTree as ET

    text = (project / NIGHTLY).read_text()
    (project / NIGHTLY).write_text(text[: text.index("gates:")] + 'gates:\n  - {gate: "pass^5 >= 0.5", scope: each}\n')
    code = main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress", "--junit", "n.xml"])
    assert code == 3  # 4 trials a scenario: pass^5 is undefined in every one
    suite = ET.parse(project / "n.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("errors") or 0) == 10, ET.tostring(suite)[:400]
    case = suite.find("testcase[@name='refund-damaged-card']")
    assert case is not None
    error = case.find("error")
    assert error is not None and "n < k" in (error.get("message") or ""), ET.tostring(case)[:400]


DOWN_FOR_ONE = '''
import httpx

from examples.retail_agents import careful_agent


def agent(inp):
    """The careful agent, whose provider is down for every trial of one scenario (the user who asks
    how many days they have)."""
    if "how many days" in inp.messages[0]["content"]:
        raise httpx.RemoteProtocolError("server disconnected")
    return careful_agent(inp)


agent.uses_models = False
'''


def test_a_regression_check_with_a_scenario_compared_against_nothing_is_inconclusive(project, capsys):
    (project / "down_for_one.py").write_text(DOWN_FOR_ONE)
    assert main(["run", "--suite", NIGHTLY, "--run-id", "base", "--no-progress"]) == 0
    down = ["--agent", "python:down_for_one:agent"]
    main(["run", "--suite", NIGHTLY, "--run-id", "cand", "--no-progress", *down])
    code, text = cli(capsys, "compare", "base", "cand")
    assert code == 0 and "no data" in text, text  # compared, and the row says so
    code, text = cli(capsys, "compare", "base", "cand", "--fail-on-regression")
    assert code == 3 and "policy-question-no-refund" in text, text  # 4 of 40 errors: within a run's budget
    code, text = cli(capsys, "gate", "cand", "--suite", _noreg_suite(project, "base"))
    assert code == 3 and "INCONCLUSIVE no regression vs base" in text and "not compared" in text, text


# -- a gate reads the run; it does not rewrite the run's figures -----------------------------------


def test_a_gate_with_its_own_allow_unjudged_leaves_the_runs_figures_as_the_report_gives_them(project, capsys):
    text = (project / NIGHTLY).read_text().replace("allow_unjudged: [rubric]\n", "")
    (project / "suites/strict.yaml").write_text(text.replace("id: retail-nightly", "id: strict"))
    assert main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress"]) == 0
    assert main(["report", "n"]) == 0
    summary = project / "transcripts/n/summary.json"
    before = summary.read_bytes()
    capsys.readouterr()
    assert main(["runs"]) == 0
    listed = capsys.readouterr().out
    code, out = cli(capsys, "gate", "n", "--suite", "suites/strict.yaml")
    assert code == 3 and "unjudged" in out, out  # the strict suite does not count them as passes
    assert summary.read_bytes() == before  # the run's own figures (its allow_unjudged), as report wrote them
    assert main(["runs"]) == 0
    assert capsys.readouterr().out == listed


def test_a_no_regression_gate_reads_its_baseline_as_the_suite_reads_the_run(project, capsys):
    """The suite's allow_unjudged applies to both sides: a baseline played where simlab.yaml did not
    allow the demo's unjudged rubric items is compared as the suite counts them, not refused."""
    config = project / "simlab.yaml"
    config.write_text(config.read_text().replace("allow_unjudged: [rubric]", ""))
    plain = ["scenarios/retail", "--agent", "python:examples.retail_agents:careful_agent", "--trials", "4"]
    main(["run", *plain, "--run-id", "base", "--no-progress"])
    assert main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress"]) == 0
    code, text = cli(capsys, "gate", "n", "--suite", _noreg_suite(project, "base"))
    assert code == 0 and "PASS no regression vs base" in text, text
    assert simlab.load_run("n", project=project).gate("suites/noreg.yaml").exit_code == 0


# -- a run played with another simulated user or judge than the suite names -----------------------


def test_a_gate_on_a_run_with_another_simulator_than_the_suites_is_inconclusive(project, capsys):
    run = ["run", "--suite", NIGHTLY, "--no-progress"]
    assert main([*run, "--run-id", "own"]) == 0
    assert main([*run, "--run-id", "same", "--simulator", "rules", "--allow-same-family"]) == 0
    assert main([*run, "--run-id", "replayed", "--replay", "own"]) == 3  # run --suite gates it too
    code, text = cli(capsys, "gate", "own", "--suite", NIGHTLY)
    assert code == 0, text
    code, text = cli(capsys, "gate", "same", "--suite", NIGHTLY)
    assert code == 0, text  # the suite's own simulator named again: the same test
    code, text = cli(capsys, "gate", "replayed", "--suite", NIGHTLY)
    assert code == 3, text  # a recorded user, not the suite's rules: another test
    assert "the run's simulator is not the one suite 'retail-nightly' names" in text, text
    assert "(the suite: rules; the run: replay)" in text, text
    assert simlab.load_run("replayed", project=project).gate(NIGHTLY).exit_code == 3


def test_a_gate_on_a_run_without_the_suites_judge_is_inconclusive(project, capsys):
    # the run is played from the suite without a judge (no model is reached); the gate holds it to
    # the same suite naming a judge: its rubrics were never judged by the suite's judge
    (project / "suites/judged.yaml").write_text((project / NIGHTLY).read_text() + "judge: openai/judge-a\n")
    assert main(["run", "--suite", NIGHTLY, "--no-progress", "--run-id", "unjudged"]) == 0
    code, text = cli(capsys, "gate", "unjudged", "--suite", "suites/judged.yaml")
    assert code == 3, text
    assert "the run's judge is not the one suite 'retail-nightly' names" in text, text
    assert "(the suite: openai/judge-a; the run: none)" in text, text
    assert cli(capsys, "gate", "unjudged", "--suite", NIGHTLY)[0] == 0
