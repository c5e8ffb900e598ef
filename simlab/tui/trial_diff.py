"""What differs between two trials of one scenario, in a sentence or two. Pure."""

from __future__ import annotations

import json
from typing import Any

from simlab.report.first_difference import first_difference
from simlab.transcript import AgentMessage, Signal, ToolCall, TrialRecord, UserMessage
from simlab.tui.render import clean

__all__ = ["differences", "first_divergence", "steps"]

SHOWN = 4  # failed checks named per side; the transcripts' own panels have the rest


def steps(events: list[Any]) -> list[tuple[int, str, str]]:
    """(turn, kind, what) for the events that make a conversation: messages, tool calls, signals."""
    out = []
    for e in events:
        if isinstance(e, UserMessage):
            out.append((e.turn, "user", e.text))
        elif isinstance(e, AgentMessage):
            out.append((e.turn, "agent", e.text))
        elif isinstance(e, ToolCall):
            args = json.dumps(e.arguments, sort_keys=True) if e.arguments is not None else e.raw_arguments
            out.append((e.turn, "tool", f"{e.name}({args})"))
        elif isinstance(e, Signal):
            out.append((e.turn, "signal", f"{e.role} {e.signal}"))
    return out


def _say(step: tuple[int, str, str] | None) -> str:
    if step is None:
        return "had already ended"
    _, kind, what = step
    what = clean(what).replace("\n", " ")
    what = what if len(what) <= 60 else what[:59] + "…"
    return {"user": f'user said "{what}"', "agent": f'agent said "{what}"', "tool": f"called {what}",
            "signal": f"signal {what}"}[kind]


def first_divergence(a: TrialRecord, b: TrialRecord) -> str:
    """Where the two trials first differ, as ``simlab compare`` finds it (``report/first_difference``:
    one algorithm), phrased with what each side did at that point of the turn."""
    found = first_difference(a.transcript, b.transcript)
    if found is None:
        return "same messages and tool calls"
    turn, how = found
    sa = [s for s in steps(a.transcript.events) if s[0] == turn]
    sb = [s for s in steps(b.transcript.events) if s[0] == turn]
    for i in range(max(len(sa), len(sb))):
        x = sa[i] if i < len(sa) else None
        y = sb[i] if i < len(sb) else None
        if x is None or y is None or x[1:] != y[1:]:
            return (f"first difference at turn {turn}, step {i + 1}: #{a.transcript.trial} {_say(x)}; "
                    f"#{b.transcript.trial} {_say(y)}")
    return f"first difference at turn {turn}: {clean(how)}"


def differences(a: TrialRecord, b: TrialRecord) -> list[str]:
    """Lines for the top of the compare screen: verdicts, endings, failed checks, divergence."""
    ta, tb = a.transcript, b.transcript
    lines = [f"#{ta.trial} {a.verdict or 'not graded'}, ended {ta.termination.reason.value} · "
             f"#{tb.trial} {b.verdict or 'not graded'}, ended {tb.termination.reason.value}"]
    fa = {c.name for c in a.checks if c.status == "fail"}
    fb = {c.name for c in b.checks if c.status == "fail"}
    for trial, only in ((ta.trial, sorted(fa - fb)), (tb.trial, sorted(fb - fa))):
        if only:
            shown = ", ".join(clean(n) for n in only[:SHOWN])
            more = f" (+{len(only) - SHOWN} more)" if len(only) > SHOWN else ""
            lines.append(f"failed only in #{trial}: {shown}{more}")
    lines.append(first_divergence(a, b))
    return lines
