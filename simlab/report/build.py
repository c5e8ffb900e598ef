"""From a run folder to its derived files: results.parquet, summary.json, and checks.parquet on request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simlab.errors import InfraError, SpecError, UsageError
from simlab.redact import holds_secret, mask_tree
from simlab.report.completeness import summary_state
from simlab.report.triage import attach_causes, read_triage
from simlab.results.dataset import run_summary_functions
from simlab.results.figures import Completeness, RunSummary
from simlab.results.frames import CHECKS_FILE, RESULTS_FILE, read_checks_table, read_results, write_table
from simlab.results.summary import summarize
from simlab.runner.code_pins import mixed_pins
from simlab.runner.heads_tail import gc_paused
from simlab.runner.lines import record_of, scan
from simlab.runner.store import ReadNotes, RunStore, clean_leftovers, write_atomic
from simlab.runner.suite_plan import manifest_partial
from simlab.transcript import TrialRecord

SUMMARY_FILE = "summary.json"


def runs_by_age(transcripts: Path) -> list[Path]:
    """Run folders under ``transcripts``, oldest first."""
    if not transcripts.exists():
        return []
    return [p.parent for p in sorted(transcripts.glob("*/run.json"), key=lambda p: p.stat().st_mtime)]


def resolve_run(target: str | None, transcripts: Path) -> Path:
    """A run id (under the transcripts folder), a path to a run folder, or (None) the newest run."""
    runs = runs_by_age(transcripts)
    if target is None:
        if not runs:
            raise UsageError(f"no runs in {transcripts}/ yet: start one with `simlab run`")
        return runs[-1]
    for candidate in (Path(target), transcripts / target):
        if (candidate / "trials.jsonl").exists() or (candidate / "run.json").exists():
            return candidate
    known = f" (recent runs: {', '.join(r.name for r in runs[-5:])})" if runs else ""
    raise UsageError(f"no run {target!r} in {transcripts}/ and no such run folder{known}")


def project_run(target: str | None) -> Path:
    """``resolve_run`` under the transcripts folder named in ``simlab.yaml``."""
    from simlab.specs import load_config

    return resolve_run(target, Path(load_config(Path("simlab.yaml")).transcripts))


def build(
    folder: Path,
    *,
    write: bool = True,
    checks_table: bool = False,
    allow_unjudged: list[str] | None = None,
    summary_evaluators: list[str] | None = None,
) -> RunSummary:
    """The summary of the run in ``folder``. Unless told not to write, it also writes
    ``results.parquet`` and ``summary.json``, and ``checks.parquet`` when asked for or when one is
    there already (kept up to date: that table parses every transcript, so it is opt-in).
    ``allow_unjudged`` (a suite's, for its gates) replaces the list the run was made with, and so
    does ``summary_evaluators`` (a suite's ``module:function`` summary functions, run over every
    trial: ``results/dataset.py``).

    Trials are counted by planned unit id, never by line (``runner/lines.py``): each unit once,
    units outside the plan left out; ``completeness`` and ``warnings`` say what was found.

    The cyclic garbage collector is paused throughout (``heads_tail.gc_paused``): the trials'
    columns and the figures made of them hold no cycle, and they are freed before it resumes, so it
    never scans them (a tenth of a report of 100,000 trials, bench/README.md)."""
    with gc_paused():
        return _build(
            folder,
            write=write,
            checks_table=checks_table,
            allow_unjudged=allow_unjudged,
            summary_evaluators=summary_evaluators,
        )


def _build(
    folder: Path,
    *,
    write: bool,
    checks_table: bool,
    allow_unjudged: list[str] | None,
    summary_evaluators: list[str] | None,
) -> RunSummary:
    store = RunStore(folder)
    manifest = store.read_manifest()
    notes = ReadNotes(store.trials_path, plan=store.planned_units(manifest) if manifest is not None else None)
    allowed = allow_unjudged if allow_unjudged is not None else (manifest or {}).get("allow_unjudged")
    results = read_results(store.trials_path, notes)
    summary = summarize(
        results, run_id=(manifest or {}).get("run_id", folder.name), allow_unjudged=allowed or ()
    )
    summary.pins = (manifest or {}).get("pins", {})
    summary.max_error_rate = error_budget(manifest, store.manifest_path)
    functions = (
        summary_evaluators if summary_evaluators is not None else (manifest or {}).get("summary_evaluators")
    )
    if functions and len(results):
        summary.dataset.update(run_summary_functions(functions, list(_records(store, notes))))
    # resumed with --force over other pins: its trials mix configurations
    summary.mixed_pins = mixed_pins(manifest)
    summary.completeness = Completeness(
        planned=None if notes.plan is None else len(notes.plan),
        finished=len(results),
        unplanned=len(notes.unplanned),
        manifest=manifest is not None,
        partial=manifest_partial(manifest),
        partial_ok=bool((manifest or {}).get("partial_ok")),
    )
    warnings = notes.warnings()
    if manifest is None:
        warnings.insert(
            0,
            f"{folder}: no run.json, so this run's plan and pins are unknown: its completeness "
            "cannot be checked (a gate on it is inconclusive)",
        )
    try:
        attach_causes(summary, read_triage(folder))  # simlab triage's written causes, when asked for
    except SpecError as exc:
        warnings.append(f"{exc} — the causes are left out of this report")
    summary.warnings = warnings
    summary.state = summary_state(summary).state  # the first key of summary.json and of report --json
    if holds_secret(summary.model_dump_json().encode()):  # pins of a run.json written before credentials
        summary = RunSummary.model_validate(mask_tree(summary.model_dump()))  # were masked, a key in a cause
    if write:
        clean_leftovers(folder)
    if write and len(results):
        write_table(folder / RESULTS_FILE, results.table)
        if checks_table or (folder / CHECKS_FILE).exists():
            write_table(
                folder / CHECKS_FILE, read_checks_table(store.trials_path, ReadNotes(notes.path, notes.plan))
            )
        write_atomic(folder / SUMMARY_FILE, summary.to_json() + "\n")
    return summary


def error_budget(manifest: dict[str, Any] | None, path: Path) -> float | None:
    """The run's error budget as ``path`` (its run.json) keeps it, None when it keeps none; a value
    that is no share from 0 to 1 is an ``InfraError`` naming the file and the field."""
    budget = (manifest or {}).get("max_error_rate")
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget <= 1:
        raise InfraError(
            f"{path}: max_error_rate: {str(budget)[:40]!r} is not a share from 0 to 1; this run.json was "
            "not written by simlab as it is; restore it or move the run away"
        )
    return float(budget)


def _records(store: RunStore, notes: ReadNotes) -> Iterator[TrialRecord]:
    """The run's trials as typed records, under the one line rule (each planned unit once)."""
    for number, _, raw in scan(store.trials_path, "raw", ReadNotes(notes.path, notes.plan)):
        yield record_of(raw, store.trials_path, number)
