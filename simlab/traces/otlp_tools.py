"""Tool spans paired with the tool calls the model asked for, and their results placed.

Why pair by parentage and order, not by id alone: ids are not always the model's. google-adk
writes its own function-call id on the tool span (``adk-…``) while the messages carry
``lookup_order_0``, and writes ``gen_ai.tool.call.id = "<not specified>"`` when the tool raised. A
placeholder is no id; an id that matches no call is no id either. Such a span answers the earliest
call of its tool, not yet answered, that a model call made before the span ran: first one made by a
model call under the same parent span as the tool's (or by its parent), then one of its own trace.
Only a span that answers no call adds one, where it ran. A call id two model calls reuse (ADK
numbers calls per model output: ``search_0`` in each parallel sub-agent's) is made unique first,
each tool message given to the call made under its own parent span (``unique_ids``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simlab.traces.conversation import Conversation, pair_results, real_id

if TYPE_CHECKING:
    from simlab.traces.otlp import Span


@dataclass
class ToolRun:
    """A tool span and what the conversation held when it ran."""

    span: Span
    anchor: dict[str, Any] | None  # the last message before it ran (None: it ran first)
    seen: int  # how many messages the conversation had when it ran


_HANDOFF = re.compile(r"^handoff to (.+)$")


def tool_name(span: Span) -> str:
    a = span.attributes
    return str(a.get("gen_ai.tool.name") or a.get("tool.name") or _handoff_tool(span) or span.name)


def _handoff_tool(span: Span) -> str | None:
    """OpenInference writes an OpenAI Agents SDK handoff as a TOOL span ``handoff to <agent>``
    (input: the agent left, output: the agent reached), no tool name: it is the model's call of the
    SDK's handoff tool, ``transfer_to_<agent>``, already among the calls."""
    found = _HANDOFF.match(span.name)
    if found is None or "tool.name" in span.attributes or "gen_ai.tool.name" in span.attributes:
        return None
    return "transfer_to_" + re.sub(r"\s+", "_", found.group(1).strip()).lower()


def _dumps(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def seen_at(span: Span, convo: list[dict[str, Any]]) -> ToolRun:
    """The tool span as it ran: after the messages in ``convo`` so far."""
    return ToolRun(span, convo[-1] if convo else None, len(convo))


def place_tool_results(
    conv: Conversation, convo: list[dict[str, Any]], runs: list[ToolRun], origin: dict[int, Span]
) -> None:
    """Each tool span answers one call (and gives its result when no tool message did); ``origin``:
    the model call's span whose input or output added each message (by ``id()``)."""
    conv.unanswered += pair_results(convo)
    unique_ids(convo, origin)
    # where each requested call was made, before anything is inserted (the conversation only grew)
    made = {
        id(c): i
        for i, m in enumerate(convo)
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    }
    answered = _answered(convo)
    used: set[int] = set()
    latest: dict[int, dict[str, Any]] = {}  # id() of an anchor -> the last call added after it
    for run in runs:
        span, a = run.span, run.span.attributes
        name = tool_name(span)
        given = real_id(a.get("gen_ai.tool.call.id") or a.get("tool_call.id"))
        result = a.get("gen_ai.tool.call.result", a.get("output.value"))
        match = _match(convo, run, given, name, used, origin, made)
        if match is None:  # a tool run no model call asked for (in the records we have): add it where it ran
            arguments = a.get("gen_ai.tool.call.arguments", a.get("input.value", a.get("tool.parameters")))
            if _handoff_tool(span) is not None:  # its input is the agent it left, no arguments
                arguments = {}
            match = {
                "id": given or span.span_id,
                "type": "function",
                "function": {"name": name, "arguments": _dumps(arguments or {})},
            }
            added = {"role": "assistant", "content": "", "tool_calls": [match]}
            _insert(conv, convo, _after(convo, latest.get(id(run.anchor), run.anchor)), added)
            latest[id(run.anchor)] = added
        used.add(id(match))
        call_id = str(match.get("id"))
        if span.error:
            conv.tool_errors[call_id] = str(result) if result is not None else span.error
        if id(match) in answered:
            continue
        where = next(
            i
            for i, m in enumerate(convo)
            if m.get("role") == "assistant" and any(c is match for c in m.get("tool_calls") or [])
        )
        while where + 1 < len(convo) and convo[where + 1].get("role") == "tool":
            where += 1
        _insert(
            conv,
            convo,
            where + 1,
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": _dumps(result if result is not None else ""),
            },
        )
        answered.add(id(match))


