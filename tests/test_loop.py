"""The conversation loop: each termination reason, recorded events, per-trial isolation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from simlab.llm.types import ChatResult, ModelError, ModelErrorKind, ToolCallRequest
from simlab.sim.agents import AgentReply, LLMAgent, PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.simulators import RulesSimulator, ScriptedSimulator
from simlab.specs import Limits
from simlab.transcript import (
    AgentMessage,
    ErrorEvent,
    InvalidCall,
    ModelCall,
    Signal,
    TerminationReason,
    ToolCall,
    ToolResult,
    Usage,
)
from tests.support import make_trial, scenario


def storing_agent(inp):
    inp.tools.call("set_item", key="b", value="2")
    return "Done: b is stored."


def silent_agent(inp):
    return "Hmm, let me think."


def run(trial):
    return asyncio.run(run_trial(trial))


def test_goal_reached_when_user_stops():
    t = run(make_trial(PythonAgent(storing_agent, "t:storing"), RulesSimulator()))
    assert t.termination.reason.value == "goal_reached"
    assert t.final_state["items"] == {"a": "1", "b": "2"}
    kinds = [e.type for e in t.events]
    assert kinds == ["user", "tool_call", "tool_result", "agent", "user", "signal"]
    assert isinstance(t.events[-1], Signal) and t.events[-1].signal == "stop"


def test_a_script_that_runs_out_ends_the_trial_as_script_ended_without_a_signal():
    scn = scenario(user={"goal": "Store b=2.", "script": ["Please store b=2.", "thanks"]})
    t = run(make_trial(PythonAgent(silent_agent, "t:silent"), ScriptedSimulator(), scn=scn))
    assert t.termination.reason is TerminationReason.SCRIPT_ENDED and t.termination.turn == 3
    assert t.termination.detail == "the script ended: all 2 lines played, none signalled stop"
    assert [e.type for e in t.events] == ["user", "agent", "user", "agent"]  # no stop signal was made up
    stopped = scenario(user={"goal": "Store b=2.", "script": ["Please store b=2.", "thanks ###STOP###"]})
    t = run(make_trial(PythonAgent(silent_agent, "t:silent"), ScriptedSimulator(), scn=stopped))
    assert (t.termination.reason.value, t.termination.detail) == ("goal_reached", "user signalled stop")


def test_each_trial_gets_a_fresh_state():
    trial = make_trial(PythonAgent(storing_agent, "t:storing"), RulesSimulator())
    run(trial)
    assert trial.initial_state.model_dump()["items"] == {"a": "1"}
    again = run(trial)
    assert again.final_state["items"] == {"a": "1", "b": "2"}


def test_user_gives_up_after_unhelpful_replies():
    t = run(make_trial(PythonAgent(silent_agent, "t:silent"), RulesSimulator()))
    assert t.termination.reason.value == "user_gave_up"  # persona gives up after 2


def test_turn_cap_is_reported_not_passed():
    scn = scenario(user={"goal": "g", "script": ["one", "two", "three", "four", "five"]}, max_turns=3)
    t = run(make_trial(PythonAgent(silent_agent, "t:silent"), ScriptedSimulator(), scn=scn))
    assert t.termination.reason.value == "max_turns"
    assert sum(isinstance(e, AgentMessage) for e in t.events) == 3


def test_agent_loop_is_cut_after_three_identical_calls():
    def looping(inp):
        while True:
            inp.tools.call("get_item", key="zzz")

    t = run(make_trial(PythonAgent(looping, "t:loop"), RulesSimulator()))
    assert t.termination.reason.value == "agent_loop"
    assert sum(isinstance(e, ToolCall) for e in t.events) == 3


def test_agent_loop_detection_cannot_be_swallowed_by_the_agent():
    def stubborn(inp):
        for _ in range(10):
            try:
                inp.tools.call("get_item", key="zzz")
            except Exception:  # the point of the test
                pass
        return "done"

    t = run(make_trial(PythonAgent(stubborn, "t:stubborn"), RulesSimulator()))
    assert t.termination.reason.value == "agent_loop"


def test_agent_transfer_ends_the_trial():
    t = run(make_trial(PythonAgent(lambda inp: AgentReply("A human will help you.", transfer=True), "t:x"),
                       RulesSimulator()))
    assert t.termination.reason.value == "agent_transferred"
    assert any(isinstance(e, Signal) and e.role == "agent" for e in t.events)


def test_agent_crash_is_the_agents_failure_not_an_infrastructure_error():
    def broken(inp):
        raise RuntimeError("boom")

    t = run(make_trial(PythonAgent(broken, "t:broken"), RulesSimulator()))
    assert t.termination.reason.value == "agent_error"  # its own reason: not "error", which is the lab's
    assert "RuntimeError: boom" in t.termination.detail
    assert any(isinstance(e, ErrorEvent) and e.source == "agent" and "boom" in e.message for e in t.events)


class _LeakySimulator(RulesSimulator):
    """A simulator object whose own model call fails with an error that echoes its key."""

    async def next_message(self, view):  # type: ignore[no-untyped-def]
        raise RuntimeError("auth failed for key sk-simulatorsecret1234 (Authorization: Bearer abcdef123456)")


def test_a_simulator_crash_keeps_its_key_out_of_the_trial():
    t = run(make_trial(PythonAgent(silent_agent, "t:silent"), _LeakySimulator()))
    said = [t.termination.detail, *(e.message for e in t.events if isinstance(e, ErrorEvent))]
    assert "auth failed" in said[0] and len(said) == 2, said
    assert all("simulatorsecret" not in s and "abcdef123456" not in s for s in said), said


def test_wall_time_budget(virtual_time):  # the 5 s sleep passes at once on the virtual clock
    async def slow(inp):
        await asyncio.sleep(5)
        return "late"

    from simlab.specs import Limits

    t = run(make_trial(PythonAgent(slow, "t:slow"), RulesSimulator(), limits=Limits(max_seconds=0.05)))
    assert t.termination.reason.value == "budget_exceeded"


def test_a_hung_agent_turn_ends_at_the_default_turn_limit(virtual_time):
    """No limit set: an agent that never answers ends its trial at the default 300 s per turn
    (on the virtual clock: at once), named; the agent's own TimeoutError stays its crash."""
    async def hung(inp):
        await asyncio.Event().wait()

    t = run(make_trial(PythonAgent(hung, "t:hung"), RulesSimulator()))
    assert t.termination.reason.value == "budget_exceeded" and t.termination.turn == 1
    assert "the agent's turn ran over 300 s (limits.max_turn_seconds)" in t.termination.detail

    async def times_out_itself(inp):
        raise TimeoutError("my backend")

    t = run(make_trial(PythonAgent(times_out_itself, "t:own"), RulesSimulator()))
    assert t.termination.reason.value == "agent_error" and "my backend" in t.termination.detail


