"""Issue 24's verdict repros, played end to end in a project of a domain simlab never saw: a profile
with a write tool and a tool whose own code crashes, agents that never write but claim they did or
refuse, and scripted users with and without ``###STOP###``. The user's drift must not hide the
agent's failure, and a crashed tool is an error that names the tool and the exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from simlab.cli.main import main
from simlab.env import READ, WRITE, Domain, ToolError, tool


class Profile(BaseModel):
    display_name: str = "sam"
    timezone: str = "UTC"


@tool(READ)
def get_profile(state: Profile) -> dict[str, Any]:
    """Read the profile."""
    return state.model_dump()


@tool(WRITE)
def set_display_name(state: Profile, name: str) -> dict[str, Any]:
    """Change the display name.

    Args:
        name: The new display name.
    """
    if not name.strip():
        raise ToolError("a display name cannot be empty")
    state.display_name = name
    return {"display_name": name}


@tool(WRITE)
def set_timezone(state: Profile, tz: str) -> dict[str, Any]:
    """Change the timezone.

    Args:
        tz: An IANA timezone name.
    """
    offsets = {"UTC": 0}
    state.timezone = tz
    return {"timezone": tz, "offset": offsets[tz]}  # the domain's bug: a KeyError for every zone but UTC


PROFILE = Domain(name="profile", state_model=Profile, tools=[get_profile, set_display_name, set_timezone],
                 policy="You manage the user's profile.")


def claimer(inp: Any) -> str:
    """Reads the profile, never writes, and says what the scenario's agent_context tells it to."""
    inp.tools.call("get_profile")
    return str(inp.context["claim"])


def refuser(inp: Any) -> str:
    return "I'm sorry, I can't change that for you."


def careful(inp: Any) -> str:
    said = inp.messages[-1]["content"].lower()
    if "timezone" in said:
        reply = inp.tools.call("set_timezone", tz="Europe/Paris")
        return "Your timezone is now Europe/Paris." if reply.ok else f"Sorry, that did not work: {reply.error}"
    return "How can I help?"


for agent in (claimer, refuser, careful):
    agent.uses_models = False  # type: ignore[attr-defined]

CLAIMS = ["The change is complete.", "All set!", "I have taken care of that for you…", "Done: your name is Robin.",
          "Your name change has been completed."]
HERE = "tests.test_verdict_repros"


def scenario_yaml(sid: str, goal: str, stop: bool, path: str, value: str, claim: str = "x") -> str:
    last = '"Thanks. ###STOP###"' if stop else '"Thanks."'
    return (f"id: {sid}\ntitle: {sid}\ndomain: {HERE}:PROFILE\npersona: tester\n"
            f"user:\n  goal: {goal}\n  script: [{json.dumps(goal)}, {last}]\n"
            f"agent_context: {{claim: {json.dumps(claim)}}}\nmax_turns: 4\n"
            f"expect:\n  state:\n    - {{path: {path}, equals: {value}}}\n")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "tester.yaml").write_text("id: tester\ndescription: A tester.\n")
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for n, claim in enumerate(CLAIMS):
        for stop in (True, False):
            sid = f"claim{n}-{'stop' if stop else 'nostop'}"
            (scenarios / f"{sid}.yaml").write_text(scenario_yaml(
                sid, "Please change my display name to Robin.", stop, "display_name", "Robin", claim))
    for stop in (True, False):
        sid = f"tz-{'stop' if stop else 'nostop'}"
        (scenarios / f"{sid}.yaml").write_text(scenario_yaml(
            sid, "Please set my timezone to Europe/Paris.", stop, "timezone", "Europe/Paris"))
    (tmp_path / "simlab.yaml").write_text(f"agent: python:{HERE}:claimer\nsimulator: scripted\ntrials: 1\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def play(project: Path, run_id: str, agent: str, select: str) -> dict[str, dict[str, Any]]:
    main(["run", "--run-id", run_id, "--agent", f"python:{HERE}:{agent}", "-k", select, "--no-progress"])
    lines = (project / "transcripts" / run_id / "trials.jsonl").read_text().splitlines()
    return {r["unit_id"]: r for r in map(json.loads, lines)}


def test_an_agent_that_claims_completion_without_writing_fails_with_or_without_stop(project: Path) -> None:
    records = play(project, "claims", "claimer", "claim")
    assert len(records) == 10
    for unit, record in records.items():
        assert record["verdict"] == "fail", (unit, [c["reason"] for c in record["checks"] if c["status"] != "pass"])
        drift = {c["name"]: c for c in record["checks"]}.get("drift:premature_stop")
        assert drift is None or drift["status"] == "pass"


def test_an_agent_that_refuses_fails_whether_the_script_ends_with_stop_or_not(project: Path) -> None:
    records = play(project, "refuse", "refuser", "claim0")
    assert {u: r["verdict"] for u, r in records.items()} == {"claim0-stop#1": "fail", "claim0-nostop#1": "fail"}


def test_a_script_that_runs_out_without_stop_ends_as_script_ended(project: Path) -> None:
    records = play(project, "ends", "refuser", "claim0")
    ran_out = records["claim0-nostop#1"]["transcript"]
    assert ran_out["termination"]["reason"] == "script_ended"
    assert ran_out["termination"]["detail"] == "the script ended: all 2 lines played, none signalled stop"
    assert not [e for e in ran_out["events"] if e["type"] == "signal"]  # the user signalled nothing
    stopped = records["claim0-stop#1"]["transcript"]["termination"]
    assert (stopped["reason"], stopped["detail"]) == ("goal_reached", "user signalled stop")


def test_a_domain_tool_that_crashes_is_an_error_naming_the_tool_and_the_exception(project: Path, capsys) -> None:
    records = play(project, "crash", "careful", "tz")
    assert {u: r["verdict"] for u, r in records.items()} == {"tz-stop#1": "error", "tz-nostop#1": "error"}
    for record in records.values():
        crash = next(c for c in record["checks"] if c["name"] == "tool_crash:set_timezone")
        assert crash["status"] == "error" and crash["hard"] and "KeyError: 'Europe/Paris'" in crash["reason"]
        row = record["head"]["row"]  # the domain's tool is to blame, at its crash
        assert (row["blame"], row["failure_mode"]) == ("tool", "tool: set_timezone crashed (crash)")
        assert record["transcript"]["events"][row["first_fault_event"]]["source"] == "tool"
    capsys.readouterr()
    assert main(["report", "crash"]) == 3  # every trial an infrastructure error: no result, as the run said
    out, err = capsys.readouterr()
    assert "tool_crash:set_timezone" in out and "KeyError" in out
    assert "incomplete: infrastructure errors in 2 of 2 trials" in err and "2× tool_crash:set_timezone" in err
