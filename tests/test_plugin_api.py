"""The plug-in API as a user writing a new domain and agent meets it (issue 12): tool arguments
of any name, agents in .py files, the traceback behind an import error, tool results too deep to
record, and one count of tool calls, invalid calls and tool errors everywhere it is shown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from simlab.cli.main import main
from simlab.env import READ, Domain, tool
from simlab.graders.base import GradeContext
from simlab.graders.efficiency import efficiency_counts, grade_efficiency
from simlab.runner.store import encode_record
from simlab.sim.agents import PythonAgent, load_python_agent
from simlab.sim.loop import Trial, run_trial
from simlab.sim.simulators import ScriptedSimulator
from simlab.specs import Persona, Scenario
from simlab.transcript import ErrorEvent, ToolResult, TrialRecord
from simlab.transcript.row import record_head
from simlab.tui.widgets.trial_header import tool_summary
from tests.support import write_project


class People(BaseModel):
    people: dict[str, str] = {"C-1": "Ana"}


@tool(READ)
def find_customer(state: People, name: str) -> dict[str, Any]:
    """Find a customer by name.

    Args:
        name: The customer's name.
    """
    return {"ids": [k for k, v in state.people.items() if v == name]}


@tool(READ)
def awkward(state: People, arguments: str, call_id: str, tool: str) -> dict[str, str]:
    """A tool whose arguments carry the names a call API likes to use itself.

    Args:
        arguments: Anything.
        call_id: Anything.
        tool: Anything.
    """
    return {"arguments": arguments, "call_id": call_id, "tool": tool}


@tool(READ)
def deep(state: People, levels: int) -> Any:
    """Return a list nested ``levels`` deep (a domain bug).

    Args:
        levels: How deep.
    """
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


DOMAIN = Domain(name="people", state_model=People, tools=[find_customer, awkward, deep], policy="Help.")
PERSONA = Persona(id="p", description="A tester.")


def play(agent: Any, script: list[str] | None = None) -> Any:
    scenario = Scenario.model_validate({
        "id": "s", "title": "t", "domain": "x", "persona": "p",
        "user": {"goal": "g", "script": script or ["hello", "thanks ###STOP###"]}})
    trial = Trial(run_id="r", unit_id="s#1", trial=1, seed=1, scenario=scenario, persona=PERSONA, domain=DOMAIN,
                  initial_state=DOMAIN.build_state(), agent=PythonAgent(agent, "t:agent"),
                  simulator=ScriptedSimulator())
    return asyncio.run(run_trial(trial)), scenario


def test_tool_arguments_of_any_name_reach_the_tool() -> None:
    seen: list[Any] = []

    def agent(inp: Any) -> str:
        seen.append(inp.tools.call("find_customer", name="Ana"))
        seen.append(inp.tools.call("awkward", arguments="a", call_id="b", tool="c"))
        seen.append(inp.tools.call("find_customer", {"name": "Ana"}, call_id="model-7"))  # a model adapter
        return "ok"

    transcript, _ = play(agent)
    assert [r.ok for r in seen] == [True, True, True]
    assert seen[0].result == {"ids": ["C-1"]} and seen[1].result == {"arguments": "a", "call_id": "b", "tool": "c"}
    calls = [e for e in transcript.events if e.type == "tool_call"]
    assert calls[1].arguments == {"arguments": "a", "call_id": "b", "tool": "c"}
    assert calls[2].call_id == "model-7" and calls[2].arguments == {"name": "Ana"}


def test_a_result_nested_deeper_than_the_recursion_limit_is_a_tool_error_not_an_agent_crash() -> None:
    replies: list[Any] = []

    def agent(inp: Any) -> str:
        replies.append(inp.tools.call("deep", levels=5000))
        replies.append(inp.tools.call("deep", levels=3))
        return "done"

    transcript, _ = play(agent)
    assert transcript.termination.reason.value == "goal_reached"
    assert not replies[0].ok and "nested more than 100 levels deep" in replies[0].error
    assert replies[1].ok and replies[1].result == [[["bottom"]]]
    faults = [e for e in transcript.events if isinstance(e, ErrorEvent)]
    assert [(e.source, e.kind) for e in faults] == [("tool", "bad_result")]
    line = encode_record(TrialRecord(unit_id="s#1", transcript=transcript))  # and the trial can be stored
    assert TrialRecord.model_validate_json(line).transcript.events == transcript.events


def test_arguments_nested_too_deeply_are_an_invalid_call() -> None:
    def agent(inp: Any) -> str:
        inp.tools.call("find_customer", "[" * 5000 + "]" * 5000)
        inp.tools.call("find_customer", {"name": json.loads("[" * 150 + "]" * 150)})
        return "done"

    transcript, _ = play(agent)
    invalid = [e.reason for e in transcript.events if e.type == "invalid_call"]
    assert invalid == ["arguments are nested more than 100 levels deep", "arguments are nested more than 100 levels deep"]


AGENT_FILE = '''from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Memory:
    greeted: bool = False


def agent(inp):
    memory = inp.memory.setdefault("m", Memory())
    memory.greeted = True
    return "Hello."
'''


def test_a_python_agent_in_a_py_file_may_define_a_dataclass(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the project: code is loaded only from files inside it
    path = tmp_path / "my_agents.py"
    path.write_text(AGENT_FILE)
    agent = load_python_agent(f"{path}:agent")
    transcript, _ = play(agent.func)
    assert transcript.termination.reason.value == "goal_reached"


def test_simlab_debug_shows_the_traceback_of_an_agent_file_that_fails_to_import(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=1, trials=1)
    (tmp_path / "broken_agent.py").write_text("def helper():\n    raise LookupError('boom in user code')\n\n"
                                               "helper()\n\ndef agent(inp):\n    return 'x'\n")
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--agent", "python:broken_agent.py:agent", "--no-progress"]
    assert main(argv) == 2
    quiet = capsys.readouterr().err
    assert "LookupError: boom in user code" in quiet and "Traceback" not in quiet
    monkeypatch.setenv("SIMLAB_DEBUG", "1")
    assert main(argv) == 2
    loud = capsys.readouterr().err
    assert "Traceback" in loud and 'broken_agent.py", line 2, in helper' in loud
    assert loud.rstrip().endswith("LookupError: boom in user code")


def test_one_count_of_calls_invalid_calls_and_errors_for_the_row_the_head_the_check_and_the_viewer() -> None:
    def agent(inp: Any) -> str:
        inp.tools.call("find_customer", name="Ana")
        inp.tools.call("find_customer", nome="Ana")  # invalid: no such argument
        inp.tools.call("no_such_tool")  # invalid: unknown tool
        inp.tools.call("deep", levels=500)  # a tool error
        return "done"

    transcript, scenario = play(agent)
    expected = {"tool_calls": 4, "invalid_calls": 2, "tool_errors": 1}
    counts = efficiency_counts(transcript)
    assert {k: counts[k] for k in expected} == expected
    check = next(c for c in grade_efficiency(GradeContext(transcript, scenario, DOMAIN)) if c.name == "efficiency")
    assert "4 tool calls (2 invalid, 1 errors" in check.reason
    record = TrialRecord(unit_id="s#1", transcript=transcript)
    row = record_head(record).row
    assert {k: getattr(row, k) for k in expected} == expected
    assert tool_summary(transcript.events) == "4 tool calls (2 invalid, 1 error)"


@pytest.mark.parametrize("levels", [99, 100])
def test_the_deepest_result_recorded_still_reads_back(levels: int) -> None:
    def agent(inp: Any) -> str:
        inp.tools.call("deep", levels=levels)
        return "done"

    transcript, _ = play(agent)
    result = next(e for e in transcript.events if isinstance(e, ToolResult))
    assert result.ok
    line = encode_record(TrialRecord(unit_id="s#1", transcript=transcript))
    assert TrialRecord.model_validate_json(line).transcript.events == transcript.events
