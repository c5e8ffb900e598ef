"""``simlab calibrate LABELS.yaml``: how far can the rubric judge be trusted?

A human labels transcripts against criteria; the judge answers the same questions (the very
prompt ``grade_rubric`` uses) and the report gives agreement, Cohen's kappa, and the two error
directions apart: a **false pass** (judge yes, human no) lets a bad agent through, a **false
fail** (judge no, human yes) blames a good one.

LABELS.yaml (paths are relative to the file; unknown keys are errors naming file, line, field;
``triage:`` labels the fault types of failure modes instead: ``graders/calibrate_triage.py``)::

    version: 1
    criteria:                          # optional: write each criterion once, refer to it by id
      no-date-promise: Does not promise a specific arrival date
    items:                             # a bare top-level list of items is accepted too
      - id: friday-promise             # optional; default: the item's position, 1-based
        transcript: transcripts/friday.json      # a Transcript (or TrialRecord) JSON file
        criterion: no-date-promise               # an id from criteria, or {id: ..., text: ...}
        label: no                                # yes | no (pass | fail accepted)
        note: promises Friday                    # optional, shown with disagreements
      - transcript: ../transcripts/run-1/trials.jsonl#refund-damaged#2   # a stored trial: FILE#unit_id
        criterion: {id: polite, text: The agent stays polite}
        label: yes
      - conversation:                  # inline, for hand-written cases; a user line starts a turn
          - user: Where is my order A1?
          - tool: {name: lookup_order, args: {order_id: A1}, result: {status: shipped}}  # or error: "..."
          - agent: It ships on Friday.
        criterion: no-date-promise
        label: no

Cohen's kappa over the judged items (a = both yes, b = false passes, c = false fails, d = both
no, n = a+b+c+d): p_o = (a+d)/n, p_e = ((a+b)(a+c) + (c+d)(b+d))/n², kappa = (p_o-p_e)/(1-p_e).
It is ``None`` — undefined, never 0 — when nothing was judged, or when all human labels are the
same (such a set cannot measure chance-corrected agreement: add items of the other label). Items
the judge could not answer (malformed after retries, model error) are listed as judge errors
and left out of agreement and kappa.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from simlab.errors import SpecError
from simlab.graders.judge import judge_criterion, judge_pin, rubric_messages
from simlab.llm.types import ChatModel
from simlab.specs.base import SpecModel
from simlab.specs.errors import format_validation_error
from simlab.specs.yamlio import LineMap, line_for, load_yaml_file
from simlab.transcript import (
    AgentMessage,
    ModelCall,
    Pin,
    Termination,
    TerminationReason,
    ToolCall,
    ToolResult,
    Transcript,
    TrialRecord,
    Usage,
    UserMessage,
)
from simlab.transcript.causes import FaultType

__all__ = [
    "CalibrationReport",
    "LabelItem",
    "Outcome",
    "calibrate",
    "calibrate_file",
    "cohen_kappa",
    "format_report",
    "load_labels",
]

Label = Literal["yes", "no"]


class InlineTool(SpecModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None


class InlineTurn(SpecModel):
    user: str | None = None
    agent: str | None = None
    tool: InlineTool | None = None

    @model_validator(mode="after")
    def _one(self) -> InlineTurn:
        if sum(v is not None for v in (self.user, self.agent, self.tool)) != 1:
            raise ValueError("each conversation line is exactly one of user:, agent:, tool:")
        return self


class CriterionSpec(SpecModel):
    id: str
    text: str


class LabelEntry(SpecModel):
    id: str | None = None
    transcript: str | None = None
    conversation: list[InlineTurn] | None = None
    criterion: str | CriterionSpec
    label: Label
    note: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:  # YAML reads a bare yes/no as a boolean
        if isinstance(value, bool):
            return "yes" if value else "no"
        text = str(value).strip().lower()
        return {"pass": "yes", "fail": "no", "true": "yes", "false": "no"}.get(text, text)

    @model_validator(mode="after")
    def _one_source(self) -> LabelEntry:
        if (self.transcript is None) == (self.conversation is None):
            raise ValueError("give exactly one of transcript: (a file) or conversation: (inline turns)")
        return self


class TriageLabelEntry(SpecModel):
    """A human's fault type for a failure mode, given by its representative trial
    (``calibrate_triage.py``)."""

    id: str | None = None
    transcript: str  # a stored trial, FILE.jsonl#unit_id, or a TrialRecord JSON file: its checks are evidence
    fault_type: FaultType
    note: str = ""


class LabelsFile(SpecModel):
    version: int = 1
    criteria: dict[str, str] = Field(default_factory=dict)
    items: list[LabelEntry] = Field(default_factory=list)
    triage: list[TriageLabelEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_labels(self) -> LabelsFile:
        if not self.items and not self.triage:
            raise ValueError("the file labels nothing: give items: (rubric labels) or triage: (fault types)")
        return self


@dataclass
class LabelItem:
    """One human label, resolved: the transcript, the criterion text, and where it was written."""

    id: str
    transcript: Transcript
    criterion_id: str
    criterion: str
    label: Label
    source: str = ""
    note: str = ""


def _inline(item_id: str, turns: list[InlineTurn]) -> Transcript:
    events: list[Any] = []
    turn = 0
    for i, line in enumerate(turns):
        if line.user is not None or turn == 0:
            turn += 1
        if line.user is not None:
            events.append(UserMessage(turn=turn, text=line.user))
        elif line.agent is not None:
            events.append(AgentMessage(turn=turn, text=line.agent))
        elif line.tool is not None:
            call_id = f"call_{i}"
            events.append(
                ToolCall(
                    turn=turn,
                    call_id=call_id,
                    name=line.tool.name,
                    arguments=line.tool.args,
                    raw_arguments=json.dumps(line.tool.args),
                )
            )
            events.append(
                ToolResult(
                    turn=turn,
                    call_id=call_id,
                    name=line.tool.name,
                    ok=line.tool.error is None,
                    result=line.tool.result,
                    error=line.tool.error,
                )
            )
    pin = Pin(kind="calibration", ref="inline")
    return Transcript(
        run_id="calibration",
        unit_id=item_id,
        scenario_id="calibration",
        persona_id="",
        domain="",
        trial=0,
        seed=0,
        agent=pin,
        simulator=pin,
        events=events,
        termination=Termination(reason=TerminationReason.GOAL_REACHED, detail="inline conversation"),
    )


def _transcript_from(data: Any) -> Transcript:
    if isinstance(data, dict) and "transcript" in data and "events" not in data:
        data = data["transcript"]  # a TrialRecord
    return Transcript.model_validate(data)


def _read_transcript(ref: str, base: Path, cache: dict[Path, dict[str, Any]]) -> Transcript:
    """``ref`` is a JSON file, or ``FILE.jsonl#unit_id`` (the unit id may itself contain '#')."""
    return _transcript_from(read_ref(ref, base, cache))


