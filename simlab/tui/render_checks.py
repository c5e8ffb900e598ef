"""Pure functions: checks and state diffs → Rich renderables. Check text is data, shown literally."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from simlab.transcript import Check
from simlab.tui.render import clean, literal

__all__ = [
    "STATUS_STYLE",
    "check_detail",
    "check_line",
    "check_order",
    "diff_entries",
    "diff_table",
    "status_text",
]

STATUS_STYLE = {
    "pass": ("✓", "green"),
    "fail": ("✗", "red"),
    "not_run": ("○", "dim"),
    "error": ("⚠", "yellow"),
}
_ORDER = {"fail": 0, "error": 1, "not_run": 2, "pass": 3}


def check_order(checks: list[Check]) -> list[int]:
    """Indices of ``checks``: failed first, then errors, not run, passed; hard before soft."""
    return sorted(range(len(checks)), key=lambda i: (_ORDER.get(checks[i].status, 9), not checks[i].hard, i))


def status_text(status: str) -> Text:
    mark, style = STATUS_STYLE.get(status, ("?", ""))
    return Text(f"{mark} {status}", style=style)


def check_line(check: Check, with_reason: bool = True) -> Text:
    """``✗ name  soft  → event 7`` on one line, the reason on the next (unless ``with_reason`` is off)."""
    mark, style = STATUS_STYLE.get(check.status, ("?", ""))
    out = Text()
    out.append(f"{mark} ", f"bold {style}")
    out.append(literal(check.name, "bold" if check.status == "fail" else ""))
    if not check.hard:
        out.append("  soft", "dim")
    if check.score is not None:
        out.append(f"  {check.score:.2f}", "dim")
    if check.event is not None:
        out.append(f"  → event {check.event}", "cyan")
    if check.reason and with_reason:
        out.append("\n  ")
        out.append(literal(check.reason.replace("\n", " "), "dim"))
    return out


def diff_entries(check: Check) -> list[dict[str, Any]] | list[str] | None:
    """The structural diff a state check carries: entries (dicts) if present, else lines."""
    entries = check.details.get("diff_entries")
    if isinstance(entries, list) and entries:
        return entries
    lines = check.details.get("diff")
    if isinstance(lines, list) and lines:
        return lines
    return None


def _value(value: Any, style: str = "") -> Text:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return literal(text if len(text) <= 200 else text[:199] + "…", style)


def diff_table(entries: list[dict[str, Any]] | list[str]) -> Text:
    """One block per difference: the path, then ``- expected`` and ``+ actual`` (narrow-pane friendly)."""
    out = Text()
    for n, entry in enumerate(entries):
        if n:
            out.append("\n")
        if not isinstance(entry, dict):
            out.append(literal(f"• {entry}"))
            continue
        change = entry.get("change", "changed")
        out.append(literal(entry.get("path") or "(root)", "bold"))
        if change == "length":
            out.append(f"\n  - {entry.get('expected')} items", "green")
            out.append(f"\n  + {entry.get('actual')} items", "red")
            continue
        expected = (
            Text("missing", "italic green")
            if change == "unexpected"
            else _value(entry.get("expected"), "green")
        )
        actual = Text("missing", "italic red") if change == "missing" else _value(entry.get("actual"), "red")
        out.append("\n  - ", "green")
        out.append(expected)
        out.append("\n  + ", "red")
        out.append(actual)
    return out


def check_detail(check: Check) -> RenderableType:
    """Everything about one check: status, kind, where it points, reason, and its diff if any."""
    head = Text()
    head.append_text(status_text(check.status))
    head.append("  ")
    head.append(literal(check.name, "bold"))
    head.append(f"\n{check.kind} · {'hard' if check.hard else 'soft'}", "dim")
    if check.score is not None:
        head.append(f" · score {check.score:.2f}", "dim")
    where = [
        f"event {check.event}" if check.event is not None else "",
        f"turn {check.turn}" if check.turn is not None else "",
        f"call {clean(check.call_id)}" if check.call_id else "",
    ]
    if any(where):
        head.append(" · " + ", ".join(w for w in where if w), "cyan")
    if check.category:
        head.append(" · ")
        head.append(literal(check.category))
    parts: list[RenderableType] = [head]
    if check.reason:
        parts.append(literal(check.reason))
    entries = diff_entries(check)
    if entries:
        parts.append(Text(f"state diff: {len(entries)} difference(s), - expected + actual", "bold"))
        parts.append(diff_table(entries))
    return Group(*parts)
