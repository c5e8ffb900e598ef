"""A trial as Markdown, to paste into an issue or a review. Pure: record in, text out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from simlab.transcript import (
    AgentMessage,
    ErrorEvent,
    InvalidCall,
    ModelCall,
    Signal,
    ToolCall,
    ToolResult,
    TrialRecord,
    UserMessage,
)
from simlab.tui.render import clean, event_blocks, fmt_cost

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
    return "\n".join("> " + line if line else ">" for line in clean(text).split("\n"))


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def transcript_markdown(record: TrialRecord) -> str:
    t = record.transcript
    lines = [f"# {clean(record.unit_id)}", ""]
    verdict = record.verdict or "not graded"
    lines += [
        f"- run: `{clean(t.run_id)}` · scenario: `{clean(t.scenario_id)}` · trial {t.trial}"
        f" · persona `{clean(t.persona_id)}`",
        f"- verdict: **{verdict}** · ended: **{t.termination.reason.value}**"
        + (f" ({clean(t.termination.detail)})" if t.termination.detail else "") + f" at turn {t.termination.turn}",
        f"- agent: `{clean(t.agent.ref)}` · simulator: `{clean(t.simulator.ref)}` · seed {t.seed}",
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
            lines += [f"Tool call `{clean(e.name)}` ({e.call_id}):", "", _fence(args, "json"), ""]
            if isinstance(result, ToolResult):
                body = _json(result.result) if result.ok else clean(result.error or "")
                head = "Result:" if result.ok else "Error shown to the agent:"
                lines += [head, "", _fence(body, "json" if result.ok else ""), ""]
        elif isinstance(e, ToolResult):
            body = _json(e.result) if e.ok else clean(e.error or "")
            lines += [f"Result of `{clean(e.name)}`:", "", _fence(body), ""]
        elif isinstance(e, Signal):
            lines += [f"*{e.role} signal: {e.signal}*", ""]
        elif isinstance(e, InvalidCall):
            lines += [f"*invalid call `{clean(e.name)}`: {clean(e.reason)}*", ""]
        elif isinstance(e, ErrorEvent):
            lines += [f"*error from {clean(e.source)} ({clean(e.kind)}): {clean(e.message)}*", ""]
        elif isinstance(e, ModelCall):
            u = e.usage
            lines += [f"<sub>{e.role} call {clean(e.model)}: in {u.input_tokens}, out {u.output_tokens}, "
                      f"{fmt_cost(u.cost_usd)}, {u.latency_s:.2f}s</sub>", ""]
    if record.checks:
        lines += ["## Checks", "", "| status | check | kind | reason |", "|---|---|---|---|"]
        for c in record.checks:
            cells = [c.status + ("" if c.hard else " (soft)"), clean(c.name), c.kind, clean(c.reason)]
            lines.append("| " + " | ".join(x.replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
        lines.append("")
    return "\n".join(lines)
