"""The public API has no side effect on the process: ``simlab.run`` reads the project it is given
and never moves the working directory (not even for a moment another thread could see), and it
plays agent and simulator objects as they are, in one process or in forked workers."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

import simlab
from simlab.sim.simulators.rules import RulesSimulator
from simlab.transcript import Pin

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = ["scenarios/retail/refund-damaged-card.yaml", "scenarios/retail/store-credit-refused.yaml"]
BY_FILE = "python:examples/retail_agents.py:careful_agent"  # a .py reference: read from the project

_answering = threading.Event()  # the agent is answering: the run is in its middle
_looked = threading.Event()  # the other thread has read the working directory
_seen: list[str] = []


def watched_agent(inp: simlab.AgentInput) -> Any:
    """The careful agent, that holds its first answer until another thread has read the cwd."""
    from examples.retail_agents import careful_agent

    if not _answering.is_set():
        _answering.set()
        assert _looked.wait(timeout=60), "the watching thread never looked"
    return careful_agent(inp)


watched_agent.uses_models = False


def _watch() -> None:
    if _answering.wait(timeout=60):
        _seen.append(os.getcwd())
    _looked.set()


class CarefulObject:
    """An agent object (the ``Agent`` protocol): its own pin, an async respond."""

    uses_models = False

    def pin(self) -> Pin:
        return Pin(kind="python", ref="careful-object", settings={"version": 7})

    async def respond(self, inp: simlab.AgentInput) -> simlab.AgentReply:
        from examples.retail_agents import careful_agent

        return careful_agent(inp)


class NamedRules:
    """A simulator object (the ``Simulator`` protocol): the rules simulator under a pin of its own."""

    def __init__(self) -> None:
        self.rules = RulesSimulator()

    def pin(self) -> Pin:
        return Pin(kind="rules", ref="named-rules", settings={"politeness": "high"})

    async def next_message(self, view: simlab.SimView) -> simlab.UserTurn:
        return await self.rules.next_message(view)


def _project(folder: Path) -> Path:
    for name in ("scenarios", "personas", "examples", "suites"):
        shutil.copytree(REPO / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", folder / "simlab.yaml")
    return folder


def _trials(run: simlab.Run) -> dict[str, Any]:
    """Per trial: what played and how it was judged (not when, nor how long it took)."""
    return {r.unit_id: (r.verdict, r.transcript.seed, [(c.name, c.status) for c in r.checks],
                        [e.type for e in r.transcript.events]) for r in run.transcripts()}


def test_a_run_from_another_folder_moves_no_cwd_and_plays_what_the_project_folder_plays(tmp_path, monkeypatch):
    here, there = _project(tmp_path / "here"), _project(tmp_path / "there")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _answering.clear(), _looked.clear(), _seen.clear()
    watcher = threading.Thread(target=_watch)
    watcher.start()
    try:
        away = simlab.run(SCENARIOS, agent=watched_agent, trials=2, run_id="same", project=there)
    finally:
        _looked.set()
        watcher.join()
    assert os.getcwd() == str(elsewhere) and _seen == [str(elsewhere)]  # seen from another thread, mid-run
    assert away.folder == there.resolve() / "transcripts" / "same"
    assert not (elsewhere / "transcripts").exists()
    by_file = simlab.run(SCENARIOS[:1], agent=BY_FILE, trials=1, run_id="file", project=there)
    assert by_file.summary.trials == 1 and os.getcwd() == str(elsewhere)
    code = by_file.manifest.pins.code
    digest = hashlib.sha256((there / "examples" / "retail_agents.py").read_bytes()).hexdigest()
    assert code is not None and code.files["examples/retail_agents.py"] == digest  # read from the project

    monkeypatch.chdir(here)  # the same run, from the project's own folder
    _answering.set(), _looked.set()
    home = simlab.run(SCENARIOS, agent=watched_agent, trials=2, run_id="same")
    assert home.folder.resolve() == here.resolve() / "transcripts" / "same"
    assert _trials(home) == _trials(away) and len(_trials(home)) == 4
    assert home.summary.model_dump(mode="json")["scenarios"] == away.summary.model_dump(mode="json")["scenarios"]
    assert home.manifest.pins == away.manifest.pins  # scenario paths relative to the project, code, commit
    assert away.manifest.pins.scenarios["refund-damaged-card"].path == SCENARIOS[0]


def test_a_relative_suite_is_read_from_the_project_and_a_run_loads_from_anywhere(tmp_path, monkeypatch):
    project = _project(tmp_path / "p")
    (project / "suites" / "smoke.yaml").write_text(
        "id: smoke\nscenarios: ['../scenarios/retail/refund-damaged-card.yaml']\ntrials: 2\n"
        "allow_unjudged: [rubric]\ngates: ['pass^1 >= 0.9']\n")
    monkeypatch.chdir(tmp_path)
    run = simlab.run(suite="suites/smoke.yaml", agent="python:examples.retail_agents:careful_agent",
                     run_id="smoke", project=project)
    assert run.manifest.suite is not None and run.manifest.suite.id == "smoke"
    assert run.gate("suites/smoke.yaml").exit_code == 0  # relative to the project, like run(suite=…)
    loaded = simlab.load_run("smoke", project=project)
    assert loaded.project == project.resolve() and loaded.summary == run.summary
    assert os.getcwd() == str(tmp_path)


@pytest.mark.parametrize("workers", [1, 2])
def test_agent_and_simulator_objects_play_in_process_and_in_forked_workers(tmp_path, workers):
    project = _project(tmp_path)
    run = simlab.run(SCENARIOS, agent=CarefulObject(), simulator=NamedRules(), trials=2, workers=workers,
                     run_id=f"objects{workers}", project=project)
    name = f"{__name__}:CarefulObject"
    assert run.manifest.pins.agent == {"python": name, "temperature": 0.0, "max_steps": 10, "params": {}}
    assert run.manifest.pins.simulator == {"kind": "rules", "ref": "named-rules", "settings": {"politeness": "high"}}
    records = list(run.transcripts())
    assert len(records) == 4 and {r.verdict for r in records} <= {"pass", "unjudged"}
    agent_pin, simulator_pin = records[0].transcript.agent, records[0].transcript.simulator
    assert agent_pin.ref == name and agent_pin.settings["pin"]["ref"] == "careful-object"
    assert agent_pin.settings["uses_models"] is False and simulator_pin.ref == "named-rules"
    assert run.summary.trials == 4 and run.summary.suite.raw.success.rate == 1.0  # every line is the run's
    again = simlab.run(SCENARIOS, agent=CarefulObject(), simulator=NamedRules(), trials=2, workers=workers,
                       run_id=f"objects{workers}", project=project)
    assert again.summary.trials == 4  # resumed: the same pins, nothing left to play
    with pytest.raises(simlab.SimlabError, match="different pins"):
        simlab.run(SCENARIOS, agent=CarefulObject(), trials=2, run_id=f"objects{workers}", project=project)


def test_what_no_name_can_find_again_is_refused_clearly(tmp_path):
    project = _project(tmp_path)

    class Local(CarefulObject):
        pass

    for agent in (Local(), lambda inp: "hi", 42, CarefulObject):
        with pytest.raises(simlab.SimlabError, match="agent") as caught:
            simlab.run(SCENARIOS, agent=agent, project=project)  # type: ignore[arg-type]
        assert caught.value.exit_code == 2
    with pytest.raises(simlab.SimlabError, match="simulator"):
        simlab.run(SCENARIOS, agent=CarefulObject(), simulator=object(), project=project)  # type: ignore[arg-type]
    with pytest.raises(simlab.SimlabError, match=r"an instance of the class \(NamedRules\(\)\)"):
        simlab.run(SCENARIOS, agent=CarefulObject(), simulator=NamedRules, project=project)  # type: ignore[arg-type]
    assert not (project / "transcripts").exists()


def test_an_older_run_json_reads_typed_with_its_missing_fields_empty(tmp_path):
    folder = tmp_path / "transcripts" / "old"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "schema_version": 1, "run_id": "old", "command": ["simlab", "run"], "units": 2, "future_key": {"a": 1},
        "pins": {"agent": {"python": "m:f"}, "seed": 3, "scenarios": {"s": {"path": "s.yaml", "trials": 2}}}}))
    manifest = simlab.Run(folder).manifest
    assert isinstance(manifest, simlab.RunManifest)
    assert manifest.pins.code is None and manifest.suite is None and manifest.resumes == []
    assert manifest.pins.scenarios["s"].trials == 2 and manifest.pins.scenarios["s"].sha256 is None
    assert manifest.model_extra == {"future_key": {"a": 1}}  # kept, never dropped
    (folder / "run.json").write_text(json.dumps({"run_id": "old", "units": "many"}))
    with pytest.raises(simlab.SimlabError, match="units"):
        simlab.Run(folder).manifest  # noqa: B018


class CrashingRules(NamedRules):
    """A simulator object whose own code breaks on its second turn."""

    async def next_message(self, view: simlab.SimView) -> simlab.UserTurn:
        if view.turn > 1:
            raise KeyError("persona_tone")
        return await super().next_message(view)


def test_a_simulator_objects_crash_is_its_error_blamed_on_the_user_side_not_the_lab(tmp_path):
    project = _project(tmp_path)
    run = simlab.run(SCENARIOS, agent=CarefulObject(), simulator=CrashingRules(), trials=1,
                     run_id="crashing", project=project)
    rows = run.trials()
    crashed = rows[rows["termination"] == "error"]
    assert len(crashed) > 0 and set(crashed["verdict"]) == {"error"}  # nothing to judge: not the agent's fail
    assert set(crashed["blame"]) == {"user"} and set(crashed["failure_mode"]) == {"user: simulator crash"}
    record = next(r for r in run.transcripts() if r.verdict == "error")
    assert "the simulator crashed: KeyError: 'persona_tone'" in record.transcript.termination.detail


def test_a_users_module_is_imported_with_litellms_price_map_offline(tmp_path, monkeypatch):
    """An agent module that imports LiteLLM itself, before simlab needs it, must not make LiteLLM
    fetch its price map from the network at import: simlab sets the switch before importing the
    user's module (a value the user set is kept)."""
    project = _project(tmp_path)
    (project / "probe_agent.py").write_text(
        "import os\n"
        "SEEN = os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP')  # what `import litellm` here would read\n"
        "from examples.retail_agents import careful_agent as agent\n"
    )
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    simlab.run(SCENARIOS, agent="python:probe_agent:agent", trials=1, run_id="probe", project=project)
    import probe_agent  # type: ignore[import-not-found]

    assert probe_agent.SEEN == "True"
