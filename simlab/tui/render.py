"""Pure functions: transcript events → Rich ``Text``. No app, no widgets, no markup.

Everything that comes from a transcript goes through ``literal``: it becomes plain ``Text`` (never
parsed as console markup, so ``[bold]`` or ``[link=…]`` stay as typed) with control characters
(ANSI escape sequences, carriage returns, bells) shown as visible escapes instead of reaching the
terminal. Colours are the eight ANSI names, which Textual maps to readable shades in its dark and
light themes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from rich.text import Text

from simlab.inert import one_line
from simlab.report.fmt import count, money, seconds
from simlab.transcript import (
    AgentMessage,
    ErrorEvent,
    InvalidCall,
    ModelCall,
    Signal,
    Termination,
    ToolCall,
    ToolFault,
    ToolResult,
    UserMessage,
)
from simlab.transcript.verdicts import VERDICT_INFO, verdict_label

__all__ = [
    "FOLD_LINES",
    "clean",
    "event_blocks",
    "event_text",
    "fold",
    "literal",
    "literal_line",
    "mark",
    "pretty_json",
    "reason_text",
    "termination_text",
    "tool_args_inline",
    "tool_call_title",
    "tool_result_text",
    "verdict_text",
]

FOLD_LINES = 12
FOLD_CHARS = 2400
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_JSON_KEY = re.compile(r'"(?:[^"\\]|\\.)*"(?=: )')

VERDICT_STYLE = {v.name: (v.label, v.style) for v in VERDICT_INFO.values()}  # verdicts.py defines them
SIGNAL_WORDS = {"stop": "stopped: goal reached", "give_up": "gave up", "transfer": "asked for a transfer"}


def clean(text: str) -> str:
    """``text`` with control characters as visible escapes (``\\x1b``); newlines kept, tabs expanded."""
    text = text.replace("\r\n", "\n").expandtabs(4)
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


def literal(text: Any, style: str = "") -> Text:
    """Transcript data as literal text: never markup, never a raw control sequence."""
    return Text(clean(text if isinstance(text, str) else str(text)), style=style)


def literal_line(text: Any, style: str = "") -> Text:
    """A field from a file (a check's name, a failure mode) as one literal line: its line breaks too
    shown as escapes (``inert.one_line``), so a picker's option or a status line cannot grow lines."""
    return Text(one_line(text), style=style)


def verdict_text(verdict: str | None) -> Text:
    if verdict is None:
        return Text(verdict_label(None), style="dim")
    label, style = VERDICT_STYLE.get(verdict, (verdict, "bold"))
    return literal(label, style)


def reason_text(reason: str) -> Text:
    style = {
        "goal_reached": "green",
        "error": "yellow",
        "max_turns": "red",
        "agent_loop": "red",
        "budget_exceeded": "red",
        "context_window": "red",
        "agent_error": "red",
    }.get(reason, "")
    return literal(reason, style)


def pretty_json(value: Any) -> Text:
    """Indented JSON with keys coloured; strings keep their JSON escapes (so stay literal)."""
    text = Text(json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False))
    text.plain = clean(text.plain)
    text.highlight_regex(_JSON_KEY, "blue")
    return text


def fold(text: Text, max_lines: int = FOLD_LINES, max_chars: int = FOLD_CHARS) -> tuple[Text, int]:
    """The first lines of a long text and how many lines were left out or cut short (0: all shown)."""
    lines = text.split("\n", allow_blank=True)
    if len(lines) <= max_lines and len(text) <= max_chars:
        return text, 0
    kept: list[Text] = []
    size = 0
    for line in lines[:max_lines]:
        if size + len(line) > max_chars:
            kept.append(line[: max(0, max_chars - size)])
            return Text("\n").join(kept), len(lines) - len(kept) + 1
        kept.append(line)
        size += len(line) + 1
    return Text("\n").join(kept), len(lines) - len(kept)


def tool_args_inline(call: ToolCall, width: int = 60) -> str:
    """``order_id='A123', method='card'`` (or the raw argument text), cut to ``width``."""
    if call.arguments is None:
        text = call.raw_arguments
    else:
        text = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call.arguments.items()
        )
    text = clean(text).replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def tool_call_title(call: ToolCall, result: ToolResult | None) -> Text:
    title = Text()
    if result is None:
        title.append("… ", "dim")
    elif result.ok:
        title.append("✓ ", "green")
    else:
        title.append("✗ ", "red")
    title.append(literal(call.name, "bold cyan"))
    title.append("(")
    title.append(literal(tool_args_inline(call)))
    title.append(")")
    if call.access == "write":
        title.append(" write", "yellow")
    if result is not None:
        preview = (
            json.dumps(result.result, ensure_ascii=False, default=str) if result.ok else (result.error or "")
        )
        preview = clean(preview).replace("\n", " ")
        title.append("  → ", "dim")
        title.append(preview if len(preview) <= 48 else preview[:47] + "…", "dim" if result.ok else "red")
    return title


