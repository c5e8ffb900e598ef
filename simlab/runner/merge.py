"""``simlab merge``: the shards of one run (``--shard i/N`` on several machines) as one run.

Shards merge only when they are parts of the same run: the same pins and plan in every
``run.json`` (the code included: ``code_pins.py``), none resumed over other pins, no torn or bad
line, no line that is not its shard's own trial (``identity.py``), no unit outside the plan and no
unit in two shards. ``force`` merges shards whose pins differ anyway and marks the merged run as
mixing configurations (``merge_forced_over``: its gates are inconclusive). The merged folder gets
every trial line as its shard stored it, and a manifest that names the shards it was made from
(``merged_from``, with the run ids their trials may name).

The merged run is built aside, in a hidden folder beside it (``.OUT.PID.TOKEN.merge``), and moved
into place whole, manifest and all, with one rename: a merge killed half way leaves no folder that
blocks the next one (it removes what a dead merge left).
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simlab.errors import InfraError, UsageError
from simlab.runner.heads_index import IndexBuilder, replace_trials
from simlab.runner.identity import source_run_ids
from simlab.runner.lines import ReadNotes, scan
from simlab.runner.prepare import pin_differences
from simlab.runner.store import RunStore, _alive, _fsync_dir, temp_path


@dataclass
class MergeReport:
    folder: Path
    planned: int
    merged: int
    shards: list[tuple[Path, int]] = field(default_factory=list)  # (folder, trials)
    warnings: list[str] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)  # pins that differed, merged over with force


def merge_shards(out: Path, shards: list[Path], command: list[str], *, force: bool = False) -> MergeReport:
    """Write the run ``out`` from the shard folders ``shards``; a ``UsageError`` names what is wrong."""
    if not shards:
        raise UsageError("merge needs at least one shard folder")
    if len({s.resolve() for s in shards}) < len(shards):
        raise UsageError("the same shard folder is named twice: every unit would be counted twice")
    _clean_dead_merges(out)
    target = RunStore(out)
    if target.manifest_path.exists() or target.has_trials():
        raise UsageError(f"{out} already holds a run; merge into a new run id (or remove it first)")
    manifests = [_manifest(s, force) for s in shards]
    forced = _pin_check(shards, manifests, force)
    plan = target.planned_units(manifests[0])
    if plan is None:
        raise UsageError(
            f"{shards[0] / 'run.json'}: names no planned scenarios and trials; is it a simlab run?"
        )
    report = MergeReport(out, planned=len(plan), merged=0)
    aside = out.with_name(f".{out.name}.{os.getpid()}.{secrets.token_hex(4)}.merge")
    try:
        aside.mkdir(parents=True)
        _write_aside(RunStore(aside), shards, plan, report)
        manifest = _merged_manifest(manifests, out, report, command)
        if forced:
            manifest["merge_forced_over"] = report.forced = forced
        RunStore(aside).write_manifest(manifest)
        _move_into_place(aside, out)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return report


def _pin_check(shards: list[Path], manifests: list[dict[str, Any]], force: bool) -> list[str]:
    """The pins in which the shards differ from the first: refused, or (``force``) returned."""
    forced: list[str] = []
    for shard, manifest in zip(shards[1:], manifests[1:]):
        diffs = pin_differences(manifests[0].get("pins", {}), manifest.get("pins", {}))
        if diffs and not force:
            lines = "\n".join(f"  - {d}" for d in diffs[:20])
            raise UsageError(
                f"{shard} is not a shard of the same run as {shards[0]}: its pins or plan differ:\n"
                f"{lines}\nPlay it again with the same code and settings, or merge with --force "
                "(the merged run is then marked as mixing configurations: its gates are inconclusive)"
            )
        forced += [f"{shard.name}: {d}" for d in diffs]
    for shard, manifest in zip(shards, manifests):
        forced += [
            f"{shard.name}: {d}" for r in manifest.get("resumes") or [] for d in r.get("forced_over") or []
        ]
        forced += [f"{shard.name}: {d}" for d in manifest.get("merge_forced_over") or []]
    return forced


def _write_aside(target: RunStore, shards: list[Path], plan: set[str], report: MergeReport) -> None:
    owner: dict[str, Path] = {}
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


def _move_into_place(aside: Path, out: Path) -> None:
    """One rename: the merged run appears whole or not at all. An empty folder in its place (made
    by hand, or left by an older simlab's lock) is replaced."""
    try:
        os.rename(aside, out)
    except OSError as exc:
        raise UsageError(
            f"{out}: cannot put the merged run in place ({exc.strerror or exc}); another merge or "
            "run wrote it meanwhile: merge into a new run id"
        ) from None
    _fsync_dir(out.parent)


def _clean_dead_merges(out: Path) -> None:
    """Remove what merges into ``out`` that died left beside it; a running one's folder stays."""
    try:
        leftovers = list(out.parent.glob(f".{out.name}.*.merge"))
    except OSError:
        return
    for folder in leftovers:
        pid = folder.name[len(out.name) + 2 :].split(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
    try:  # an empty folder (an older simlab's merge killed before its first line) blocks nothing,
        if out.is_dir() and {p.name for p in out.iterdir()} <= {".lock"}:  # unless someone holds its lock
            store = RunStore(out)
            store.lock()
            try:
                shutil.rmtree(out)
            finally:
                store.unlock()
    except (OSError, InfraError):
        pass


def _manifest(shard: Path, force: bool = False) -> dict[str, Any]:
    store = RunStore(shard)
    if not store.folder.is_dir():
        raise UsageError(f"{shard}: no such run folder")
    manifest = store.read_manifest()
    if manifest is None:
        raise UsageError(
            f"{shard}: no run.json, so its pins and plan are unknown; a shard cannot be merged without it"
        )
    forced = [d for r in manifest.get("resumes") or [] for d in r.get("forced_over") or []]
    if forced and not force:
        raise UsageError(
            f"{shard}: this shard was resumed with --force over other pins, so it mixes configurations "
            f"({forced[0]}); play it again under a new run id (or merge with --force: the merged run "
            "is then marked as mixing configurations)"
        )
    return manifest


def _copy_shard(
    shard: Path, plan: set[str], owner: dict[str, Path], out: Any, report: MergeReport, index: IndexBuilder
) -> int:
    store = RunStore(shard)
    notes = ReadNotes(store.trials_path)
    count = 0
    for number, unit, line in scan(store.trials_path, "line", notes):
        if unit not in plan:
            raise UsageError(
                f"{store.trials_path}:{number}: unit {unit!r} is not in the run's plan; this shard holds "
                "trials of another run"
            )
        if unit in owner:
            raise UsageError(
                f"{store.trials_path}:{number}: unit {unit!r} is also in {owner[unit]}: the shards "
                "overlap (shards of different N, or one shard copied twice); merge each unit once"
            )
        owner[unit] = shard
        out.write(line)
        index.add(line)
        count += 1
    if notes.torn_tail:
        raise UsageError(
            f"{store.trials_path}:{notes.torn_line}: the shard ends in a torn line (it was killed "
            "mid-write); resume it with the same `simlab run … --shard I/N` command, then merge"
        )
    report.warnings += notes.warnings()
    return count


def _merged_manifest(
    manifests: list[dict[str, Any]], out: Path, report: MergeReport, command: list[str]
) -> dict[str, Any]:
    manifest = {k: v for k, v in manifests[0].items() if k not in ("resumes", "merge_forced_over")}
    manifest["run_id"] = out.name
    manifest["created_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    manifest["command"] = command
    manifest["merged_from"] = [
        {
            "folder": str(folder),
            "run_id": shard.get("run_id"),
            "trials": count,
            "run_ids": sorted(source_run_ids(shard)),
        }
        for (folder, count), shard in zip(report.shards, manifests)
    ]
    return manifest
