"""The public Python API: run a batch as the CLI does, load a run, read its figures and tables.

``simlab.run(...)`` plays the same batch as ``simlab run`` (``runner.batch.run_batch``) and returns
a ``Run``; it works outside an event loop and inside one (a notebook, an async test), where the
batch plays on a thread of its own. ``simlab.load_run(path_or_id)`` opens a stored run. A ``Run``
gives the typed manifest and summary (``run.summary.suite.pass_hat_k[3]``), the trials and checks
as pandas DataFrames, the transcripts as typed records, comparisons, gates and reports. pandas is
imported only when a DataFrame is asked for.

Nothing here changes the process's working directory: the project's folder is passed down
(``RunRequest.root``, ``imports.in_project`` for the code a spec names), so a run on one thread
moves nothing another thread sees. The one process-wide change is the CLI's: the project's folder
is put on ``sys.path`` (once), so that its own modules import.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from simlab.errors import UsageError
from simlab.imports import in_project

if TYPE_CHECKING:  # the heavy or deep parts load when used
    import pandas

    from simlab.report.compare_runs import Comparison
    from simlab.report.gates import GateReport
    from simlab.results.figures import RunSummary
    from simlab.runner.manifest import RunManifest
    from simlab.sim.agent_io import Agent, AgentInput, AgentReply
    from simlab.sim.simulators.base import Simulator
    from simlab.transcript import Pin, TrialRecord

__all__ = ["RegressionCheck", "Run", "arun", "load_run", "run"]

ReportFormat = Literal["markdown", "json", "csv"]
_T = TypeVar("_T")


@dataclass(frozen=True)
class RegressionCheck:
    """``simlab compare --fail-on-regression`` from Python: ``exit_code`` 0 (no regression beyond
    noise), 1 (regressed), 3 (inconclusive: a run that does not stand for its plan, or base
    scenarios the candidate did not play); ``reason`` says which; ``comparison`` is the figures."""

    exit_code: int
    reason: str
    comparison: Comparison


class Run:
    """A run on disk (``transcripts/<run_id>/``): its manifest, figures, tables and transcripts.
    Figures are computed when first asked for, from the files as they are then. ``project``: the
    folder holding ``simlab.yaml`` (where a suite's summary functions and relative paths are read
    from); by default the folder above the runs' folder."""

    def __init__(self, folder: str | Path, *, project: str | Path | None = None):
        self.folder = Path(folder)
        if not (self.folder / "run.json").exists() and not (self.folder / "trials.jsonl").exists():
            raise UsageError(f"{self.folder}: not a run folder (no run.json, no trials.jsonl)")
        self.project = Path(project).resolve() if project is not None else self.folder.resolve().parent.parent

    def __repr__(self) -> str:
        return f"Run({str(self.folder)!r})"

    @property
    def id(self) -> str:
        return self.manifest.run_id or self.folder.name

    @cached_property
    def manifest(self) -> RunManifest:
        """``run.json`` typed: the command, every pin, the plan (every field empty when the file is
        missing; a field an older simlab did not write reads as its default)."""
        from simlab.runner.manifest import read_manifest_model
        from simlab.runner.store import RunStore

        store = RunStore(self.folder)
        return read_manifest_model(store.manifest_path, store.read_manifest())

    @cached_property
    def summary(self) -> RunSummary:
        """The run's figures, typed (``summary.json`` as a model), as ``simlab report`` computes them."""
        from simlab.report.build import build

        return self._in_project(lambda: build(self.folder, write=False))

    def trials(self) -> pandas.DataFrame:
        """One row per trial (the columns of ``results.parquet``: identity, verdict, termination,
        counts, usage and cost per role, failed checks, one ``check:<name>`` column per check).
        Unknown numbers are missing (NaN/None), never 0."""
        from simlab.results.frames import read_results
        from simlab.runner.store import RunStore

        return read_results(RunStore(self.folder).trials_path).table.to_pandas()

    def checks(self) -> pandas.DataFrame:
        """One row per check of every trial (the columns of ``checks.parquet``: trial identity,
        verdict, check name, kind, status, hard, score, reason, the event it points at). Parses
        every transcript."""
        from simlab.results.frames import read_checks_table
        from simlab.runner.store import RunStore

        return read_checks_table(RunStore(self.folder).trials_path).to_pandas()

    def transcripts(self) -> Iterator[TrialRecord]:
        """Every stored trial as a typed ``TrialRecord`` (transcript, checks, verdict), streamed."""
        from simlab.runner.store import RunStore

        return RunStore(self.folder).records()

    def compare(self, other: Run, *, margin: float = 0.0, allow_different_pins: bool = False) -> Comparison:
        """This run as the baseline against ``other``, per scenario and pooled, as ``simlab compare``."""
        from simlab.report.compare_runs import compare, replays

        replay = replays(other.summary, self.folder, other.project)  # its simulator differs by design
        return compare(
            self.summary,
            other.summary,
            allow_different_pins=allow_different_pins,
            margin=margin,
            by_design=("simulator",) if replay else (),
        )

    def check_regression(
        self, other: Run, *, margin: float = 0.0, partial_ok: bool = False, allow_different_pins: bool = False
    ) -> RegressionCheck:
        """This run as the baseline: did ``other`` regress? Decided as ``simlab compare
        --fail-on-regression`` decides it (each run held to its own error budget; a part of the
        base's scenarios compared only with ``partial_ok``), never from the pooled figure alone."""
        from simlab.report.compare_runs import compare_exit

        comparison = self.compare(other, margin=margin, allow_different_pins=allow_different_pins)
        code, reason = compare_exit(
            comparison, self.summary, other.summary, fail_on_regression=True, partial_ok=partial_ok
        )
        return RegressionCheck(code, reason, comparison)

    def gate(self, suite: str | Path) -> GateReport:
        """The suite's gates on this run (``.exit_code``: 0 held, 1 failed, 3 inconclusive). A
        relative ``suite`` path is read from the project's folder."""
        from simlab.report.build import build, resolve_run
        from simlab.report.gates import gate_run
        from simlab.specs import load_config, load_suite

        root = self.project
        path = root / suite
        spec = load_suite(path).spec

        def baseline(ref: str) -> Any:  # read as the gated run is: with the suite's allow_unjudged
            config = load_config(root / "simlab.yaml")
            return build(
                resolve_run(ref, root / config.transcripts),
                write=False,
                allow_unjudged=list(spec.allow_unjudged or []),
            )

        def gated() -> GateReport:
            summary = build(
                self.folder,
                write=False,
                allow_unjudged=list(spec.allow_unjudged or []),
                summary_evaluators=list(spec.summary_evaluators),
            )
            return gate_run(self.folder, summary, spec, suite_path=path, load_baseline=baseline, root=root)

        return self._in_project(gated)

    def report(self, format: ReportFormat = "markdown") -> str:
        """The report as text: ``markdown``, ``json`` or ``csv``."""
        from simlab.report.formats import render

        return render(self.summary, format)

    def _in_project(self, work: Callable[[], _T]) -> _T:
        with in_project(self.project):
            return work()


