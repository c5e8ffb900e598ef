"""A drift check meets an agent's own failure. The simulated user drifts at its first message (a
scripted line states an id it was never given), then the agent crashes, hangs past its turn limit
or loops. No user input excuses a crash, a hang or a loop: the trial is the agent's failure (a
``fail``, blamed on the agent, counted against pass^k), never ``invalid`` blamed on the user, and
every surface (the stored head, the report's figures, compare, the viewer's rows, the failure modes
triage groups) says the same. The same drift with an agent that plays on is still ``invalid``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from simlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]

SCENARIO = """\
id: drift-then-agent-fails
title: The scripted user states a ticket id it was never given; then the agent fails on its own
domain: retail
persona: impatient-terse
user:
  goal: Get order A123 refunded to the original card.
  known_facts: {order_id: A123}
  script:
    - "my order A123 arrived broken, ticket TK-55123. refund it to my card"
    - "yes"
    - "thanks ###STOP###"
agent_context: {signed_in_customer: C-17, channel: chat}
max_turns: 4
trials: 2
limits: {max_turn_seconds: 0.05}
expect:
  state:
    - {path: "refunds[order_id=A123].method", equals: original_card}
"""

AGENTS = """\
import asyncio

from simlab import AgentReply


def crashes(inp):
    raise RuntimeError("the agent's own bug")


async def hangs(inp):
    await asyncio.Event().wait()  # never set: the turn limit ends it


def loops(inp):
    for _ in range(3):
        inp.tools.call("lookup_order", {"order_id": "A123"})
    return "still looking"


def talks(inp):
    return AgentReply("I cannot help with refunds here.")


