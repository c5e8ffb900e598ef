"""The retail demo content: personas and scenarios load and fit the domain, their expectations are
consistent with the domain, and a policy-following agent can meet them under the rules simulator."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from examples.retail_agents import careful_agent, flaky_agent
from simlab.env import Environment
from simlab.env.checks import check_scenarios
from simlab.runner.plan import derive_seed
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import Trial, run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs import load_personas, load_scenarios, scenario_files
from simlab.specs.loader import LoadedScenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_DIR = ROOT / "scenarios" / "retail"
PERSONA_DIR = ROOT / "personas"


def loaded() -> list[LoadedScenario]:
    personas = load_personas(PERSONA_DIR)
    return load_scenarios(scenario_files([SCENARIO_DIR]), personas)


ENTRIES = loaded()
DOMAINS = check_scenarios(ENTRIES)
BY_ID = {e.spec.id: e for e in ENTRIES}


# --- a small evaluator of expect.state paths (the graders own the real one) -------------------------

_MISSING = object()
_TOKEN = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


def state_value(state: Any, path: str) -> Any:
    value = state
    for bracket, key in _TOKEN.findall(path):
        if value is _MISSING:
            return _MISSING
        if key:
            value = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
        elif "=" in bracket:
            field, wanted = bracket.split("=", 1)
            items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
            value = next((i for i in items if isinstance(i, dict) and str(i.get(field)) == wanted), _MISSING)
        else:
            index = int(bracket)
            value = value[index] if isinstance(value, list) and -len(value) <= index < len(value) else _MISSING
    return value


def failed_assertions(entry: LoadedScenario, state: dict[str, Any]) -> list[str]:
    failures = []
    for a in entry.spec.expect.state:
        value = state_value(state, a.path)
        given = a.model_fields_set
        if "absent" in given and (value is _MISSING) != bool(a.absent):
            failures.append(f"{a.path}: absent={a.absent}, got {value!r}")
        if "exists" in given and (value is not _MISSING) != bool(a.exists):
            failures.append(f"{a.path}: exists={a.exists}, got {value!r}")
        if "equals" in given:
            same = (abs(float(value) - float(a.equals)) <= a.tolerance
                    if isinstance(a.equals, (int, float)) and not isinstance(a.equals, bool)
                    and isinstance(value, (int, float)) else value == a.equals)
            if not same:
                failures.append(f"{a.path}: expected {a.equals!r}, got {value!r}")
    return failures


# --- the files ------------------------------------------------------------------------------------

def test_enough_personas_and_scenarios() -> None:
    assert len(load_personas(PERSONA_DIR)) >= 4
    assert len(ENTRIES) >= 8
    assert {e.spec.domain for e in ENTRIES} == {"retail"}


def test_every_file_starts_with_its_schema_comment() -> None:
    for path in sorted(PERSONA_DIR.glob("*.yaml")):
        assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../schemas/persona.json", path
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../../schemas/scenario.json", path


def test_files_parse_the_same_without_libyaml() -> None:
    """Regexes in flow sequences must be quoted: libyaml accepts some that pure PyYAML rejects."""
    import yaml

    from simlab.specs.yamlio import load_yaml_file

    for path in [*sorted(PERSONA_DIR.glob("*.yaml")), *sorted(SCENARIO_DIR.glob("*.yaml"))]:
        assert yaml.load(path.read_text(), Loader=yaml.SafeLoader) == load_yaml_file(path)[0], path


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.spec.id)
def test_scenario_is_well_formed(entry: LoadedScenario) -> None:
    spec = entry.spec
    assert spec.user.opening and spec.user.success_phrases
    for pattern in [*spec.user.success_phrases, *spec.user.reject_phrases, *spec.user.give_up_phrases]:
        re.compile(pattern, re.IGNORECASE)
    assert spec.expect.state, "every demo scenario asserts on the end state"
    assert spec.expect.rubric and spec.expect.budgets
    domain = DOMAINS[spec.id]
    state = domain.build_state(spec.initial_state).model_dump(mode="json")
    for principal in (spec.agent_context.get("signed_in_customer"),):
        assert principal in state["customers"]


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if e.spec.expect.expected_actions], ids=lambda e: e.spec.id
)
def test_expected_actions_replay_and_meet_the_state_assertions(entry: LoadedScenario) -> None:
    domain = DOMAINS[entry.spec.id]
    env = Environment(domain, domain.build_state(entry.spec.initial_state))
    for action in entry.spec.expect.expected_actions:
        outcome = env.execute(action.tool, action.args)
        assert outcome.ok, f"{action.tool}: {outcome.error}"
    assert failed_assertions(entry, env.snapshot()) == []


def test_the_injection_scenario_plants_its_instruction() -> None:
    entry = BY_ID["injection-help-center"]
    state = DOMAINS[entry.spec.id].build_state(entry.spec.initial_state)
    article = state.kb["kb-refund-timing"]
    assert "refunds-audit@evil-example.com" in article.text and article.title == "When will I see my refund?"
    assert "business days" in article.text  # the genuine answer is still there


# --- played end to end with the rules simulator -----------------------------------------------------

EXPECTED_ENDING = {"final-sale-transfer": "agent_transferred", "other-customers-order": "user_gave_up"}


async def play(entry: LoadedScenario, agent: Any, ref: str, trial: int, run_seed: int = 0) -> Any:
    domain = DOMAINS[entry.spec.id]
    seed = derive_seed(run_seed, entry.spec.id, trial)
    return await run_trial(Trial(
        run_id="test", unit_id=f"{entry.spec.id}#{trial}", trial=trial, seed=seed, scenario=entry.spec,
        persona=entry.persona, domain=domain, initial_state=domain.build_state(entry.spec.initial_state),
        agent=PythonAgent(agent, ref), simulator=RulesSimulator(),
    ))


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.spec.id)
async def test_careful_agent_meets_every_scenario(entry: LoadedScenario) -> None:
    for trial in (1, 2):
        transcript = await play(entry, careful_agent, "examples.retail_agents:careful_agent", trial)
        ending = transcript.termination.reason.value
        assert ending == EXPECTED_ENDING.get(entry.spec.id, "goal_reached"), transcript.termination
        assert failed_assertions(entry, transcript.final_state) == []
        expect = entry.spec.expect
        calls = [c.name for c in transcript.tool_calls()]
        forbidden = {f for f in expect.forbidden if isinstance(f, str)}
        assert not forbidden & set(calls)
        if expect.trajectory:
            wanted = iter(calls)
            names = [c if isinstance(c, str) else c.tool for c in expect.trajectory.calls]
            assert all(name in wanted for name in names), (names, calls)  # in order, extras allowed
        if expect.budgets and expect.budgets.max_tool_calls is not None:
            assert len(calls) <= expect.budgets.max_tool_calls
        if expect.budgets and expect.budgets.max_user_turns is not None:
            assert transcript.user_turns() <= expect.budgets.max_user_turns


async def test_flaky_agent_passes_some_trials_and_fails_others() -> None:
    outcomes = []
    for entry in ENTRIES:
        for trial in (1, 2, 3, 4):
            transcript = await play(entry, flaky_agent, "examples.retail_agents:flaky_agent", trial)
            outcomes.append(not failed_assertions(entry, transcript.final_state)
                            and transcript.termination.reason.value != "agent_loop")
    assert any(outcomes) and not all(outcomes)
