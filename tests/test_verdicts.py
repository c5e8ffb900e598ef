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
