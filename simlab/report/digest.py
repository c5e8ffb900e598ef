"""The trials behind a run's figures, for outputs that name them: JUnit (time, failing trial ids,
the transcript's file and line, the failing checks' reasons) and the HTML report.

One pass over the typed heads under the one line rule (``runner/heads_tail.scan_heads``: from
the run's index of heads, or from the front of each line), and only the lines of trials that did not
pass are read and parsed whole, so a run of 100,000 passing trials costs what the report costs.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simlab.inert import one_line
from simlab.results.modes import plan_order
from simlab.runner.heads_read import read_line
from simlab.runner.heads_tail import scan_heads
from simlab.runner.lines import ReadNotes, parse_record
from simlab.runner.store import RunStore
from simlab.transcript.head import TrialHead
from simlab.transcript.verdicts import passes

KEEP_PER_SCENARIO = 20  # failing trials named per scenario: a CI page stays readable


@dataclass
class FailedTrial:
    """A trial that did not pass: its typed head, where its transcript is, and why."""

    head: TrialHead
    line: int
    reasons: list[str] = field(default_factory=list)  # "check (kind): reason", or the error's cause
    record: dict[str, Any] | None = None  # the parsed line, when asked for (the HTML report)

    @property
    def unit_id(self) -> str:
        return self.head.row.unit_id

    @property
    def verdict(self) -> str:
        return self.head.row.verdict or ""  # a trial kept here was graded: it did not pass


@dataclass
class Digest:
    path: Path
    seconds: dict[str, float] = field(default_factory=dict)  # scenario → summed known trial durations
    unknown_seconds: dict[str, int] = field(default_factory=dict)  # scenario → trials of unknown duration
    # scenario → its first few trials that did not pass, in plan order
    failed: dict[str, list[FailedTrial]] = field(default_factory=dict)
    not_passed: dict[str, int] = field(default_factory=dict)  # scenario → all that did not pass
    # every trial's cost and duration, when asked for (``heads``: the HTML's distributions); not the
    # heads themselves, which at 100,000 trials would hold the report's memory several times over
    costs: list[float | None] = field(default_factory=list)
    durations: list[float | None] = field(default_factory=list)

    def where(self, trial: FailedTrial) -> str:
        return f"{self.path}:{trial.line}"

    def more(self, scenario: str) -> int:
        """The trials of ``scenario`` that did not pass beyond the few kept by name."""
        return self.not_passed.get(scenario, 0) - len(self.failed.get(scenario, []))


def digest(
    folder: Path,
    *,
    allow_unjudged: Collection[str] = (),
    keep: int = KEEP_PER_SCENARIO,
    records: bool = False,
    heads: bool = False,
) -> Digest:
    """The digest of the run in ``folder``: the same trials as its summary (units of its plan),
    an unjudged trial counted as passed where the summary counts it so (``allow_unjudged``: pass
    the summary's ``unjudged.allowed_kinds``); ``heads`` keeps every trial's cost and duration."""
    allowed = frozenset(allow_unjudged)
    store = RunStore(folder)
    manifest = store.read_manifest()
    notes = ReadNotes(store.trials_path, plan=store.planned_units(manifest) if manifest is not None else None)
    out = Digest(store.trials_path)
    few: dict[str, list[_Kept]] = {}  # scenario → its first ``keep`` trials that did not pass
    firsts: dict[str, _Kept] = {}  # failure mode → its first trial: reports link to it
    for number, _, head, offset, length in scan_heads(store.trials_path, notes):
        row = head.row
        sid, duration = row.scenario_id, row.duration_s
        out.seconds[sid] = out.seconds.get(sid, 0.0) + (duration if duration is not None else 0.0)
        if duration is None:  # left out of the sum and counted, never taken for 0 s
            out.unknown_seconds[sid] = out.unknown_seconds.get(sid, 0) + 1
        if heads:
            out.costs.append(row.cost_usd)
            out.durations.append(duration)
        if row.verdict is None or passes(row.verdict, [kind for _, kind in head.unjudged], allowed):
            continue  # the one rule of what passed (verdicts.passes); ungraded trials have no verdict to show
        out.not_passed[sid] = out.not_passed.get(sid, 0) + 1
        kept = _Kept(plan_order(sid, row.trial, row.unit_id), number, head, offset, length)
        _keep_first(few.setdefault(sid, []), kept, keep)
        mode = row.failure_mode
        if mode is not None and (mode not in firsts or kept.order < firsts[mode].order):
            firsts[mode] = kept
    for kept in firsts.values():  # a mode's first trial is named even past the scenario's first few
        chosen = few.setdefault(kept.order[0], [])
        if all(k.line != kept.line for k in chosen):
            chosen.append(kept)
    for sid in sorted(few):
        out.failed[sid] = [_failed(store.trials_path, k, records) for k in sorted(few[sid], key=_ORDER)]
    return out


@dataclass(frozen=True)
class _Kept:
    """A trial that did not pass, named by a report: where it stands in the plan, and its line."""

    order: tuple[str, int, str]
    line: int
    head: TrialHead
    offset: int
    length: int


_ORDER = operator.attrgetter("order")


def _keep_first(chosen: list[_Kept], kept: _Kept, keep: int) -> None:
    """Keep in ``chosen`` (sorted) the first ``keep`` trials in plan order: trials are stored in the
    order they finished, and a merge stores shards one after another."""
    if keep <= 0 or (len(chosen) >= keep and chosen[-1].order <= kept.order):
        return
    bisect.insort(chosen, kept, key=_ORDER)
    del chosen[keep:]


def _failed(path: Path, kept: _Kept, records: bool) -> FailedTrial:
    raw = parse_record(read_line(path, kept.offset, kept.length), path, kept.line)
    return FailedTrial(kept.head, line=kept.line, reasons=reasons_of(raw), record=raw if records else None)


def reasons_of(raw: dict[str, Any]) -> list[str]:
    """Why a stored trial did not pass, one inert line each (``inert.one_line``: a check named with a
    line break cannot start a line of JUnit's system-out): its failed hard checks with their reasons,
    the checks that could not be decided or did not run, or the infrastructure error's cause."""
    reasons = []
    for check in raw.get("checks") or []:
        status, hard = check.get("status"), check.get("hard", True)
        if status == "fail" and hard:
            reasons.append(f"{check.get('name')} ({check.get('kind')}): {check.get('reason') or 'failed'}")
        elif status in ("error", "not_run") and hard and raw.get("verdict") in ("unjudged", "error"):
            what = "could not be decided" if status == "error" else "did not run"
            reasons.append(f"{check.get('name')} ({check.get('kind')}) {what}: {check.get('reason') or '—'}")
    if raw.get("verdict") == "error":
        end = (raw.get("transcript") or {}).get("termination") or {}
        reasons.insert(
            0,
            f"infrastructure error: {end.get('reason', '?')}"
            + (f" ({end['detail']})" if end.get("detail") else ""),
        )
    return [one_line(reason) for reason in reasons]  # a name with a line break makes no line of its own