def test_a_hung_synchronous_agent_ends_its_trial_at_the_turn_limit(virtual_time):
    """A plain ``def`` agent that never returns (blocked, or busy in a loop) is cut off at
    ``max_turn_seconds`` as a hung async agent is: the agent's failure, named; the loop never waits
    for its thread, and a tool call it makes once the trial is over is refused, never recorded."""
    import threading

    from tests.virtual_time import wait_on_the_test

    release, finished = threading.Event(), threading.Event()
    after: list[Any] = []
    ran_on: list[threading.Thread] = []

    def hung(inp):
        ran_on.append(threading.current_thread())
        try:
            wait_on_the_test(release)  # returns only once the test saw the trial end
            inp.tools.call("set_item", key="late", value="1")
        except BaseException as exc:  # what the late call met
            after.append(exc)
            raise
        finally:
            finished.set()

    t = run(make_trial(PythonAgent(hung, "t:hung_sync"), RulesSimulator(), limits=Limits(max_turn_seconds=5)))
    release.set()
    finished.wait()
    assert t.termination.reason.value == "budget_exceeded" and t.termination.turn == 1
    assert [type(e).__name__ for e in after] == ["StopTrial"]
    assert "the agent's turn ran over 5 s (limits.max_turn_seconds)" in t.termination.detail
    assert "late" not in t.final_state["items"]
    ran_on[0].join(timeout=60)  # the timeout guards a stuck thread only
    assert not ran_on[0].is_alive()  # abandoned, it retires once it returns: later turns keep one thread


def test_a_hung_synchronous_agent_ends_at_its_trials_wall_clock_when_that_comes_first(virtual_time):
    """``limits.max_seconds`` cuts off a sync agent's hung turn as it cuts off the trial: the
    trial's budget, named by its wall clock, not by the turn's bound."""
    import threading

    from tests.virtual_time import wait_on_the_test

    release = threading.Event()

    def hung(inp):
        wait_on_the_test(release)

    limits = Limits(max_turn_seconds=300, max_seconds=10)
    t = run(make_trial(PythonAgent(hung, "t:hung_sync"), RulesSimulator(), limits=limits))
    release.set()
    assert (t.termination.reason.value, t.termination.turn) == ("budget_exceeded", 1)
    assert t.termination.detail == "wall time over the limit of 10.0 s"