def read_record(ref: str, base: Path, cache: dict[Path, dict[str, Any]]) -> TrialRecord:
    """The ``TrialRecord`` ``ref`` names (a JSON file of one, or ``FILE.jsonl#unit_id``)."""
    return TrialRecord.model_validate(read_ref(ref, base, cache))


def read_ref(ref: str, base: Path, cache: dict[Path, dict[str, Any]]) -> Any:
    """The JSON ``ref`` names, as parsed: a JSON file's, or the line of unit ``unit_id`` of
    ``FILE.jsonl#unit_id``."""
    file_part, sep, unit = ref.partition("#")
    path = (base / file_part).resolve()
    if not sep or path not in cache:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
        if not sep:
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} is not JSON ({exc.msg}, line {exc.lineno})") from None
        cache[path] = {}
        for line in text.splitlines():
            try:
                raw = json.loads(line)
            except ValueError:
                continue  # a torn line; a unit it held is reported as missing below
            if isinstance(raw, dict) and "unit_id" in raw:
                cache[path][str(raw["unit_id"])] = raw
    if unit not in cache[path]:
        raise ValueError(f"no trial {unit!r} in {path}")
    return cache[path][unit]


def read_labels_file(path: Path) -> tuple[LabelsFile, LineMap]:
    """A LABELS.yaml validated, with the lines of its values; a SpecError naming file, line, field."""
    data, lines = load_yaml_file(path)
    if isinstance(data, list):
        data = {"items": data}
        lines = {("items", *k): v for k, v in lines.items()} | {(): lines.get((), 1)}
    try:
        return LabelsFile.model_validate(data), lines
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, str(path), lines, model=LabelsFile)) from None


