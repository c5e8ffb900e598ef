"""Play a retail scenario with any agent spec and grade it as `simlab run` does (deterministic
graders; judges left out): the shared harness of the framework adapters' tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simlab.env.checks import check_scenarios
from simlab.graders.base import GradeContext
from simlab.graders.grade import grade
from simlab.runner.factory import build_agent
from simlab.runner.plan import derive_seed
from simlab.sim.loop import Trial, run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs import AgentSpec, load_personas, load_scenarios, scenario_files
from simlab.transcript import Check, Transcript

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = load_scenarios(scenario_files([ROOT / "scenarios" / "retail"]), load_personas(ROOT / "personas"))
DOMAINS = check_scenarios(ENTRIES)
BY_ID = {e.spec.id: e for e in ENTRIES}
SCENARIO_IDS = sorted(BY_ID)

FREE = {"input": 0, "output": 0}  # the example agents' models are scripted code
CAREFUL = {
    "python": {"python": "examples.retail_agents:careful_agent"},
    "langgraph": {"langgraph": "examples.langgraph_retail:careful_graph", "price": FREE},
    "openai_agents": {"openai_agents": "examples.openai_agents_retail:careful_agent", "price": FREE},
    "pydantic_ai": {"pydantic_ai": "examples.pydantic_ai_retail:careful_agent", "price": FREE},
}
SKIPS_POLICY_CHECK = {
    "python": {"python": "examples.retail_agents:agent_skipping_policy_check"},
    "langgraph": {"langgraph": "examples.langgraph_retail:graph_skipping_policy_check", "price": FREE},
    "openai_agents": {"openai_agents": "examples.openai_agents_retail:agent_skipping_policy_check", "price": FREE},
    "pydantic_ai": {"pydantic_ai": "examples.pydantic_ai_retail:agent_skipping_policy_check", "price": FREE},
}


def agent_of(spec: dict[str, Any] | str) -> Any:
    return build_agent(AgentSpec.model_validate(spec))


def scenario(scenario_id: str, **expect: Any) -> Any:
    """The scenario, with these ``expect`` fields added (validated like a file's)."""
    spec = BY_ID[scenario_id].spec
    if not expect:
        return spec
    data = spec.model_dump(mode="json", exclude_unset=True)
    data["expect"] = {**data.get("expect", {}), **expect}
    return type(spec).model_validate(data)


async def play(scenario_id: str, agent: Any, *, trial: int = 1, scn: Any = None, env_out: list[Any] | None = None
               ) -> tuple[Transcript, list[Check]]:
    entry = BY_ID[scenario_id]
    spec = scn or entry.spec
    domain = DOMAINS[scenario_id]
    if isinstance(agent, (dict, str)):
        agent = agent_of(agent)
    transcript = await run_trial(Trial(
        run_id="test", unit_id=f"{scenario_id}#{trial}", trial=trial, seed=derive_seed(0, scenario_id, trial),
        scenario=spec, persona=entry.persona, domain=domain, initial_state=domain.build_state(spec.initial_state),
        agent=agent, simulator=RulesSimulator(),
    ))
    graded = await grade(GradeContext(transcript, spec, domain, persona=entry.persona), use_judges=False)
    return transcript, graded.checks


def failed(checks: list[Check]) -> list[str]:
    """The hard checks that failed or could not be decided (not run included): what stops a pass."""
    return sorted(c.name for c in checks if c.hard and c.status != "pass")


def check(checks: list[Check], name: str) -> Check:
    return next(c for c in checks if c.name == name)