def test_a_sync_agent_hung_in_the_probe_of_its_first_step_is_cut_off_too(virtual_time):
    """``expect.first_tool_call`` asks the agent for its first step before the turn: that probe is
    held to the turn's bound as the turn is (a hung agent there hung the whole run)."""
    import threading

    from tests.virtual_time import wait_on_the_test

    release = threading.Event()

    def hung(inp):
        wait_on_the_test(release)

    scn = scenario(expect={"first_tool_call": {"tool": "set_item", "args": {"key": "b"}}})
    t = run(make_trial(PythonAgent(hung, "t:hung_sync"), RulesSimulator(), scn=scn,
                       limits=Limits(max_turn_seconds=5)))
    release.set()
    assert (t.termination.reason.value, t.termination.turn) == ("budget_exceeded", 1)
    assert "the agent's turn ran over 5 s (limits.max_turn_seconds)" in t.termination.detail


def test_sync_agents_take_their_turns_one_at_a_time_on_one_thread() -> None:
    """The loop waits for a sync agent's turn, as when it ran on the loop: the turns of trials in
    flight never overlap (an agent's module state is not shared between threads at once, and a run
    of such agents plays in the same order every time), and they run on the same thread, so an
    object bound to the thread that made it (a sqlite3 connection) serves every turn."""
    import sqlite3
    import threading

    inside, most, threads = [0], [0], set()
    store: dict[str, sqlite3.Connection] = {}

    def agent(inp):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        threads.add(threading.get_ident())
        db = store.setdefault("db", sqlite3.connect(":memory:"))  # made on the first turn's thread
        db.execute("select 1")
        inside[0] -= 1
        return storing_agent(inp)

    async def many():
        trials = [make_trial(PythonAgent(agent, "t:sync"), RulesSimulator()) for _ in range(6)]
        return await asyncio.gather(*(run_trial(t) for t in trials))

    transcripts = asyncio.run(many())
    assert {t.termination.reason.value for t in transcripts} == {"goal_reached"}
    assert most[0] == 1 and len(threads) == 1 and threading.get_ident() not in threads


class FakeChat:
    """A minimal ChatModel for the loop tests; the llm package's own doubles are tested there."""

    role = "agent"

    def __init__(self, replies, model="fake/agent"):
        self.replies = list(replies)
        self.model = model

    def pin(self):
        from simlab.transcript import Pin

        return Pin(kind="llm", ref=self.model)

    async def chat(self, messages, *, tools=None, seed=None):
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_llm_agent_tool_loop_records_calls_usage_and_invalid_calls():
    usage = Usage(input_tokens=10, output_tokens=5, cost_usd=None)
    model = FakeChat([
        ChatResult(None, [ToolCallRequest("c1", "nope", "{}")], usage),
        ChatResult(None, [ToolCallRequest("c2", "set_item", '{"key": "b"')], usage),
        ChatResult(None, [ToolCallRequest("c3", "set_item", '{"key": "b", "value": "2"}')], usage),
        ChatResult("All stored.", [], usage),
    ])
    t = run(make_trial(LLMAgent(model), RulesSimulator()))
    assert t.termination.reason.value == "goal_reached"
    invalid = [e for e in t.events if isinstance(e, InvalidCall)]
    assert [e.call_id for e in invalid] == ["c1", "c2"]
    results = [e for e in t.events if isinstance(e, ToolResult)]
    assert [r.ok for r in results] == [False, False, True]
    calls = [e for e in t.events if isinstance(e, ModelCall)]
    assert len(calls) == 4 and all(c.role == "agent" and c.usage.cost_usd is None for c in calls)
    assert t.usage_by_role()["agent"].input_tokens == 40


def test_llm_agent_step_cap_is_a_loop():
    calls = [ChatResult(None, [ToolCallRequest(f"c{i}", "get_item", f'{{"key": "k{i}"}}')]) for i in range(5)]
    t = run(make_trial(LLMAgent(FakeChat(calls), max_steps=3), RulesSimulator()))
    assert t.termination.reason.value == "agent_loop"


def test_transient_model_error_ends_trial_as_error_with_usage():
    err = ModelError(ModelErrorKind.TRANSIENT, "rate limited", role="agent", model="fake/agent",
                     usage=Usage(retries=4, retry_wait_s=3.0))
    t = run(make_trial(LLMAgent(FakeChat([err])), RulesSimulator()))
    assert t.termination.reason.value == "error"
    failed = [e for e in t.events if isinstance(e, ModelCall)]
    assert failed[0].usage.retries == 4 and failed[0].error


def test_context_window_has_its_own_reason():
    err = ModelError(ModelErrorKind.CONTEXT_WINDOW, "too long", role="agent", model="fake/agent")
    t = run(make_trial(LLMAgent(FakeChat([err])), RulesSimulator()))
    assert t.termination.reason.value == "context_window"


def test_permanent_model_error_propagates_to_stop_the_run():
    import pytest

    err = ModelError(ModelErrorKind.AUTH, "bad key", role="agent", model="fake/agent")
    with pytest.raises(ModelError):
        run(make_trial(LLMAgent(FakeChat([err])), RulesSimulator()))


