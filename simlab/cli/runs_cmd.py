"""``simlab runs``: the runs on disk, one line each, newest first."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from simlab.cli.argtypes import positive
from simlab.inert import one_line

if TYPE_CHECKING:
    from simlab.results.figures import RunSummary


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=positive, default=3, help="the k of the pass^k column (default 3)")
    parser.add_argument("--last", type=positive, default=20, help="how many runs, newest first (default 20)")


def run(args: argparse.Namespace) -> int:
    """One line per run, newest first: id, date, agent, trials done of planned, pass^1, pass^k."""
    from simlab.report.build import runs_by_age
    from simlab.report.fmt import pct
    from simlab.runner.store import RunStore
    from simlab.specs import load_config

    transcripts = Path(load_config(Path("simlab.yaml")).transcripts)
    folders = list(reversed(runs_by_age(transcripts)))
    if not folders:
        print(f"no runs in {transcripts}/ yet: start one with `simlab run`")
        return 0
    k = args.k
    print(f"{'run':<24} {'created':<20} {'trials':>13} {'pass^1':>7} {f'pass^{k}':>7}  agent")
    missing = False
    for folder in folders[: args.last]:
        store = RunStore(folder)
        try:
            manifest = store.read_manifest() or {}
            done = len(store.finished_unit_ids())
        except Exception as exc:  # one unreadable run must not hide the others
            print(f"{one_line(folder.name):<24} cannot be read: {one_line(exc)}")
            continue
        planned = manifest.get("units")
        state = f"{done}/{planned}" if planned else f"{done}/?"
        figures = _fresh_summary(folder)
        missing = missing or figures is None
        pass_1, pass_k = pct(_point(figures, 1)), pct(_point(figures, k))
        agent = (manifest.get("pins") or {}).get("agent") or {}
        ref = agent.get("model") or (f"python:{agent['python']}" if agent.get("python") else "?")
        created = str(manifest.get("created_at", ""))[:19].replace("T", " ")
        mark = "" if planned and done >= planned else " (incomplete)"
        print(
            f"{one_line(folder.name):<24} {created:<20} {state + mark:>13} {pass_1:>7} {pass_k:>7}  "
            f"{one_line(ref)}"
        )
    if missing:
        print("–: no summary.json newer than its trials; `simlab report RUN` writes it")
    return 0


def _fresh_summary(folder: Path) -> RunSummary | None:
    """summary.json (the typed summary) when it is newer than the trials (a report of 100,000
    trials costs seconds: the list never recomputes it); None when missing, stale or unreadable."""
    from pydantic import ValidationError

    from simlab.results.figures import RunSummary

    summary, trials = folder / "summary.json", folder / "trials.jsonl"
    if not summary.exists() or (trials.exists() and trials.stat().st_mtime > summary.stat().st_mtime):
        return None
    try:
        return RunSummary.model_validate_json(summary.read_bytes())
    except (OSError, ValidationError):
        return None


def _point(figures: RunSummary | None, k: int) -> float | None:
    entry = None if figures is None else figures.suite.view("valid").pass_k.get(k)
    return None if entry is None else entry.pass_hat_k