def unique_ids(convo: list[dict[str, Any]], origin: dict[int, Span]) -> None:
    """Give a call whose id an earlier call has (ADK's ``search_0`` in every model output) an id of
    its own, and the tool message that answers it: the one added by a model call under the same
    parent span as the call's (a parallel sub-agent's), else the latest still unanswered."""
    count: dict[str, int] = {}
    waiting: dict[str, list[tuple[dict[str, Any], Span | None]]] = {}  # source id -> calls unanswered
    latest: dict[str, dict[str, Any]] = {}
    for m in convo:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                if c.get("id") is None:
                    continue
                given = str(c["id"])
                count[given] = count.get(given, 0) + 1
                if count[given] > 1:
                    c["id"] = f"{given}~{count[given]}"
                waiting.setdefault(given, []).append((c, origin.get(id(m))))
                latest[given] = c
        elif m.get("role") == "tool" and str(m.get("tool_call_id")) in latest:
            given = str(m.get("tool_call_id"))
            open_calls = waiting.get(given, [])
            here = origin.get(id(m))
            pick = next(
                (w for w in open_calls if _siblings(w[1], here)), open_calls[-1] if open_calls else None
            )
            if pick is not None:
                open_calls.remove(pick)
            m["tool_call_id"] = (pick[0] if pick else latest[given])["id"]


def _siblings(a: Span | None, b: Span | None) -> bool:
    return a is not None and b is not None and a.trace_id == b.trace_id and a.parent_id == b.parent_id


def _answered(convo: list[dict[str, Any]]) -> set[int]:
    """The calls (by ``id()``) a tool message answers: the latest call with its id before it (a
    source may reuse an id, as ADK's ``lookup_order_0`` in every turn)."""
    latest: dict[str, dict[str, Any]] = {}
    out: set[int] = set()
    for m in convo:
        if m.get("role") == "assistant":
            latest.update((str(c.get("id")), c) for c in m.get("tool_calls") or [])
        elif m.get("role") == "tool" and str(m.get("tool_call_id")) in latest:
            out.add(id(latest[str(m.get("tool_call_id"))]))
    return out


def _match(
    convo: list[dict[str, Any]],
    run: ToolRun,
    given: str | None,
    name: str,
    used: set[int],
    origin: dict[int, Span],
    made: dict[int, int],
) -> dict[str, Any] | None:
    requested = [
        (i, m, c)
        for i, m in enumerate(convo)
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    ]
    if given is not None:
        same = [c for _, _, c in requested if str(c.get("id")) == given]
        fresh = [c for c in same if id(c) not in used]
        if fresh or same:
            return (fresh or same)[0]
    candidates = [
        (
            made.get(id(c), run.seen) >= run.seen,
            not _related(origin.get(id(m)), run.span),
            getattr(origin.get(id(m)), "trace_id", None) != run.span.trace_id,
            i,
            c,
        )
        for i, m, c in requested
        if id(c) not in used and (c.get("function") or {}).get("name") == name
    ]
    return min(candidates, key=lambda t: t[:4])[4] if candidates else None


def _related(chat: Span | None, tool: Span) -> bool:
    """Whether a model call's span and a tool's are siblings, or the tool ran under the model call."""
    if chat is None or chat.trace_id != tool.trace_id:
        return False
    return bool(tool.parent_id) and tool.parent_id in (chat.parent_id, chat.span_id)


def _after(convo: list[dict[str, Any]], anchor: dict[str, Any] | None) -> int:
    """Where a message goes that came right after ``anchor`` (past the results that follow it)."""
    where = next((i + 1 for i, m in enumerate(convo) if m is anchor), 0) if anchor is not None else 0
    while where < len(convo) and convo[where].get("role") == "tool":
        where += 1
    return where


def _insert(conv: Conversation, convo: list[dict[str, Any]], where: int, message: dict[str, Any]) -> None:
    """Insert ``message`` at ``where``: the model calls made after the messages before it come after it."""
    convo.insert(where, message)
    for call in conv.calls:
        if call.after >= where:
            call.after += 1