for agent in (crashes, hangs, loops, talks):
    agent.uses_models = False
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    import shutil

    shutil.copytree(REPO / "personas", tmp_path / "personas")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios/drift.yaml").write_text(SCENARIO)
    (tmp_path / "failing_agents.py").write_text(AGENTS)
    (tmp_path / "simlab.yaml").write_text("simulator: scripted\nscenarios: [scenarios]\npersonas: personas\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("failing_agents", None)


def _play(agent: str) -> int:
    return main(["run", "--agent", f"python:failing_agents:{agent}", "--run-id", agent, "--no-progress"])


def _heads(project: Path, run: str) -> list[dict[str, object]]:
    lines = (project / "transcripts" / run / "trials.jsonl").read_text().splitlines()
    return [json.loads(line)["head"]["row"] for line in lines]


@pytest.mark.parametrize(
    ("agent", "termination"),
    [("crashes", "agent_error"), ("hangs", "budget_exceeded"), ("loops", "agent_loop")],
)
def test_an_agents_own_failure_after_the_user_drifted_is_the_agents_fail(project, capsys, agent, termination):
    _play(agent)
    heads = _heads(project, agent)
    assert [h["termination"] for h in heads] == [termination] * 2
    assert [(h["verdict"], h["blame"]) for h in heads] == [("fail", "agent")] * 2, heads
    assert all(str(h["failure_mode"]).startswith("agent: ") for h in heads), heads
    capsys.readouterr()
    assert main(["report", agent, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    figures = summary["scenarios"]["drift-then-agent-fails"]
    assert (figures["n"], figures["invalid"], figures["passes"]) == (2, 0, 0), figures
    assert summary["suite"]["valid"]["success"]["n"] == 2  # counted against pass^k, not left out
    from simlab.tui.data import RunIndex, find_run  # the viewer's rows, read by the same reader

    info = find_run(project / "transcripts", agent)
    assert info is not None
    rows = RunIndex(info).read_all()
    assert {(r.verdict, r.failure_mode) for r in rows} == {("fail", heads[0]["failure_mode"])}


def test_the_same_drift_with_an_agent_that_plays_on_stays_invalid(project):
    _play("talks")
    heads = _heads(project, "talks")
    assert [(h["verdict"], h["blame"]) for h in heads] == [("invalid", "user")] * 2, heads


# -- a frozen user replays its recording against an agent that answers garbage -------------------

REPO_FILES = ("scenarios", "personas", "examples")


@pytest.fixture
def retail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    import shutil

    for name in REPO_FILES:
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    (tmp_path / "garbage_agent.py").write_text(
        "def agent(inp):\n    return 'zxq qqq %%% 0x7f'\n\n\nagent.uses_models = False\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("garbage_agent", None)


def test_a_replayed_user_that_stops_where_its_recording_did_is_not_blamed_for_the_agents_garbage(retail):
    card = ["scenarios/retail/refund-damaged-card.yaml", "--trials", "2", "--no-progress"]
    careful = ["--agent", "python:examples.retail_agents:careful_agent"]
    assert main(["run", *card, *careful, "--run-id", "base"]) == 0
    replay = ["--replay", "base", "--divergence", "never", "--no-progress"]
    main(["run", *replay, "--agent", "python:garbage_agent:agent", "--run-id", "garbage"])
    heads = _heads(retail, "garbage")
    assert all(h["termination"] == "goal_reached" for h in heads), heads  # the recorded "thanks" and stop
    assert [(h["verdict"], h["blame"]) for h in heads] == [("fail", "agent")] * 2, heads
    lines = (retail / "transcripts/garbage/trials.jsonl").read_text().splitlines()
    stops = [c for line in lines for c in json.loads(line)["checks"] if c["name"] == "drift:premature_stop"]
    assert [c["status"] for c in stops] == ["pass"] * 2 and "recording" in stops[0]["reason"], stops


# -- a simulated user that says nothing ----------------------------------------------------------


class _Mute:
    """A simulated user that opens, then sends an empty message (an LLM user's empty answer)."""

    def pin(self):  # type: ignore[no-untyped-def]
        from simlab.transcript import Pin

        return Pin(kind="python", ref="tests:mute")

    async def next_message(self, view):  # type: ignore[no-untyped-def]
        from simlab import UserTurn

        return UserTurn("my order A123 arrived broken, refund it to my card" if view.turn == 1 else "")


def test_an_empty_message_of_the_simulated_user_is_its_models_fault_not_the_lab_nor_the_agent(retail):
    import simlab

    run = simlab.run(
        "scenarios/retail/refund-damaged-card.yaml",
        agent="python:examples.retail_agents:careful_agent",
        simulator=_Mute(),
        trials=1,
        run_id="mute",
        project=retail,
    )
    (head,) = _heads(retail, "mute")
    assert (head["verdict"], head["termination"]) == ("error", "error")  # infrastructure: not pass^k's
    assert head["blame"] == "provider" and str(head["failure_mode"]).startswith("provider: simulator"), head
    assert run.summary.suite.error_rate.c == 1


# -- the trial's wall time runs out while the simulated user is speaking -------------------------


class _SlowUser:
    """Opens, then takes its time over its second message: ``hang`` waits (an LLM user's provider
    backing off), else ``clock`` moves by 30 s (synchronous work on an injected clock)."""

    def __init__(self, clock: object = None) -> None:
        self.clock = clock

    def pin(self):  # type: ignore[no-untyped-def]
        from simlab.transcript import Pin

        return Pin(kind="python", ref="tests:slow-user")

    async def next_message(self, view):  # type: ignore[no-untyped-def]
        import asyncio

        from simlab import UserTurn

        if view.turn == 1:
            return UserTurn("Please store b=2.")
        if self.clock is None:
            await asyncio.Event().wait()
        else:
            self.clock.now += 30.0  # type: ignore[attr-defined]
        return UserTurn("and c=3 too")


def _ended_by_the_user(t) -> None:  # type: ignore[no-untyped-def]
    from simlab.graders.base import verdict_of
    from simlab.transcript.blame import diagnose

    assert t.termination.reason.value == "error", t.termination  # not the agent's budget_exceeded
    assert "simulated user" in t.termination.detail
    assert verdict_of(t, []) == "error"
    fault = diagnose(t, [], "error")
    assert fault is not None and fault.blame == "provider" and fault.mode.startswith("provider: simulator")


def test_a_user_that_hangs_past_the_trials_wall_time_is_not_the_agents_failure(virtual_time):
    import asyncio

    from simlab.sim.agents import PythonAgent
    from simlab.sim.loop import run_trial
    from simlab.specs import Limits
    from tests.support import kv_agent, make_trial

    trial = make_trial(PythonAgent(kv_agent, "t:kv"), _SlowUser(), limits=Limits(max_seconds=10))
    _ended_by_the_user(asyncio.run(run_trial(trial)))


async def test_a_user_whose_turn_crosses_the_wall_time_is_not_the_agents_failure():
    from simlab.sim.agents import PythonAgent
    from simlab.sim.loop import run_trial
    from simlab.specs import Limits
    from tests.support import kv_agent, make_trial

    class Clock:
        now = 0.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    trial = make_trial(PythonAgent(kv_agent, "t:kv"), _SlowUser(clock), limits=Limits(max_seconds=20))
    _ended_by_the_user(await run_trial(trial, clock=clock))


# -- the user ends the conversation before the agent has answered once ---------------------------


class _EndsAtOnce:
    """A simulated user that ends the conversation in its first message (an LLM user that emits
    ###GIVE_UP### or ###TRANSFER### at once): the agent never gets a turn."""

    def __init__(self, signal: str) -> None:
        self.signal = signal

    def pin(self):  # type: ignore[no-untyped-def]
        from simlab.transcript import Pin

        return Pin(kind="python", ref=f"tests:ends-at-once-{self.signal}")

    async def next_message(self, view):  # type: ignore[no-untyped-def]
        from simlab import UserTurn

        return UserTurn("my order A123 arrived broken. never mind, get me a human", signal=self.signal)


@pytest.mark.parametrize(("signal", "termination"), [("give_up", "user_gave_up"), ("transfer", "agent_transferred")])
def test_a_user_that_ends_before_the_agent_answered_once_is_the_users_drift_on_every_surface(
    retail, capsys, signal, termination
):
    import xml.etree.ElementTree as ET

    import simlab
    from simlab.tui.data import RunIndex, find_run

    run = simlab.run(
        "scenarios/retail/refund-damaged-card.yaml",
        agent="python:examples.retail_agents:careful_agent",
        simulator=_EndsAtOnce(signal),
        trials=2,
        run_id=signal,
        project=retail,
    )
    heads = _heads(retail, signal)
    assert [h["termination"] for h in heads] == [termination] * 2
    # the agent never spoke: not its fail, and not a valid trial of pass^k
    assert [(h["verdict"], h["blame"], h["failure_mode"]) for h in heads] == [
        ("invalid", "user", "user: drift premature_stop")
    ] * 2, heads
    figures = run.summary.scenarios["refund-damaged-card"]
    assert (figures.n, figures.invalid, figures.passes, figures.valid.success.n) == (2, 2, 0, 0)
    capsys.readouterr()
    assert main(["report", signal, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scenarios"]["refund-damaged-card"]["invalid"] == 2
    assert summary["suite"]["valid"]["success"]["n"] == 0
    from simlab.report.build import build
    from simlab.report.digest import digest
    from simlab.report.gates import GateReport
    from simlab.report.junit import junit_xml

    folder = retail / "transcripts" / signal
    built = build(folder, write=False)
    xml = ET.fromstring(junit_xml(built, GateReport(), "s", digest(folder)))  # type: ignore[arg-type]
    case = xml.find(".//testcase[@name='refund-damaged-card']")
    assert case is not None and case.find("skipped") is not None and case.find("failure") is None
    info = find_run(retail / "transcripts", signal)
    assert info is not None
    assert {(r.verdict, r.failure_mode) for r in RunIndex(info).read_all()} == {
        ("invalid", "user: drift premature_stop")
    }


# -- the trial's token budget is crossed by the simulated user's own model call ------------------


async def test_a_token_budget_the_simulated_users_model_crosses_is_not_the_agents_failure():
    """The agent spends nothing (a Python agent that declares no model); the LLM user's second
    answer is 1,000 tokens long and crosses ``limits.max_tokens``: the user's side, as its wall time is,
    never the agent's ``budget_exceeded`` (which blamed the agent at the simulator's model call)."""
    from simlab.llm.fakes import FunctionModel
    from simlab.sim.agents import PythonAgent
    from simlab.sim.loop import run_trial
    from simlab.sim.simulators.llm import LLMSimulator
    from simlab.specs import Limits
    from tests.support import make_trial

    def user(messages, tools):  # type: ignore[no-untyped-def]
        turns = sum(m["role"] == "assistant" for m in messages)
        return {"text": "and c=3 too", "usage": {"input_tokens": 10, "output_tokens": 1000 if turns > 1 else 5}}

    simulator = LLMSimulator(FunctionModel(user, model="fake/user"))
    trial = make_trial(PythonAgent(lambda inp: "Which key?", "t:asks"), simulator, limits=Limits(max_tokens=500))
    t = await run_trial(trial)
    _ended_by_the_user(t)
    assert "500" in t.termination.detail and t.events[-1].type == "error"
