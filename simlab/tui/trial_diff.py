"""What differs between two trials of one scenario, in a sentence or two. Pure: where they first
differ is ``report/first_difference`` (what ``simlab compare`` says too); this only phrases it."""

from __future__ import annotations

from simlab.report.first_difference import Step, first_difference
from simlab.transcript import TrialRecord
from simlab.tui.render import clean

__all__ = ["differences", "first_divergence"]

SHOWN = 4  # failed checks named per side; the transcripts' own panels have the rest
_SAY = {
    "user": 'user said "{}"',
    "agent": 'agent said "{}"',
    "tool": "called {}",
    "signal": "signal {}",
    "end": "ended {}",
}


def _say(step: Step, turn: int) -> str:
    what = clean(step.what).replace("\n", " ")
    what = what if len(what) <= 60 else what[:59] + "…"
    said = _SAY[step.kind].format(what)
    return said if step.turn == turn else f"went on to turn {step.turn}: {said}"


def first_divergence(a: TrialRecord, b: TrialRecord) -> str:
    """Where the two trials first differ, with what each side did there."""
    found = first_difference(a.transcript, b.transcript)
    if found is None:
        return "same messages, tool calls, signals and ending"
    return (
        f"first difference at turn {found.turn}, step {found.step}: "
        f"#{a.transcript.trial} {_say(found.base, found.turn)}; "
        f"#{b.transcript.trial} {_say(found.candidate, found.turn)}"
    )


def differences(a: TrialRecord, b: TrialRecord) -> list[str]:
    """Lines for the top of the compare screen: verdicts, endings, failed checks, divergence."""
    ta, tb = a.transcript, b.transcript
    lines = [
        f"#{ta.trial} {a.verdict or 'not graded'}, ended {ta.termination.reason.value} · "
        f"#{tb.trial} {b.verdict or 'not graded'}, ended {tb.termination.reason.value}"
    ]
    fa = {c.name for c in a.checks if c.status == "fail"}
    fb = {c.name for c in b.checks if c.status == "fail"}
    for trial, only in ((ta.trial, sorted(fa - fb)), (tb.trial, sorted(fb - fa))):
        if only:
            shown = ", ".join(clean(n) for n in only[:SHOWN])
            more = f" (+{len(only) - SHOWN} more)" if len(only) > SHOWN else ""
            lines.append(f"failed only in #{trial}: {shown}{more}")
    lines.append(first_divergence(a, b))
    return lines
