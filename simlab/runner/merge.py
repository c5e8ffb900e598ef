"""``simlab merge``: the shards of one run (``--shard i/N`` on several machines) as one run.

Shards merge only when they are parts of the same run: the same pins and plan in every
``run.json``, none resumed over other pins, no torn or bad line, no unit outside the plan and no
unit in two shards. The merged folder gets every trial line as its shard stored it, and a manifest
that names the shards it was made from (``merged_from``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simlab.errors import UsageError
from simlab.runner.heads_index import IndexBuilder, replace_trials
from simlab.runner.lines import ReadNotes, scan
from simlab.runner.prepare import pin_differences
from simlab.runner.store import RunStore, temp_path


@dataclass
class MergeReport:
    folder: Path
    planned: int
    merged: int
    shards: list[tuple[Path, int]] = field(default_factory=list)  # (folder, trials)
    warnings: list[str] = field(default_factory=list)


def merge_shards(out: Path, shards: list[Path], command: list[str]) -> MergeReport:
    """Write the run ``out`` from the shard folders ``shards``; a ``UsageError`` names what is wrong."""
    if not shards:
        raise UsageError("merge needs at least one shard folder")
    if len({s.resolve() for s in shards}) < len(shards):
        raise UsageError("the same shard folder is named twice: every unit would be counted twice")
    target = RunStore(out)
    if target.manifest_path.exists() or target.has_trials():
        raise UsageError(f"{out} already holds a run; merge into a new run id (or remove it first)")
    manifests = [_manifest(s) for s in shards]
    first = manifests[0]
    for shard, manifest in zip(shards[1:], manifests[1:]):
        diffs = pin_differences(first.get("pins", {}), manifest.get("pins", {}))
        if diffs:
            lines = "\n".join(f"  - {d}" for d in diffs[:20])
            raise UsageError(f"{shard} is not a shard of the same run as {shards[0]}: "
                             f"its pins or plan differ:\n{lines}")
    plan = target.planned_units(first)
    if plan is None:
        raise UsageError(f"{shards[0] / 'run.json'}: names no planned scenarios and trials; is it a simlab run?")
    report = MergeReport(out, planned=len(plan), merged=0)
    owner: dict[str, Path] = {}
    target.lock()
    try:
        tmp = temp_path(target.trials_path)
        index = IndexBuilder(target.trials_path)
        try:
            with open(tmp, "wb") as fh:
                for shard in shards:
                    count = _copy_shard(shard, plan, owner, fh, report, index)
                    report.shards.append((shard, count))
                    report.merged += count
                fh.flush()
                os.fsync(fh.fileno())
            replace_trials(tmp, target.trials_path, index)
        finally:
            tmp.unlink(missing_ok=True)
            index.discard()
        target.write_manifest(_merged_manifest(manifests, out, report, command))
    finally:
        target.unlock()
    return report


def _manifest(shard: Path) -> dict[str, Any]:
    store = RunStore(shard)
    if not store.folder.is_dir():
        raise UsageError(f"{shard}: no such run folder")
    manifest = store.read_manifest()
    if manifest is None:
        raise UsageError(f"{shard}: no run.json, so its pins and plan are unknown; a shard cannot be merged without it")
    forced = [d for r in manifest.get("resumes") or [] for d in r.get("forced_over") or []]
    if forced:
        raise UsageError(f"{shard}: this shard was resumed with --force over other pins, so it mixes configurations "
                         f"({forced[0]}); play it again under a new run id")
    return manifest


def _copy_shard(shard: Path, plan: set[str], owner: dict[str, Path], out: Any, report: MergeReport,
                index: IndexBuilder) -> int:
    store = RunStore(shard)
    notes = ReadNotes(store.trials_path)
    count = 0
    for number, unit, line in scan(store.trials_path, "line", notes):
        if unit not in plan:
            raise UsageError(f"{store.trials_path}:{number}: unit {unit!r} is not in the run's plan; this shard holds "
                             "trials of another run")
        if unit in owner:
            raise UsageError(f"{store.trials_path}:{number}: unit {unit!r} is also in {owner[unit]}: the shards "
                             "overlap (shards of different N, or one shard copied twice); merge each unit once")
        owner[unit] = shard
        out.write(line)
        index.add(line)
        count += 1
    if notes.torn_tail:
        raise UsageError(f"{store.trials_path}:{notes.torn_line}: the shard ends in a torn line (it was killed "
                         "mid-write); resume it with the same `simlab run … --shard I/N` command, then merge")
    report.warnings += notes.warnings()
    return count


def _merged_manifest(manifests: list[dict[str, Any]], out: Path, report: MergeReport,
                     command: list[str]) -> dict[str, Any]:
    manifest = {k: v for k, v in manifests[0].items() if k != "resumes"}
    manifest["run_id"] = out.name
    manifest["created_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    manifest["command"] = command
    manifest["merged_from"] = [{"folder": str(folder), "run_id": shard.get("run_id"), "trials": count}
                               for (folder, count), shard in zip(report.shards, manifests)]
    return manifest
