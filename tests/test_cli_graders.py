"""A user's grader through the CLI: named by a scenario or a suite, checked by ``simlab validate``,
run by ``simlab run``, counted in the verdict and the report, and re-run by ``simlab grade``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.cli.main import main
from tests.support import write_project

GRADER = '''
import asyncio

from simlab.graders.registry import Check, GradeContext, grader
from simlab.transcript import AgentMessage


@grader("banned_words")
def banned_words(words: list[str]):
    """Fails when the agent says one of ``words`` (any case)."""
    def grade(ctx: GradeContext) -> Check:
        said = " ".join(e.text for e in ctx.transcript.events if isinstance(e, AgentMessage)).lower()
        found = [w for w in words if w.lower() in said]
        return Check(name="banned_words", kind="custom", status="fail" if found else "pass",
                     reason=f"the agent said {', '.join(found)}" if found else "no banned word")
    return grade


@grader("my_judge", judge=True)
def my_judge():
    async def grade(ctx):
        if ctx.judge is None:
            return Check(name="my_judge", kind="custom", status="not_run", reason="no judge model configured")
        reply = await ctx.judge.chat([{"role": "user", "content": "polite?"}])
        return Check(name="my_judge", kind="custom", status="pass" if "yes" in (reply.text or "") else "fail")
    return grade


@grader("awaits")
def awaits():
    async def grade(ctx):
        await asyncio.sleep(0)  # it really waits: grading happens in the trial's slot
        return Check(name="awaited", kind="custom", status="pass", reason="awaited once")
    return grade


def undecorated(ctx):
    return []
'''


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def name_graders(scenario: Path, block: str) -> None:
    scenario.write_text(scenario.read_text() + "expect:\n  graders:\n" + block)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_project(tmp_path, scenarios=2, trials=3)  # kv_agent answers "Done, k0 is stored."
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "words.py").write_text(GRADER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_grader_named_by_a_scenario_changes_the_verdict_and_shows_in_the_report(project: Path, capsys) -> None:
    name_graders(project / "scenarios/s0.yaml",
                 "    - use: checks/words.py:banned_words\n      params: {words: [Done]}\n")
    assert main(["validate"]) == 0
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    trials = records(project / "transcripts/r/trials.jsonl")
    verdicts = {r["unit_id"]: r["verdict"] for r in trials}
    assert {v for u, v in verdicts.items() if u.startswith("kv-0#")} == {"fail"}
    assert {v for u, v in verdicts.items() if u.startswith("kv-1#")} == {"pass"}
    mine = [c for r in trials for c in r["checks"] if c["name"] == "banned_words"]
    assert len(mine) == 3 and all(c["grader"] == "banned_words" and c["grader_params"] == {"words": ["Done"]}
                                  and c["status"] == "fail" and c["kind"] == "custom" for c in mine)
    assert all(c["grader"] for r in trials for c in r["checks"])  # every check says who made it
    capsys.readouterr()

    assert main(["report", "r", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["top_failing_checks"][0] == {"name": "banned_words", "kind": "custom", "failures": 3,
                                                 "in_error_trials": 0}
    assert summary["scenarios"]["kv-0"]["passes"] == 0
    assert main(["report", "r"]) == 0
    shown = capsys.readouterr().out
    assert "checks that fail most" in shown and "banned_words" in shown

    # the scenario's parameters change: a re-grade runs the grader again with the new ones
    scenario = project / "scenarios/s0.yaml"
    scenario.write_text(scenario.read_text().replace("words: [Done]", "words: [sorry]"))
    assert main(["grade", "r"]) == 0
    assert "fail → pass: 3" in capsys.readouterr().err
    regraded = records(project / "transcripts/r/trials.jsonl")
    assert {r["verdict"] for r in regraded} == {"pass"}
    assert {json.dumps(c["grader_params"]) for r in regraded for c in r["checks"] if c["grader"] == "banned_words"} \
        == {'{"words": ["sorry"]}'}


def test_an_async_grader_that_waits_grades_every_trial_of_a_run(project: Path) -> None:
    name_graders(project / "scenarios/s0.yaml", "    - checks/words.py:awaits\n")
    assert main(["run", "--run-id", "w", "--no-progress"]) == 0
    trials = records(project / "transcripts/w/trials.jsonl")
    awaited = [c for r in trials for c in r["checks"] if c["grader"] == "awaits"]
    assert len(trials) == 6 and len(awaited) == 3 and {c["status"] for c in awaited} == {"pass"}


def test_a_suites_graders_run_on_every_scenario_and_are_pinned_for_a_re_grade(project: Path, capsys) -> None:
    (project / "suites").mkdir()
    (project / "suites/words.yaml").write_text(
        "id: words\nscenarios: ['../scenarios/*.yaml']\n"
        "graders:\n  - {use: checks/words.py:banned_words, params: {words: [stored]}}\n")
    assert main(["validate", "scenarios", "suites"]) == 0
    assert main(["run", "--suite", "suites/words.yaml", "--run-id", "q", "--no-progress"]) == 0
    assert {r["verdict"] for r in records(project / "transcripts/q/trials.jsonl")} == {"fail"}
    manifest = json.loads((project / "transcripts/q/run.json").read_text())
    assert manifest["pins"]["graders"] == [{"use": "checks/words.py:banned_words", "params": {"words": ["stored"]}}]
    capsys.readouterr()
    assert main(["grade", "q"]) == 0  # the pinned suite graders run again: nothing changes
    assert "no verdict changed" in capsys.readouterr().err
    assert {r["verdict"] for r in records(project / "transcripts/q/trials.jsonl")} == {"fail"}


def test_a_re_grade_keeps_the_checks_of_judge_graders_by_their_grader(project: Path, capsys) -> None:
    name_graders(project / "scenarios/s0.yaml", "    - checks/words.py:my_judge\n")
    assert main(["run", "scenarios/s0.yaml", "--run-id", "j", "--no-progress"]) == 0
    path = project / "transcripts/j/trials.jsonl"
    before = records(path)
    assert {r["verdict"] for r in before} == {"unjudged"}  # no judge model: the hard check did not run
    # a judge's check that looks like no judge's by its kind and name: only its grader says whose it is
    edited = []
    for r in before:
        for c in r["checks"]:
            if c["grader"] == "my_judge":
                c.update(status="pass", reason="stored judgement", kind="custom", name="politeness")
        edited.append(json.dumps(r))
    path.write_text("\n".join(edited) + "\n")
    assert main(["grade", "j"]) == 0  # without --rejudge: the stored judge checks are kept
    after = records(path)
    kept = [c for r in after for c in r["checks"] if c["grader"] == "my_judge"]
    assert [(c["name"], c["status"], c["reason"]) for c in kept] == [("politeness", "pass", "stored judgement")] * 3
    assert {r["verdict"] for r in after} == {"pass"}
    assert len([c for c in after[0]["checks"] if c["grader"] == "efficiency"]) == len(
        [c for c in before[0]["checks"] if c["grader"] == "efficiency"])  # the others ran again, once


def test_a_re_grade_of_checks_stored_before_graders_were_registered_keeps_their_judge_checks(project: Path,
                                                                                              capsys) -> None:
    scenario = project / "scenarios/s0.yaml"
    scenario.write_text(scenario.read_text() + "expect:\n  rubric:\n    - {id: polite, text: Polite?, hard: true}\n")
    assert main(["run", "scenarios/s0.yaml", "--run-id", "old", "--no-progress"]) == 0
    path = project / "transcripts/old/trials.jsonl"
    lines = []
    for r in records(path):  # as an older simlab wrote them: no grader fields, the rubric judged
        for c in r["checks"]:
            del c["grader"], c["grader_params"]
            if c["name"] == "rubric:polite":
                c.update(status="pass", reason="judged before")
        lines.append(json.dumps(r))
    path.write_text("\n".join(lines) + "\n")
    assert main(["grade", "old"]) == 0
    after = records(path)
    [polite] = [c for c in after[0]["checks"] if c["name"] == "rubric:polite"]
    assert (polite["status"], polite["reason"], polite["grader"]) == ("pass", "judged before", None)
    assert {r["verdict"] for r in after} == {"pass"}


def test_validate_names_every_grader_that_does_not_import_or_take_its_parameters(project: Path, capsys) -> None:
    name_graders(project / "scenarios/s0.yaml",
                 "    - use: checks/words.py:banned_words\n      params: {word: [Done]}\n"
                 "    - checks/words.py:undecorated\n"
                 "    - no_such_module:grader\n"
                 "    - {use: rubric, params: {samples: 0}}\n")
    (project / "suites").mkdir()
    (project / "suites/bad.yaml").write_text("id: bad\nscenarios: ['../scenarios/*.yaml']\n"
                                             "graders:\n  - /etc/passwd.py:x\n")
    capsys.readouterr()
    assert main(["validate", "scenarios", "suites"]) == 2
    err = capsys.readouterr().err
    assert "scenarios/s0.yaml:13: expect.graders.0.params: grader 'banned_words' takes (words: list[str]): " \
           "no parameter 'word'" in err
    assert "scenarios/s0.yaml:14: expect.graders.1.use: checks/words.py:undecorated is not a grader" in err
    assert "scenarios/s0.yaml:15: expect.graders.2.use: cannot import 'no_such_module'" in err
    assert "scenarios/s0.yaml:16: expect.graders.3.params: grader rubric: its factory raised ValueError: samples " \
           "must be a whole number ≥ 1" in err
    assert "suites/bad.yaml:4: graders.0.use: '/etc/passwd.py' is outside the project" in err
    assert "5 problems found" in err and "Traceback" not in err
    # the run refuses the same scenario before playing anything
    assert main(["run", "--run-id", "never", "--no-progress"]) == 2
    assert "expect.graders.0.params" in capsys.readouterr().err
    assert not (project / "transcripts/never/trials.jsonl").exists()


def test_the_readme_example_grader_on_the_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    repo = Path(__file__).resolve().parents[1]
    shutil.copytree(repo / "personas", tmp_path / "personas")
    shutil.copy(repo / "simlab.yaml", tmp_path / "simlab.yaml")
    (tmp_path / "scenarios").mkdir()
    scenario = tmp_path / "scenarios/refund-damaged-card.yaml"
    scenario.write_text((repo / "scenarios/retail/refund-damaged-card.yaml").read_text()
                        + "  graders:\n    - use: examples.graders:no_pii\n      params: {fields: [email, order_id]}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["validate"]) == 0
    assert main(["run", "--run-id", "pii", "--no-progress"]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"checks that fail most\s+check\s+┃ kind\s+┃ failures\s+━+╇━+╇━+\s+no_pii\s+│ custom", shown)
    trials = records(tmp_path / "transcripts/pii/trials.jsonl")
    mine = [c for r in trials for c in r["checks"] if c["grader"] == "no_pii"]
    assert len(mine) == 8 and {c["reason"] for c in mine if c["status"] == "fail"} == {
        "the agent wrote the customer's order_id"}  # the demo agent repeats order ids, never emails
    assert all(trial["verdict"] != "pass" for trial in trials
               if any(c["grader"] == "no_pii" and c["status"] == "fail" for c in trial["checks"]))


def test_validate_of_a_judge_named_with_parameters_imports_no_litellm(project: Path) -> None:
    name_graders(project / "scenarios/s0.yaml", "    - {use: rubric, params: {samples: 3}}\n")
    code = ("import sys; from simlab.cli.main import main; rc = main(['validate']); "
            "assert 'litellm' not in sys.modules, 'litellm imported'; sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: 2 scenarios")
