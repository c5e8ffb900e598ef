"""The conversation loop: simulator ⇄ agent ⇄ domain tools, until something ends the trial.

Pure: built objects in, a transcript out. No files, no globals; the clock is injectable.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast, get_args

from pydantic import BaseModel

from simlab.env.domain import Domain, Environment
from simlab.llm.agent_errors import provider_failure
from simlab.llm.types import ModelError, ModelErrorKind
from simlab.llm.watch import no_choices, watched
from simlab.redact import scrub
from simlab.sim.agent_io import Agent, AgentInput
from simlab.sim.agent_thread import TURN_BOUND, TurnBound, TurnCutOff
from simlab.sim.simulators.base import Simulator, SimView
from simlab.sim.tool_handle import StopTrial, ToolHandle
from simlab.sim.turn_wait import TurnWatch, described, thread_waiting, waited_model
from simlab.specs import Limits, Persona, Scenario
from simlab.transcript import (
    AgentMessage,
    ErrorEvent,
    ModelCall,
    Signal,
    Termination,
    TerminationReason,
    Transcript,
    UserMessage,
)
from simlab.transcript.blame import AGENT_TURN_TIMEOUT
from simlab.transcript.model import Role

R = TerminationReason
T = TypeVar("T")
SHOWN_OF_LONG_REPLY = 2_000  # characters kept of a reply over limits.max_reply_bytes


def wall_time_over(limit: float | None) -> str:
    """How a trial that ran past ``limits.max_seconds`` ends, wherever the clock caught it."""
    return f"wall time over the limit of {limit} s"


@dataclass
class Trial:
    """One work unit, fully built: what to play, who plays it, and its identity in the run."""

    run_id: str
    unit_id: str
    trial: int
    seed: int
    scenario: Scenario
    persona: Persona
    domain: Domain
    initial_state: BaseModel
    agent: Agent
    simulator: Simulator
    limits: Limits = field(default_factory=Limits)


class _End(Exception):
    def __init__(self, reason: TerminationReason, detail: str = ""):
        self.reason, self.detail = reason, detail


class _Conversation:
    def __init__(self, trial: Trial, clock: Callable[[], float]):
        self.t = trial
        self.clock = clock
        self.events: list[Any] = []
        self.messages: list[dict[str, Any]] = []
        self.env = Environment(
            trial.domain, trial.initial_state, faults=trial.scenario.faults, seed=trial.seed
        )
        self.tools = ToolHandle(
            self.env,
            self.record,
            max_calls_per_turn=max(50, 5 * trial.limits.max_agent_steps),
            max_result_bytes=trial.limits.max_tool_result_bytes,
        )
        self.agent_memory: dict[str, Any] = {}
        self.sim_memory: dict[str, Any] = {}
        self.turn = 0
        self.history: list[dict[str, Any]] = []  # the history in chat format, tool calls included
        self.history_events = 0
        self.tokens = 0
        self.cost = 0.0
        self.started = clock()
        self.speaking: str | None = None  # "simulator" while the simulated user makes its turn
        self.over = False  # the trial ended: nothing more is recorded or run (``end``)
        self.deadline: float | None = None  # the loop's time at which limits.max_seconds runs out

    def end(self) -> None:
        """No more events and no more tool calls: a sync agent's thread cut off at its bound runs on
        (Python cannot stop it), but what it does now is refused, never recorded."""
        self.over = True
        self.tools.close()

    def record(self, event: Any) -> None:
        if self.over:  # a sync agent's abandoned thread, run on after its turn was cut off
            raise StopTrial("budget_exceeded", "the trial is over: its agent turn was cut off")
        self.events.append(event)
        if isinstance(event, ModelCall):
            self._check_budget()
        self.check_clock()

    def check_clock(self) -> None:
        """The wall-time limit, checked between steps: ``asyncio.timeout`` cannot stop synchronous
        work on the loop (a tool an async agent calls, the simulator matching a long reply), but the
        next step sees the clock. A sync agent's turn is cut off at its bound (``_bounded``)."""
        limit = self.t.limits.max_seconds
        if limit is not None and self.clock() - self.started > limit:
            if self.speaking == "simulator":
                raise self.user_overran(limit)
            raise StopTrial("budget_exceeded", wall_time_over(limit))

    def user_overran(self, limit: float | None) -> _End:
        """The trial's wall time ran out while the simulated user was making its turn (its model's
        provider backing off, its own code): infrastructure, never the agent's budget."""
        self.events.append(
            ErrorEvent(turn=self.turn, source="simulator", kind="timeout", message="wall time ran out")
        )
        return _End(
            R.ERROR,
            f"{wall_time_over(limit)} while the simulated user was answering (its model "
            "or its code, not the agent)",
        )

    def user_overspent(self, detail: str) -> _End:
        """A token or cost budget crossed by the simulated user's own model call, while it was making
        its turn: the user's side, as its wall time is, never the agent's budget."""
        self.events.append(ErrorEvent(turn=self.turn, source="simulator", kind="budget", message=detail))
        return _End(
            R.ERROR,
            f"{detail}, crossed by the simulated user's model while it was answering (its spend, not the "
            "agent's)",
        )

    def _check_budget(self) -> None:
        usage = self.events[-1].usage
        self.tokens += (usage.input_tokens or 0) + (usage.output_tokens or 0)
        self.cost += usage.cost_usd or 0.0  # unknown cost cannot trip the cap; the graders report it
        limits = self.t.limits
        if limits.max_tokens is not None and self.tokens > limits.max_tokens:
            raise StopTrial("budget_exceeded", f"{self.tokens} tokens > limit {limits.max_tokens}")
        if limits.max_cost_usd is not None and self.cost > limits.max_cost_usd:
            raise StopTrial("budget_exceeded", f"cost ${self.cost:.4f} > limit ${limits.max_cost_usd}")

    def play_history(self) -> None:
        """The scenario's ``history:`` (``env/history.py``): its calls run on this trial's state, its
        events come first (turn 0), and agent and simulator see it as the conversation so far."""
        from simlab.env.history import HistoryError, play_history

        try:
            played = play_history(self.env, self.t.scenario.history)
        except HistoryError as exc:
            self.events.append(ErrorEvent(turn=0, source="lab", kind="invalid_state", message=str(exc)))
            raise _End(R.ERROR, f"scenario bug: {exc}") from None
        self.events.extend(played.events)
        self.messages.extend(played.messages)
        self.history = played.chat
        self.history_events = len(played.events)

    async def play(self) -> None:
        if self.t.scenario.history:
            self.play_history()
        for turn in range(1, self.t.scenario.max_turns + 1):
            self.turn = turn
            await self.user_turn()
            self.check_clock()
            await self.agent_turn()
            self.check_clock()
        raise _End(R.MAX_TURNS, f"turn cap of {self.t.scenario.max_turns} reached without an outcome")

    async def user_turn(self) -> None:
        view = SimView(
            self.t.scenario,
            self.t.persona,
            list(self.messages),
            self.t.seed,
            self.turn,
            record=self.record,
            memory=self.sim_memory,
            unit_id=self.t.unit_id,
            events=self.events,
        )
        self.speaking = "simulator"  # kept when the trial's timeout cancels it here: _run reads it
        try:
            user = await self.t.simulator.next_message(view)
            self.check_clock()  # its time is its own: an overrun here is not the agent's
        except ModelError as exc:
            self.speaking = None
            self._model_failed(exc, "simulator")
        except (_End, TimeoutError):  # the trial's own ends (check_clock, the wall time): not a crash
            raise
        except Exception as exc:  # the simulator's own code (a user's simulator object): blamed there
            self.speaking = None
            detail = scrub(f"{type(exc).__name__}: {exc}")  # its error may echo a key, as an agent's may
            self.events.append(ErrorEvent(turn=self.turn, source="simulator", kind="crash", message=detail))
            raise _End(R.ERROR, f"the simulator crashed: {detail}") from exc
        self.speaking = None
        if user.ended and not user.text and not user.signal:  # lines ran out: no signal was given
            raise _End(R.SCRIPT_ENDED, user.ended)
        if user.text:
            self.events.append(UserMessage(turn=self.turn, text=user.text))
            self.messages.append({"role": "user", "content": user.text})
        if user.signal:
            self.events.append(Signal(turn=self.turn, role="user", signal=user.signal))
            reason = {"stop": R.GOAL_REACHED, "give_up": R.USER_GAVE_UP, "transfer": R.AGENT_TRANSFERRED}
            raise _End(
                reason[user.signal], f"user signalled {user.signal}" + (f" ({user.why})" if user.why else "")
            )
        if not user.text:  # the simulator's (its model's) failure: blamed there, not on the lab
            self.events.append(
                ErrorEvent(turn=self.turn, source="simulator", kind="empty_message", message="no text")
            )
            raise _End(R.ERROR, "the simulator produced an empty message")

    async def agent_turn(self) -> None:
        self.tools.start_turn(self.turn)
        inp = AgentInput(
            list(self.messages),
            dict(self.t.scenario.agent_context),
            self.tools,
            self.t.domain.policy,
            self.t.seed,
            self.turn,
            memory=self.agent_memory,
            record=self.record,
            history=list(self.history),
        )
        try:
            with watched() as empty:  # completions without choices its own LiteLLM calls got (llm/watch.py)
                if self.turn == 1 and self.t.scenario.expect.first_tool_call is not None:
                    await self.probe_first_step()
                reply = await self._bounded(lambda: self.t.agent.respond(inp))
        except ModelError as exc:
            self._model_failed(exc, "agent")
        except (StopTrial, _End, asyncio.CancelledError, KeyboardInterrupt):
            raise
        except (
            Exception
        ) as exc:  # the agent under test crashed: its failure (not the lab's), and this trial's only
            failure = provider_failure(exc)  # ... unless its own model client failed (llm/agent_errors.py)
            if failure is not None:
                self._model_failed(failure, "agent")
            if empty:  # its provider answered no choice for it to read
                self._gave_nothing(empty)
            said = scrub(f"{type(exc).__name__}: {exc}")  # a provider's error may echo the agent's key
            self.events.append(ErrorEvent(turn=self.turn, source="agent", kind="crash", message=said))
            raise _End(R.AGENT_ERROR, f"the agent raised {said}") from None
        if empty and not reply.text.strip() and not reply.transfer:  # nothing to say: its provider's
            self._gave_nothing(empty)
        self._check_reply_size(reply.text)
        self.events.append(AgentMessage(turn=self.turn, text=reply.text))
        self.messages.append({"role": "assistant", "content": reply.text})
        if reply.transfer:
            self.events.append(Signal(turn=self.turn, role="agent", signal="transfer"))
            raise _End(R.AGENT_TRANSFERRED, "the agent transferred the user to a human")

    def _check_reply_size(self, text: str) -> None:
        """A reply over ``limits.max_reply_bytes`` is the agent's failure, kept as its start only
        (every agent is bounded in bytes: an HTTP agent's answer is cut as it is read)."""
        cap = self.t.limits.max_reply_bytes
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= cap:
            return
        said = f"the agent's reply is {size:,} bytes, over the limit of {cap:,} (limits.max_reply_bytes)"
        self.events.append(AgentMessage(turn=self.turn, text=text[:SHOWN_OF_LONG_REPLY] + "…"))
        self.events.append(ErrorEvent(turn=self.turn, source="agent", kind="crash", message=said))
        raise _End(R.AGENT_ERROR, said)

    async def _bounded(self, turn: Callable[[], Awaitable[T]]) -> T:
        """The agent's turn (or the probe of its first step), cut off at ``limits.max_turn_seconds``:
        a hung agent's failure, named; a turn that sat waiting on its own model's answer is its
        provider's (``sim/turn_wait.py``). A sync agent's turn, which the loop waits for, learns its
        bounds from ``TURN_BOUND``."""
        limit = self.t.limits.max_turn_seconds
        loop = asyncio.get_running_loop()
        bound = TurnBound(
            turn=math.inf if limit is None else loop.time() + limit,
            trial=math.inf if self.deadline is None else self.deadline,
        )
        token = TURN_BOUND.set(bound)
        try:
            return await self._within(turn, limit)
        except TurnCutOff as cut:
            if cut.by_trial:  # the trial's wall clock, as its asyncio.timeout says it
                raise StopTrial("budget_exceeded", wall_time_over(self.t.limits.max_seconds)) from None
            assert limit is not None
            raise self._cut_off(limit, thread_waiting(cut.job)) from None
        finally:
            TURN_BOUND.reset(token)

    async def _within(self, turn: Callable[[], Awaitable[T]], limit: float | None) -> T:
        if limit is None:
            return await turn()
        loop = asyncio.get_running_loop()
        watch = TurnWatch()
        try:
            async with asyncio.timeout(None) as clock:
                task = asyncio.current_task()
                deadline = loop.call_at(loop.time() + limit, _expire, watch, task, clock)
                try:
                    return await turn()
                finally:
                    deadline.cancel()
        except TimeoutError:
            if not clock.expired():
                raise  # the agent's own TimeoutError: its crash
            raise self._cut_off(limit, watch.waiting) from None

    @staticmethod
    def _cut_off(limit: float, waiting: str | None) -> BaseException:
        """The turn ran past its bound: the provider's timeout when it waited on its model client,
        else the agent's failure."""
        if waiting is not None:
            return ModelError(
                ModelErrorKind.TIMEOUT,
                f"the agent's model did not answer within the turn's bound of {limit:g} s "
                f"(limits.max_turn_seconds): the turn was waiting on {described(waiting)}; "
                "a slow or hung provider, not the agent (raise the bound if its answers take longer)",
                role="agent",
                model=waited_model(waiting),
            )
        return StopTrial("budget_exceeded", f"{AGENT_TURN_TIMEOUT} {limit:g} s (limits.max_turn_seconds)")

    async def probe_first_step(self) -> None:
        """The single-step check's probe (``sim/probe.py``): the agent's first decision on a throwaway
        memory and tools that never run, recorded before the real first turn."""
        from simlab.sim.probe import ProbeHandle, probe_first_step

        probe = AgentInput(
            list(self.messages),
            dict(self.t.scenario.agent_context),
            ProbeHandle(self.env, lambda event: None, turn=self.turn),
            self.t.domain.policy,
            self.t.seed,
            self.turn,
            memory={},
            record=self.record,
        )
        self.events.append(await self._bounded(lambda: probe_first_step(self.t.agent, probe)))

    def _gave_nothing(self, seen: list[str]) -> None:
        """The agent's provider answered completions without choices (``llm/watch.py``), and the
        agent had nothing to say or crashed on it: an error, the provider's. A framework recorded
        its calls (they returned); for an agent that recorded none, the failed call is recorded."""
        exc = no_choices(seen)
        if not any(
            isinstance(e, ModelCall) and e.turn == self.turn and e.role == "agent" for e in self.events
        ):
            self._model_failed(exc, "agent")  # records the call and its error, and ends the trial
        self.events.append(ErrorEvent(turn=self.turn, source="agent", kind=exc.kind.value, message=str(exc)))
        raise _End(R.ERROR, exc.describe())

    def _model_failed(self, exc: ModelError, source: Role) -> None:
        role = cast(Role, exc.role) if exc.role in get_args(Role) else source
        self.events.append(
            ModelCall(
                turn=self.turn, role=role, model=exc.model, usage=exc.usage, error=f"{exc.kind.value}: {exc}"
            )
        )
        self.events.append(ErrorEvent(turn=self.turn, source=source, kind=exc.kind.value, message=str(exc)))
        if exc.kind is ModelErrorKind.CONTEXT_WINDOW and source == "agent":
            raise _End(R.CONTEXT_WINDOW, f"{source} model {exc.model}: context window exceeded")
        if exc.kind is ModelErrorKind.CONTEXT_WINDOW:  # the lab's own model could not hold the conversation
            raise _End(
                R.ERROR,
                f"{source} model {exc.model}: context window exceeded (the {source}'s model, "
                "not the agent's: use a model with a larger window or fewer max_turns)",
            )
        if exc.kind.permanent:
            raise exc  # the runner stops the whole run: no trial is blamed for it
        raise _End(R.ERROR, exc.describe())


