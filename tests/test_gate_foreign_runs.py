"""Where a gate meets a run that is not the suite's, or a comparison meets a run over its own error
budget: ``simlab gate``, ``compare --fail-on-regression``, ``simlab report`` and ``simlab.Run.gate``
give one verdict and one exit code (3 when the run cannot stand for what is judged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import simlab
from simlab.cli.main import main
from simlab.runner.store import encode_record
from tests.sample_runs import _errored, sample_manifest, sample_record


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, " ".join((out + err).split())


def write_run(project: Path, run_id: str, errors: int, *, budget: float | None, trials: int = 12) -> Path:
    """A run of ``trials`` trials of scenario ``s`` (every third fails), the first ``errors`` of them
    infrastructure errors, whose run.json keeps ``budget`` as its ``max_error_rate``."""
    folder = project / "transcripts" / run_id
    folder.mkdir(parents=True)
    manifest = sample_manifest(run_id, {"s": trials})
    if budget is not None:
        manifest["max_error_rate"] = budget
    records = [sample_record(run_id, "s", trial) for trial in range(1, trials + 1)]
    records[:errors] = [_errored(record) for record in records[:errors]]
    (folder / "run.json").write_text(json.dumps(manifest))
    (folder / "trials.jsonl").write_bytes(b"".join(encode_record(r) for r in records))
    return folder


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "simlab.yaml").write_text("transcripts: transcripts\n")
    return tmp_path


@pytest.mark.parametrize(("errors", "budget", "code"), [(1, 0.05, 3), (2, 0.5, 0)])
def test_a_comparison_holds_each_run_to_its_own_error_budget_as_its_report_does(
    project, capsys, errors, budget, code
):
    """1 error in 12 trials (8.3 %) is over a budget of 5 % (the run's own, kept in run.json) and
    within the default 10 %; 2 in 12 (16.7 %) the other way round under a budget of 50 %. The
    report and the regression check judge the run by its own budget, not by the default."""
    write_run(project, "base", 0, budget=budget)
    write_run(project, "cand", errors, budget=budget)
    assert cli(capsys, "report", "cand")[0] == code
    result, text = cli(capsys, "compare", "base", "cand", "--fail-on-regression")
    assert result == code, text
    assert ("infrastructure errors" in text) == (code == 3), text
    result, text = cli(capsys, "compare", "cand", "base", "--fail-on-regression")
    assert result == code, text


@pytest.mark.parametrize(("errors", "budget", "code"), [(1, 0.05, 3), (2, 0.5, 0)])
def test_a_no_regression_gate_holds_its_baseline_to_the_baselines_own_error_budget(
    project, capsys, errors, budget, code
):
    write_run(project, "base", errors, budget=budget)
    write_run(project, "cand", 0, budget=budget)
    (project / "noreg.yaml").write_text(
        "id: noreg\nscenarios: []\nmax_error_rate: 0.5\ngates:\n  - {no_regression_vs: base}\n"
    )
    result, text = cli(capsys, "gate", "cand", "--suite", "noreg.yaml")
    assert result == code, text
    assert simlab.load_run("cand", project=project).gate("noreg.yaml").exit_code == code


# -- an imported run is redone from its origin, never with --run-id -------------------------------


def _conversations(project: Path, count: int = 4) -> None:
    """OpenAI-style message lists, one a line (the format ``simlab import openai`` reads)."""
    lines = [
        {
            "id": f"conv-{i}",
            "messages": [
                {"role": "user", "content": f"where is my order A{i}?"},
                {"role": "assistant", "content": f"order A{i} shipped yesterday"},
            ],
        }
        for i in range(count)
    ]
    (project / "c.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _advice(text: str, command: str) -> list[str]:
    """The command the text advises, its NEW name made ``run``."""
    start = text.index(command)
    return text[start:].split(": ")[0].rstrip(".").replace("NEW", "again").split()[1:]


def test_an_imported_run_over_its_error_budget_is_graded_again_not_re_run_with_run_id(project, capsys):
    from simlab.llm.fakes import register_fake, unregister_fake

    _conversations(project)
    assert cli(capsys, "import", "openai", "c.jsonl", "--run-id", "prod")[0] == 0
    (project / "online.yaml").write_text(
        "expect:\n  rubric:\n    - {id: polite, text: Is polite, hard: true}\n"
    )
    answers = {"text": "not json"}  # the judge's answers cannot be read: every trial is an error
    model = register_fake("imported-judge", lambda messages, tools=None, **_: answers["text"])
    try:
        assert (
            cli(capsys, "grade-traces", "prod", "--rules", "online.yaml", "--judge", model, "--out", "g")[0]
            == 0
        )
        code, text = cli(capsys, "report", "g")
        assert code == 3 and "infrastructure errors in 4 of 4 trials" in text, text
        assert "--run-id g" not in text, text  # no --run-id plays an imported trace again
        advised = _advice(text, "simlab grade-traces prod")
        answers["text"] = json.dumps({"verdict": "yes", "reason": "polite"})  # the cause fixed
        assert cli(capsys, *advised)[0] == 0  # the advice is a command that works
    finally:
        unregister_fake("imported-judge")
    assert cli(capsys, "report", "again")[0] == 0


def test_an_imported_run_cut_short_is_imported_again_not_resumed(project, capsys):
    _conversations(project)
    assert cli(capsys, "import", "openai", "c.jsonl", "--run-id", "prod")[0] == 0
    trials = project / "transcripts/prod/trials.jsonl"
    trials.write_text("".join(trials.read_text().splitlines(keepends=True)[:-1]))
    code, text = cli(capsys, "report", "prod")
    assert code == 3 and "incomplete: 3 of 4 planned trials" in text, text
    assert "--run-id prod" not in text and "no trial" not in text, text  # 3 imported trials are there
    advised = _advice(text, "simlab import openai")
    assert cli(capsys, *advised)[0] == 0
    assert cli(capsys, "report", "again")[0] == 0


# -- a part of a suite, not accepted by name ------------------------------------------------------

NIGHTLY = "suites/nightly.yaml"


@pytest.mark.parametrize(
    "part",
    [
        ["--trials", "2"],
        ["scenarios/retail/refund-damaged-card.yaml", "scenarios/retail/store-credit-refused.yaml"],
    ],
)
def test_a_regression_check_on_a_part_of_a_suite_not_accepted_is_inconclusive_as_its_report_is(
    pinned_demo_project, capsys, part
):
    """A run of a part of its suite (fewer trials, fewer scenarios) without --partial-ok: its report
    is inconclusive (exit 3), and so is a regression check that holds it as either run; accepted
    by name, both decide."""
    assert main(["run", "--suite", NIGHTLY, "--run-id", "base", "--no-progress"]) == 0
    assert main(["run", "--suite", NIGHTLY, "--run-id", "part", "--no-progress", *part]) == 3
    assert cli(capsys, "report", "part")[0] == 3
    code, text = cli(capsys, "compare", "base", "part", "--fail-on-regression")
    assert code == 3 and "the candidate run: partial:" in text and "--partial-ok" in text, text
    code, text = cli(capsys, "compare", "part", "base", "--fail-on-regression")
    assert code == 3 and "the base run: partial:" in text, text
    main(["run", "--suite", NIGHTLY, "--run-id", "ok", "--no-progress", "--partial-ok", *part])  # its gates'
    assert cli(capsys, "report", "ok")[0] == 0
    code, text = cli(capsys, "compare", "base", "ok", "--fail-on-regression")
    assert code == 0, text
    if part[0].startswith("scenarios/"):  # what it did not play is said, never left out unsaid
        assert "8 of the base run's 10 scenarios were not compared" in text and "accepted" in text, text


# -- a resumed run ------------------------------------------------------------------------------

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


def test_a_resumed_run_is_held_to_the_error_budget_of_the_command_that_resumed_it(
    pinned_demo_project, capsys
):
    """The error budget is a reporting setting, as allow_unjudged is: the latest command's. A run
    played under a budget of 50 % and resumed under the default 10 % is over it (25 % of its trials
    errors, played again and failing again): the resume, its report and a comparison all say so."""
    project = pinned_demo_project
    (project / "agents_down.py").write_text(DOWN)
    config = project / "simlab.yaml"
    default = config.read_text()
    play = [
        "run",
        "--run-id",
        "r",
        "--no-progress",
        "--agent",
        "python:agents_down:agent",
        "--trials",
        "4",
        "scenarios/retail/refund-damaged-card.yaml",
        "scenarios/retail/store-credit-refused.yaml",
    ]
    config.write_text(default + "\nmax_error_rate: 0.5\n")
    assert cli(capsys, *play)[0] == 0
    assert cli(capsys, "report", "r")[0] == 0
    config.write_text(default)
    code, text = cli(capsys, *play)
    assert code == 3 and "infrastructure errors in 2 of 8 trials (25.0% > budget 10.0%)" in text, text
    code, text = cli(capsys, "report", "r")
    assert code == 3 and "(25.0% > budget 10.0%)" in text, text
    assert main(["run", "--run-id", "b", "--no-progress", "--trials", "4", *play[-2:]]) == 0
    code, text = cli(capsys, "compare", "b", "r", "--fail-on-regression", "--allow-different-pins")
    assert code == 3 and "infrastructure errors" in text, text


# -- a run judged again by another judge --------------------------------------------------------


def test_a_run_judged_again_by_another_judge_is_not_the_suites_nor_comparable_with_its_runs(
    pinned_demo_project, capsys
):
    """``simlab grade --rejudge --judge OTHER`` replaces every judge check with OTHER's: run.json
    says so (``pins.judge``), so a gate of a suite that names the first judge is inconclusive and a
    comparison with a run of the first judge refuses, as for a run played with ``--judge OTHER``."""
    from simlab.llm.fakes import register_fake, unregister_fake

    project = pinned_demo_project
    strict = register_fake(
        "strict-judge", lambda messages, tools=None, **_: '{"verdict": "no", "reason": "rude"}'
    )
    lenient = register_fake(
        "lenient-judge", lambda messages, tools=None, **_: '{"verdict": "yes", "reason": "ok"}'
    )
    text = (project / NIGHTLY).read_text().replace("allow_unjudged: [rubric]", f"judge: {strict}")
    (project / "suites/judged.yaml").write_text(
        text[: text.index("gates:")] + 'gates:\n  - "success >= 0.9"\n'
    )
    suite = "suites/judged.yaml"
    try:
        assert (
            main(["run", "--suite", suite, "--run-id", "r", "--no-progress"]) == 1
        )  # the strict judge fails it
        assert main(["run", "--suite", suite, "--run-id", "other", "--no-progress"]) == 1
        assert cli(capsys, "grade", "r", "--rejudge", "--judge", lenient)[0] == 0
        code, text = cli(capsys, "gate", "r", "--suite", suite)
        assert code == 3 and "the run's judge is not the one suite" in text, text
        assert simlab.load_run("r", project=project).gate(suite).exit_code == 3
        code, text = cli(capsys, "compare", "other", "r", "--fail-on-regression")
        assert code == 2 and "judge:" in text, text
        assert cli(capsys, "grade", "r", "--rejudge", "--judge", strict)[0] == 0  # the suite's judge again
        assert cli(capsys, "gate", "r", "--suite", suite)[0] == 1
    finally:
        unregister_fake("strict-judge")
        unregister_fake("lenient-judge")


# -- a run re-graded with another version of its scenario files ---------------------------------


def test_a_run_re_graded_with_another_version_of_its_scenarios_is_not_the_suites_nor_comparable(
    pinned_demo_project, capsys
):
    """``simlab grade`` grades with the scenario files as they are: a run re-graded while they
    said something else (here: lookup_order forbidden), then put back, holds the verdicts of the
    other version. run.json says which version graded it, so the gate is inconclusive (it said
    FAIL, exit 1, on an agent that did everything the suite asks) and a comparison with a run
    graded with the suite's files refuses (it said 'regressed beyond noise', exit 1, with 0 of 40
    trials differing)."""
    project = pinned_demo_project
    assert main(["run", "--suite", NIGHTLY, "--run-id", "base", "--no-progress"]) == 0
    assert main(["run", "--suite", NIGHTLY, "--run-id", "n", "--no-progress"]) == 0
    files = sorted((project / "scenarios/retail").glob("*.yaml"))
    kept = {path: path.read_text() for path in files}
    for path, text in kept.items():
        path.write_text(text.replace("  forbidden:\n", "  forbidden:\n    - lookup_order\n", 1))
    assert cli(capsys, "grade", "n")[0] == 0
    for path, text in kept.items():
        path.write_text(text)  # the suite's files are the ones the run played again
    code, text = cli(capsys, "gate", "n", "--suite", NIGHTLY)
    assert code == 3 and "graded with" in text, text
    assert simlab.load_run("n", project=project).gate(NIGHTLY).exit_code == 3
    code, text = cli(capsys, "compare", "base", "n", "--fail-on-regression")
    assert code == 2 and "graded with another version" in text, text
    assert cli(capsys, "grade", "n")[0] == 0  # graded again with the files it played: the suite's run again
    assert cli(capsys, "gate", "n", "--suite", NIGHTLY)[0] == 0
    assert cli(capsys, "compare", "base", "n", "--fail-on-regression")[0] == 0


def test_an_error_budget_that_is_no_share_is_a_clear_error_naming_the_file(project, capsys):
    folder = write_run(project, "odd", 1, budget=None)
    manifest = json.loads((folder / "run.json").read_text())
    manifest["max_error_rate"] = "lots"
    (folder / "run.json").write_text(json.dumps(manifest))
    write_run(project, "base", 0, budget=None)
    for argv in (["report", "odd"], ["compare", "base", "odd", "--fail-on-regression"]):
        code, text = cli(capsys, *argv)
        assert code == 3 and "odd/run.json: max_error_rate: 'lots' is not a share from 0 to 1" in text, text
        assert "Traceback" not in text


# -- a suite that names no simulator: the project's is the suite's ------------------------------


def test_a_run_with_another_simulator_than_the_project_gives_a_suite_that_names_none_is_not_its_run(
    pinned_demo_project, capsys
):
    """A suite that names no simulator is played with the project's (simlab.yaml: rules). A run
    played over it with --simulator scripted is another test, as compare says (exit 2): its gate
    is inconclusive (it said FAIL, exit 1, on the scripted users' verdicts), on every surface."""
    project = pinned_demo_project
    text = (
        (project / NIGHTLY).read_text().replace("simulator: rules\n", "").replace("retail-nightly", "nosim")
    )
    (project / "suites/nosim.yaml").write_text(text)
    suite = "suites/nosim.yaml"
    assert main(["run", "--suite", suite, "--run-id", "own", "--no-progress"]) == 0
    assert (
        main(["run", "--suite", suite, "--run-id", "other", "--no-progress", "--simulator", "scripted"]) != 0
    )
    assert cli(capsys, "compare", "own", "other", "--fail-on-regression")[0] == 2
    code, text = cli(capsys, "gate", "other", "--suite", suite)
    assert code == 3 and "the run's simulator is not the one suite 'nosim' names" in text, text
    assert simlab.load_run("other", project=project).gate(suite).exit_code == 3
    assert cli(capsys, "gate", "own", "--suite", suite)[0] == 0
    assert simlab.load_run("own", project=project).gate(suite).exit_code == 0


# -- a merged run is finished through its shards, never with --run-id ---------------------------


def test_a_merged_run_missing_a_shard_is_finished_through_its_shards_not_with_run_id(
    pinned_demo_project, capsys
):
    shard = ["run", "--suite", NIGHTLY, "--no-progress", "--shard"]
    assert main([*shard, "1/2", "--run-id", "sh1"]) == 0
    assert main(["merge", "m", "sh1"]) == 0
    code, text = cli(capsys, "report", "m")
    assert code == 3 and "incomplete: 20 of 40 planned trials" in text, text
    assert "--run-id m" not in text, text  # simlab merge has no --run-id, and m exists
    assert "--shard" in text and "simlab merge NEW sh1" in text, text
    code, text = cli(capsys, "gate", "m", "--suite", NIGHTLY)
    assert code == 3, text
    assert main([*shard, "2/2", "--run-id", "sh2"]) == 0  # the missing shard played
    assert cli(capsys, "merge", "whole", "sh1", "sh2")[0] == 0
    assert cli(capsys, "report", "whole")[0] == 0


def test_a_merged_run_over_its_error_budget_resumes_its_shards_not_itself(pinned_demo_project, capsys):
    (pinned_demo_project / "agents_down.py").write_text(DOWN)
    play = [
        "run",
        "--no-progress",
        "--agent",
        "python:agents_down:agent",
        "--trials",
        "4",
        "scenarios/retail/refund-damaged-card.yaml",
        "scenarios/retail/store-credit-refused.yaml",
    ]
    assert main([*play, "--shard", "1/2", "--run-id", "d1"]) in (0, 3)
    assert main([*play, "--shard", "2/2", "--run-id", "d2"]) in (0, 3)
    assert main(["merge", "dm", "d1", "d2"]) == 0
    code, text = cli(capsys, "report", "dm")
    assert code == 3 and "infrastructure errors in 2 of 8 trials" in text, text
    assert "--run-id dm" not in text and "simlab merge NEW d1 d2" in text and "--shard" in text, text


# -- a suite's error budget and the run's own ----------------------------------------------------


def test_a_gate_never_decides_a_run_its_own_report_calls_no_result(pinned_demo_project, capsys):
    """simlab.yaml sets an error budget of 1 % and the suite names none: the run is played under
    1 % (run.json), its report is inconclusive with 1 error in 40 trials, and so is its gate (it
    held the run to the suite default of 5 % and said 'all gates held', exit 0)."""
    project = pinned_demo_project
    (project / "agents_rare.py").write_text(DOWN.replace("inp.seed % 4 == 0", "inp.seed % 20 == 0"))
    config = project / "simlab.yaml"
    config.write_text(config.read_text() + "\nmax_error_rate: 0.01\n")
    text = (
        (project / NIGHTLY).read_text().replace("max_error_rate: 0.05\n", "").replace("retail-nightly", "nb")
    )
    (project / "suites/nb.yaml").write_text(
        text[: text.index("gates:")] + 'gates:\n  - "policy_violations == 0"\n'
    )
    suite = "suites/nb.yaml"
    run = [
        "run",
        "--suite",
        suite,
        "--run-id",
        "rare",
        "--no-progress",
        "--agent",
        "python:agents_rare:agent",
    ]
    code, text = cli(capsys, *run)
    assert code == 3 and "infrastructure errors in 1 of 40 trials (2.5% > budget 1.0%)" in text, text
    assert cli(capsys, "report", "rare")[0] == 3
    assert cli(capsys, "gate", "rare", "--suite", suite)[0] == 3
    assert simlab.load_run("rare", project=project).gate(suite).exit_code == 3
