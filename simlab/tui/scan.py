"""One line of ``trials.jsonl`` → the few fields a trial list needs, without parsing it all.

simlab writes each line with a ``head`` at its front (``transcript/row.py``): the trial's figures,
the report's own. ``scan_line`` reads just that, and the row is complete.

Lines without a head (files of simlab before record schema 2) are read in two cheap passes:

1. ``scan_line``: identity (anchored at the start of the line), termination, checks and verdict
   (anchored at its end): enough for every figure of the scenarios screen. Events are not parsed.
2. ``add_detail``: turns, tool calls and cost, from the events (a JSON parse of the line up to the
   termination, skipping the final state), done in the background or for the rows on screen.

Whenever such a line does not have exactly the expected shape (a look-alike key inside a tool
result, another writer's key order), the fast path gives up and the whole line is parsed: the fast
path may fail, it may not be wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from simlab.runner.store import read_head
from simlab.transcript.row import trial_head, trial_row

__all__ = ["TrialRow", "add_detail", "row_from_head", "row_from_record", "scan_line"]

_DECODER = json.JSONDecoder()
_STR = r'"(?:[^"\\]|\\.)*"'
_HEAD = re.compile(r'\{"schema_version":\d+,"unit_id":(' + _STR + r'),(?:"head":null,)?"transcript":\{"schema_version":\d+,"run_id":'
                   + _STR + r',"unit_id":' + _STR + r',"scenario_id":(' + _STR + r'),"persona_id":' + _STR
                   + r',"domain":' + _STR + r',"trial":(-?\d+),')
_TERM_KEY = '"termination":{"reason":'
_TERMINATION = re.compile(r'\],"termination":(\{"reason":"[a-z_]+","detail":' + _STR
                         + r',"turn":-?\d+\}),"final_state":')
_VERDICT_TAIL = re.compile(r',"verdict":(null|"[a-z_]+")(?:,"attempt":1,"earlier_attempts":\[\])?\}\s*$')
_CHECKS_KEY = '"checks":['


@dataclass(slots=True)
class TrialRow:
    """A trial as the lists show it; ``offset``/``length`` address its line for the full parse.

    ``turns``, ``tool_calls``, ``model_calls``, ``cost`` and ``errors`` come from the events and
    are filled by ``add_detail`` (``detailed`` says whether that happened)."""

    offset: int
    length: int
    unit_id: str
    scenario_id: str
    trial: int
    verdict: str | None
    reason: str
    detail: str
    failed_checks: tuple[str, ...]  # hard checks that failed
    soft_failed: tuple[str, ...]  # soft checks that failed (they only score)
    check_count: int
    detailed: bool = False
    turns: int = 0
    tool_calls: int = 0
    model_calls: int = 0
    cost: float | None = None
    errors: int = 0

    @property
    def failed(self) -> bool:
        """Anything but a pass: fail, invalid, error; ungraded trials that did not reach the goal."""
        if self.verdict is None:
            return self.reason != "goal_reached"
        return self.verdict != "pass"


def scan_line(line: bytes, offset: int = 0, detail: bool = False) -> TrialRow:
    """The row of one stored trial. Raises ``ValueError`` when the line is not a trial at all."""
    head = read_head(line)
    if head is not None:  # what simlab writes: every figure is in the head, the rest is not parsed
        return row_from_head(head, offset, len(line))
    text = line.decode("utf-8")
    row = _fast(text, offset, len(line))
    if row is None:
        return _slow(text, offset, len(line))
    if detail:
        add_detail(row, line)
    return row


def _fast(text: str, offset: int, length: int) -> TrialRow | None:
    head = _HEAD.match(text)
    tail = text.rfind(',"verdict":')
    if head is None or tail < 0 or text.count(_TERM_KEY) != 1:  # one termination: no look-alike
        return None
    end = _VERDICT_TAIL.match(text, tail)
    term = _TERMINATION.search(text)
    checks = _checks_before(text, tail) if end and term else None
    if checks is None or term is None or end is None:
        return None
    termination = json.loads(term.group(1))
    verdict = json.loads(end.group(1))
    return _row(offset, length, json.loads(head.group(1)), json.loads(head.group(2)), int(head.group(3)),
                termination, checks, verdict)


def _checks_before(text: str, tail: int) -> list[Any] | None:
    """The top-level ``checks`` list: the one occurrence whose value ends where the verdict starts."""
    pos = text.rfind(_CHECKS_KEY, 0, tail)
    while pos >= 0:
        try:
            value, end = _DECODER.raw_decode(text, pos + len(_CHECKS_KEY) - 1)
        except ValueError:
            value, end = None, -1
        if end == tail and isinstance(value, list):
            return value
        pos = text.rfind(_CHECKS_KEY, 0, pos)
    return None


def _slow(text: str, offset: int, length: int) -> TrialRow:
    record = json.loads(text)
    if not isinstance(record, dict) or not isinstance(record.get("transcript"), dict):
        raise ValueError("not a trial record")
    return row_from_record(record, offset, length)


def row_from_record(record: dict[str, Any], offset: int = 0, length: int = 0) -> TrialRow:
    """A detailed row from a fully parsed record."""
    return row_from_head(trial_head(record), offset, length)


def row_from_head(head: dict[str, Any], offset: int = 0, length: int = 0) -> TrialRow:
    """A detailed row from a trial's head (``transcript/row.py``): the report's own figures."""
    r = head["row"]
    unit_id = str(r.get("unit_id") or "?")
    failed = head.get("failed") or []
    return TrialRow(
        offset=offset, length=length, unit_id=unit_id,
        scenario_id=str(r.get("scenario_id") or unit_id.rsplit("#", 1)[0]), trial=int(r.get("trial") or 0),
        verdict=r["verdict"] if isinstance(r.get("verdict"), str) else None,
        reason=str(r.get("termination") or "unknown"), detail=str(r.get("termination_detail") or ""),
        failed_checks=tuple(str(name) for name, _, hard in failed if hard),
        soft_failed=tuple(str(name) for name, _, hard in failed if not hard),
        check_count=int(r.get("check_count") or 0), detailed=True,
        turns=r["user_turns"], tool_calls=r["tool_calls"], model_calls=r["model_calls"],
        cost=r.get("cost_usd"), errors=r["error_events"],
    )


def _row(offset: int, length: int, unit_id: str, scenario_id: Any, trial: Any, termination: dict[str, Any],
         checks: list[Any], verdict: Any) -> TrialRow:
    failed = [c for c in checks if isinstance(c, dict) and c.get("status") == "fail"]
    return TrialRow(
        offset=offset, length=length, unit_id=str(unit_id), scenario_id=str(scenario_id), trial=int(trial),
        verdict=verdict if isinstance(verdict, str) else None,
        reason=str(termination.get("reason", "unknown")), detail=str(termination.get("detail", "")),
        failed_checks=tuple(str(c.get("name", "?")) for c in failed if c.get("hard", True)),
        soft_failed=tuple(str(c.get("name", "?")) for c in failed if not c.get("hard", True)),
        check_count=len(checks),
    )


def add_detail(row: TrialRow, line: bytes) -> TrialRow:
    """Fill the event counts of ``row`` from its line (the prefix up to the termination only)."""
    text = line.decode("utf-8")
    term = _TERMINATION.search(text) if text.count(_TERM_KEY) == 1 else None
    try:
        # closing the transcript and the record right after the one termination parses only when
        # the events list really ends there
        record = json.loads(text[: term.end() - len(',"final_state":')] + "}}") if term else json.loads(text)
    except ValueError:
        record = json.loads(text)
    _count(row, record.get("transcript") or {})
    return row


def _count(row: TrialRow, transcript: dict[str, Any]) -> None:
    counts = trial_row({"transcript": transcript})
    row.turns, row.tool_calls, row.model_calls = counts["user_turns"], counts["tool_calls"], counts["model_calls"]
    row.cost, row.errors = counts["cost_usd"], counts["error_events"]
    row.detailed = True
