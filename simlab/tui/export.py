"""A trial as Markdown, to paste into an issue or a review. Pure: record in, text out.

Transcript text is data: it renders on GitHub as it was typed. Prose is escaped (``<b>`` and
``*em*`` stay literal), names go into code spans longer than any backtick run they hold, bodies
into fences longer than any inside, and control characters are shown as escapes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from simlab.inert import one_line
from simlab.report.fmt import count, money, seconds
from simlab.report.formats import md_escape
from simlab.transcript import (
    AgentMessage,
    ErrorEvent,
    InvalidCall,
    ModelCall,
    Signal,
    ToolCall,
    ToolFault,
    ToolResult,
    TrialRecord,
    UserMessage,
)
from simlab.tui.render import clean, event_blocks

__all__ = ["export_path", "transcript_markdown"]


def export_path(run_folder: Path, unit_id: str) -> Path:
    """``<run>/exports/<unit>.md`` with the unit id made safe for a file name."""
    return run_folder / "exports" / (re.sub(r"[^A-Za-z0-9._-]+", "_", unit_id) + ".md")


def _fence(body: str, lang: str = "") -> str:
    """A code fence longer than any backtick run inside ``body``, so the body cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join("> " + _text(line) if line else ">" for line in clean(text).split("\n"))


def _text(text: Any) -> str:
    """One line of prose from a transcript, markup escaped."""
    return md_escape(one_line(str(text)))


def _code(text: Any) -> str:
    """A code span that no backtick inside can close."""
    body = one_line(str(text))
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def transcript_markdown(record: TrialRecord) -> str:
    t = record.transcript
    lines = [f"# {_text(record.unit_id)}", ""]
    verdict = record.verdict or "not graded"
    lines += [
        f"- run: {_code(t.run_id)} · scenario: {_code(t.scenario_id)} · trial {t.trial}"
        f" · persona {_code(t.persona_id)}",
        f"- verdict: **{verdict}** · ended: **{t.termination.reason.value}**"
        + (f" ({_text(t.termination.detail)})" if t.termination.detail else "")
        + f" at turn {t.termination.turn}",
        f"- agent: {_code(t.agent.ref)} · simulator: {_code(t.simulator.ref)} · seed {t.seed}",
        "",
    ]
    events = t.events
    for i, j in event_blocks(events):
        e = events[i]
        if isinstance(e, UserMessage):
            lines += [f"**User** (turn {e.turn})", "", _quote(e.text), ""]
        elif isinstance(e, AgentMessage):
            lines += [f"**Agent** (turn {e.turn})", "", _quote(e.text), ""]
        elif isinstance(e, ToolCall):
            result = events[j] if j is not None else None
            args = _json(e.arguments) if e.arguments is not None else clean(e.raw_arguments)
            lines += [f"Tool call {_code(e.name)} ({_text(e.call_id)}):", "", _fence(args, "json"), ""]
            if isinstance(result, ToolResult):
                body = _json(result.result) if result.ok else clean(result.error or "")
                head = "Result:" if result.ok else "Error shown to the agent:"
                lines += [head, "", _fence(body, "json" if result.ok else ""), ""]
        elif isinstance(e, ToolResult):
            body = _json(e.result) if e.ok else clean(e.error or "")
            lines += [f"Result of {_code(e.name)}:", "", _fence(body), ""]
        elif isinstance(e, Signal):
            lines += [f"*{e.role} signal: {e.signal}*", ""]
        elif isinstance(e, InvalidCall):
            lines += [f"*invalid call {_code(e.name)}: {_text(e.reason)}*", ""]
        elif isinstance(e, ToolFault):
            lines += [f"*injected fault ({_text(e.kind)}) on {_code(e.name)}, its call {e.call_number}*", ""]
        elif isinstance(e, ErrorEvent):
            lines += [f"*error from {_text(e.source)} ({_text(e.kind)}): {_text(e.message)}*", ""]
        elif isinstance(e, ModelCall):
            u = e.usage
            cost = ("cost " if u.cost_usd is None else "") + money(u.cost_usd)
            lines += [
                f"<sub>{e.role} call {_text(e.model)}: in {count(u.input_tokens)}, "
                f"out {count(u.output_tokens)}, {cost}, {seconds(u.latency_s)}</sub>",
                "",
            ]
    if record.checks:
        lines += ["## Checks", "", "| status | check | kind | reason |", "|---|---|---|---|"]
        for c in record.checks:
            cells = [c.status + ("" if c.hard else " (soft)"), _text(c.name), _text(c.kind), _text(c.reason)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
