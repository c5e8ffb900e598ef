"""A run of observed trials: imported production conversations, written like any run.

Why the same files as a played run: reports, gates, the viewer and compare read every run through
``lines.py`` and the manifest's plan, so an imported run needs no reader of its own. The plan is
the one scenario ``observed`` (or the id given) with one trial per conversation; the trials are
stored ungraded (``simlab grade-traces`` grades them). The raw source is copied only when asked.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simlab.errors import UsageError
from simlab.runner.lines import encode_record
from simlab.runner.store import MANIFEST_SCHEMA_VERSION, RunStore
from simlab.transcript import Transcript, TrialRecord
from simlab.version import __version__


def write_observed_run(
    folder: Path,
    transcripts: list[Transcript],
    *,
    source: Path,
    fmt: str,
    command: list[str],
    redaction: dict[str, Any],
    keep_raw: bool = False,
) -> None:
    """Write imported ``transcripts`` (ungraded) as a new run in ``folder``."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    scenarios: dict[str, dict[str, Any]] = {}
    for t in transcripts:
        entry = scenarios.setdefault(
            t.scenario_id,
            {
                "path": str(source),
                "sha256": digest,
                "persona": "observed",
                "persona_sha256": None,
                "trials": 0,
            },
        )
        entry["trials"] = max(entry["trials"], t.trial)
    manifest = new_manifest(folder, command, scenarios)
    manifest["observed"] = {
        "format": fmt,
        "source": str(source),
        "sha256": digest,
        "conversations": len(transcripts),
        "redaction": redaction,
        "raw_kept": keep_raw,
    }
    write_run(
        folder,
        [TrialRecord(unit_id=t.unit_id, transcript=t) for t in transcripts],
        manifest,
        raw=source if keep_raw else None,
    )


def new_manifest(folder: Path, command: list[str], scenarios: dict[str, Any]) -> dict[str, Any]:
    """The manifest of a run of observed trials; ``scenarios`` as ``pins.scenarios`` (they plan the units)."""
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "run_id": folder.name,
        "simlab_version": __version__,
        "python": sys.version.split()[0],
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "pins": {
            "agent": {"kind": "observed"},
            "simulator": {"kind": "observed"},
            "judge": None,
            "seed": 0,
            "scenarios": scenarios,
        },
        "units": sum(int(s["trials"]) for s in scenarios.values()),
        "allow_unjudged": [],
    }


def write_run(
    folder: Path, records: list[TrialRecord], manifest: dict[str, Any], *, raw: Path | None = None
) -> None:
    """Write ``records`` and ``manifest`` as a new run in ``folder`` (which must not hold a run yet),
    under the run's lock; ``raw``: a file copied, as it is, into ``raw/``."""
    store = RunStore(folder)
    if store.read_manifest() is not None or store.has_trials():
        raise UsageError(f"{folder}: a run is already there; write under a new run id")
    store.lock()
    try:
        appender = store.open_appender()
        try:
            appender.append_lines([encode_record(r) for r in records])
        finally:
            appender.close()
        if raw is not None:
            (folder / "raw").mkdir(exist_ok=True)
            shutil.copyfile(raw, folder / "raw" / raw.name)
        store.write_manifest(manifest)
    finally:
        store.unlock()
