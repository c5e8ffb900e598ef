"""How to finish or redo a run that was not played by one ``simlab run``, said from its recorded
origin (run.json's ``observed``, ``grade_traces`` for a graded sample, ``merged_from`` for merged
shards), never guessed from its id or its trials.

Why not ``--run-id``: a played run is finished or played again by its own command with its run id
(trials that ended in an error are played again). An imported run's trials were never played, so
no ``--run-id`` plays them; a merged run's were played by its shards, each under its own run id;
and the commands that made them (``simlab import``, ``grade-traces``, ``merge``) refuse a folder
that holds a run. What redoes one is its own command (run.json keeps it) under a new name:
``simlab import`` from the fixed source, ``simlab grade-traces`` once the judge or rules are fixed,
``simlab merge`` once its shards are finished.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

NEW = "NEW"  # the new name the advice leaves to the user


def redo_advice(manifest: Mapping[str, Any] | None, *, errors: bool) -> str | None:
    """The sentence that says how to finish (``errors`` False: trials are missing) or redo
    (``errors``: too many ended in an error) a run that was imported or merged, or None for a run
    played by one ``simlab run`` (its ``--run-id`` advice stands)."""
    return imported_redo(manifest) or merged_redo(manifest, errors=errors)


def grade_advice(run_id: str, pins: Mapping[str, Any]) -> str:
    """The command that grades a run's trials not graded, by its recorded origin (its pins, as
    run.json and its summary keep them): an imported run (its agent observed, ``simlab import``)
    has no scenario that ``simlab grade`` could grade by, so ``simlab grade-traces`` with a rules
    file grades it (as a new run); any other run is graded in place by ``simlab grade``."""
    agent = pins.get("agent")
    if isinstance(agent, Mapping) and agent.get("kind") == "observed":
        return shlex.join(["simlab", "grade-traces", run_id, "--rules", "RULES.yaml"])
    return shlex.join(["simlab", "grade", run_id])


def merged_redo(manifest: Mapping[str, Any] | None, *, errors: bool) -> str | None:
    """How to finish or redo a run merged from shards (run.json's ``merged_from``): through its
    shards, each resumed by its own command, then merged again under a new name; None otherwise."""
    merged = (manifest or {}).get("merged_from")
    if not isinstance(merged, list) or not merged:
        return None
    assert manifest is not None
    shards = [str(s.get("run_id") or s.get("folder")) for s in merged if isinstance(s, Mapping)]
    command = [str(word) for word in manifest.get("command") or []]
    if command[:2] == ["simlab", "merge"] and len(command) > 3:
        words = ["simlab", "merge", NEW, *command[3:]]
    else:
        words = ["simlab", "merge", NEW, *shards]
    named = ", ".join(shards)
    if errors:
        return (
            f"the run merges shards ({named}), which no --run-id of its own plays again: fix the cause, "
            "resume each shard with its own command (simlab run … --shard I/N --run-id SHARD: its trials "
            "that ended in an error are played again), then merge them again under a new name: "
            + shlex.join(words)
        )
    return (
        f"the run merges shards ({named}) that do not hold its whole plan, and no --run-id of its own "
        "finishes it: finish each shard and play the missing ones (simlab run … --shard I/N, the "
        "shards' own command), then merge them all again under a new name: "
        + shlex.join(words)
        + " (with the shards played now)"
    )


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
