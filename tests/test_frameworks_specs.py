"""Framework agents in the specs and the transcript, without running a framework: how a spec names
them, that the base install never imports a framework, the error when an extra is missing, the new
transcript events, and what the new checks say when there is nothing to check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from simlab.graders.base import GradeContext
from simlab.graders.graph import grade_graph
from simlab.graders.single_step import grade_first_tool_call
from simlab.specs import AgentSpec
from simlab.transcript import GraphState, GraphStep, Handoff, PendingToolCall, Pin, Transcript
from tests.framework_play import BY_ID, DOMAINS, scenario

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORK_MODULES = ("langgraph", "langchain_core", "agents", "pydantic_ai")


@pytest.mark.parametrize(("value", "kind", "ref"), [
    ("langgraph:examples.langgraph_retail:careful_graph", "langgraph", "examples.langgraph_retail:careful_graph"),
    ({"openai_agents": "m:a"}, "openai_agents", "m:a"),
    ({"pydantic_ai": "m:a", "price": {"input": 0, "output": 0}, "max_steps": 5}, "pydantic_ai", "m:a"),
    ({"langgraph": "m:g", "tool_nodes": ["tools"]}, "langgraph", "m:g"),
])
def test_a_framework_agent_is_named_by_kind_and_reference(value: object, kind: str, ref: str) -> None:
    spec = AgentSpec.model_validate(value)
    assert spec.framework == (kind, ref)
    assert spec.ref == f"{kind}:{ref}" and spec.model is None and spec.python is None


@pytest.mark.parametrize(("value", "problem"), [
    ({"langgraph": "m:g", "model": "openai/gpt-4o"}, "give exactly one of 'model'"),
    ({"langgraph": "m"}, "'langgraph' must be module:attr"),
    ({"openai_agents": "m:a", "api_base": "http://127.0.0.1:1/v1"}, "api_base only apply to a 'model' agent"),
    ({"pydantic_ai": "m:a", "system_prompt": "be nice"}, "system_prompt only apply to a 'model' agent"),
    ({"python": "m:f", "tool_nodes": ["tools"]}, "'tool_nodes' only applies to a 'langgraph' agent"),
])
def test_framework_agent_spec_errors(value: object, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        AgentSpec.model_validate(value)


def test_the_base_install_never_imports_a_framework() -> None:
    code = (
        "import sys, asyncio\n"
        "import simlab, simlab.frameworks, simlab.runner.factory, simlab.graders.grade\n"
        "from simlab.specs import AgentSpec\n"
        "agent = simlab.runner.factory.build_agent(AgentSpec.model_validate('python:examples.retail_agents:careful_agent'))\n"
        f"print(sorted(m for m in {FRAMEWORK_MODULES!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("kind", "blocked", "extra"), [
    ("langgraph", "langgraph", "langgraph"), ("openai_agents", "agents", "openai-agents"),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai")])
def test_a_missing_extra_is_a_clear_error_with_exit_2(tmp_path: Path, kind: str, blocked: str, extra: str) -> None:
    scenario_file = ROOT / "scenarios" / "retail" / "refund-damaged-card.yaml"
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None\n"  # as if it were not installed
        "from simlab.cli.main import main\n"
        f"sys.exit(main(['run', '--agent', '{kind}:examples.x:agent', {str(scenario_file)!r}, '--no-progress']))\n"
    )
    (tmp_path / "personas").symlink_to(ROOT / "personas")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2, out.stderr
    assert f"this agent needs the {extra!r} extra" in out.stderr and f"pip install 'simlab[{extra}]'" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "transcripts").exists() or not any((tmp_path / "transcripts").rglob("trials.jsonl"))


# --- transcripts --------------------------------------------------------------------------------

def _transcript(events: list[object], kind: str = "langgraph") -> Transcript:
    return Transcript(run_id="r", unit_id="s#1", scenario_id="s", persona_id="p", domain="retail", trial=1, seed=1,
                      agent=Pin(kind=kind, ref="m:a"), simulator=Pin(kind="rules", ref="rules"), events=events,
                      termination={"reason": "goal_reached"})


def test_new_events_round_trip_and_old_transcripts_still_read() -> None:
    events = [GraphStep(turn=1, node="billing/agent", update={"messages": []}, omitted=2),
              GraphState(turn=1, values={"messages": 3, "route": "billing"}, next=[]),
              Handoff(turn=1, call_id="h1", source="triage", target="support"),
              PendingToolCall(turn=1, name="lookup_order", arguments={"order_id": "A123"},
                              raw_arguments='{"order_id": "A123"}', stopped_at="interrupt_before:tools")]
    text = _transcript(events).model_dump_json()
    assert Transcript.model_validate_json(text).events == events
    old = json.loads(text)
    old["events"] = [{"type": "user", "turn": 1, "text": "hi"}, {"type": "agent", "turn": 1, "text": "hello"}]
    assert len(Transcript.model_validate(old).events) == 2


def _ctx(transcript: Transcript, **expect: object) -> GradeContext:
    return GradeContext(transcript, scenario("refund-damaged-card", **expect), DOMAINS["refund-damaged-card"],
                        persona=BY_ID["refund-damaged-card"].persona)


def test_graph_checks_do_not_run_for_an_agent_without_a_graph() -> None:
    ctx = _ctx(_transcript([], kind="python"), graph_trajectory={"nodes": ["agent"]},
               graph_state=[{"path": "route", "equals": "x"}])
    checks = grade_graph(ctx)
    assert [(c.name, c.status) for c in checks] == [("graph_trajectory:in_order", "not_run"),
                                                    ("graph_state: route equals 'x'", "not_run")]
    assert all("not a LangGraph graph" in c.reason for c in checks)
    assert grade_graph(_ctx(_transcript([], kind="python"))) == []


def test_the_first_tool_call_check_without_a_probe_or_with_a_text_answer() -> None:
    spec = {"tool": "lookup_order", "args": {"order_id": "A123"}}
    [missing] = grade_first_tool_call(_ctx(_transcript([]), first_tool_call=spec))
    assert missing.status == "not_run"
    texted = _transcript([PendingToolCall(turn=1, stopped_at="tool_boundary", reply="Could you tell me your order id?")])
    [check] = grade_first_tool_call(_ctx(texted, first_tool_call=spec))
    assert check.status == "fail" and "answered in text without a tool call" in check.reason and check.event == 0
    args = _transcript([PendingToolCall(turn=1, name="lookup_order", arguments={"order_id": "A124"},
                                        raw_arguments='{"order_id": "A124"}', stopped_at="tool_boundary")])
    [check] = grade_first_tool_call(_ctx(args, first_tool_call=spec))
    assert check.status == "fail" and "argument 'order_id'" in check.reason


def test_first_tool_call_names_a_tool_of_the_domain() -> None:
    from dataclasses import replace

    from simlab.env.checks import check_against_domain

    entry = BY_ID["refund-damaged-card"]
    bad = replace(entry, spec=scenario("refund-damaged-card", first_tool_call={"tool": "lookup_ordr"}))
    assert "unknown tool 'lookup_ordr'" in " ".join(check_against_domain(bad)[1])
    wrong_arg = replace(entry, spec=scenario("refund-damaged-card",
                                             first_tool_call={"tool": "lookup_order", "args": {"id": "A123"}}))
    assert "tool 'lookup_order' has no argument 'id'" in " ".join(check_against_domain(wrong_arg)[1])
