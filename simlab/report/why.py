"""The "why trials failed" section, phrased once for every surface (terminal, markdown and the step
summary, HTML): the run's failure modes (``results/modes.py``), most costly first, each with its
blame, the trial to read first at its first faulty step, and its weight on the headline; and, when
``simlab triage`` was asked (``report/triage.py``), each mode's written cause (one more column, only
then), which ``simlab triage`` itself lists the same way."""

from __future__ import annotations

from dataclasses import dataclass

from simlab.inert import one_line
from simlab.report.fmt import count, money, pct
from simlab.results.figures import Comparison, FailureMode, RunSummary
from simlab.transcript.causes import ModeCause, Triage

TITLE = "why trials failed"
HEADER = ("trials", "scenarios", "blame", "failure mode", "read first", "if fixed")
NOTE = (
    "blame: whose fault · read first: the mode's first trial, at its first faulty step · "
    "if fixed: the suite's pass^k (a mean over scenarios) with this mode's trials as passes"
)
CAUSE = "cause"  # the column added when a mode has a written cause (simlab triage)
CAUSE_NOTE = "cause: the judge's fault type and sentence for the mode's first trial (simlab triage)"
TRIAGE_HEADER = ("failure mode", "trials", "fault type", "cause")


@dataclass(frozen=True)
class ModeLine:
    mode: FailureMode
    cells: tuple[str, ...]  # as HEADER names them, each one line of inert text


def mode_lines(summary: RunSummary, top: int) -> list[ModeLine]:
    """The ``top`` modes of a run as table rows; a ``cause`` cell last when any of them has one."""
    modes = summary.failure_modes[:top]
    caused = any(m.cause is not None for m in modes)
    return [
        ModeLine(
            m,
            (
                str(m.trials),
                str(len(m.scenarios)),
                m.blame,
                one_line(m.mode.removeprefix(f"{m.blame}: ")),
                first_step(m),
                weight(summary, m),
            )
            + ((cause_text(m.cause),) if caused else ()),
        )
        for m in modes
    ]


def header(lines: list[ModeLine]) -> tuple[str, ...]:
    """The columns of ``lines``: ``HEADER``, and ``CAUSE`` when they carry causes."""
    return HEADER + ((CAUSE,) if lines and len(lines[0].cells) > len(HEADER) else ())


def note(lines: list[ModeLine]) -> str:
    return NOTE + (f" · {CAUSE_NOTE}" if len(header(lines)) > len(HEADER) else "")


def cause_lines(lines: list[ModeLine]) -> list[str]:
    """The causes of ``lines`` one line each, for a surface that lists them below its table (modes
    without one left out)."""
    return [
        f"{CAUSE} of {line.cells[3]}: {line.cells[6]}"
        for line in lines
        if len(line.cells) > len(HEADER) and line.mode.cause is not None
    ]


def cause_text(cause: ModeCause | None) -> str:
    """``wrong_decision: The agent …``; ``undecided: why``; ``not triaged`` for a mode without one."""
    if cause is None:
        return "not triaged"
    if cause.fault_type is None or cause.cause is None:
        return f"undecided: {one_line(cause.undecided or 'no answer')}"
    return f"{cause.fault_type}: {one_line(cause.cause)}"


def triage_rows(triage: Triage) -> list[tuple[str, str, str, str]]:
    """``simlab triage``'s table (``TRIAGE_HEADER``): one row per mode triaged."""
    return [
        (
            one_line(c.mode),
            str(c.trials),
            c.fault_type or "undecided",
            one_line(c.cause) if c.cause is not None else one_line(c.undecided or "no answer"),
        )
        for c in triage.causes
    ]


def triage_cost(triage: Triage) -> str:
    """What the triage cost, as every report says a model role's cost."""
    usage, ref = triage.usage, one_line(str(triage.judge.get("ref", "?")))
    return (
        f"judge {ref}: {triage.calls} calls, {count(usage.input_tokens)} tokens in, "
        f"{count(usage.output_tokens)} out, cost {money(usage.cost_usd)}"
    )


def more_modes(summary: RunSummary, top: int) -> str:
    """A line on the modes beyond the ``top`` shown (those summary.json left out included), or ''."""
    more = max(0, len(summary.failure_modes) - top) + summary.failure_modes_more
    return (
        f"{more} more failure modes (summary.json has the top {len(summary.failure_modes)})" if more else ""
    )


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