def load_run(run: str | Path | None = None, *, project: str | Path = ".") -> Run:
    """A stored run: a run id (under the project's transcripts folder), a run folder, or the newest
    run when ``run`` is None."""
    from simlab.report.build import resolve_run
    from simlab.specs import load_config

    root = Path(project).resolve()
    transcripts = root / load_config(root / "simlab.yaml").transcripts
    return Run(resolve_run(None if run is None else str(run), transcripts), project=root)


def run(  # noqa: PLR0913 - keyword-only, one per flag of `simlab run`
    scenarios: str | Path | list[str | Path] | None = None,
    *,
    suite: str | Path | None = None,
    agent: str | Callable[..., Any] | Agent | None = None,
    simulator: str | Simulator | None = None,
    judge: str | None = None,
    trials: int | None = None,
    concurrency: int | None = None,
    workers: int = 1,
    run_id: str | None = None,
    seed: int | None = None,
    project: str | Path = ".",
    allow_same_family: bool = False,
    force: bool = False,
    keep_errors: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> Run:
    """Play a batch as ``simlab run`` does and return the ``Run``.

    Arguments mean what the CLI's flags mean; unset ones come from the suite and ``simlab.yaml``.
    ``project`` is the folder holding ``simlab.yaml``: relative ``scenarios`` and ``suite`` paths
    are read from it, as the CLI reads them from the folder it runs in; the process's working
    directory is never changed. ``agent`` is a reference (``python:module:name``, a model…), a
    module-level function (pinned as ``python:module:name``), or an object meeting the ``Agent``
    protocol (an instance of a module-level class, pinned as ``python:module:Class`` with its own
    ``pin()`` in the settings); ``simulator`` a reference or an object meeting the ``Simulator``
    protocol (pinned by its ``pin()``). Objects are played as they are, in this process (worker
    processes are forked and inherit them). Notes and warnings go to ``on_note`` (default:
    dropped). A run that is interrupted or stopped keeps its finished trials; re-running with the
    same ``run_id`` resumes it. Errors the user must fix raise ``simlab.SimlabError``.
    """
    from simlab.runner.batch import BatchOptions, run_batch
    from simlab.runner.prepare import RunRequest

    root = Path(project).resolve()
    paths = [scenarios] if isinstance(scenarios, (str, Path)) else list(scenarios or [])
    ref, agent_object = _agent(agent)
    sim_ref, sim_object = _simulator(simulator)
    req = RunRequest(
        root=root,
        paths=[str(p) for p in paths],
        suite=str(suite) if suite else None,
        agent=ref,
        simulator=sim_ref,
        judge=judge,
        trials=trials,
        concurrency=concurrency,
        run_id=run_id,
        seed=seed,
        allow_same_family=allow_same_family,
        command=["simlab.run(...)"],
    )
    options = BatchOptions(
        force=force,
        keep_errors=keep_errors,
        workers=workers,
        note=on_note or (lambda text: None),
        agent=agent_object,
        simulator=sim_object,
    )

    def play() -> Run:
        with in_project(root):
            result = run_batch(req, options)
        return Run(result.plan.folder, project=root)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return play()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="simlab-run") as pool:
        return pool.submit(play).result()  # a loop runs here (a notebook): the batch gets a thread of its own