def load_labels(path: Path | str) -> list[LabelItem]:
    """Every labelled rubric item of a LABELS.yaml, resolved; all problems are raised together as a
    SpecError. Its ``triage:`` labels are ``calibrate_triage.load_triage_labels``'."""
    path = Path(path)
    spec, lines = read_labels_file(path)
    items: list[LabelItem] = []
    problems: list[str] = []
    cache: dict[Path, dict[str, Any]] = {}
    for i, entry in enumerate(spec.items):
        where = f"{path}:{line_for(lines, ('items', i)) or 1}"
        item_id = entry.id or str(i + 1)
        if isinstance(entry.criterion, str):
            if entry.criterion not in spec.criteria:
                known = ", ".join(spec.criteria) or "none defined"
                problems.append(
                    f"{where}: items.{i}.criterion: unknown criterion {entry.criterion!r} (known: {known})"
                )
                continue
            criterion = CriterionSpec(id=entry.criterion, text=spec.criteria[entry.criterion])
        else:
            criterion = entry.criterion
        try:
            transcript = (
                _read_transcript(entry.transcript, path.parent, cache)
                if entry.transcript is not None
                else _inline(item_id, entry.conversation or [])
            )
        except (ValueError, ValidationError) as exc:
            text = (
                str(exc).splitlines()[0]
                if not isinstance(exc, ValidationError)
                else (f"not a transcript ({exc.error_count()} problems, first: {exc.errors()[0]['msg']})")
            )
            problems.append(f"{where}: items.{i}.transcript: {text}")
            continue
        items.append(
            LabelItem(item_id, transcript, criterion.id, criterion.text, entry.label, where, entry.note)
        )
    ids = [item.id for item in items]
    problems += [
        f"{path}: item id {d!r} is used more than once" for d in sorted({x for x in ids if ids.count(x) > 1})
    ]
    if problems:
        raise SpecError(problems)
    return items


# ---------------------------------------------------------------------- agreement


def cohen_kappa(both_yes: int, false_passes: int, false_fails: int, both_no: int) -> float | None:
    """Cohen's kappa of a 2x2 table (rows: judge, columns: human); None when undefined (see module doc)."""
    a, b, c, d = both_yes, false_passes, false_fails, both_no
    n = a + b + c + d
    if n == 0 or a + c == 0 or b + d == 0:  # nothing judged, or every human label the same
        return None
    p_o = (a + d) / n
    p_e = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n)
    return None if p_e >= 1 else (p_o - p_e) / (1 - p_e)


@dataclass
class Outcome:
    item_id: str
    criterion_id: str
    human: Label
    judge: Label | None  # None: the judge could not answer
    reason: str
    source: str = ""
    note: str = ""


