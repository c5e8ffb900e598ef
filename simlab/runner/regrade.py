"""Re-grade a stored run in place: no simulation, no model call for deterministic checks.

Scenario files are read as they are now (that is the point: fix an expectation, re-grade), with
the graders the run's suite added (pinned in run.json). Judge checks are kept as stored unless
re-judging is asked for: a check's ``grader`` says which grader made it, and the checks kept are
those of the scenario's judge graders. The new trials file is written beside the old one and
renamed over it, under the run's lock.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from simlab.env.checks import check_scenarios
from simlab.errors import UsageError
from simlab.graders.base import GradeContext, verdict_of
from simlab.graders.grade import grade, graders_of, summarize_changes
from simlab.runner.heads_index import IndexBuilder, replace_trials
from simlab.runner.store import RunStore, clean_leftovers, encode_record, temp_path
from simlab.specs import GraderUse, LoadedScenario, load_personas, load_scenarios
from simlab.transcript import ModelCall, TrialRecord
from simlab.transcript.blame import judge_decides
from simlab.transcript.checks import Check

if TYPE_CHECKING:
    from simlab.llm.types import ChatModel


@dataclass
class RegradeReport:
    trials: int = 0
    verdict_changes: dict[str, int] = field(default_factory=dict)  # "fail → pass": count
    check_changes: list[str] = field(default_factory=list)  # "unit: check: old → new"
    changed_scenario_files: list[str] = field(default_factory=list)


def _is_judge_check(check: Check, judges: frozenset[str]) -> bool:
    """Whether a stored check came from one of ``judges`` (the scenario's judge graders). A check
    written before graders were registered names none: its kind and name tell."""
    if check.grader is not None:
        return check.grader in judges
    return judge_decides(check)


def suite_graders(manifest: dict[str, Any]) -> list[GraderUse]:
    """The graders the run's suite added, as pinned in run.json (none in older runs)."""
    return [GraderUse.model_validate(use) for use in manifest.get("pins", {}).get("graders") or []]


def load_run_scenarios(store: RunStore, personas_dir: Path) -> tuple[dict[str, LoadedScenario], list[str]]:
    manifest = store.read_manifest()
    if not manifest:
        raise UsageError(f"{store.folder}: no run.json; is this a run folder?")
    if manifest.get("observed"):  # imported production traces: no scenario files to grade them against
        raise UsageError(
            f"{store.folder.name} holds imported traces, which have no scenario: grade them with "
            f"`simlab grade-traces {store.folder.name} --rules RULES.yaml`"
        )
    pinned = manifest.get("pins", {}).get("scenarios", {})
    paths = [Path(entry["path"]) for entry in pinned.values()]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(
            f"scenario files of this run are gone: {', '.join(missing)}; run grade from the project root"
        )
    loaded = {s.spec.id: s for s in load_scenarios(paths, load_personas(personas_dir))}
    changed = [sid for sid, s in loaded.items() if pinned.get(sid, {}).get("sha256") != s.sha256]
    return loaded, changed


def regrade(
    store: RunStore, personas_dir: Path, *, judge: ChatModel | None = None, rejudge: bool = False
) -> RegradeReport:
    scenarios, changed = load_run_scenarios(store, personas_dir)
    domains = check_scenarios(list(scenarios.values()))
    extra = suite_graders(store.read_manifest() or {})
    report = RegradeReport(changed_scenario_files=changed)
    clean_leftovers(store.folder)  # under the run's lock: any other regrade file is a killed grade's
    tmp = temp_path(store.trials_path, "regrade")
    index = IndexBuilder(store.trials_path)
    try:
        with open(tmp, "wb") as out:
            asyncio.run(_regrade_all(store, scenarios, domains, judge, rejudge, report, out, extra, index))
            out.flush()
            os.fsync(out.fileno())
        replace_trials(tmp, store.trials_path, index)
        pin_graded(store, scenarios)
    finally:
        tmp.unlink(missing_ok=True)  # nothing half-written is left beside the trials
        index.discard()
    return report


GRADED_KEYS = (("sha256", "graded_sha256"), ("persona_sha256", "graded_persona_sha256"))


def pin_graded(store: RunStore, scenarios: dict[str, LoadedScenario]) -> None:
    """Record in run.json, per scenario, the scenario and persona files its trials were just graded
    with when they are not the ones played (``graded_sha256``, ``graded_persona_sha256``; removed
    when they are): a gate holds them to the suite's files and a comparison to the other run's
    (``suite_plan.regraded_files``, ``compare_runs.pin_conflicts``), since the verdicts are theirs."""
    manifest = store.read_manifest()
    pinned = ((manifest or {}).get("pins") or {}).get("scenarios")
    if manifest is None or not isinstance(pinned, dict):
        return
    changed = False
    for sid, loaded in scenarios.items():
        pin = pinned.get(sid)
        if not isinstance(pin, dict):
            continue
        for key, graded in GRADED_KEYS:
            now = loaded.sha256 if key == "sha256" else loaded.persona_sha256
            want = None if pin.get(key) == now else now
            if pin.get(graded) != want:
                changed = True
                if want is None:
                    pin.pop(graded, None)
                else:
                    pin[graded] = want
    if changed:
        store.write_manifest(manifest)


async def _regrade_all(  # noqa: PLR0913 - private: the pass over one run's records
    store: RunStore,
    scenarios: dict[str, LoadedScenario],
    domains: dict[str, Any],
    judge: ChatModel | None,
    rejudge: bool,
    report: RegradeReport,
    out: BinaryIO,
    extra: list[GraderUse],
    index: IndexBuilder,
) -> None:
    """Every record on one event loop (judges share it), written in the original order."""
    memos: dict[str, dict[str, Any]] = {}  # per scenario: what grading its trials shares
    for record in store.records():
        scenario = scenarios.get(record.transcript.scenario_id)
        if scenario is None:
            raise UsageError(
                f"trial {record.unit_id}: scenario {record.transcript.scenario_id!r} is not in "
                "this run's manifest"
            )
        new = await _regrade_one(
            record,
            scenario,
            domains[scenario.spec.id],
            judge,
            rejudge,
            memos.setdefault(scenario.spec.id, {}),
            extra,
        )
        _note(report, record, new)
        line = encode_record(new)
        out.write(line)
        index.add(line)


async def _regrade_one(
    record: TrialRecord,
    loaded: LoadedScenario,
    domain: Any,
    judge: ChatModel | None,
    rejudge: bool,
    memo: dict[str, Any],
    extra: list[GraderUse],
) -> TrialRecord:
    transcript = record.transcript.model_copy(deep=True)
    ctx = GradeContext(transcript, loaded.spec, domain, judge=judge, persona=loaded.persona, memo=memo)
    graded = await grade(ctx, use_judges=rejudge, extra=extra)
    checks = graded.checks
    if rejudge:
        transcript.events = [
            e for e in transcript.events if not (isinstance(e, ModelCall) and e.role == "judge")
        ]
        transcript.events.extend(graded.judge_calls)
    else:
        judges = graders_of(ctx.scenario, ctx.memo, extra).judge_names
        checks = checks + [c for c in record.checks if _is_judge_check(c, judges)]
    verdict = verdict_of(transcript, checks)
    return TrialRecord(
        unit_id=record.unit_id,
        transcript=transcript,
        checks=checks,
        verdict=verdict,
        attempt=record.attempt,
        earlier_attempts=record.earlier_attempts,
    )


def _note(report: RegradeReport, old: TrialRecord, new: TrialRecord) -> None:
    report.trials += 1
    if old.verdict != new.verdict:
        key = f"{old.verdict or 'ungraded'} → {new.verdict}"
        report.verdict_changes[key] = report.verdict_changes.get(key, 0) + 1
    for line in summarize_changes([c.model_dump() for c in old.checks], new.checks):
        report.check_changes.append(f"{old.unit_id}: {line}")
