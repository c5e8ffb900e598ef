"""A trial played in a user's own loop leaves the loop's task factory alone: a turn's bound and what
it waited on (``sim/turn_wait.py``) take no factory of their own, every task made meanwhile goes
through the user's, and the loop keeps it after the trial."""

from __future__ import annotations

import asyncio
from typing import Any

from simlab.sim.agent_io import AgentInput, AgentReply
from simlab.sim.loop import Trial, run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs import Limits
from tests.framework_play import BY_ID, DOMAINS, agent_of

MADE: list[asyncio.Task[Any]] = []  # the tasks the user's factory made


def users_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    task = asyncio.Task(coro, loop=loop, **kwargs)
    MADE.append(task)  # named after the factory returns (Python < 3.13)
    return task


async def spawning(inp: AgentInput) -> AgentReply:
    """An agent that runs part of its turn in a task of its own, as frameworks do."""

    async def think() -> str:
        return "Let me check that order."

    return AgentReply(text=await asyncio.create_task(think(), name=f"agent-turn-{inp.turn}"))


async def test_a_trial_in_a_users_loop_gives_the_loop_back_with_the_users_factory() -> None:
    loop = asyncio.get_running_loop()
    MADE.clear()
    loop.set_task_factory(users_factory)
    try:
        entry = BY_ID["refund-damaged-card"]
        spec = entry.spec.model_copy(update={"max_turns": 2})
        domain = DOMAINS[spec.id]
        transcript = await run_trial(Trial(
            run_id="loop", unit_id=f"{spec.id}#1", trial=1, seed=1, scenario=spec, persona=entry.persona,
            domain=domain, initial_state=domain.build_state(spec.initial_state),
            agent=agent_of({"python": "tests.test_turn_wait:spawning"}), simulator=RulesSimulator(),
            limits=Limits(max_turn_seconds=30.0)))
        assert [e.text for e in transcript.events if e.type == "agent"][:1] == [
            "Let me check that order."]
        assert loop.get_task_factory() is users_factory  # the user's again, not simlab's
        assert {"agent-turn-1", "agent-turn-2"} <= {t.get_name() for t in MADE}  # made by the user's factory meanwhile
        after = asyncio.create_task(asyncio.sleep(0), name="after")
        await after
        assert MADE[-1] is after
    finally:
        loop.set_task_factory(None)
