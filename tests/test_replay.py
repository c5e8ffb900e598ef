"""The frozen-user replay: the recorded user turns against a new agent, stopping or handing over
at the first divergence; ``run --replay``, the report's divergence figures and compare's first
difference per trial."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.runner.store import RunStore
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.replay import ReplaySimulator
from simlab.sim.simulators import RulesSimulator
from simlab.specs import SimulatorSpec
from tests.support import make_trial, scenario, write_project


def storing(inp):
    inp.tools.call("set_item", key="b", value="2")
    return "Done: b is stored."


def checking_first(inp):
    """Reads before it writes: another tool trajectory in turn 1."""
    inp.tools.call("get_item", key="a")
    inp.tools.call("set_item", key="b", value="2")
    return "Done: b is stored."


def asking(inp):
    """Asks first, stores on the second turn."""
    if inp.turn == 1:
        return "Which key and value?"
    return storing(inp)


def play(agent: Any, simulator: Any) -> Any:
    return asyncio.run(run_trial(make_trial(PythonAgent(agent, "t:agent"), simulator,
                                            scn=scenario(max_turns=4))))


def recording() -> Any:
    t = play(storing, RulesSimulator())
    assert [e.type for e in t.events] == ["user", "tool_call", "tool_result", "agent", "user", "signal"]
    return t


def test_the_same_agent_replays_to_the_end_without_diverging():
    recorded = recording()
    t = play(storing, ReplaySimulator({"kv-set#1": recorded}, run="base"))
    assert t.termination.reason.value == "goal_reached"
    assert [e.text for e in t.events if e.type == "user"] == [e.text for e in recorded.events if e.type == "user"]
    assert t.replay is not None and t.replay.diverged_turn is None and t.replay.unit_id == "kv-set#1"
    assert t.simulator.kind == "replay" and t.simulator.settings["divergence"] == "tools"


def test_a_different_tool_trajectory_stops_the_trial_at_its_turn():
    t = play(checking_first, ReplaySimulator({"kv-set#1": recording()}, run="base"))
    assert t.termination.reason.value == "diverged"
    assert t.replay.diverged_turn == 1
    assert t.replay.reason == 'tool call 1 was set_item({"key": "b", "value": "2"}), now get_item({"key": "a"})'
    assert "diverged from the recording at turn 1" in t.termination.detail
    assert t.final_state["items"]["b"] == "2"  # what happened so far stays, for the checks


def test_after_a_divergence_the_rules_simulator_takes_over():
    t = play(asking, ReplaySimulator({"kv-set#1": recording()}, run="base", then="rules",
                                     fallback=RulesSimulator()))
    assert t.replay.diverged_turn == 1 and "is missing" in t.replay.reason
    assert t.termination.reason.value == "goal_reached"  # the rules user answered the question and got b stored
    assert t.simulator.settings["fallback"]["kind"] == "rules"


def test_never_replays_every_recorded_turn_whatever_the_agent_does():
    t = play(checking_first, ReplaySimulator({"kv-set#1": recording()}, run="base", divergence="never"))
    assert t.termination.reason.value == "goal_reached" and t.replay.diverged_turn is None


def test_a_unit_without_a_recording_is_an_error_not_a_pass():
    t = play(storing, ReplaySimulator({}, run="base"))
    assert t.termination.reason.value == "error" and "no recorded trial kv-set#1" in t.termination.detail


class Judge:
    """A judge model double: answers from a list, records what it was asked."""

    model = "fake/judge"

    def __init__(self, *answers: str):
        self.answers, self.asked = list(answers), []

    def pin(self):
        from simlab.transcript import Pin

        return Pin(kind="llm", ref=self.model)

    async def chat(self, messages, *, tools=None, seed=None):
        from simlab.llm.types import ChatResult
        from simlab.transcript import Usage

        self.asked.append(messages[-1]["content"])
        return ChatResult(self.answers.pop(0), [], Usage(input_tokens=20, output_tokens=5))


def test_a_judge_decides_whether_a_differing_turn_diverges():
    keep = Judge('{"continue": true, "reason": "the thanks still fits"}')
    t = play(checking_first, ReplaySimulator({"kv-set#1": recording()}, run="base", divergence="judge", judge=keep))
    assert t.termination.reason.value == "goal_reached" and t.replay.diverged_turn is None
    assert len(keep.asked) == 1 and "New agent turn" in keep.asked[0] and "get_item" in keep.asked[0]
    assert [e.role for e in t.events if e.type == "model_call"] == ["judge"]
    stop = Judge('Sure. {"continue": false, "reason": "the agent asked a question the user ignores"}')
    t = play(checking_first, ReplaySimulator({"kv-set#1": recording()}, run="base", divergence="judge", judge=stop))
    assert t.termination.reason.value == "diverged" and t.replay.diverged_turn == 1
    assert t.replay.reason == "the judge: the agent asked a question the user ignores"
    same = Judge()
    play(storing, ReplaySimulator({"kv-set#1": recording()}, run="base", divergence="judge", judge=same))
    assert same.asked == []  # a turn like the recording's needs no judge
    garbled = Judge("I think it is fine")
    t = play(checking_first, ReplaySimulator({"kv-set#1": recording()}, run="base", divergence="judge",
                                             judge=garbled))
    assert t.termination.reason.value == "error" and "could not be read" in t.termination.detail


def test_the_replay_settings_are_checked():
    with pytest.raises(ValueError, match="needs a judge model"):
        ReplaySimulator({}, run="r", divergence="judge")
    with pytest.raises(ValueError, match="needs 'run'"):
        SimulatorSpec.model_validate({"kind": "replay"})
    with pytest.raises(ValueError, match="settings of a replay simulator"):
        SimulatorSpec.model_validate({"kind": "rules", "then": "rules"})
    # the pin of every other simulator is as it was: no replay keys (old runs stay comparable)
    assert SimulatorSpec().model_dump(mode="json", exclude_none=True) == {
        "kind": "rules", "temperature": 0.7, "allow_same_family": False, "params": {}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_project(tmp_path, scenarios=2, trials=2)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_run_replay_stops_at_the_first_divergence_and_compare_shows_it(project: Path, capsys):
    assert main(["run", "--run-id", "base", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["run", "--replay", "base", "--run-id", "cand", "--no-progress",
                 "--agent", "python:tests.test_replay:reading_kv_agent"]) == 0
    out = capsys.readouterr()
    assert "replay kv-0: diverged in 2 of 2 trials, mean turn 1" in out.out
    records = list(RunStore(project / "transcripts" / "cand").records())
    assert sorted(r.unit_id for r in records) == ["kv-0#1", "kv-0#2", "kv-1#1", "kv-1#2"]
    assert {r.transcript.termination.reason.value for r in records} == {"diverged"}
    summary = json.loads((project / "transcripts" / "cand" / "summary.json").read_text())
    assert summary["divergence"]["kv-1"] == {"replayed": 2, "diverged": 2, "mean_turn": 1.0}
    assert main(["compare", "base", "cand"]) == 0
    out = capsys.readouterr()
    assert "per trial: 4 of 4 shared trials differ" in out.out
    assert "kv-0#1: first differs at turn 1, step 2: tool call 1 was set_item" in out.out.replace("\n", " ")
    assert "replays the users of base" in out.err


def test_run_replay_hands_over_and_guards_its_options(project: Path, capsys):
    assert main(["run", "--run-id", "base", "--no-progress"]) == 0
    assert main(["run", "--replay", "base", "--run-id", "same", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", "base", "same"]) == 0
    assert "per trial: 0 of 4 shared trials differ" in capsys.readouterr().out
    assert main(["run", "--replay", "base", "--run-id", "over", "--no-progress", "--on-divergence", "rules",
                 "--agent", "python:tests.test_replay:reading_kv_agent"]) == 0
    records = list(RunStore(project / "transcripts" / "over").records())
    assert {r.transcript.termination.reason.value for r in records} == {"goal_reached"}
    assert {r.transcript.replay.diverged_turn for r in records} == {1}
    assert main(["run", "--replay", "base", "--simulator", "rules"]) == 2
    assert "leave out --simulator" in capsys.readouterr().err
    assert main(["run", "--divergence", "never"]) == 2
    assert main(["run", "--replay", "base", "--divergence", "judge"]) == 2
    assert "divergence: judge needs a judge model" in capsys.readouterr().err


def test_run_replay_with_a_judge_through_the_real_litellm_path(project: Path, capsys):
    from simlab.llm.fakes import register_fake, unregister_fake

    asked: list[str] = []

    def judge(messages, tools=None, **_):
        asked.append(messages[-1]["content"])
        return json.dumps({"continue": False, "reason": "the user would answer the new question"})

    assert main(["run", "--run-id", "base", "--no-progress"]) == 0
    model = register_fake("replay-judge", judge)
    try:
        assert main(["run", "--replay", "base", "--run-id", "judged", "--no-progress", "--divergence", "judge",
                     "--judge", model, "--agent", "python:tests.test_replay:reading_kv_agent"]) == 0
    finally:
        unregister_fake("replay-judge")
    records = list(RunStore(project / "transcripts" / "judged").records())
    assert len(asked) == 4 and {r.transcript.replay.diverged_turn for r in records} == {1}
    assert {r.transcript.replay.reason for r in records} == {"the judge: the user would answer the new question"}
    manifest = json.loads((project / "transcripts" / "judged" / "run.json").read_text())
    assert manifest["pins"]["simulator"]["divergence"] == "judge"
    assert main(["run", "--replay", "nope"]) == 2


def reading_kv_agent(inp):
    """``kv_agent`` that reads the key first: another tool trajectory."""
    from tests.support import kv_agent

    inp.tools.call("get_item", key="a")
    return kv_agent(inp)


def test_a_replay_is_compared_with_its_recording_on_every_pin_but_the_simulator(project: Path, capsys):
    from simlab.api import Run
    from simlab.errors import UsageError

    assert main(["run", "--run-id", "base", "--no-progress"]) == 0
    assert main(["run", "--replay", "base", "--run-id", "same", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", "base", "same"]) == 0
    out = capsys.readouterr()
    assert "pins differ" not in out.out  # the simulator differs by design: said once, in the note
    assert "simulator pin differs by design and is not compared" in out.err
    folders = project / "transcripts"
    assert Run(folders / "base").compare(Run(folders / "same")).pins_differ == []
    # a scenario file edited between the recording and the replay: not the same test any more
    first = sorted((project / "scenarios").glob("*.yaml"))[0]
    first.write_text(first.read_text() + "\n# edited\n")
    assert main(["run", "--replay", "base", "--run-id", "edited", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", "base", "edited"]) == 2
    assert "file changed between the runs" in capsys.readouterr().err
    with pytest.raises(UsageError, match="file changed between the runs"):
        Run(folders / "base").compare(Run(folders / "edited"))
    assert main(["compare", "base", "edited", "--allow-different-pins"]) == 0
    out = capsys.readouterr().out
    assert "pins differ: scenario" in out.replace("\n", " ") and "pins differ: simulator" not in out
