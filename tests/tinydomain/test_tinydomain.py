"""A user's own domain, importable as ``tests.tinydomain``, works with no simlab edit."""

from __future__ import annotations

from pathlib import Path

from simlab.env import BUILTIN_DOMAINS, Environment, load_domain
from simlab.env.checks import check_scenarios
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import Trial, run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs import load_scenarios, scenario_files

HERE = Path(__file__).resolve().parent


def test_the_domain_is_not_built_in_and_loads_by_module_name() -> None:
    assert "tests.tinydomain" not in BUILTIN_DOMAINS.values()
    domain = load_domain("tests.tinydomain")
    assert domain.name == "todo"
    assert {t.name: t.access.value for t in domain.tools} == {
        "list_todos": "read", "add_todo": "write", "complete_todo": "write"}
    props = domain.tool("complete_todo").json_schema()["function"]["parameters"]["properties"]
    assert props["todo_id"] == {"description": "The id of the to-do, as shown by list_todos.", "type": "integer"}


def test_tools_act_and_refuse() -> None:
    domain = load_domain("tests.tinydomain")
    env = Environment(domain, domain.build_state({"max_open": 2}))
    assert env.execute("list_todos", {}).result == {"todos": [{"id": 1, "title": "water the plants", "done": False}]}
    assert env.execute("add_todo", {"title": "buy milk"}).result["added"]["id"] == 3
    full = env.execute("add_todo", {"title": "fix bike"})
    assert not full.ok and "full" in (full.error or "")
    assert env.execute("complete_todo", {"todo_id": 1}).ok
    again = env.execute("complete_todo", {"todo_id": 1})
    assert not again.ok and again.invalid_reason is None
    assert env.execute("complete_todo", {"todo_id": "one"}).invalid_reason


def test_its_scenario_with_an_inline_persona_loads_and_checks() -> None:
    entries = load_scenarios(scenario_files([HERE / "scenarios"]), {})
    assert [e.spec.id for e in entries] == ["tiny-add-groceries"]
    assert entries[0].persona.id == "busy-parent"
    domains = check_scenarios(entries)
    assert domains["tiny-add-groceries"].name == "todo"


async def test_its_scenario_plays_through_the_real_loop() -> None:
    entry = load_scenarios(scenario_files([HERE / "scenarios"]), {})[0]
    domain = check_scenarios([entry])[entry.spec.id]
    transcript = await run_trial(Trial(
        run_id="t", unit_id="tiny#1", trial=1, seed=3, scenario=entry.spec, persona=entry.persona, domain=domain,
        initial_state=domain.build_state(entry.spec.initial_state),
        agent=PythonAgent(load_domain_agent(), "tests.tinydomain:todo_agent"), simulator=RulesSimulator(),
    ))
    assert transcript.termination.reason.value == "goal_reached"
    assert [t["title"] for t in transcript.final_state["todos"]] == ["water the plants", "call mum", "buy groceries"]


def load_domain_agent():  # type: ignore[no-untyped-def]
    from tests.tinydomain import todo_agent

    return todo_agent