def test_token_budget_stops_the_trial():
    from simlab.specs import Limits

    big = Usage(input_tokens=600, output_tokens=10)
    model = FakeChat([ChatResult("Hello?", [], big)] * 3)
    t = run(make_trial(LLMAgent(model), RulesSimulator(), limits=Limits(max_tokens=1000)))
    assert t.termination.reason.value == "budget_exceeded"


class StepClock:
    """An injected clock: it moves only when the test says work was done."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_the_wall_time_limit_holds_for_synchronous_work() -> None:
    clock = StepClock()

    def busy_agent(inp: Any) -> str:  # synchronous: the event loop cannot interrupt it
        clock.now += 30.0  # what a long synchronous computation costs
        return "Which key and value should I store?"

    trial = make_trial(PythonAgent(busy_agent, "t:busy"), RulesSimulator(), limits=Limits(max_seconds=45))
    transcript = await run_trial(trial, clock=clock)
    assert transcript.termination.reason == TerminationReason.BUDGET_EXCEEDED
    assert transcript.termination.detail == "wall time over the limit of 45.0 s"
    assert transcript.termination.turn == 2  # stopped right after the step that crossed the limit


async def test_the_wall_time_limit_is_checked_between_tool_calls() -> None:
    clock = StepClock()

    def tool_heavy_agent(inp: Any) -> str:
        for _ in range(10):
            clock.now += 10.0
            inp.tools.call("get_item", key="a")
        return "done"

    trial = make_trial(PythonAgent(tool_heavy_agent, "t:tools"), RulesSimulator(), limits=Limits(max_seconds=25))
    transcript = await run_trial(trial, clock=clock)
    assert transcript.termination.reason == TerminationReason.BUDGET_EXCEEDED
    assert sum(e.type == "tool_call" for e in transcript.events) == 3  # the third call crossed 25 s


@pytest.mark.slow  # a child process
def test_simlab_run_with_a_hung_synchronous_agent_returns_and_exits(tmp_path: Any) -> None:
    """End to end: ``simlab run`` whose ``def`` agent blocks for good ends the trial at
    ``max_turn_seconds`` as the agent's failure, and the process exits (the stuck thread is left)."""
    import json
    import os
    import subprocess
    import sys

    from tests.support import REPO, write_project

    write_project(tmp_path, scenarios=1, trials=1, agent="python:agent.py:hung")
    (tmp_path / "agent.py").write_text("import threading\n\n\ndef hung(inp):\n    threading.Event().wait()\n")
    config = tmp_path / "simlab.yaml"
    config.write_text(config.read_text() + "limits:\n  max_turn_seconds: 0.2\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(  # the timeout guards a stuck child only: the run ends at its turn's bound
        [sys.executable, "-m", "simlab.cli.main", "run", "--run-id", "k", "--no-progress"],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    [line] = (tmp_path / "transcripts" / "k" / "trials.jsonl").read_text().splitlines()
    record = json.loads(line)
    termination = record["transcript"]["termination"]
    assert (record["verdict"], termination["reason"], termination["turn"]) == ("fail", "budget_exceeded", 1)
    assert "the agent's turn ran over 0.2 s (limits.max_turn_seconds)" in termination["detail"]


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_ctrl_c_stops_a_run_whose_sync_agent_hangs(tmp_path: Any, workers: list[str]) -> None:
    """One Ctrl-C ends ``simlab run`` while its ``def`` agents hang far from their bound (the loop
    waits for a sync turn, yet looks for a request to stop: asyncio's own, or a worker's SIGTERM):
    exit 130, the run resumable, no traceback; before, it waited out the turn's bound."""
    import os
    import signal
    import subprocess
    import sys

    from tests.support import REPO, write_project

    write_project(tmp_path, scenarios=2, trials=2, agent="python:agent.py:hung")
    (tmp_path / "agent.py").write_text(
        "import pathlib, threading\n\n\ndef hung(inp):\n"
        "    pathlib.Path(f'hung-{threading.get_ident()}').touch()\n    threading.Event().wait()\n"
    )
    config = tmp_path / "simlab.yaml"
    config.write_text(config.read_text() + "limits:\n  max_turn_seconds: 3600\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-m", "simlab.cli.main", "run", "--run-id", "k", "--no-progress", *workers],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        while not list(tmp_path.glob("hung-*")) and child.poll() is None:  # a turn has begun to hang
            try:
                child.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=120)  # guards a stuck child only
    finally:
        child.kill()
    text = err.decode()
    assert child.returncode == 130, text
    assert "Traceback" not in text and "interrupted: finished trials are saved" in text
