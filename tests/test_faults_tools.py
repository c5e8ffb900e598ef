"""Domain tools that raise, hang, or change state they should not: the trial records an error result
(and an error event naming the fault), the state is left as it was, and the run goes on."""

from __future__ import annotations

import pytest

from simlab.cli.main import main
from simlab.env import Environment
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.simulators import RulesSimulator
from tests.fixtures.hostile import helpers
from tests.fixtures.hostile.helpers import BAD, misbehaving_tools_agent, read_lines
from tests.support import make_trial, scenario


@pytest.fixture(autouse=True)
def release_hung_tools(tool_timeouts_without_a_clock):
    helpers.RELEASE.clear()
    yield
    helpers.RELEASE.set()  # let the abandoned tool threads finish


def env() -> Environment:
    return Environment(BAD, BAD.build_state({"items": {"a": "1"}}))


def test_a_crashing_tool_is_an_error_result_and_leaves_no_half_write():
    e = env()
    outcome = e.execute("explode", {"key": "k"})
    assert not outcome.ok and outcome.error == "tool crashed: RuntimeError: the database connection was lost"
    assert outcome.extra["fault"] == "crash" and e.snapshot() == {"items": {"a": "1"}}


def test_a_hung_tool_is_cut_off_and_cannot_touch_the_state_later():
    e = env()
    helpers.SPUN.clear()
    outcome = e.execute("spin", {"key": "k"})
    assert not outcome.ok and outcome.extra["fault"] == "timeout"
    assert "did not return within 0.2 s" in outcome.error
    helpers.RELEASE.set()  # the thread now finishes and writes... to its own discarded copy
    assert helpers.SPUN.wait(10)
    assert e.snapshot() == {"items": {"a": "1"}}
    assert e.execute("set_item", {"key": "b", "value": "2"}).ok  # the environment still works


def test_a_read_tool_that_writes_is_caught_and_its_change_dropped():
    e = env()
    outcome = e.execute("peek", {"key": "a"})
    assert not outcome.ok and outcome.extra["fault"] == "read_wrote"
    assert outcome.error == "read tool peek changed the state; the change was discarded"
    assert e.snapshot() == {"items": {"a": "1"}}


def test_without_a_timeout_tools_run_inline():
    import dataclasses

    e = Environment(dataclasses.replace(BAD, tool_timeout_s=None), BAD.build_state())
    assert e.execute("set_item", {"key": "b", "value": "2"}).ok and e.snapshot() == {"items": {"b": "2"}}


async def test_the_trial_records_each_fault_and_goes_on():
    scn = scenario(domain="tests.fixtures.hostile.helpers:BAD")
    trial = make_trial(PythonAgent(misbehaving_tools_agent, "helpers:misbehaving_tools_agent"), RulesSimulator(),
                       scn=scn)
    trial.domain, trial.initial_state = BAD, BAD.build_state()
    transcript = await run_trial(trial)
    results = {e.name: e for e in transcript.events if e.type == "tool_result"}
    assert not results["peek"].ok and not results["explode"].ok and not results["spin"].ok
    assert results["set_item"].ok
    errors = [(e.source, e.kind) for e in transcript.events if e.type == "error"]
    assert errors == [("tool", "read_wrote"), ("tool", "crash"), ("tool", "timeout")]
    assert transcript.termination.reason.value == "goal_reached"
    assert transcript.final_state == {"items": {"b": "2"}}


def test_a_run_with_misbehaving_tools_finishes(tmp_path, monkeypatch):
    from tests.support import write_project

    agent = "python:tests.fixtures.hostile.helpers:misbehaving_tools_agent"
    write_project(tmp_path, scenarios=2, trials=2, agent=agent)
    for path in (tmp_path / "scenarios").glob("*.yaml"):
        path.write_text(path.read_text().replace("tests.support:KV", "tests.fixtures.hostile.helpers:BAD"))
    monkeypatch.chdir(tmp_path)
    # every trial is played; each is an error (the domain's tools are to blame), so the run is inconclusive
    assert main(["run", "--run-id", "bad", "--no-progress"]) == 3
    records = read_lines(tmp_path / "transcripts/bad/trials.jsonl")
    assert len(records) == 4
    for record in records:
        kinds = [e["kind"] for e in record["transcript"]["events"] if e["type"] == "error"]
        assert kinds == ["read_wrote", "crash", "timeout"]
        assert record["transcript"]["termination"]["reason"] == "goal_reached"
        assert record["verdict"] == "error"
        crashes = {c["name"]: c["reason"] for c in record["checks"] if c["name"].startswith("tool_crash:")}
        assert sorted(crashes) == ["tool_crash:explode", "tool_crash:peek", "tool_crash:spin"]
        assert "RuntimeError: the database connection was lost" in crashes["tool_crash:explode"]


def test_a_tool_result_over_the_limit_is_cut_before_anyone_keeps_it():
    """Every agent is bounded in bytes too: a tool that answers 3 MB is kept (and shown to the
    agent) as its first characters and a note naming the limit."""
    from simlab.sim.tool_handle import ToolHandle
    from simlab.transcript import ToolResult

    e = Environment(helpers.BIG, helpers.BIG.build_state({}))
    events: list = []
    handle = ToolHandle(e, events.append, turn=1)
    reply = handle.call("dump", size=3_000_000)
    result = next(ev for ev in events if isinstance(ev, ToolResult)).result
    assert reply.ok and reply.result == result and len(result["start"]) == 2_000
    assert "over the limit of 1,000,000 (max_tool_result_bytes)" in result["cut"]
    assert handle.call("dump", size=10).result == "x" * 10  # under the limit: as it was
    assert "cut" in ToolHandle(e, events.append, max_result_bytes=9).call("dump", size=10).result
