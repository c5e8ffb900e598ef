"""``simlab calibrate`` on triage labels: how far can the judge's fault types be trusted?

A human gives the fault type (``transcript/causes.FAULT_TYPES``) of failure modes, each named by
its representative trial, in the ``triage:`` list of a LABELS.yaml (``graders/calibrate.py``)::

    triage:
      - id: wrong-card                 # optional; default: t1, t2 … by position
        transcript: ../transcripts/run-1/trials.jsonl#refund-damaged#2   # FILE#unit_id, or a TrialRecord JSON
        fault_type: wrong_decision
        note: refunded to store credit   # optional, shown with disagreements

The judge is asked the very prompt ``simlab triage`` asks (``graders/triage.py``), and the report
gives agreement and Cohen's kappa over the fault types: p_o the share of items where judge and
human agree, p_e = Σ over types of (judge's share of the type × human's share of it), kappa =
(p_o − p_e) / (1 − p_e). As for rubric labels, kappa is ``None`` — undefined, never 0 — when
nothing was judged or when every human label is the same; items the judge left undecided are
listed apart and left out of both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simlab.errors import SpecError
from simlab.graders.calibrate import cost_text, kappa_text, pct, read_labels_file, read_record
from simlab.graders.judge import judge_pin
from simlab.graders.triage import ask_cause
from simlab.llm.types import ChatModel
from simlab.specs.yamlio import line_for
from simlab.transcript import ModelCall, TrialRecord, Usage
from simlab.transcript.blame import diagnose

__all__ = [
    "TriageCalibration",
    "TriageLabel",
    "TriageOutcome",
    "calibrate_triage",
    "format_triage_report",
    "label_kappa",
    "load_triage_labels",
]


@dataclass
class TriageLabel:
    """One human fault type, resolved: the representative trial and where the label was written."""

    id: str
    record: TrialRecord
    fault_type: str
    source: str = ""
    note: str = ""


def load_triage_labels(path: Path | str) -> list[TriageLabel]:
    """The ``triage:`` labels of a LABELS.yaml, resolved; every problem raised together as a SpecError."""
    path = Path(path)
    spec, lines = read_labels_file(path)
    labels: list[TriageLabel] = []
    problems: list[str] = []
    cache: dict[Path, dict[str, Any]] = {}
    for i, entry in enumerate(spec.triage):
        where = f"{path}:{line_for(lines, ('triage', i)) or 1}"
        try:
            record = read_record(entry.transcript, path.parent, cache)
        except (ValueError, ValidationError) as exc:
            text = (
                str(exc).splitlines()[0]
                if not isinstance(exc, ValidationError)
                else (f"not a trial record ({exc.error_count()} problems, first: {exc.errors()[0]['msg']})")
            )
            problems.append(f"{where}: triage.{i}.transcript: {text}")
            continue
        if diagnose(record.transcript, record.checks, record.verdict) is None:
            problems.append(
                f"{where}: triage.{i}.transcript: trial {record.unit_id!r} passed: there is no failure "
                "to label; name a trial that did not pass"
            )
            continue
        labels.append(TriageLabel(entry.id or f"t{i + 1}", record, entry.fault_type, where, entry.note))
    ids = [label.id for label in labels]
    problems += [
        f"{path}: triage label id {d!r} is used more than once"
        for d in sorted({x for x in ids if ids.count(x) > 1})
    ]
    if problems:
        raise SpecError(problems)
    return labels


def label_kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (judge, human) label pairs over any number of labels; None when undefined
    (nothing judged, or every human label the same: see the module doc)."""
    n = len(pairs)
    if n == 0 or len({human for _, human in pairs}) < 2:
        return None
    judge, human = Counter(j for j, _ in pairs), Counter(h for _, h in pairs)
    p_o = sum(j == h for j, h in pairs) / n
    p_e = sum(judge[label] * human[label] for label in judge) / (n * n)
    return None if p_e >= 1 else (p_o - p_e) / (1 - p_e)


@dataclass
class TriageOutcome:
    item_id: str
    mode: str
    human: str
    judge: str | None  # None: undecided
    reason: str  # the judge's cause, or why it gave none
    source: str = ""
    note: str = ""


@dataclass
class TriageCalibration:
    outcomes: list[TriageOutcome]
    judge: dict[str, Any] = field(default_factory=dict)
    calls: list[ModelCall] = field(default_factory=list)

    @property
    def judged(self) -> list[TriageOutcome]:
        return [o for o in self.outcomes if o.judge is not None]

    @property
    def n(self) -> int:
        """Items the judge decided (agreement and kappa are over these)."""
        return len(self.judged)

    @property
    def agreed(self) -> int:
        return sum(o.judge == o.human for o in self.judged)

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        return label_kappa([(o.judge, o.human) for o in self.judged if o.judge is not None])

    @property
    def disagreements(self) -> list[TriageOutcome]:
        return [o for o in self.judged if o.judge != o.human]

    @property
    def undecided(self) -> list[TriageOutcome]:
        return [o for o in self.outcomes if o.judge is None]

    @property
    def usage(self) -> Usage:
        return Usage.total(call.usage for call in self.calls)


async def calibrate_triage(
    labels: list[TriageLabel], judge: ChatModel, *, max_attempts: int = 3
) -> TriageCalibration:
    """Ask ``judge`` the triage question of every labelled trial and compare with the human's fault type."""
    report = TriageCalibration([], judge=judge_pin(judge))
    for label in labels:
        cause = await ask_cause(judge, label.record, max_attempts=max_attempts, calls=report.calls)
        reason = cause.cause if cause.cause is not None else cause.undecided or "no answer"
        report.outcomes.append(
            TriageOutcome(
                label.id, cause.mode, label.fault_type, cause.fault_type, reason, label.source, label.note
            )
        )
    return report


def format_triage_report(report: TriageCalibration) -> str:
    """A plain-text report: agreement, kappa, the judge's calls and cost, each disagreement."""
    kappa = kappa_text(report.kappa, report.n, "other fault types")
    cost = cost_text(report.usage)
    lines = [
        f"Triage calibration: {len(report.outcomes)} labelled failure modes, {report.n} decided"
        + (f", {len(report.undecided)} undecided" if report.undecided else "")
        + f" — judge {report.judge.get('ref', '?')}",
        f"  agreement      {pct(report.agreement)} ({report.agreed} of {report.n})",
        f"  Cohen's kappa  {kappa}",
        f"  judge calls    {len(report.calls)}, cost {cost}",
    ]
    if report.disagreements:
        lines += ["", "Disagreements (judge ≠ human):"]
        for o in report.disagreements:
            note = f" [label note: {o.note}]" if o.note else ""
            lines.append(f"  {o.item_id} at {o.source}: judge {o.judge}, human {o.human} — {o.reason}{note}")
    if report.undecided:
        lines += ["", "Undecided (left out of agreement and kappa):"]
        lines += [f"  {o.item_id} at {o.source}: {o.reason}" for o in report.undecided]
    return "\n".join(lines)