def _expire(watch: TurnWatch, task: asyncio.Task[Any] | None, clock: asyncio.Timeout) -> None:
    """An agent turn's bound ran out: read what its tasks wait on, then cut it off."""
    watch.observe(task)
    clock.reschedule(asyncio.get_running_loop().time())


async def run_trial(trial: Trial, *, clock: Callable[[], float] = time.monotonic) -> Transcript:
    """Play one trial to the end and return its transcript.

    Raises ``ModelError`` only for permanent provider errors (authentication, unknown model, bad
    request), which no trial should be blamed for; everything else ends up in the transcript.
    """
    conv = _Conversation(trial, clock)
    try:
        return await _run(conv, trial, clock)
    finally:  # conv ↔ tools (whose record callback is conv's) is a cycle: break it, so a trial's
        conv.end()  # (also when it raised)
        del conv.tools  # states and events are freed when it ends, not at the next full GC pass


async def _run(conv: _Conversation, trial: Trial, clock: Callable[[], float]) -> Transcript:
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    if trial.limits.max_seconds is not None:
        conv.deadline = asyncio.get_running_loop().time() + trial.limits.max_seconds
    try:
        async with asyncio.timeout(trial.limits.max_seconds):
            await conv.play()
    except _End as end:
        termination = Termination(reason=end.reason, detail=end.detail, turn=conv.turn)
    except StopTrial as stop:
        if stop.reason == R.BUDGET_EXCEEDED.value and conv.speaking == "simulator":
            overspent = conv.user_overspent(stop.detail)
            termination = Termination(reason=overspent.reason, detail=overspent.detail, turn=conv.turn)
        else:
            termination = Termination(reason=R(stop.reason), detail=stop.detail, turn=conv.turn)
    except TimeoutError:
        if conv.speaking == "simulator":
            overran = conv.user_overran(trial.limits.max_seconds)
            termination = Termination(reason=overran.reason, detail=overran.detail, turn=conv.turn)
        else:
            termination = Termination(
                reason=R.BUDGET_EXCEEDED,
                turn=conv.turn,
                detail=wall_time_over(trial.limits.max_seconds),
            )
    conv.end()  # before the final state is read
    return trial_transcript(
        trial,
        events=conv.events,
        history_events=conv.history_events,
        termination=termination,
        final_state=conv.env.snapshot(),
        replay=conv.sim_memory.get("replay"),  # a replay simulator's ReplayInfo (sim/replay.py)
        started_at=started_at,
        duration_s=round(clock() - conv.started, 6),
    )


def trial_transcript(trial: Trial, **rest: Any) -> Transcript:
    """The transcript of ``trial``: who played it and where (its identity and pins), and ``rest``."""
    return Transcript(
        run_id=trial.run_id,
        unit_id=trial.unit_id,
        scenario_id=trial.scenario.id,
        persona_id=trial.persona.id,
        domain=trial.domain.name,
        trial=trial.trial,
        seed=trial.seed,
        agent=trial.agent.pin(),
        simulator=trial.simulator.pin(),
        agent_context=dict(trial.scenario.agent_context),
        **rest,
    )
