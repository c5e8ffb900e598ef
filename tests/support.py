"""Shared test helpers: a tiny key-value domain and a way to build one trial by hand."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from simlab.env import READ, WRITE, Domain, ToolError, tool
from simlab.sim.loop import Trial
from simlab.specs import Limits, Persona, Scenario


class KVState(BaseModel):
    items: dict[str, str] = {}
    owner: str = "u1"


@tool(READ)
def get_item(state: KVState, key: str) -> dict[str, Any]:
    """Read one item.

    Args:
        key: The item's key.
    """
    if key not in state.items:
        raise ToolError(f"no item {key!r}")
    return {"key": key, "value": state.items[key]}


@tool(WRITE)
def set_item(state: KVState, key: str, value: str) -> dict[str, Any]:
    """Store an item.

    Args:
        key: The item's key.
        value: The value to store.
    """
    state.items[key] = value
    return {"ok": True}


@tool(WRITE)
def transfer_to_human(state: KVState, reason: str) -> str:
    """Hand the conversation to a person.

    Args:
        reason: Why.
    """
    return "transferred"


KV = Domain(name="kv", state_model=KVState, tools=[get_item, set_item, transfer_to_human],
            policy="You manage a key-value store.", seed_state={"items": {"a": "1"}})

PERSONA = Persona(id="tester", description="A tester.", give_up_after=2)


def scenario(**overrides: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": "kv-set", "title": "Set b", "domain": "tests.support:KV", "persona": "tester",
        "user": {"goal": "Store b=2.", "opening": "Please store b=2.", "known_facts": {"key": "b"},
                 "success_phrases": ["stored"]},
        "max_turns": 4,
    }
    data.update(overrides)
    return Scenario.model_validate(data)


def make_trial(agent: Any, simulator: Any, *, scn: Scenario | None = None, limits: Limits | None = None,
               seed: int = 7) -> Trial:
    scn = scn or scenario()
    return Trial(run_id="r", unit_id=f"{scn.id}#1", trial=1, seed=seed, scenario=scn, persona=PERSONA, domain=KV,
                 initial_state=KV.build_state(scn.initial_state), agent=agent, simulator=simulator,
                 limits=limits or Limits())
