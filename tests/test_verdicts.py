"""Verdicts end to end: pass, fail, invalid and error stay apart, and reports show raw and valid figures."""

from __future__ import annotations

import json
import warnings

import pytest

from simlab.cli.main import main
from simlab.runner.factory import PinWarning, build_simulator
from simlab.specs import AgentSpec, SimulatorSpec
from tests.support import write_project


def test_a_simulated_user_that_leaks_a_secret_makes_the_trial_invalid(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=2, trials=2)
    leaky = tmp_path / "scenarios" / "s1.yaml"
    leaky.write_text(
        "id: kv-1\ntitle: leaky\ndomain: tests.support:KV\npersona: tester\n"
        "user:\n  goal: Store k1=v1.\n  never_reveal: {pin: '9911'}\n"
        "  script: ['Please store k1=v1, my pin is 9911.', 'thanks ###STOP###']\n"
        "max_turns: 4\nexpect:\n  state: [{path: items.k1, equals: v1}]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress", "--simulator", "scripted",
                 "scenarios/s1.yaml"]) == 0
    records = [json.loads(x) for x in (tmp_path / "transcripts/r/trials.jsonl").read_text().splitlines()]
    assert {r["verdict"] for r in records} == {"invalid"}
    leak = next(c for c in records[0]["checks"] if c["name"] == "drift:revealed_secret")
    assert leak["status"] == "fail" and leak["turn"] == 1
    capsys.readouterr()
    assert main(["report", "r", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    scenario = summary["scenarios"]["kv-1"]
    assert scenario["raw"]["success"]["n"] == 2 and scenario["valid"]["success"]["n"] == 0
    assert scenario["valid"]["pass_k"]["1"]["pass_hat_k"] is None  # no valid trial: undefined, not 0
    assert summary["invalid_by_simulator"]["scripted"]["c"] == 2


def test_an_alias_simulator_model_warns(monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_simulator(SimulatorSpec(model="anthropic/claude-3-5-sonnet-latest"),
                        AgentSpec(python="tests.support:kv_agent"))
    assert any(issubclass(w.category, PinWarning) and "-latest" in str(w.message) for w in caught)


@pytest.mark.parametrize("agent,sim", [("openai/gpt-4o-2024-08-06", "azure/gpt-4o-mini-2024-07-18"),
                                       ("anthropic/claude-3-5-sonnet-20241022", "claude-3-haiku-20240307")])
def test_same_family_is_refused_across_providers(agent, sim):
    from simlab.errors import UsageError

    with pytest.raises(UsageError, match="same model family"):
        build_simulator(SimulatorSpec(model=sim), AgentSpec(model=agent))
    build_simulator(SimulatorSpec(model=sim, allow_same_family=True), AgentSpec(model=agent))


def half_crashing_agent(inp):
    """Stores what it is asked, but raises on every other trial: the agent's own bug."""
    from tests.support import kv_agent

    if inp.seed % 2:
        raise RuntimeError("agent bug: index out of range")
    return kv_agent(inp)


def test_an_agent_that_crashes_fails_those_trials_instead_of_erroring(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=1, trials=12, agent="python:tests.test_verdicts:half_crashing_agent")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "crashy", "--no-progress"]) == 0  # the agent's failures are results
    records = [json.loads(x) for x in (tmp_path / "transcripts/crashy/trials.jsonl").read_text().splitlines()]
    crashed = [r for r in records if r["transcript"]["termination"]["reason"] == "agent_error"]
    assert crashed and len(crashed) < 12
    assert {r["verdict"] for r in crashed} == {"fail"}
    assert all("agent bug" in r["transcript"]["termination"]["detail"] for r in crashed)
    capsys.readouterr()
    assert main(["report", "crashy", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    valid = summary["suite"]["valid"]["success"]
    assert valid["n"] == 12 and valid["c"] == 12 - len(crashed)  # not 100 % over the trials that "worked"
    assert summary["suite"]["error_rate"]["c"] == 0


def _hard_rubric_project(tmp_path, *, allow: str = "") -> None:
    write_project(tmp_path, scenarios=1, trials=3)
    path = tmp_path / "scenarios" / "s0.yaml"
    path.write_text(path.read_text() + "expect:\n  rubric:\n    - {id: polite, text: Is polite, hard: true}\n")
    (tmp_path / "simlab.yaml").write_text((tmp_path / "simlab.yaml").read_text() + allow)
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "s.yaml").write_text("id: s\nscenarios: ['../scenarios/*.yaml']\n"
                                                "gates: ['pass^1 >= 0.5']\n")


def test_a_hard_check_that_did_not_run_leaves_the_trial_unjudged_and_the_gate_inconclusive(tmp_path, monkeypatch,
                                                                                              capsys):
    _hard_rubric_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "nojudge", "--no-progress"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    records = [json.loads(x) for x in (tmp_path / "transcripts/nojudge/trials.jsonl").read_text().splitlines()]
    assert {r["verdict"] for r in records} == {"unjudged"}  # never "pass": the hard item was not judged
    assert "success 0%" in out and "unjudged: 3 trials have no verdict: hard checks did not run (rubric:polite ×3)" in out
    assert "needs a judge model" in out
    assert main(["gate", "nojudge", "--suite", "suites/s.yaml"]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "INCONCLUSIVE 3 of 3 trials are unjudged" in out and "allow_unjudged: [rubric]" in out
    suite = tmp_path / "suites" / "s.yaml"
    suite.write_text(suite.read_text() + "allow_unjudged: [rubric]\n")
    assert main(["gate", "nojudge", "--suite", "suites/s.yaml"]) == 0  # the suite said so explicitly


def test_allow_unjudged_counts_such_trials_as_passes_and_says_how_many(tmp_path, monkeypatch, capsys):
    _hard_rubric_project(tmp_path, allow="allow_unjudged: [rubric]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "allowed", "--no-progress"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "success 100%" in out and "3 of them count as passes because allow_unjudged names [rubric]" in out
    assert main(["report", "allowed", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["unjudged"] == {"trials": 3, "counted_as_pass": 3, "allowed_kinds": ["rubric"],
                                   "checks": [{"name": "rubric:polite", "kind": "rubric", "trials": 3}]}
    assert main(["gate", "allowed", "--suite", "suites/s.yaml"]) == 3  # the suite itself did not allow it


def test_the_simulators_context_window_is_never_the_agents_failure():
    import asyncio

    from simlab.llm.types import ModelError, ModelErrorKind
    from simlab.sim.agents import PythonAgent
    from simlab.sim.loop import run_trial
    from simlab.sim.simulators.base import Simulator
    from simlab.transcript import Pin
    from tests.support import kv_agent, make_trial

    class Overflowing(Simulator):
        def pin(self):
            return Pin(kind="llm", ref="fake/small-2025-01-01")

        async def next_message(self, view):
            if view.turn == 1:
                from simlab.sim.simulators.base import UserTurn
                return UserTurn("Please store b=2.")
            raise ModelError(ModelErrorKind.CONTEXT_WINDOW, "too long", role="simulator", model="fake/small")

    t = asyncio.run(run_trial(make_trial(PythonAgent(kv_agent, "t:kv"), Overflowing())))
    assert t.termination.reason.value == "error" and "simulator model fake/small" in t.termination.detail
    assert "not the agent's" in t.termination.detail