@dataclass
class CalibrationReport:
    outcomes: list[Outcome]
    judge: dict[str, Any] = field(default_factory=dict)
    calls: list[ModelCall] = field(default_factory=list)

    def _count(self, judge: str, human: str) -> int:
        return sum(o.judge == judge and o.human == human for o in self.outcomes)

    @property
    def n(self) -> int:
        """Items the judge answered (agreement and kappa are over these)."""
        return sum(o.judge is not None for o in self.outcomes)

    both_yes = property(lambda self: self._count("yes", "yes"))
    both_no = property(lambda self: self._count("no", "no"))
    false_passes = property(lambda self: self._count("yes", "no"), doc="Judge yes, human no.")
    false_fails = property(lambda self: self._count("no", "yes"), doc="Judge no, human yes.")

    @property
    def agreement(self) -> float | None:
        return (self.both_yes + self.both_no) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.both_yes, self.false_passes, self.false_fails, self.both_no)

    @property
    def disagreements(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.judge is not None and o.judge != o.human]

    @property
    def errors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.judge is None]

    @property
    def usage(self) -> Usage:
        return Usage.total(call.usage for call in self.calls)


async def calibrate(
    items: list[LabelItem], judge: ChatModel, *, samples: int = 1, max_attempts: int = 3, policy: str = ""
) -> CalibrationReport:
    """Ask ``judge`` every labelled question (the rubric prompt) and compare with the human labels."""
    report = CalibrationReport([], judge=judge_pin(judge))
    for item in items:
        messages = rubric_messages(item.transcript, item.criterion, policy)
        verdict, reason, _ = await judge_criterion(
            judge,
            item.transcript,
            messages,
            key=f"calibrate/{item.id}",
            samples=samples,
            max_attempts=max_attempts,
            calls=report.calls,
        )
        report.outcomes.append(
            Outcome(
                item.id,
                item.criterion_id,
                item.label,
                verdict,  # type: ignore[arg-type]
                reason,
                item.source,
                item.note,
            )
        )
    return report


async def calibrate_file(path: Path | str, judge: ChatModel, **options: Any) -> CalibrationReport:
    return await calibrate(load_labels(path), judge, **options)


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def kappa_text(kappa: float | None, n: int, others: str) -> str:
    """Cohen's kappa as a calibration report shows it; undefined, and why, when it is."""
    if kappa is not None:
        return f"{kappa:.2f}"
    return f"undefined (every human label is the same; add items of {others})" if n else "undefined"


def cost_text(usage: Usage) -> str:
    return "unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"


def format_report(report: CalibrationReport) -> str:
    """A plain-text report: agreement, kappa, both error directions, the table, each disagreement."""
    total = len(report.outcomes)
    kappa = kappa_text(report.kappa, report.n, "the other label")
    cost = cost_text(report.usage)
    lines = [
        f"Judge calibration: {total} labelled items, {report.n} judged"
        + (f", {len(report.errors)} judge errors" if report.errors else "")
        + f" — judge {report.judge.get('ref', '?')}",
        f"  agreement      {pct(report.agreement)} ({report.both_yes + report.both_no} of {report.n})",
        f"  Cohen's kappa  {kappa}",
        f"  false passes   {report.false_passes}  (judge yes, human no: a bad trial would pass)",
        f"  false fails    {report.false_fails}  (judge no, human yes: a good trial would fail)",
        "",
        "               human yes  human no",
        f"  judge yes    {report.both_yes:>9}  {report.false_passes:>8}",
        f"  judge no     {report.false_fails:>9}  {report.both_no:>8}",
        f"  judge calls  {len(report.calls)}, cost {cost}",
    ]
    if report.disagreements:
        lines += ["", "Disagreements:"]
        for o in report.disagreements:
            kind = "FALSE PASS" if o.judge == "yes" else "FALSE FAIL"
            note = f" [label note: {o.note}]" if o.note else ""
            lines.append(f"  {kind} {o.item_id} ({o.criterion_id}) at {o.source}: {o.reason}{note}")
    if report.errors:
        lines += ["", "Judge errors (left out of agreement and kappa):"]
        lines += [f"  {o.item_id} ({o.criterion_id}) at {o.source}: {o.reason}" for o in report.errors]
    return "\n".join(lines)
