"""From a run folder to its derived files: results.parquet, checks.parquet, summary.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simlab.errors import UsageError
from simlab.results.frames import read_frames, write_frames
from simlab.results.summary import summarize
from simlab.runner.store import RunStore, write_atomic

SUMMARY_FILE = "summary.json"


def resolve_run(target: str, transcripts: Path) -> Path:
    """A run id (under the transcripts folder) or a path to a run folder."""
    for candidate in (Path(target), transcripts / target):
        if (candidate / "trials.jsonl").exists() or (candidate / "run.json").exists():
            return candidate
    manifests = sorted(transcripts.glob("*/run.json"), key=lambda p: p.stat().st_mtime) if transcripts.exists() else []
    runs = [p.parent.name for p in manifests][-5:]
    known = f" (recent runs: {', '.join(runs)})" if runs else ""
    raise UsageError(f"no run {target!r} in {transcripts}/ and no such run folder{known}")


def build(folder: Path, *, write: bool = True) -> tuple[dict[str, Any], Any, Any]:
    """Summary and frames of the run in ``folder``; writes the derived files unless told not to."""
    store = RunStore(folder)
    manifest = store.read_manifest() or {}
    trials, checks = read_frames(store.trials_path)
    summary = summarize(trials, checks, run_id=manifest.get("run_id", folder.name))
    summary["pins"] = manifest.get("pins", {})
    if write and len(trials):
        write_frames(folder, trials, checks)
        write_atomic(folder / SUMMARY_FILE, json.dumps(summary, indent=2, sort_keys=False, default=str) + "\n")
    return summary, trials, checks
