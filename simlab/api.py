"""The public Python API: run a batch as the CLI does, load a run, read its figures and tables.

``simlab.run(...)`` plays the same batch as ``simlab run`` (``runner.batch.run_batch``) and returns
a ``Run``; it works outside an event loop and inside one (a notebook, an async test), where the
batch plays on a thread of its own. ``simlab.load_run(path_or_id)`` opens a stored run. A ``Run``
gives the typed summary (``run.summary.suite.pass_hat_k[3]``), the trials and checks as pandas
DataFrames, the transcripts as typed records, comparisons, gates and reports. pandas is imported
only when a DataFrame is asked for.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from simlab.errors import UsageError

if TYPE_CHECKING:  # the heavy or deep parts load when used
    import pandas

    from simlab.report.compare_runs import Comparison
    from simlab.report.gates import GateReport
    from simlab.results.figures import RunSummary
    from simlab.transcript import TrialRecord

__all__ = ["Run", "arun", "load_run", "run"]

AgentLike = str | Callable[..., Any]
ReportFormat = Literal["markdown", "json", "csv"]


class Run:
    """A run on disk (``transcripts/<run_id>/``): its manifest, figures, tables and transcripts.
    Figures are computed when first asked for, from the files as they are then."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not (self.folder / "run.json").exists() and not (self.folder / "trials.jsonl").exists():
            raise UsageError(f"{self.folder}: not a run folder (no run.json, no trials.jsonl)")

    def __repr__(self) -> str:
        return f"Run({str(self.folder)!r})"

    @property
    def id(self) -> str:
        return str(self.manifest.get("run_id") or self.folder.name)

    @cached_property
    def manifest(self) -> dict[str, Any]:
        """``run.json``: the command, every pin, the plan (empty when the file is missing)."""
        from simlab.runner.store import RunStore

        return RunStore(self.folder).read_manifest() or {}

    @cached_property
    def summary(self) -> RunSummary:
        """The run's figures, typed (``summary.json`` as a model), as ``simlab report`` computes them."""
        from simlab.report.build import build
        from simlab.results.figures import RunSummary

        built = build(self.folder, write=False)
        return built if isinstance(built, RunSummary) else RunSummary.model_validate(built)

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
        from simlab.report.build import build
        from simlab.report.compare_runs import compare

        return compare(build(self.folder, write=False), build(other.folder, write=False),
                       allow_different_pins=allow_different_pins, margin=margin)

    def gate(self, suite: str | Path) -> GateReport:
        """The suite's gates on this run (``.exit_code``: 0 held, 1 failed, 3 inconclusive)."""
        from simlab.report.build import build, resolve_run
        from simlab.report.gates import gate_run
        from simlab.specs import load_config, load_suite

        spec = load_suite(Path(suite)).spec
        transcripts = self.folder.parent

        def baseline(ref: str) -> Any:
            config = load_config(transcripts.parent / "simlab.yaml")
            return build(resolve_run(ref, transcripts.parent / config.transcripts), write=False)

        summary = build(self.folder, write=False, allow_unjudged=list(spec.allow_unjudged or []),
                        summary_evaluators=list(spec.summary_evaluators))
        return gate_run(self.folder, summary, spec, suite_path=suite, load_baseline=baseline,
                        root=transcripts.parent)

    def report(self, format: ReportFormat = "markdown") -> str:
        """The report as text: ``markdown``, ``json`` or ``csv``."""
        from simlab.report.build import build
        from simlab.report.formats import render

        return render(build(self.folder, write=False), format)


def load_run(run: str | Path | None = None, *, project: str | Path = ".") -> Run:
    """A stored run: a run id (under the project's transcripts folder), a run folder, or the newest
    run when ``run`` is None."""
    from simlab.report.build import resolve_run
    from simlab.specs import load_config

    root = Path(project)
    transcripts = root / load_config(root / "simlab.yaml").transcripts
    return Run(resolve_run(None if run is None else str(run), transcripts))


