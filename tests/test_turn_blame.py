"""Whose fault is an agent turn that ran past ``limits.max_turn_seconds`` (``sim/turn_wait.py``)?
The blame follows what the turn was really waiting on, through the tasks it awaits: its provider's
when that is a model request, the agent's when it hangs in its own code, however many requests of
its model client sit idle in other tasks meanwhile. A real provider on 127.0.0.1
(``tests/rough_provider.py``) that never answers; the clock is virtual (a hang reaches the bound at
once)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from simlab.graders.base import GradeContext
from simlab.graders.grade import grade
from simlab.sim.loop import Trial, run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs import Limits
from simlab.transcript.blame import diagnose
from tests import rough_agents
from tests.framework_play import BY_ID, DOMAINS, agent_of
from tests.rough_provider import RoughServer, Step
from tests.virtual_time import VirtualTimeLoop

KEY = "sk-turn-blame-secret-0123456789"


@pytest.fixture(scope="module")
def rough() -> Iterator[RoughServer]:
    with RoughServer() as server:
        yield server


@pytest.fixture
def provider(rough: RoughServer, monkeypatch: pytest.MonkeyPatch, virtual_time: None) -> RoughServer:
    rough.script.clear()
    rough.requests.clear()
    rough.default = Step("hang")  # a provider that never answers
    monkeypatch.setenv("SIMLAB_T_ROUGH_URL", rough.base)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return rough


class HeldLoop(VirtualTimeLoop):
    """A virtual clock held until the provider has sent ``answers`` answers (they reach the agent
    before time may jump), which a job in a thread holds only until the provider has a request (then
    the job hangs on the provider: the clock may jump to the turn's bound)."""

    def __init__(self, server: RoughServer, answers: int, ready: Callable[[], bool] = lambda: True) -> None:
        self.server = server
        self.answers = answers
        self.ready = ready  # and until the agent has taken them in (the answer read is not yet the agent's)
        super().__init__()

    @property  # type: ignore[override]
    def busy(self) -> int:
        held = self.server.sent < self.answers or not self.ready()
        return held + (0 if self.server.requests else len(self.jobs))

    def turn_hung(self, job: object) -> bool:
        """A sync agent's turn hangs on the provider once the provider has its request."""
        return not self.busy and bool(self.server.requests)


def play(
    agent: str,
    context: dict[str, Any] | None = None,
    server: RoughServer | None = None,
    answers: int = 0,
    ready: Callable[[], bool] = lambda: True,
) -> tuple[Any, str, str | None]:
    """One trial of refund-damaged-card whose agent is ``tests.rough_agents:<agent>`` (a Python
    agent, or ``<framework>:<attr>``); with ``server``, its hanging requests are answered when it ends."""
    trial = one_trial(agent, context, server)
    if server is None:
        transcript, verdict, blame = asyncio.run(trial)
    else:
        with asyncio.Runner(loop_factory=lambda: HeldLoop(server, answers, ready)) as runner:
            transcript, verdict, blame = runner.run(trial)
    assert KEY not in transcript.model_dump_json()
    return transcript, verdict, blame


async def one_trial(
    agent: str, context: dict[str, Any] | None = None, server: RoughServer | None = None
) -> tuple[Any, str, str | None]:
    """That trial played (with ``server``: its hanging requests answered when it ends), graded:
    (transcript, verdict, blame)."""
    kind, _, ref = agent.rpartition(":")
    kind = kind or "python"
    entry = BY_ID["refund-damaged-card"]
    spec = entry.spec.model_copy(update={"max_turns": 2, "agent_context": context or {}})
    domain = DOMAINS[spec.id]
    transcript = await run_trial(
        Trial(
            run_id="blame",
            unit_id=f"{spec.id}#1",
            trial=1,
            seed=1,
            scenario=spec,
            persona=entry.persona,
            domain=domain,
            initial_state=domain.build_state(spec.initial_state),
            agent=agent_of({kind: f"tests.rough_agents:{ref}"}),
            simulator=RulesSimulator(),
            limits=Limits(max_turn_seconds=30.0),
        )
    )
    if server is not None:
        server.release()  # the thread's request ends, so the loop's executor can shut down
    graded = await grade(GradeContext(transcript, spec, domain, persona=entry.persona), use_judges=False)
    return transcript, graded.verdict, diagnose(transcript, graded.checks, graded.verdict).blame


@pytest.mark.parametrize(
    "agent", ["hangs_beside_an_idle_client_task", "langgraph:langgraph_hangs_after_its_model"]
)
def test_an_agent_hung_in_its_own_code_beside_an_idle_client_request_is_the_agents_fail(
    provider: RoughServer, agent: str
) -> None:
    answers = 1 if agent.startswith("langgraph") else 0  # its model node's request is answered
    provider.script[:] = [Step()] * answers  # the others never are (the Python agent's warm-up)
    rough_agents.REVIEWING.clear()
    ready = rough_agents.REVIEWING.is_set if answers else lambda: True  # the answer reached its node
    transcript, verdict, blame = play(agent, server=provider, answers=answers, ready=ready)
    assert (transcript.termination.reason.value, verdict, blame) == ("budget_exceeded", "fail", "agent"), (
        transcript.termination
    )
    assert "max_turn_seconds" in transcript.termination.detail
    assert not [e for e in transcript.events if e.type == "error"]


@pytest.mark.parametrize("how", ["task", "gather", "wait", "wait_for", "shield", "taskgroup", "channel"])
def test_an_agent_waiting_on_its_model_through_its_own_tasks_is_its_providers_error(
    provider: RoughServer, how: str
) -> None:
    transcript, verdict, blame = play("waits_on_its_model_in_a_task", {"how": how})
    assert (transcript.termination.reason.value, verdict, blame) == ("error", "error", "provider"), (
        transcript.termination
    )
    [error] = [e for e in transcript.events if e.type == "error"]
    assert error.kind == "timeout" and "waiting on its openai client" in error.message


@pytest.mark.parametrize("agent", ["asks_in_a_thread", "asks_synchronously", "langgraph:langgraph_sync"])
def test_an_agent_waiting_on_its_model_in_a_thread_is_its_providers_error(
    provider: RoughServer, agent: str
) -> None:
    transcript, verdict, blame = play(agent, server=provider)
    assert (transcript.termination.reason.value, verdict, blame) == ("error", "error", "provider"), (
        transcript.termination
    )
    [error] = [e for e in transcript.events if e.type == "error"]
    assert error.kind == "timeout" and "max_turn_seconds" in error.message, error.message


def test_trials_side_by_side_each_get_their_own_blame(provider: RoughServer) -> None:
    """One loop, two trials: one agent waits on its hung provider, the other hangs in its own code;
    the first's request in flight is no part of what the second waited on."""

    async def both() -> list[tuple[Any, str, str | None]]:
        return await asyncio.gather(
            one_trial("waits_on_its_model_in_a_task", {"how": "channel"}),
            one_trial("hangs_beside_an_idle_client_task"),
        )

    (waited, *waited_verdict), (hung, *hung_verdict) = asyncio.run(both())
    assert (waited.termination.reason.value, *waited_verdict) == ("error", "error", "provider")
    assert (hung.termination.reason.value, *hung_verdict) == ("budget_exceeded", "fail", "agent")


async def test_a_turn_in_simlabs_own_retry_wait_is_waiting_on_its_provider() -> None:
    """An HTTP agent's service answered 429 with a Retry-After longer than the turn: the turn
    sits in simlab's own back-off between attempts. Before, cut off there, it was the agent's
    budget_exceeded; without the bound, the same service ends as the provider's error."""
    import httpx

    from simlab.llm.retry import RetryPolicy, RetryStats, call_with_retries
    from simlab.sim.turn_wait import described, waiting_on

    never, asked = asyncio.Event(), asyncio.Event()

    async def wait_out(seconds: float) -> None:
        asked.set()
        await never.wait()

    async def attempt() -> None:
        request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
        error = httpx.HTTPStatusError("HTTP 429", request=request, response=httpx.Response(429, request=request))
        error.status_code = 429  # type: ignore[attr-defined]  # as the HTTP agent gives it
        raise error

    turn = asyncio.ensure_future(call_with_retries(attempt, RetryPolicy(sleep=wait_out), RetryStats()))
    await asked.wait()
    try:
        waiting = waiting_on(turn)
        assert waiting is not None and described(waiting) == "simlab's retry of a failed call"
    finally:
        turn.cancel()
        await asyncio.gather(turn, return_exceptions=True)

    started = asyncio.Event()

    async def hangs() -> None:  # a first attempt that never answers, in no model client's code: the agent's
        started.set()
        await never.wait()

    first = asyncio.ensure_future(call_with_retries(hangs, RetryPolicy(sleep=wait_out), RetryStats()))
    await started.wait()
    try:
        assert waiting_on(first) is None
    finally:
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
