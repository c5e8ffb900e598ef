"""A scenario's ``faults:`` block: a tool fails, times out, or answers overridden or stale data on its
Nth call or with a seeded probability; each hit is a ``tool_fault`` event, the state is untouched,
and the efficiency counts say how the agent coped. The retail demo shows the careful agent
recovering and the flaky one not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from simlab.cli.main import main
from simlab.env import Environment
from simlab.env.faults import FaultPlan
from simlab.graders.efficiency import efficiency_counts
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs.faults import DEFAULT_ERROR, ToolFault
from tests.support import KV, copy_demo, make_trial, scenario

ROOT = Path(__file__).resolve().parent.parent


def env(*faults: dict, seed: int = 1) -> Environment:
    return Environment(KV, KV.build_state(), faults=[ToolFault.model_validate(f) for f in faults], seed=seed)


def test_an_error_fault_hits_only_the_nth_call_and_changes_nothing():
    e = env({"tool": "set_item", "kind": "error", "on_call": 2})
    assert e.execute("set_item", {"key": "b", "value": "2"}).ok
    second = e.execute("set_item", {"key": "c", "value": "3"})
    assert not second.ok and second.error == DEFAULT_ERROR
    assert second.extra["injected"] == {"kind": "error", "fault": 0, "call": 2}
    assert "fault" not in second.extra  # not the domain misbehaving
    assert e.snapshot()["items"] == {"a": "1", "b": "2"}
    assert e.execute("set_item", {"key": "c", "value": "3"}).ok  # the third goes through
    assert e.snapshot()["items"] == {"a": "1", "b": "2", "c": "3"}


def test_invalid_calls_do_not_count_as_calls():
    e = env({"tool": "set_item", "kind": "error", "on_call": 1, "message": "gateway down"})
    assert e.execute("set_item", {"key": "b"}).invalid_reason  # no value: never ran
    assert e.execute("set_item", {"key": "b", "value": "2"}).error == "gateway down"


def test_a_timeout_fault_reads_as_a_hung_tool_without_waiting():
    e = env({"tool": "get_item", "kind": "timeout", "on_call": 1})
    out = e.execute("get_item", {"key": "a"})
    assert not out.ok and out.error == "tool get_item did not return within 30 s; it was cut off"


def test_an_override_answers_the_given_data_and_does_not_run_the_tool():
    e = env({"tool": "set_item", "kind": "override", "on_call": 1, "result": {"ok": True, "note": "queued"}})
    out = e.execute("set_item", {"key": "b", "value": "2"})
    assert out.ok and out.result == {"ok": True, "note": "queued"}
    assert e.snapshot()["items"] == {"a": "1"}  # the write never happened: a lying backend


def test_a_stale_read_answers_from_the_initial_state():
    e = env({"tool": "get_item", "kind": "stale", "on_call": 2})
    assert e.execute("set_item", {"key": "a", "value": "new"}).ok
    assert e.execute("get_item", {"key": "a"}).result == {"key": "a", "value": "new"}
    stale = e.execute("get_item", {"key": "a"})
    assert stale.ok and stale.result == {"key": "a", "value": "1"}
    assert stale.extra["injected"]["kind"] == "stale"
    assert e.snapshot()["items"] == {"a": "new"}


def test_a_probability_is_drawn_from_the_trial_seed():
    fault = [ToolFault(tool="get_item", kind="error", probability=0.3)]

    def pattern(seed: int) -> list[bool]:
        plan = FaultPlan(fault, seed)
        return [plan.next_call("get_item") is not None for _ in range(40)]

    assert pattern(5) == pattern(5)  # the same trial meets the same faults
    assert pattern(5) != pattern(6)
    hits = sum(sum(pattern(seed)) for seed in range(50))
    assert 0.2 < hits / 2000 < 0.4


def test_another_fault_does_not_move_where_a_fault_fires():
    one = [ToolFault(tool="get_item", kind="error", probability=0.5)]
    two = [*one, ToolFault(tool="set_item", kind="error", probability=0.5)]
    a, b = FaultPlan(one, 9), FaultPlan(two, 9)
    seen_a, seen_b = [], []
    for _ in range(30):
        b.next_call("set_item")
        seen_a.append(a.next_call("get_item") is not None)
        seen_b.append(b.next_call("get_item") is not None)
    assert seen_a == seen_b


@pytest.mark.parametrize("data, problem", [
    ({"tool": "t", "kind": "error"}, "exactly one of on_call"),
    ({"tool": "t", "kind": "error", "on_call": 1, "probability": 0.5}, "exactly one of on_call"),
    ({"tool": "t", "kind": "override", "on_call": 1}, "needs result"),
    ({"tool": "t", "kind": "timeout", "on_call": 1, "message": "x"}, "message is for kind error"),
    ({"tool": "t", "kind": "error", "on_call": 1, "result": 1}, "result is for kind override"),
    ({"tool": "t", "kind": "crash", "on_call": 1}, "kind"),
    ({"tool": "t", "kind": "error", "probability": 0}, "probability"),
])
def test_a_bad_fault_is_refused(data, problem):
    with pytest.raises(ValidationError, match=problem):
        ToolFault.model_validate(data)


def test_validate_names_the_file_line_and_field_of_a_bad_fault(tmp_path, capsys):
    root = copy_demo(tmp_path)
    path = root / "scenarios" / "retail" / "refund-damaged-card.yaml"
    path.write_text(path.read_text() + "faults:\n  - {tool: issue_refnd, kind: error, on_call: 1}\n"
                    "  - {tool: issue_refund, kind: stale, on_call: 1}\n")
    code = main(["validate", str(root / "scenarios")])
    err = capsys.readouterr().err
    assert code == 2
    assert "refund-damaged-card.yaml:" in err and "faults.0.tool: unknown tool 'issue_refnd'" in err
    assert "did you mean 'issue_refund'" in err
    assert "faults.1.kind: a stale answer needs a READ tool" in err


async def test_a_trial_records_each_fault_as_an_event_after_its_result():
    scn = scenario(faults=[{"tool": "set_item", "kind": "error", "on_call": 1}])
    transcript = await run_trial(make_trial(PythonAgent(retrying_kv_agent, "t:retrying_kv_agent"), RulesSimulator(),
                                            scn=scn))
    kinds = [e.type for e in transcript.events if e.type.startswith("tool")]
    assert kinds == ["tool_call", "tool_result", "tool_fault", "tool_call", "tool_result"]
    fault = next(e for e in transcript.events if e.type == "tool_fault")
    assert (fault.name, fault.kind, fault.call_number, fault.fault) == ("set_item", "error", 1, 0)
    assert fault.call_id == transcript.events[transcript.events.index(fault) - 2].call_id
    assert not any(e.type == "error" for e in transcript.events)  # the lab did not break
    assert transcript.final_state["items"] == {"a": "1", "b": "2"}
    assert efficiency_counts(transcript)["faults"] == {"injected": 1, "attempts_after": 1, "recovered": 1}


def retrying_kv_agent(inp) -> str:
    reply = inp.tools.call("set_item", key="b", value="2")
    if not reply.ok:
        reply = inp.tools.call("set_item", key="b", value="2")
    return "Done, b is stored." if reply.ok else "Sorry, that did not work."


async def test_an_agent_that_gives_up_recovers_nothing():
    scn = scenario(faults=[{"tool": "set_item", "kind": "timeout", "probability": 1.0}])
    transcript = await run_trial(make_trial(PythonAgent(retrying_kv_agent, "t:retrying_kv_agent"), RulesSimulator(),
                                            scn=scn))
    counts = efficiency_counts(transcript)["faults"]
    assert counts["injected"] >= 2 and counts["recovered"] == 0
    assert counts["attempts_after"] == counts["injected"] * (counts["injected"] - 1) // 2
    assert transcript.final_state["items"] == {"a": "1"}


def test_the_demo_careful_agent_recovers_and_the_flaky_one_does_not(tmp_path, monkeypatch):
    root = copy_demo(tmp_path)
    (root / "suites").mkdir()
    (root / "suites" / "faults.yaml").write_text((ROOT / "suites" / "faults.yaml").read_text())
    monkeypatch.chdir(root)
    assert main(["run", "--suite", "suites/faults.yaml", "--run-id", "careful", "--no-progress"]) == 0
    code = main(["run", "--suite", "suites/faults.yaml", "--run-id", "flaky", "--no-progress",
                 "--agent", "python:examples.retail_agents:flaky_agent"])
    assert code == 1

    def trials(run: str) -> list[dict]:
        lines = (root / "transcripts" / run / "trials.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    careful, flaky = trials("careful"), trials("flaky")
    assert len(careful) == len(flaky) == 4
    for record in careful:
        assert [e["type"] for e in record["transcript"]["events"]].count("tool_fault") == 1
    assert {r["verdict"] for r in careful} == {"pass"}
    assert {r["verdict"] for r in flaky} == {"fail"}

    def fault_counts(record: dict) -> dict:
        check = next(c for c in record["checks"] if c["name"] == "efficiency")
        return check["details"]["faults"]

    assert all(fault_counts(r) == {"injected": 1, "attempts_after": 1, "recovered": 1} for r in careful)
    # a flaky trial that loops on lookup_order never reaches the refund: it meets no fault
    met = [fault_counts(r) for r in flaky if fault_counts(r)["injected"]]
    assert met and all(f == {"injected": 1, "attempts_after": 0, "recovered": 0} for f in met)


async def test_the_viewer_and_the_markdown_export_show_an_injected_fault():
    from simlab.transcript import TrialRecord
    from simlab.tui.export import transcript_markdown
    from simlab.tui.render import event_text

    scn = scenario(faults=[{"tool": "set_item", "kind": "error", "on_call": 1}])
    transcript = await run_trial(make_trial(PythonAgent(retrying_kv_agent, "t:retrying_kv_agent"), RulesSimulator(),
                                            scn=scn))
    fault = next(e for e in transcript.events if e.type == "tool_fault")
    assert event_text(fault).plain == "⚡ injected fault (error) on set_item, its call 1 (faults[0])"
    markdown = transcript_markdown(TrialRecord(unit_id=transcript.unit_id, transcript=transcript))
    assert "*injected fault (error) on `set_item`, its call 1*" in markdown


def test_a_model_that_reuses_call_ids_still_gets_each_call_paired_with_its_own_result():
    """Local servers often answer "call_0" in every reply: the transcript gives each call an id of
    its own, so the fault, the failed call and the later successful retry are told apart."""
    from simlab.graders.policy import calls_of
    from simlab.sim.tool_handle import ToolHandle
    from simlab.transcript.counts import tool_counts

    events: list = []
    handle = ToolHandle(env({"tool": "set_item", "kind": "error", "on_call": 1}), events.append, turn=1)
    assert not handle.call("set_item", {"key": "b", "value": "2"}, call_id="call_0").ok
    handle.start_turn(2)
    assert handle.call("set_item", {"key": "b", "value": "2"}, call_id="call_0").ok
    assert handle.call("get_item", {"key": "b"}, call_id="call_0").ok
    ids = [e.call_id for e in events if e.type == "tool_call"]
    assert ids[0] == "call_0" and len(set(ids)) == 3
    from tests.sample_runs import sample_record

    t = sample_record("r", "s", 1).transcript.model_copy(update={"events": events})
    assert [c.ok for c in calls_of(t)] == [False, True, True]
    assert efficiency_counts(t)["faults"] == {"injected": 1, "attempts_after": 1, "recovered": 1}
    assert tool_counts(t.events)["tool_errors"] == 1