async def arun(  # noqa: PLR0913 - run's signature, for await
    scenarios: str | Path | list[str | Path] | None = None,
    *,
    suite: str | Path | None = None,
    agent: str | Callable[..., Any] | Agent | None = None,
    simulator: str | Simulator | None = None,
    judge: str | None = None,
    trials: int | None = None,
    concurrency: int | None = None,
    workers: int = 1,
    run_id: str | None = None,
    seed: int | None = None,
    project: str | Path = ".",
    allow_same_family: bool = False,
    force: bool = False,
    keep_errors: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> Run:
    """``run`` for async code that must not block its event loop while the batch plays (the same
    arguments)."""
    return await asyncio.to_thread(
        run,
        scenarios,
        suite=suite,
        agent=agent,
        simulator=simulator,
        judge=judge,
        trials=trials,
        concurrency=concurrency,
        workers=workers,
        run_id=run_id,
        seed=seed,
        project=project,
        allow_same_family=allow_same_family,
        force=force,
        keep_errors=keep_errors,
        on_note=on_note,
    )


def _name(obj: Any, what: str) -> str:
    """``module:qualified.name`` of a module-level function or class: what a run pins, and what its
    code pins hash (the module's file); ``UsageError`` for what no name can find again."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not name or "<" in name:
        raise UsageError(
            f"{what} {obj!r}: pass a module-level function, an instance of a module-level "
            "class, or a reference ('python:module:name'); a lambda or a nested function or "
            "class has no name the run can pin"
        )
    return f"{module}:{name}"


def _agent(agent: str | Callable[..., Any] | Agent | None) -> tuple[str | None, Any]:
    """(the reference the run pins, the object it plays: None to build it from the reference). A
    function is played as it is too (the same pin as its reference: ``python``, ``module:name``)."""
    from simlab.sim.agent_io import Agent
    from simlab.sim.python_agent import PythonAgent

    if agent is None or isinstance(agent, str):
        return agent, None
    _not_a_class(agent, "agent")
    if isinstance(agent, Agent):
        name = _name(type(agent), "agent")
        return f"python:{name}", _ObjectAgent(agent, name)
    if callable(agent):
        name = _name(agent, "agent")
        return f"python:{name}", PythonAgent(agent, name)
    raise UsageError(
        f"agent {agent!r}: pass a reference, a function, or an object with pin() and async respond(inp)"
    )


def _simulator(simulator: str | Simulator | None) -> tuple[str | None, Any]:
    from simlab.sim.simulators.base import Simulator

    if simulator is None or isinstance(simulator, str):
        return simulator, None
    _not_a_class(simulator, "simulator")
    if isinstance(simulator, Simulator):
        return None, simulator
    raise UsageError(
        f"simulator {simulator!r}: pass 'rules', 'scripted', a model, or an object with "
        "pin() and async next_message(view)"
    )


def _not_a_class(obj: Any, what: str) -> None:
    if isinstance(obj, type) and callable(getattr(obj, "pin", None)):
        raise UsageError(
            f"{what} {obj.__qualname__}: pass an instance of the class ({obj.__qualname__}()), not the class"
        )


class _ObjectAgent:
    """An agent object given to ``run``: played as it is; its transcripts' pin names its class (the
    reference the run pins, which every trial is checked against) and keeps the object's own pin."""

    def __init__(self, agent: Agent, name: str):
        self.agent, self.name = agent, name

    def pin(self) -> Pin:
        from simlab.transcript import Pin

        settings: dict[str, Any] = {"pin": self.agent.pin().model_dump(mode="json")}
        uses_models = getattr(self.agent, "uses_models", None)
        if uses_models is not None:  # as a function's: it declares that it spends no tokens unseen
            settings["uses_models"] = uses_models
        return Pin(kind="python", ref=self.name, settings=settings)

    async def respond(self, inp: AgentInput) -> AgentReply:
        return await self.agent.respond(inp)  # the protocol's: an async respond
