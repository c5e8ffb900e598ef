"""The public Python API, used as a notebook would: run the demo, load the run, read typed figures
and DataFrames, compare and gate, and the same from inside a running event loop."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

import simlab
import simlab.api
import simlab.errors
from simlab.cli.main import main
from simlab.errors import SimlabError

REPO = Path(__file__).resolve().parents[1]
CAREFUL = "python:examples.retail_agents:careful_agent"
SCENARIOS = ["scenarios/retail/refund-damaged-card.yaml", "scenarios/retail/store-credit-refused.yaml"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("scenarios", "personas", "examples", "suites"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    return tmp_path


def careful(inp):
    """A module-level agent, passed to simlab.run as the function itself."""
    from examples.retail_agents import careful_agent

    return careful_agent(inp)


careful.uses_models = False


# pinned exactly: growing the public surface is a decision, made here (and in ARCHITECTURE.md)
PUBLIC = ["__version__", "Domain", "tool", "READ", "WRITE", "ToolError", "AgentInput", "AgentReply", "Agent",
          "Simulator", "SimView", "UserTurn", "Check", "GradeContext", "grader", "run", "arun", "load_run", "Run",
          "RunSummary", "RunManifest", "SimlabError"]
RUN_ARGS = ("(scenarios: str | Path | list[str | Path] | None = None, *, suite: str | Path | None = None, "
            "agent: str | Callable[..., Any] | Agent | None = None, simulator: str | Simulator | None = None, "
            "judge: str | None = None, trials: int | None = None, concurrency: int | None = None, "
            "workers: int = 1, run_id: str | None = None, seed: int | None = None, project: str | Path = ., "
            "allow_same_family: bool = False, force: bool = False, keep_errors: bool = False, "
            "on_note: Callable[[str], None] | None = None) -> Run")
SIGNATURES = {
    "run": RUN_ARGS,
    "arun": RUN_ARGS,
    "load_run": "(run: str | Path | None = None, *, project: str | Path = .) -> Run",
    "Run": "(folder: str | Path, *, project: str | Path | None = None)",
    "Run.compare": "(self, other: Run, *, margin: float = 0.0, allow_different_pins: bool = False) -> Comparison",
    "Run.check_regression": "(self, other: Run, *, margin: float = 0.0, partial_ok: bool = False, "
                            "allow_different_pins: bool = False) -> RegressionCheck",
    "Run.gate": "(self, suite: str | Path) -> GateReport",
    "Run.report": "(self, format: ReportFormat = markdown) -> str",
    "Run.trials": "(self) -> pandas.DataFrame",
    "Run.checks": "(self) -> pandas.DataFrame",
    "Run.transcripts": "(self) -> Iterator[TrialRecord]",
}
RUN_MEMBERS = {"folder", "project", "id", "manifest", "summary", "trials", "checks", "transcripts", "compare",
               "check_regression", "gate", "report"}


def signature(name: str) -> str:
    """The signature as written in the source (its annotations are strings there), unquoted."""
    obj: Any = simlab
    for part in name.split("."):
        obj = getattr(obj, part)
    return str(inspect.signature(obj)).replace("'", "")


def test_the_public_surface_is_pinned_small_and_light() -> None:
    code = ("import sys, simlab; assert not {'litellm', 'pandas', 'textual'} & set(sys.modules), sys.modules.keys(); "
            "print(list(simlab.__all__))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert eval(done.stdout) == PUBLIC  # our own printed list
    assert simlab.__all__ == PUBLIC and sorted(dir(simlab)) == sorted(PUBLIC)
    for name in PUBLIC[1:]:
        assert getattr(simlab, name) is not None  # each one loads
    assert {name: signature(name) for name in SIGNATURES} == SIGNATURES
    assert {n for n in dir(simlab.Run) if not n.startswith("_")} | {"folder", "project"} == RUN_MEMBERS
    assert typing.get_args(typing.get_type_hints(simlab.Run.report, vars(simlab.api))["format"]) == \
        ("markdown", "json", "csv")
    assert simlab.SimlabError is SimlabError and issubclass(simlab.errors.UsageError, simlab.SimlabError)
    with pytest.raises(AttributeError):
        simlab.LiteLLMModel  # noqa: B018 - internal names are not part of the facade


def test_architecture_promises_exactly_the_exported_names() -> None:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## Public API\n", 1)[1].split("\n## ", 1)[0]
    promised = section.split("- the `simlab` package's `__all__`", 1)[1].split("; `tests/test_api.py`", 1)[0]
    assert re.findall(r"`([A-Za-z_]+)`", promised) == PUBLIC


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_python_dash_m_simlab_is_the_cli(flag: str) -> None:
    done = subprocess.run([sys.executable, "-m", "simlab", flag], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    if flag == "--version":
        assert done.stdout.strip() == f"simlab {simlab.__version__}"
    else:
        assert done.stdout.startswith("usage: simlab") and " run " in done.stdout


def test_run_load_and_read_a_run_as_a_notebook_does(project: Path, capsys) -> None:
    notes: list[str] = []
    run = simlab.run(SCENARIOS, agent=CAREFUL, trials=3, run_id="nb", project=project, on_note=notes.append)
    assert isinstance(run, simlab.Run) and run.id == "nb" and any(n.startswith("run nb:") for n in notes)

    loaded = simlab.load_run("nb", project=project)
    summary = loaded.summary
    assert isinstance(summary, simlab.RunSummary)
    assert summary.trials == 6 and summary.suite.pass_hat_k[3] == 1.0

    trials = loaded.trials()
    assert len(trials) == 6
    assert {"unit_id", "scenario_id", "trial", "verdict", "termination", "tool_calls", "cost_usd",
            "failed_checks"} <= set(trials.columns)
    # the stored verdicts: no judge, so trials with hard rubric items are unjudged (the demo's
    # simlab.yaml lets them count as passes in the figures: allow_unjudged)
    assert set(trials["verdict"]) <= {"pass", "unjudged"} and summary.suite.raw.success.rate == 1.0
    assert set(trials["scenario_id"]) == {"refund-damaged-card", "store-credit-refused"}
    checks = loaded.checks()
    assert {"unit_id", "name", "kind", "status", "hard", "reason"} <= set(checks.columns)
    assert not checks[(checks["status"] == "fail") & checks["hard"]].size  # soft ones may fail (they score)
    records = list(loaded.transcripts())
    assert len(records) == 6 and records[0].transcript.events

    # the typed figure is what `simlab report --json` prints
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        assert main(["report", "nb", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert summary.suite.valid.pass_k[3].pass_hat_k == printed["suite"]["valid"]["pass_k"]["3"]["pass_hat_k"]
    assert summary.model_dump(mode="json")["scenarios"] == printed["scenarios"]


def test_a_callable_agent_compare_and_gate(project: Path) -> None:
    base = simlab.run(SCENARIOS, agent=careful, trials=3, run_id="base", project=project)
    assert base.manifest.pins.agent == {"python": f"{careful.__module__}:careful", "temperature": 0.0,
                                        "max_steps": 10, "params": {}}
    worse = simlab.run(SCENARIOS, agent="python:examples.retail_agents:flaky_agent", trials=3, run_id="worse",
                       project=project)
    comparison = worse.compare(base, allow_different_pins=True)
    assert comparison is not None
    regressed = base.check_regression(worse, allow_different_pins=True)  # as compare --fail-on-regression
    assert (regressed.exit_code, regressed.reason) == (1, "regressed beyond noise")
    assert regressed.comparison.pooled.verdict == "regressed"
    assert worse.check_regression(base, allow_different_pins=True).exit_code == 0
    part = simlab.run(SCENARIOS[:1], agent="python:examples.retail_agents:flaky_agent", trials=3, run_id="part",
                      project=project)  # a part of the base's scenarios: not a whole comparison
    partial = base.check_regression(part, allow_different_pins=True)
    assert partial.exit_code == 3 and partial.reason.startswith("inconclusive")
    assert base.check_regression(part, allow_different_pins=True, partial_ok=True).exit_code in (0, 1)
    assert worse.summary.suite.raw.success.rate < base.summary.suite.raw.success.rate
    suite = project / "suites" / "api.yaml"
    suite.write_text("id: api\nscenarios: ['../scenarios/retail/refund-damaged-card.yaml',"
                     " '../scenarios/retail/store-credit-refused.yaml']\ntrials: 3\n"
                     "allow_unjudged: [rubric]\ngates: ['pass^1 >= 0.9']\n")
    assert base.gate(suite).exit_code == 0 and worse.gate(suite).exit_code == 1
    assert "| refund-damaged-card |" in base.report("markdown")
    with pytest.raises(SimlabError):
        simlab.run(SCENARIOS, agent=lambda inp: "hi", project=project)  # a lambda cannot be found again


async def test_run_works_inside_a_running_event_loop(project: Path) -> None:
    inside = simlab.run(SCENARIOS[:1], agent=CAREFUL, trials=2, run_id="loop", project=project)
    assert inside.summary.trials == 2
    awaited = await simlab.arun(SCENARIOS[:1], agent=CAREFUL, trials=2, run_id="aloop", project=project)
    assert awaited.summary.trials == 2 and awaited.summary.suite.raw.success.rate == 1.0


async def test_arun_gives_a_users_loop_back_with_its_own_task_factory(project: Path) -> None:
    loop = asyncio.get_running_loop()
    made: list[asyncio.Future[Any]] = []

    def users_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append(asyncio.Task(coro, loop=loop, **kwargs))
        return typing.cast(asyncio.Task[Any], made[-1])

    loop.set_task_factory(users_factory)
    try:
        running = asyncio.ensure_future(simlab.arun(SCENARIOS[:1], agent=CAREFUL, trials=2, run_id="own",
                                                    project=project))
        meanwhile = asyncio.ensure_future(asyncio.sleep(0))  # a task of the user's, during the run
        played = await running
        await meanwhile
        assert played.summary.trials == 2
        assert loop.get_task_factory() is users_factory  # the user's, not simlab's
        assert running in made and meanwhile in made
    finally:
        loop.set_task_factory(None)


def test_resume_through_the_api_plays_only_what_is_left(project: Path) -> None:
    first = simlab.run(SCENARIOS[:1], agent=CAREFUL, trials=2, run_id="again", project=project)
    notes: list[str] = []
    second = simlab.run(SCENARIOS[:1], agent=CAREFUL, trials=2, run_id="again", project=project, on_note=notes.append)
    assert second.folder == first.folder and second.summary.trials == 2
    assert any("2 already done, resuming" in n for n in notes)