def run(scenarios: str | Path | list[str | Path] | None = None, *, suite: str | Path | None = None,
        agent: AgentLike | None = None, simulator: str | None = None, judge: str | None = None,
        trials: int | None = None, concurrency: int | None = None, workers: int = 1, run_id: str | None = None,
        seed: int | None = None, project: str | Path = ".", allow_same_family: bool = False,
        force: bool = False, keep_errors: bool = False,
        on_note: Callable[[str], None] | None = None) -> Run:
    """Play a batch as ``simlab run`` does and return the ``Run``.

    Arguments mean what the CLI's flags mean; unset ones come from the suite and ``simlab.yaml``.
    ``agent`` may also be the Python callable itself (a module-level function, found again by
    ``module:name``). ``project`` is the folder holding ``simlab.yaml`` (the batch runs there, as
    the CLI runs in the current folder). Notes and warnings go to ``on_note`` (default: dropped).
    A run that is interrupted or stopped keeps its finished trials; re-running with the same
    ``run_id`` resumes it. Errors the user must fix raise ``simlab.errors.SimlabError``.
    """
    from simlab.runner.batch import BatchOptions, run_batch
    from simlab.runner.prepare import RunRequest

    paths = [scenarios] if isinstance(scenarios, (str, Path)) else list(scenarios or [])
    req = RunRequest(root=Path("."), paths=[str(p) for p in paths], suite=str(suite) if suite else None,
                     agent=_agent_ref(agent), simulator=simulator, judge=judge, trials=trials,
                     concurrency=concurrency, run_id=run_id, seed=seed, allow_same_family=allow_same_family,
                     command=["simlab.run(...)"])
    options = BatchOptions(force=force, keep_errors=keep_errors, workers=workers,
                           note=on_note or (lambda text: None))

    def play() -> Run:
        with _in_project(Path(project)):
            result = run_batch(req, options)
            return Run(result.plan.folder.resolve())

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return play()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="simlab-run") as pool:
        return pool.submit(play).result()  # a loop runs here (a notebook): the batch gets a thread of its own


async def arun(scenarios: str | Path | list[str | Path] | None = None, *, suite: str | Path | None = None,
               agent: AgentLike | None = None, simulator: str | None = None, judge: str | None = None,
               trials: int | None = None, concurrency: int | None = None, workers: int = 1,
               run_id: str | None = None, seed: int | None = None, project: str | Path = ".",
               allow_same_family: bool = False, force: bool = False, keep_errors: bool = False,
               on_note: Callable[[str], None] | None = None) -> Run:
    """``run`` for async code that must not block its event loop while the batch plays (the same
    arguments)."""
    return await asyncio.to_thread(
        run, scenarios, suite=suite, agent=agent, simulator=simulator, judge=judge, trials=trials,
        concurrency=concurrency, workers=workers, run_id=run_id, seed=seed, project=project,
        allow_same_family=allow_same_family, force=force, keep_errors=keep_errors, on_note=on_note)


def _agent_ref(agent: AgentLike | None) -> str | None:
    """A callable as ``python:module:qualified.name``: the reference the run pins and imports again."""
    if agent is None or isinstance(agent, str):
        return agent
    module, name = getattr(agent, "__module__", None), getattr(agent, "__qualname__", None)
    if not module or not name or "<" in name:
        raise UsageError(f"agent {agent!r}: pass a module-level function (or its 'python:module:name' reference); "
                         "a lambda or a nested function cannot be found again by name")
    return f"python:{module}:{name}"


@contextlib.contextmanager
def _in_project(root: Path) -> Iterator[None]:
    """Work in the project's folder, as the CLI does (relative paths, simlab.yaml, code confinement),
    with its root on ``sys.path``, as the CLI has it: the project's own agents and domain modules
    import the same way from ``simlab run``, the API and the pytest plugin."""
    here = Path.cwd()
    target = root.resolve()
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    if target == here.resolve():
        yield
        return
    os.chdir(target)
    try:
        yield
    finally:
        os.chdir(here)
