"""The "why trials failed" section, phrased once for every surface (terminal, markdown and the step
summary, HTML): the run's failure modes (``results/modes.py``), most costly first, each with its
blame, the trial to read first at its first faulty step, and its weight on the headline."""

from __future__ import annotations

from dataclasses import dataclass

from simlab.inert import one_line
from simlab.report.fmt import pct
from simlab.results.figures import Comparison, FailureMode, RunSummary

TITLE = "why trials failed"
HEADER = ("trials", "scenarios", "blame", "failure mode", "read first", "if fixed")
NOTE = ("blame: whose fault · read first: the mode's first trial, at its first faulty step · "
        "if fixed: pass^k with this mode's trials as passes")


@dataclass(frozen=True)
class ModeLine:
    mode: FailureMode
    cells: tuple[str, ...]  # as HEADER names them, each one line of inert text


def mode_lines(summary: RunSummary, top: int) -> list[ModeLine]:
    """The ``top`` modes of a run as table rows."""
    return [ModeLine(m, (str(m.trials), str(len(m.scenarios)), m.blame, one_line(m.mode.removeprefix(f"{m.blame}: ")),
                         first_step(m),
                         weight(summary, m))) for m in summary.failure_modes[:top]]


def more_modes(summary: RunSummary, top: int) -> str:
    """A line on the modes beyond the ``top`` shown (those summary.json left out included), or ''."""
    more = max(0, len(summary.failure_modes) - top) + summary.failure_modes_more
    return f"{more} more failure modes (summary.json has the top {len(summary.failure_modes)})" if more else ""


def first_step(mode: FailureMode) -> str:
    where = f"turn {mode.first_fault_turn}" if mode.first_fault_turn is not None else "turn unknown"
    event = f", event {mode.first_fault_event}" if mode.first_fault_event is not None else ""
    return f"{one_line(mode.representative)} ({where}{event})"


def weight(summary: RunSummary, mode: FailureMode) -> str:
    """``pass^1 58% → 78% · pass^3 18% → 40%``: the headline now and had the mode's trials passed."""
    ks = sorted(mode.without)
    shown = [k for k in ks if k in (1, 3)] or ks[:1]
    if len(shown) == 1 and ks[-1] != shown[0]:
        shown.append(ks[-1])
    return " · ".join(f"pass^{k} {pct(_now(summary, k))} → {pct(mode.without[k])}" for k in shown)


def _now(summary: RunSummary, k: int) -> float | None:
    point = summary.suite.raw.pass_k.get(k)
    return point.pass_hat_k if point is not None else None


def mode_change_lines(comparison: Comparison, top: int = 8) -> list[str]:
    """``simlab compare``'s failure modes: new, grown, shrunk and fixed ones (unchanged ones are left
    out), one line each."""
    lines = []
    for m in [m for m in comparison.modes if m.status != "same"][:top]:
        counts = f"{_count(m.base, m.base_share)} → {_count(m.candidate, m.candidate_share)}"
        lines.append(f"{m.status}: {m.blame}: {one_line(m.mode.removeprefix(f'{m.blame}: '))} ({counts})")
    return lines


def _count(trials: int | None, share: float | None) -> str:
    return "unknown" if trials is None else f"{trials} trials, {pct(share)}"
