"""A gate passes only on the suite's own run (issue 24): trials of another run, a part of the suite,
code that changed under one run id, a merge killed half way, and one exit rule for every gate."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]
NIGHTLY = "suites/nightly.yaml"
FLAKY = "python:examples.retail_agents:flaky_agent"
POLICY = "scenarios/retail/policy-question-no-refund.yaml"


@pytest.fixture
def project(pinned_demo_project: Path) -> Path:
    return pinned_demo_project


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, " ".join((out + err).split())


def nightly(run_id: str, *extra: str) -> int:
    return main(["run", "--suite", NIGHTLY, "--run-id", run_id, "--no-progress", *extra])


# -- trials from another run ------------------------------------------------------------------


def test_a_gate_on_another_runs_trials_is_inconclusive_naming_file_line_and_field(project, capsys):
    assert nightly("base") == 0
    assert nightly("flaky", "--agent", FLAKY) == 1
    folder = project / "transcripts" / "x"
    folder.mkdir()
    shutil.copy(project / "transcripts/flaky/run.json", folder)
    shutil.copy(project / "transcripts/base/trials.jsonl", folder)
    code, text = cli(capsys, "gate", "x", "--suite", NIGHTLY)
    assert code == 3, text
    assert "transcripts/x/trials.jsonl:1:" in text and "field run_id is 'base'" in text and "run 'flaky'" in text
    for command in (["report", "x"], ["compare", "base", "x"], ["merge", "x2", "x"]):
        code, text = cli(capsys, *command)
        assert code == 3 and "field run_id is 'base'" in text, (command, text)


def test_another_agent_under_the_same_run_id_is_refused(project, capsys):
    assert nightly("base") == 0
    assert nightly("flaky", "--agent", FLAKY) == 1
    text = (project / "transcripts/base/trials.jsonl").read_text()
    (project / "transcripts/flaky/trials.jsonl").write_text(text.replace('"run_id":"base"', '"run_id":"flaky"'))
    (project / "transcripts/flaky/heads.jsonl").unlink()
    code, text = cli(capsys, "gate", "flaky", "--suite", NIGHTLY)
    assert code == 3 and "field agent is 'examples.retail_agents:careful_agent'" in text, text


def test_the_index_of_heads_is_checked_too(project, capsys):
    """The fast path (heads.jsonl, no transcript parsed) checks what the slow one does."""
    assert nightly("base") == 0
    assert nightly("flaky", "--agent", FLAKY) == 1
    shutil.copy(project / "transcripts/base/trials.jsonl", project / "transcripts/flaky/trials.jsonl")
    shutil.copy(project / "transcripts/base/heads.jsonl", project / "transcripts/flaky/heads.jsonl")
    code, text = cli(capsys, "report", "flaky")
    assert code == 3 and "flaky/trials.jsonl:1:" in text and "field run_id is 'base'" in text, text


def test_a_report_on_a_copied_folder_says_whose_run_it_is(project, capsys):
    assert main(["run", "--run-id", "orig", "--trials", "1", "--no-progress", POLICY]) == 0
    shutil.copytree(project / "transcripts/orig", project / "transcripts/copy")
    code, text = cli(capsys, "report", "copy")
    assert code == 0 and "the folder is named 'copy' but its run.json is run 'orig'" in text, text


def test_a_copied_folder_resumed_under_its_name_reads_as_one_run(project, capsys):
    assert main(["run", "--run-id", "orig", "--trials", "1", "--no-progress", POLICY]) == 0
    shutil.copytree(project / "transcripts/orig", project / "transcripts/copy")
    code, text = cli(capsys, "run", "--run-id", "copy", "--trials", "1", "--no-progress", POLICY)
    assert code == 0, text
    manifest = json.loads((project / "transcripts/copy/run.json").read_text())
    assert manifest["run_id"] == "orig" and manifest["run_ids"] == ["copy"]


# -- a part of the suite ----------------------------------------------------------------------


def test_a_gate_on_one_scenario_of_the_suite_is_inconclusive_naming_what_is_missing(project, capsys):
    assert main(["run", "--agent", FLAKY, "--trials", "4", "--run-id", "sub", "--no-progress", POLICY]) in (0, 1)
    code, text = cli(capsys, "gate", "sub", "--suite", NIGHTLY)
    assert code == 3, text
    assert "not the run of suite 'retail-nightly' (partial: 1 of 10 scenarios)" in text
    assert "9 of the suite's 10 scenarios were not played (already-refunded" in text


def test_a_filtered_suite_run_is_partial_and_exit_3_unless_accepted_by_name(project, capsys):
    code, text = cli(capsys, "run", "--suite", NIGHTLY, "-k", "policy", "--run-id", "kp", "--no-progress")
    assert code == 3 and "partial: 1 of 10 scenarios" in text and "--partial-ok" in text, text
    code, text = cli(capsys, "run", "--suite", NIGHTLY, "-k", "policy", "--run-id", "ok", "--no-progress",
                     "--partial-ok")
    assert code == 0 and "partial: 1 of 10 scenarios (accepted with --partial-ok" in text, text
    summary = json.loads((project / "transcripts/ok/summary.json").read_text())
    assert summary["completeness"]["partial"] == "partial: 1 of 10 scenarios"
    code, text = cli(capsys, "gate", "ok", "--suite", NIGHTLY)
    assert code == 0 and "partial: 1 of 10 scenarios" in text
    code, text = cli(capsys, "gate", "kp", "--suite", NIGHTLY)
    assert code == 3, text
    # every report says so on its first line; accepted by name it may still exit 0
    for fmt in ("terminal", "markdown", "json"):
        code, text = cli(capsys, "report", "ok", "--format", fmt)
        first = text.lstrip().splitlines()[0]
        assert code == 0 and "partial: 1 of 10 scenarios" in (first if fmt != "json" else text), (fmt, text)
    code, text = cli(capsys, "report", "kp")
    assert code == 3 and "partial: 1 of 10 scenarios, not accepted with --partial-ok" in text.splitlines()[0], text


def test_fewer_trials_than_the_suite_plans_is_not_its_run(project, capsys):
    code, text = cli(capsys, "run", "--suite", NIGHTLY, "--trials", "1", "--run-id", "one", "--no-progress")
    assert code == 3 and "fewer trials than the suite plans in 10 scenarios" in text, text


# -- code that changed under one run id -------------------------------------------------------


def test_the_manifest_pins_the_code(project):
    assert main(["run", "--run-id", "c", "--trials", "1", "--no-progress", POLICY]) == 0
    code = json.loads((project / "transcripts/c/run.json").read_text())["pins"]["code"]
    assert code["simlab"] and "git_commit" in code
    assert "examples.retail_agents" in code["files"]
    assert "simlab.domains.retail/tools.py" in code["files"] and "simlab.domains.retail/policy.md" in code["files"]


def _change_the_careful_agent(project: Path) -> None:
    with open(project / "examples/retail_agents.py", "a") as fh:
        fh.write("\ncareful_agent = flaky_agent\n")


def test_shards_played_by_other_code_do_not_merge_unless_forced_and_then_gate_inconclusive(project, capsys):
    original = (project / "examples/retail_agents.py").read_text()
    assert nightly("sh", "--shard", "1/2") == 0
    _change_the_careful_agent(project)
    assert nightly("sh", "--shard", "2/2") == 2  # the same run id: the resume refuses other code
    assert nightly("sh2", "--shard", "2/2") == 0
    (project / "examples/retail_agents.py").write_text(original)
    code, text = cli(capsys, "merge", "m", "sh", "sh2")
    assert code == 2 and "code.files.examples.retail_agents" in text and "--force" in text, text
    assert not (project / "transcripts/m").exists()
    code, text = cli(capsys, "merge", "m", "sh", "sh2", "--force")
    assert code == 0 and "mixes configurations" in text, text
    code, text = cli(capsys, "gate", "m", "--suite", NIGHTLY)
    assert code == 3 and "mixes configurations" in text, text


def test_a_resume_by_other_code_is_refused_or_forced_and_mixed(project, capsys):
    assert main(["run", "--run-id", "r", "--trials", "2", "--no-progress", POLICY]) == 0
    _change_the_careful_agent(project)
    code, text = cli(capsys, "run", "--run-id", "r", "--trials", "3", "--no-progress", POLICY)
    assert code == 2 and "code.files.examples.retail_agents" in text, text
    code, text = cli(capsys, "run", "--run-id", "r", "--trials", "3", "--no-progress", "--force", POLICY)
    assert code == 0, text
    manifest = json.loads((project / "transcripts/r/run.json").read_text())
    assert any("code.files" in d for d in manifest["resumes"][-1]["forced_over"])


# -- a merge killed half way ------------------------------------------------------------------


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_what_a_killed_merge_left_does_not_block_the_next(project, capsys):
    assert nightly("s1", "--shard", "1/2") == 0
    assert nightly("s2", "--shard", "2/2") == 0
    left = project / "transcripts" / f".m.{_dead_pid()}.0badc0de.merge"  # killed before its manifest
    left.mkdir()
    shutil.copy(project / "transcripts/s1/trials.jsonl", left)
    (project / "transcripts/m").mkdir()  # and an older simlab's lock, left before its first line
    (project / "transcripts/m/.lock").write_text("1")
    code, text = cli(capsys, "merge", "m", "s1", "s2")
    assert code == 0 and "merged 40 of 40" in text, text
    assert not left.exists() and (project / "transcripts/m/run.json").exists()
    assert [p.name for p in (project / "transcripts").iterdir() if p.name.endswith(".merge")] == []


def test_a_merge_that_fails_half_way_leaves_no_folder(project, capsys):
    assert nightly("s1", "--shard", "1/2") == 0
    assert nightly("s2", "--shard", "2/2") == 0
    with open(project / "transcripts/s2/trials.jsonl", "a") as fh:
        fh.write("garbage\n")  # the second shard fails after the first was copied
    code, text = cli(capsys, "merge", "m", "s1", "s2")
    assert code == 3 and "s2/trials.jsonl" in text
    assert not (project / "transcripts/m").exists()
    assert [p.name for p in (project / "transcripts").iterdir() if p.name.startswith(".m.")] == []


# -- one exit rule for every gate ---------------------------------------------------------------


def _cut_to_half(project: Path, run: str) -> None:
    path = project / "transcripts" / run / "trials.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]))
    (project / "transcripts" / run / "heads.jsonl").unlink()


def test_an_incomplete_run_is_exit_3_whatever_the_figures_in_every_entry_point(project, capsys):
    import simlab

    assert nightly("bad", "--agent", FLAKY) == 1  # complete: a gate failed
    _cut_to_half(project, "bad")
    code, text = cli(capsys, "gate", "bad", "--suite", NIGHTLY)
    assert code == 3 and "FAIL" in text and "incomplete: 20 of 40" in text, text
    assert simlab.load_run("bad").gate(NIGHTLY).exit_code == 3
    assert nightly("good") == 0
    code, text = cli(capsys, "compare", "good", "bad", "--fail-on-regression")
    assert code == 3 and "incomplete" in text, text


@pytest.mark.parametrize(("run", "text", "shortfall"), [
    ({"a": 4, "b": 4}, None, []),
    ({"a": 4}, "partial: 1 of 2 scenarios", ["1 of the suite's 2 scenarios were not played (b)"]),
    ({"a": 1, "b": 1}, "partial: 2 of 8 trials the suite plans",
     ["fewer trials than the suite plans in 2 scenarios (a 1 of 4, b 1 of 4)"]),
    ({"a": 8, "b": 4}, "not the suite's plan: other scenarios or trial counts",
     ["other trial counts than the suite plans in 1 scenarios (a 8 of 4)"]),
    ({"a": 4, "b": 4, "c": 1}, "not the suite's plan: other scenarios or trial counts",
     ["1 scenarios played are not the suite's (c)"]),
])
def test_how_a_run_falls_short_of_its_suite(run, text, shortfall):
    from simlab.runner.suite_plan import partial_text, plan_shortfall

    assert partial_text(run, {"a": 4, "b": 4}) == text
    assert plan_shortfall(run, {"a": 4, "b": 4}) == shortfall


def test_a_gate_forced_over_other_pins_is_inconclusive_in_compare_too(project, capsys):
    assert main(["run", "--run-id", "a", "--trials", "2", "--no-progress", POLICY]) == 0
    assert main(["run", "--run-id", "b", "--trials", "1", "--no-progress", POLICY]) == 0
    assert main(["run", "--run-id", "b", "--trials", "2", "--seed", "5", "--force", "--no-progress", POLICY]) == 0
    code, text = cli(capsys, "compare", "a", "b", "--fail-on-regression", "--allow-different-pins")
    assert code == 3 and "mixes configurations" in text, text


def test_one_scenarios_gates_follow_the_one_rule(project):
    """The gates of one scenario (what the pytest plugin checks, simlab.testing) are inconclusive on
    a run that cannot stand for its plan, whatever failed; failed on a complete run where one failed."""
    import simlab
    from simlab.testing import scenario_result

    assert main(["run", "--run-id", "s", "--agent", FLAKY, "--trials", "4", "--no-progress", POLICY]) in (0, 1)
    run = simlab.load_run("s")
    sid = next(iter(run.summary.scenarios))
    outcome = {gate: scenario_result(run, sid, [gate]) for gate in ("pass^1 >= 0", "success <= 0", "pass^9 >= 0.5")}
    assert outcome["pass^1 >= 0"].passed
    assert not outcome["success <= 0"].passed and not outcome["success <= 0"].inconclusive
    assert outcome["pass^9 >= 0.5"].inconclusive  # n < k
    _cut_to_half(project, "s")
    cut = scenario_result(simlab.load_run("s"), sid, ["success <= 0"])
    assert cut.inconclusive and "incomplete: 2 of 4" in cut.message()
