"""``grade-traces``: the reference-free checks on a run of observed trials, on a seeded sample.

Why a new run: the imported run stays as it was imported (grade it again with other rules or
another sample); the graded run plans exactly the traces picked, so its completeness, reports and
gates count those. Unit ids are kept, so ``compare`` matches a trace across gradings. What was
sampled and why is in the manifest (``grade_traces``) and in each trial's ``trace_flags`` check.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simlab.env.domain import load_domain
from simlab.errors import UsageError
from simlab.graders.online import NO_CONTENT_CHECK, OnlineGrader, observed_domain, picked_by, trace_flags
from simlab.runner.observed import new_manifest, write_run
from simlab.runner.store import RunStore
from simlab.specs.loader import Loaded, load_model
from simlab.specs.online import OnlineRules
from simlab.transcript import TrialRecord


@dataclass
class TracesGraded:
    population: int = 0
    flagged: dict[str, list[str]] = field(default_factory=dict)  # unit id -> flags
    sampled: list[str] = field(default_factory=list)  # picked by the random sample
    verdicts: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)  # "unit: check at turn T (call C): reason"
    no_content: list[str] = field(default_factory=list)  # units whose trace carries no message content


def load_rules(path: Path) -> Loaded:
    """The rules file (``spec``: ``OnlineRules``; empty: the defaults) with the sha256 of the bytes
    read; errors name file, line and field."""
    return load_model(path, OnlineRules, empty_ok=True)


def grade_traces(
    source: Path, out: Path, loaded: Loaded, *, judge: Any = None, judge_pin: Any = None, command: list[str]
) -> TracesGraded:
    """Grade the observed trials of ``source`` picked by the rules ``loaded`` (``load_rules``) into
    the new run ``out``."""
    rules: OnlineRules = loaded.spec
    rules_path = loaded.path
    store = RunStore(source)
    manifest = store.read_manifest()
    if manifest is None:
        raise UsageError(f"{source}: no run.json; is this a run folder?")
    domain = load_domain(rules.domain, source=f"{rules_path}: domain") if rules.domain else None
    grader = OnlineGrader(rules, observed_domain(domain), judge)
    report = TracesGraded()
    picked: list[tuple[TrialRecord, list[str], str]] = []
    for record in store.records():
        t = record.transcript
        if t.observed is None:
            raise UsageError(
                f"{source}: {record.unit_id} is not an observed trial; grade-traces grades imported "
                "runs (simlab import), `simlab grade` grades played ones"
            )
        report.population += 1
        flags = trace_flags(t, rules.sample.flags)
        by = picked_by(record.unit_id, flags, rules.sample)
        if flags:
            report.flagged[record.unit_id] = flags
        if by == "sample":
            report.sampled.append(record.unit_id)
        if by is not None:
            picked.append((record, flags, by))
    graded: list[TrialRecord] = asyncio.run(_grade_all(grader, picked))
    for record in graded:
        report.verdicts[str(record.verdict)] = report.verdicts.get(str(record.verdict), 0) + 1
        if any(c.name == NO_CONTENT_CHECK and c.status == "not_run" for c in record.checks):
            report.no_content.append(record.unit_id)
        for check in record.checks:
            if check.kind == "policy" and check.status == "fail":
                where = f" at turn {check.turn}" + (f" (call {check.call_id})" if check.call_id else "")
                report.violations.append(f"{record.unit_id}: {check.name}{where}: {check.reason}")
    trials: dict[str, int] = {}
    for record in graded:
        sid = record.transcript.scenario_id
        trials[sid] = trials.get(sid, 0) + 1
    pinned = (manifest.get("pins") or {}).get("scenarios") or {}
    # the plan: exactly the units picked, listed (their ids keep the imported trial numbers)
    scenarios = {sid: {**pinned.get(sid, {}), "trials": count} for sid, count in trials.items()}
    new = new_manifest(out, command, scenarios)
    new["pins"]["judge"] = judge_pin
    new["observed"] = manifest.get("observed")
    new["units"] = len(graded)
    new["planned_units"] = sorted(r.unit_id for r in graded)
    new["grade_traces"] = {
        "from_run": manifest.get("run_id", source.name),
        "rules": str(rules_path),
        "rules_sha256": loaded.sha256,
        "sample": rules.sample.model_dump(mode="json"),
        "population": report.population,
        "flagged": report.flagged,
        "sampled": report.sampled,
    }
    write_run(out, graded, new)
    return report


async def _grade_all(
    grader: OnlineGrader, picked: list[tuple[TrialRecord, list[str], str]]
) -> list[TrialRecord]:
    out = []
    for record, flags, by in picked:
        result = await grader.grade(record.transcript, flags, by)
        transcript = record.transcript
        if result.judge_calls:
            transcript = transcript.model_copy(update={"events": [*transcript.events, *result.judge_calls]})
        out.append(
            record.model_copy(
                update={"transcript": transcript, "checks": result.checks, "verdict": result.verdict}
            )
        )
    return out