def tool_result_text(call: ToolCall, result: ToolResult | None) -> Text:
    """Arguments then result (or the error the agent was shown)."""
    out = Text()
    out.append("arguments", "dim")
    out.append("\n")
    out.append(
        pretty_json(call.arguments) if call.arguments is not None else literal(call.raw_arguments or "(none)")
    )
    out.append("\n")
    if result is None:
        out.append("no result recorded", "dim")
    elif result.ok:
        out.append("result", "dim")
        out.append("\n")
        out.append(pretty_json(result.result))
    else:
        out.append("error shown to the agent", "red")
        out.append("\n")
        out.append(literal(result.error or "(no message)"))
    return out


def _speaker(label: str, style: str, turn: int) -> Text:
    head = Text()
    head.append(label, style)
    head.append(f"  turn {turn}", "dim")
    return head


def event_text(event: Any, highlight: str | None = None) -> Text:
    """One event other than a tool call as a block of text (tool calls: ``tool_call_title`` and
    ``tool_result_text``)."""
    if isinstance(event, UserMessage):
        out = _speaker("USER", "bold blue", event.turn)
        out.append("\n")
        out.append(literal(event.text))
    elif isinstance(event, AgentMessage):
        out = _speaker("AGENT", "bold green", event.turn)
        out.append("\n")
        out.append(literal(event.text))
    elif isinstance(event, Signal):
        who = "user" if event.role == "user" else "agent"
        words = SIGNAL_WORDS.get(event.signal, event.signal) if who == "user" else "transferred to a human"
        out = Text()
        out.append(f"■ {who} signal: {event.signal}", "bold magenta")
        out.append(f"  ({words})", "magenta")
    elif isinstance(event, ModelCall):
        out = _usage_line(event)
    elif isinstance(event, InvalidCall):
        out = Text()
        out.append("✗ invalid call ", "bold red")
        out.append(literal(event.name, "bold"))
        out.append(": ")
        out.append(literal(event.reason))
    elif isinstance(event, ErrorEvent):
        out = Text()
        out.append(f"⚠ error from {clean(event.source)} ({clean(event.kind)})", "bold yellow")
        out.append("\n")
        out.append(literal(event.message))
    elif isinstance(event, ToolFault):
        out = Text()
        out.append(f"⚡ injected fault ({clean(event.kind)}) on ", "bold magenta")
        out.append(literal(event.name, "bold"))
        out.append(f", its call {event.call_number} (faults[{event.fault}])", "magenta")
    elif isinstance(event, ToolResult):
        out = Text()
        out.append("result of ", "dim")
        out.append(literal(event.name, "bold cyan"))
        out.append("\n")
        out.append(pretty_json(event.result) if event.ok else literal(event.error or ""))
    else:
        out = literal(repr(event), "dim")
    return mark(out, highlight)


def mark(text: Text, term: str | None) -> Text:
    """``text`` with every occurrence of ``term`` (any case) shown reversed."""
    if term:
        text.highlight_words([clean(term)], "reverse", case_sensitive=False)
    return text


def _usage_line(event: ModelCall) -> Text:
    u = event.usage
    parts = [f"{event.role} call", clean(event.model)]
    parts += [f"in {count(u.input_tokens)}", f"out {count(u.output_tokens)}"]
    if u.cached_tokens:
        parts.append(f"cached {count(u.cached_tokens)}")
    parts.append(("cost " if u.cost_usd is None else "") + money(u.cost_usd))
    parts.append(seconds(u.latency_s))
    if u.retries:
        parts.append(f"{u.retries} retr{'y' if u.retries == 1 else 'ies'} ({u.retry_wait_s:.1f}s waiting)")
    out = Text("· " + " · ".join(parts), "dim")
    if event.error:
        out.append("  ")
        out.append(literal(event.error, "red"))
    return out


def termination_text(termination: Termination) -> Text:
    out = Text()
    out.append("— ended: ", "bold")
    out.append(reason_text(termination.reason.value))
    if termination.detail:
        out.append(" (")
        out.append(literal(termination.detail))
        out.append(")")
    out.append(f" at turn {termination.turn} —", "bold")
    return out


def event_blocks(events: Sequence[Any]) -> list[tuple[int, int | None]]:
    """(event index, index of its tool result or None) in display order: a tool call and its
    result show as one block; a result whose call is missing shows on its own."""
    results = {e.call_id: i for i, e in enumerate(events) if isinstance(e, ToolResult)}
    paired: set[int] = set()
    blocks: list[tuple[int, int | None]] = []
    for i, event in enumerate(events):
        if isinstance(event, ToolCall):
            j = results.get(event.call_id)
            if j is not None and j > i:
                paired.add(j)
                blocks.append((i, j))
                continue
            blocks.append((i, None))
        elif i not in paired:
            blocks.append((i, None))
    return blocks
