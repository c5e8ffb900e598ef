"""Shared test helpers: a tiny key-value domain and a way to build one trial by hand."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from simlab.env import READ, WRITE, Domain, ToolError, tool
from simlab.sim.loop import Trial
from simlab.specs import Limits, Persona, Scenario


class LazyModule:
    """A module imported on first use. A test module that names a heavy library (LiteLLM: seconds)
    at module level makes every pytest process pay for it while collecting, even one that never runs
    the test (each pytest-xdist worker collects the whole suite): see tests/conftest.py."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # pytest's collection probes every module-level object for markers
            raise AttributeError(attr)
        module: ModuleType = importlib.import_module(self._name)
        return getattr(module, attr)


class KVState(BaseModel):
    items: dict[str, str] = {}
    owner: str = "u1"


@tool(READ)
def get_item(state: KVState, key: str) -> dict[str, Any]:
    """Read one item.

    Args:
        key: The item's key.
    """
    if key not in state.items:
        raise ToolError(f"no item {key!r}")
    return {"key": key, "value": state.items[key]}


@tool(WRITE)
def set_item(state: KVState, key: str, value: str) -> dict[str, Any]:
    """Store an item.

    Args:
        key: The item's key.
        value: The value to store.
    """
    state.items[key] = value
    return {"ok": True}


@tool(WRITE)
def transfer_to_human(state: KVState, reason: str) -> str:
    """Hand the conversation to a person.

    Args:
        reason: Why.
    """
    return "transferred"


KV = Domain(name="kv", state_model=KVState, tools=[get_item, set_item, transfer_to_human],
            policy="You manage a key-value store.", seed_state={"items": {"a": "1"}})

PERSONA = Persona(id="tester", description="A tester.", give_up_after=2)


def scenario(**overrides: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": "kv-set", "title": "Set b", "domain": "tests.support:KV", "persona": "tester",
        "user": {"goal": "Store b=2.", "opening": "Please store b=2.", "known_facts": {"key": "b"},
                 "success_phrases": ["stored"]},
        "max_turns": 4,
    }
    data.update(overrides)
    return Scenario.model_validate(data)


def make_trial(agent: Any, simulator: Any, *, scn: Scenario | None = None, limits: Limits | None = None,
               seed: int = 7) -> Trial:
    scn = scn or scenario()
    return Trial(run_id="r", unit_id=f"{scn.id}#1", trial=1, seed=seed, scenario=scn, persona=PERSONA, domain=KV,
                 initial_state=KV.build_state(scn.initial_state), agent=agent, simulator=simulator,
                 limits=limits or Limits())


def kv_agent(inp: Any) -> str:
    """Stores what the user asks for: 'store b=2'."""
    import re

    match = re.search(r"(\w+)=(\w+)", inp.messages[-1]["content"])
    if not match:
        return "Which key and value should I store?"
    inp.tools.call("set_item", key=match.group(1), value=match.group(2))
    return f"Done, {match.group(1)} is stored."


GATE_ENV = "SIMLAB_TEST_GATE"


class TrialGate:
    """Lets a ``simlab run`` child process play only the trials a test allows, so a kill or a
    Ctrl-C lands mid-run by construction, never by the machine being slow enough.

    One token file per trial: a gated agent takes one (an atomic rename, safe across ``--workers``
    processes) before it answers a trial's first turn, and waits while there is none."""

    def __init__(self, folder: Any):
        from pathlib import Path

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.granted = 0

    def allow(self, trials: int = 1) -> None:
        for _ in range(trials):
            self.granted += 1
            (self.folder / f"token-{self.granted:05d}").touch()

    def env(self) -> dict[str, str]:
        return {GATE_ENV: str(self.folder)}


async def take_token(inp: Any) -> None:
    """Wait for a token of the ``TrialGate`` named by ``SIMLAB_TEST_GATE`` (no gate: go on)."""
    import asyncio
    import os

    folder = os.environ.get(GATE_ENV)
    if not folder or inp.turn != 1:
        return
    while True:
        for name in sorted(os.listdir(folder)):
            if name.startswith("token-") and not name.endswith(".taken"):
                try:
                    os.rename(os.path.join(folder, name), os.path.join(folder, name + ".taken"))
                    return
                except FileNotFoundError:  # another worker took it first
                    continue
        await asyncio.sleep(0.005)


async def gated_kv_agent(inp: Any) -> str:
    """``kv_agent`` that plays a trial only when the test's ``TrialGate`` allows it."""
    await take_token(inp)
    return kv_agent(inp)


async def held_kv_agent(inp: Any) -> str:
    """``kv_agent``; the one trial that takes the ``hold`` file of the folder named by
    ``SIMLAB_TEST_GATE`` waits at its first turn until a ``release`` file is there."""
    import asyncio
    import os

    folder = os.environ.get(GATE_ENV)
    if folder and inp.turn == 1:
        try:
            os.rename(os.path.join(folder, "hold"), os.path.join(folder, "hold.taken"))
        except FileNotFoundError:  # another trial holds it (or none is asked for)
            pass
        else:
            while not os.path.exists(os.path.join(folder, "release")):
                await asyncio.sleep(0.005)
    return kv_agent(inp)


async def slow_kv_agent(inp: Any) -> str:
    import asyncio

    await asyncio.sleep(0.02)
    return kv_agent(inp)


REPO = Path(__file__).resolve().parents[1]


def copy_demo(root: Path) -> Path:
    """The retail demo project (scenarios, personas, demo agents, simlab.yaml) copied into ``root``."""
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", root / "simlab.yaml")
    return root


def played_demo(tmp_path_factory: Any, *, trials: int = 3) -> Path:
    """The retail demo (flaky agent: passes, failures, policy violations, an attack) played offline
    into a fresh copy: the folder of its run ``demo``, as a run leaves it."""
    import pytest

    from simlab.cli.main import main

    root = copy_demo(tmp_path_factory.mktemp("demo"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        assert main(["run", "--run-id", "demo", "--trials", str(trials), "--no-progress"]) in (0, 1)
    return root / "transcripts" / "demo"


def write_project(root: Any, *, scenarios: int = 3, trials: int = 4, agent: str = "python:tests.support:kv_agent") -> None:
    """A small project on disk: simlab.yaml, one persona, ``scenarios`` KV scenarios."""
    (root / "personas").mkdir()
    (root / "personas" / "tester.yaml").write_text("id: tester\ndescription: A tester.\ngive_up_after: 2\n")
    (root / "scenarios").mkdir()
    for i in range(scenarios):
        (root / "scenarios" / f"s{i}.yaml").write_text(
            f"id: kv-{i}\ntitle: Store k{i}\ndomain: tests.support:KV\npersona: tester\n"
            f"user:\n  goal: Store k{i}=v{i}.\n  opening: Please store k{i}=v{i}.\n  success_phrases: [stored]\n"
            "max_turns: 4\n"
        )
    (root / "simlab.yaml").write_text(f"agent: {agent}\nsimulator: rules\ntrials: {trials}\nconcurrency: 4\n")


def kv_llm_agent(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> Any:
    """A fake LLM agent for the KV domain (a reply function for ``register_fake``): stores what the
    user asked for with one tool call, then says so."""
    import re

    last = messages[-1]
    if last["role"] == "tool":
        return "Done, it is stored."
    match = re.search(r"(\w+)=(\w+)", last.get("content") or "")
    if not match:
        return "What should I store?"
    return {"tool_calls": [{"name": "set_item", "arguments": {"key": match.group(1), "value": match.group(2)}}]}
