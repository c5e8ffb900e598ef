"""How to redo an imported run, said from its recorded origin (run.json's ``observed``, and
``grade_traces`` for a graded sample), never guessed from its id or its trials.

Why not ``--run-id``: a played run is finished or played again by its own command with its run id
(trials that ended in an error are played again); an imported run's trials were never played, so
no ``--run-id`` plays them, and the commands that made it refuse a folder that holds a run. What
redoes it is the command that made it (run.json keeps it) under a new name: ``simlab import`` from
the fixed source, or ``simlab grade-traces`` from the imported run once the judge or rules are fixed.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

NEW = "NEW"  # the new name the advice leaves to the user


def imported_redo(manifest: Mapping[str, Any] | None) -> str | None:
    """The sentence that says how to redo the run ``manifest`` describes when it was imported (with
    the command, under the name NEW), or None for a played run (its ``--run-id`` advice stands)."""
    observed = (manifest or {}).get("observed")
    if not isinstance(observed, Mapping):
        return None
    assert manifest is not None
    command = [str(word) for word in manifest.get("command") or []]
    graded = manifest.get("grade_traces")
    if isinstance(graded, Mapping):
        if "grade-traces" not in command:
            rules = ["--rules", str(graded.get("rules"))] if graded.get("rules") else []
            command = ["simlab", "grade-traces", str(graded.get("from_run") or "RUN"), *rules]
        return (
            "the run grades imported traces, which no --run-id plays again: fix the cause (the judge, "
            "the rules or the traces) and grade them again under a new name: "
            + shlex.join(_named(command, "--out"))
        )
    fmt, source = str(observed.get("format") or "FORMAT"), str(observed.get("source") or "SOURCE")
    if "import" not in command:
        command = ["simlab", "import", fmt, source]
    return (
        f"the run was imported ({fmt}: {source}), not played, so no --run-id plays it again: fix the "
        "source and import it again under a new name: " + shlex.join(_named(command, "--run-id"))
    )


def _named(command: list[str], flag: str) -> list[str]:
    """``command`` with ``flag``'s value NEW (added when the command does not give one)."""
    words: list[str] = []
    skip = False
    for word in command:
        if skip:
            skip = False
        elif word == flag:
            skip = True
        elif not word.startswith(f"{flag}="):
            words.append(word)
    return [*words, flag, NEW]
