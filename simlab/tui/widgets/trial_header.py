"""Two lines on top of a transcript: how the trial ended and what it cost, and who played."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from simlab.report.fmt import money, seconds
from simlab.transcript import TrialRecord
from simlab.transcript.counts import tool_counts
from simlab.transcript.row import record_head
from simlab.tui.render import clean, literal, reason_text, verdict_text

__all__ = ["TrialHeader", "plural", "tool_summary", "trial_summary"]


def trial_summary(record: TrialRecord) -> Text:
    """Line 1: verdict, failed checks, how it ended, turns, tool calls, cost. Line 2: who played."""
    t = record.transcript
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append_text(verdict_text(record.verdict))
    failed = sum(1 for c in record.checks if c.status == "fail")
    if record.checks:
        out.append(f" · {failed}/{len(record.checks)} checks failed", "red" if failed else "dim")
    out.append(" · ")
    out.append_text(reason_text(t.termination.reason.value))
    if t.termination.detail:
        out.append(" (")
        out.append(literal(t.termination.detail))
        out.append(")")
    cost = record_head(record).row.cost_usd  # the trial's cost as the report counts it
    out.append(
        f" · {plural(t.user_turns(), 'turn')} · {tool_summary(t.events)}"
        f" · {'cost ' if cost is None else ''}{money(cost)} · "
        + ("duration " if t.duration_s is None else "")
        + seconds(t.duration_s),
        "dim",
    )
    out.append(
        f"\nagent {clean(t.agent.ref)} · simulator {clean(t.simulator.ref)} · persona {clean(t.persona_id)}"
        f" · seed {t.seed}",
        "dim",
    )
    return out


def tool_summary(events: Sequence[object]) -> str:
    """``5 tool calls (1 invalid, 2 errors)``: the count the report and the efficiency check use."""
    counts = tool_counts(events)
    parts = [f"{counts['invalid_calls']} invalid"] if counts["invalid_calls"] else []
    if counts["tool_errors"]:
        parts.append(plural(counts["tool_errors"], "error"))
    return plural(counts["tool_calls"], "tool call") + (f" ({', '.join(parts)})" if parts else "")


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class TrialHeader(Static):
    def __init__(self, record: TrialRecord, **kwargs: object) -> None:
        super().__init__(trial_summary(record), **kwargs)  # type: ignore[arg-type]
