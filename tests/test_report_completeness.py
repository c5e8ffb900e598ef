"""A report on a run that is not whole says so on its first line, on every surface (terminal,
markdown, HTML, JSON, JUnit, step summary), and ``simlab report`` exits 3 (INCONCLUSIVE) whatever
its figures (issue 24): the wording comes from one function, ``report/completeness.run_state``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.report.build import build
from simlab.report.completeness import run_state
from simlab.report.gates import GateReport
from simlab.report.junit import junit_xml
from simlab.results.figures import Completeness
from tests.support import write_project

CUT = "incomplete: 2 of 6 planned trials"
PART = "partial: 1 of 10 scenarios"  # runner/suite_plan's wording of a part of a suite


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small project with a whole run ``r`` (2 scenarios × 3 trials, every trial passes)."""
    write_project(tmp_path, scenarios=2, trials=3)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    return tmp_path


def cut(project: Path, keep: int) -> None:
    """Run ``r`` holding only its first ``keep`` trials in plan order, as a run killed mid-way leaves
    it (trials are stored as they finish, in any order: sorted, the kept ones are known)."""
    path = project / "transcripts/r/trials.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    rows = [json.loads(line)["head"]["row"] for line in lines]
    ordered = [line for _, line in sorted(zip([(r["scenario_id"], r["trial"]) for r in rows], lines))]
    path.write_bytes(b"".join(ordered[:keep]))


def test_a_whole_run_reports_exit_0_with_no_completeness_line(project: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["report", "r"]) == 0
    assert capsys.readouterr().out.startswith("run r · 6 graded trials")
    assert build(project / "transcripts/r", write=False).state == "complete"


def test_a_cut_run_says_so_first_on_every_surface_and_exits_3(project: Path, capsys, monkeypatch) -> None:
    cut(project, 2)
    capsys.readouterr()
    step = project / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    assert main(["report", "r", "--html", "r.html"]) == 3
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == CUT
    assert f"inconclusive (exit 3): {CUT}; the figures stand for the 2 trials played" in err
    assert "finish it with: " in err and "--run-id r" in err
    assert step.read_text().splitlines()[0] == f"> **Warning:** {CUT}"
    body = (project / "r.html").read_text().split("<body>\n", 1)[1]
    assert body.startswith(f'<p class="state">{CUT}</p>')
    assert main(["report", "r", "--format", "markdown"]) == 3
    assert capsys.readouterr().out.splitlines()[0] == f"> **Warning:** {CUT}"
    assert main(["report", "r", "--json"]) == 3
    printed = capsys.readouterr().out
    assert printed.splitlines()[1] == f'  "state": "{CUT}",' and json.loads(printed)["state"] == CUT
    summary = build(project / "transcripts/r", write=False)
    testsuite = ET.fromstring(junit_xml(summary, GateReport(), "s").split("?>", 1)[1]).find("testsuite")
    first = testsuite[0].find("property")
    assert testsuite[0].tag == "properties" and first.get("name") == "completeness" and first.get("value") == CUT
    gates_case = [c for c in testsuite.findall("testcase") if c.get("name") == "suite gates"][0]
    assert gates_case.find("error").get("message").startswith(CUT)  # never a passing testcase


def test_a_run_with_no_trial_reports_exit_3_saying_so(project: Path, capsys) -> None:
    cut(project, 0)
    capsys.readouterr()
    assert main(["report", "r"]) == 3
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "incomplete: 0 of 6 planned trials"
    assert "no trial of run r finished: there is nothing to judge" in err


def test_the_completeness_line_is_one_function_of_the_facts() -> None:
    cases = [
        (Completeness(planned=3000, finished=924), [], "incomplete: 924 of 3,000 planned trials", False),
        (Completeness(planned=56, finished=0), [], "incomplete: 0 of 56 planned trials", False),
        (Completeness(planned=56, finished=56), [], None, True),
        (Completeness(planned=None, finished=3, manifest=False), [],
         "completeness unknown: no run.json, so the run's plan is unknown", False),
        (Completeness(planned=None, finished=3), [], "completeness unknown: run.json names no planned trials", False),
        (Completeness(planned=4, finished=4, unplanned=2), [],
         "2 stored trials are not in the run's plan (left out)", False),
        (Completeness(planned=4, finished=4), ["agent: a → b"],
         "mixed: this run mixes configurations or code: it was resumed or merged with --force over other pins (agent: a → b)", False),
        (Completeness(planned=4, finished=4), [], "partial: 1 of 10 scenarios", True, PART, True),
        (Completeness(planned=4, finished=4), [], "partial: 1 of 10 scenarios, not accepted with --partial-ok",
         False, PART, False),
        (Completeness(planned=4, finished=2), ["x"],
         "incomplete: 2 of 4 planned trials · mixed: this run mixes configurations or code: it was resumed or "
         "merged with --force over other pins (x) · partial: 1 of 10 scenarios", False, PART, True),
        (None, [], "completeness unknown: this summary holds no count of planned trials", False),
    ]
    for done, mixed, line, judged, *part in cases:
        state = run_state(done, mixed, partial=part[0] if part else None, partial_ok=bool(part and part[1]))
        assert (state.line, state.judged) == (line, judged), done
        assert state.state == (line or "complete")


def test_junit_of_a_cut_run_with_an_undecided_gate_says_each_fact_once(tmp_path: Path, monkeypatch) -> None:
    write_project(tmp_path, scenarios=2, trials=3)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text("id: s\nscenarios: [scenarios/s0.yaml, scenarios/s1.yaml]\ntrials: 3\n"
                                     "gates:\n  - {gate: 'pass^3 >= 0.5', scope: each}\n  - 'success >= 0.5'\n")
    assert main(["run", "--suite", "s.yaml", "--run-id", "r", "--no-progress"]) == 0
    cut(tmp_path, 4)  # kv-0 keeps its 3 trials, kv-1 one: its pass^3 cannot be decided
    (tmp_path / "transcripts/r/heads.jsonl").unlink(missing_ok=True)
    assert main(["gate", "r", "--suite", "s.yaml", "--junit", "o.xml"]) == 3
    suite = ET.parse(tmp_path / "o.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("errors"), suite.get("failures")) == ("2", "0")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    undecided = cases["kv-1"].find("error")
    assert undecided is not None and "n < k" in (undecided.get("message") or "")
    gates = cases["suite gates"].find("error")
    assert gates is not None and gates.get("message") == "incomplete: 4 of 6 planned trials"  # not twice
    said = [p.get("value") or "" for p in suite.iter("property") if p.get("name") == "completeness"]
    said += [e.get("message") or "" for e in suite.iter() if e.tag in ("error", "failure")]
    said += [e.text or "" for e in suite.iter("system-out")]
    assert sum(text.count("incomplete:") for text in said) == 2, said  # the property, the gates' error
