"""OpenTelemetry spans as OTLP JSON: GenAI semantic conventions and OpenInference.

The file is OTLP JSON (``{"resourceSpans": [...]}``, the ``opentelemetry-proto`` JSON mapping),
one such document, a list of them, or one a line (what a file exporter writes). Spans are grouped
into conversations by ``gen_ai.conversation.id`` or OpenInference's ``session.id``, a span without
one going with its nearest parent's (one trace may hold several conversations), else by trace id.
Within a conversation:

- model calls: GenAI spans whose ``gen_ai.operation.name`` is ``chat`` / ``text_completion`` /
  ``generate_content`` (messages in ``gen_ai.input.messages`` / ``gen_ai.output.messages``, as
  role + parts), or OpenInference spans of kind ``LLM`` (``llm.input_messages.N.message.*``);
  usage from ``gen_ai.usage.*`` or ``llm.token_count.*``;
- tool runs: GenAI ``execute_tool`` spans (``gen_ai.tool.*``) or OpenInference ``TOOL`` spans
  (``tool.name``, ``input.value``, ``output.value``): they give a call's result when no tool
  message carried it, and an error status makes the result an error.

Why a merge of model calls in time order: each call's input repeats the conversation so far, so the
conversation is the first call's input, grown by what each later input adds, plus every output.
Ids are opaque strings (hex, or base64 as protobuf's own JSON writer gives them).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simlab.errors import SpecError
from simlab.inert import one_line
from simlab.traces.conversation import Conversation, SeenCall, read_source, text_of
from simlab.traces.openai_jsonl import is_negative
from simlab.traces.otlp_json import ShapeError, attributes_of, each, object_of, shown, whole
from simlab.traces.otlp_logs import LogRecord, content_from_logs, log_records
from simlab.traces.otlp_tools import ToolRun, place_tool_results, seen_at, tool_name
from simlab.transcript import Usage
from simlab.transcript.model import token_count

NO_CONTENT_HINT = (
    "content capture is off by default in the OpenTelemetry GenAI instrumentation and in google-adk. "
    "Turn it on where the agent runs: OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental with "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (content on the spans) or EVENT_ONLY "
    "(content on log records: export the logs too; simlab reads resourceLogs in the same file, "
    "one document a line); without the opt-in, opentelemetry-instrumentation-openai-v2 takes "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (log events). OpenInference captures "
    "content unless OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS are set; OpenLLMetry "
    "(traceloop's opentelemetry-instrumentation-*) unless TRACELOOP_TRACE_CONTENT=false is set"
)
CHAT_OPERATIONS = ("chat", "text_completion", "generate_content")
# google-adk shows an agent what another agent did as a user-role message ("For context: … [triage]
# called tool `x` with parameters: …", "[triage] said: …"; 2.x quotes it between markers)
_ADK_QUOTE = re.compile(r"\[[^\]\n]{1,200}\] (said|called tool|`[^`\n]{1,200}` tool returned)")
_OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")


@dataclass
class Span:
    trace_id: str
    span_id: str
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    error: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    parent_id: str = ""


def read_otlp(path: Path, notes: list[str] | None = None) -> list[Conversation]:
    """Every conversation in an OTLP JSON file; errors name the file (and line) and what is wrong.
    ``notes``: what the file holds that is no conversation's (tool spans no conversation claims)."""
    text = read_source(path, "OTLP JSON")
    documents = _documents(path, text)
    spans: list[Span] = []
    records: list[LogRecord] = []
    for where, document in documents:
        if not isinstance(document, dict) or not any(
            isinstance(document.get(k), list) for k in ("resourceSpans", "resourceLogs")
        ):
            raise SpecError(
                f"{where}: not OTLP JSON: expected an object with 'resourceSpans' (a list) or 'resourceLogs'"
            )
        try:
            spans.extend(_spans(where, document))
            records.extend(log_records(where, document))
        except ShapeError as exc:
            raise SpecError(
                f"{where}: not OTLP JSON as an exporter writes it: {exc}; export the spans again "
                "(an OpenTelemetry file exporter, or the collector's) or fix that value"
            ) from None
    if not spans:
        raise SpecError(f"{path}: no spans found (expected OTLP JSON: resourceSpans → scopeSpans → spans)")
    _content_from_logs(spans, records)
    groups: dict[str, list[Span]] = {}
    for span in spans:
        groups.setdefault(span.trace_id, []).append(span)
    conversations: dict[str, list[Span]] = {}
    orphans: list[Span] = []
    for trace_id, members in groups.items():
        keys = _conversation_keys(members)
        if not keys and not any(_kind(s) == "chat" for s in members):
            orphans.extend(s for s in members if _kind(s) == "tool")
            continue
        for span in members:
            key = keys.get(span.span_id, trace_id if not keys else None)
            if key is None and len(set(keys.values())) == 1:
                key = next(iter(keys.values()))
            if key is None:  # a span around several conversations (a batch job's): none of theirs
                if _kind(span) is not None:
                    orphans.append(span)
                continue
            conversations.setdefault(key, []).append(span)
    if orphans and notes is not None:
        names = sorted({one_line(tool_name(s) if _kind(s) == "tool" else s.name) for s in orphans})
        notes.append(
            f"{len(orphans)} {'tool' if all(_kind(s) == 'tool' for s in orphans) else 'tool or model'} "
            f"span(s) ({', '.join(names)}) in "
            f"{len({s.trace_id for s in orphans})} trace(s) belong to no conversation (no "
            "gen_ai.conversation.id or session.id on them or their parents, and no model call in their "
            "trace, or several conversations in it): left out"
        )
    found = [
        c for c in (_conversation(path, key, m) for key, m in conversations.items()) if c.messages or c.calls
    ]
    if notes is not None:
        notes.extend(_hidden_notes(found))
    return found


def _hidden_notes(found: list[Conversation]) -> list[str]:
    """What a conversation misses when one side of its model calls was not recorded (OpenInference
    hides either side on request): each is said, never imported as if nothing were missing."""
    out = []
    for side, other, lost, flag in (
        (
            "output",
            "input",
            "the agent's replies there (its last one above all: no later call repeats it)",
            "OPENINFERENCE_HIDE_OUTPUTS",
        ),
        ("input", "output", "the user's messages and the tools' results", "OPENINFERENCE_HIDE_INPUTS"),
    ):
        hidden = [c for c in found if c.hidden.get(side)]
        if hidden:
            names = ", ".join(one_line(c.id) for c in hidden[:3]) + (", …" if len(hidden) > 3 else "")
            out.append(
                f"{sum(c.hidden[side] for c in hidden)} model call(s) in {len(hidden)} conversation(s) "
                f"({names}) have their {other} but no {side} (as OpenInference's {flag} leaves them): "
                f"{lost} are missing; turn {side} capture back on where the agent runs (unset {flag})"
            )
    return out


def _conversation_keys(members: list[Span]) -> dict[str, str]:
    """span id -> the conversation it belongs to: its own ``gen_ai.conversation.id`` (or
    OpenInference's ``session.id``), else its nearest parent's. A trace may hold several
    conversations (a batch job's span around them): each span goes with its own."""
    own = {
        s.span_id: str(s.attributes[k])
        for s in members
        for k in ("session.id", "gen_ai.conversation.id")
        if s.attributes.get(k)
    }
    parents = {s.span_id: s.parent_id for s in members}
    keys: dict[str, str] = {}
    for span in members:
        current, seen = span.span_id, 0
        while current and current not in own and seen < len(members):
            current, seen = parents.get(current, ""), seen + 1
        if current in own:
            keys[span.span_id] = own[current]
    return keys


def _content_from_logs(spans: list[Span], records: list[LogRecord]) -> None:
    """A model call's messages from its log records, where its span carries none (EVENT_ONLY)."""
    by_span: dict[str, list[LogRecord]] = {}
    for record in records:
        by_span.setdefault(record.span_id, []).append(record)
    for span in spans:
        a = span.attributes
        if span.span_id not in by_span or _kind(span) != "chat" or any(k.startswith("llm.") for k in a):
            continue
        for key, value in content_from_logs(by_span[span.span_id]).items():
            a.setdefault(key, value)


def _documents(path: Path, text: str) -> list[tuple[str, Any]]:
    try:
        data = json.loads(text)
        docs = data if isinstance(data, list) else [data]
        return [(str(path), d) for d in docs]
    except (ValueError, RecursionError):
        pass
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append((f"{path}:{number}", json.loads(line)))
            except (ValueError, RecursionError) as exc:
                raise SpecError(f"{path}:{number}: not JSON ({exc}); expected OTLP JSON") from None
    return out


def _spans(where: str, document: dict[str, Any]) -> list[Span]:
    if not isinstance(document.get("resourceSpans", []), list):
        raise SpecError(f"{where}: not OTLP JSON: 'resourceSpans' must be a list")
    out = []
    for resource_spans in each(document.get("resourceSpans"), "resourceSpans"):
        found = object_of(object_of(resource_spans, "resourceSpans").get("resource"), "resource")
        resource = attributes_of(found.get("attributes"))
        for scope in each(resource_spans.get("scopeSpans"), "scopeSpans"):
            for raw in each(object_of(scope, "scopeSpans").get("spans"), "spans"):
                if not isinstance(raw, dict) or not raw.get("traceId"):
                    raise SpecError(f"{where}: a span without traceId")
                try:
                    out.append(_span(raw, resource))
                except ShapeError as exc:
                    raise ShapeError(f"span {shown(raw.get('name'))}: {exc}") from None
    return out


def _span(raw: dict[str, Any], resource: dict[str, Any]) -> Span:
    status = object_of(raw.get("status"), "status")
    failed = status.get("code") in ("STATUS_CODE_ERROR", 2)
    events = [object_of(e, "events") for e in each(raw.get("events"), "events")]
    return Span(
        trace_id=str(raw["traceId"]),
        span_id=str(raw.get("spanId", "")),
        name=str(raw.get("name", "")),
        start=whole(raw.get("startTimeUnixNano") or 0, "startTimeUnixNano"),
        end=whole(raw.get("endTimeUnixNano") or 0, "endTimeUnixNano"),
        attributes=attributes_of(raw.get("attributes")),
        resource=resource,
        error=(status.get("message") or "error status") if failed else None,
        events=[{"name": e.get("name"), "attributes": attributes_of(e.get("attributes"))} for e in events],
        parent_id=str(raw.get("parentSpanId") or ""),
    )


def _kind(span: Span) -> str | None:
    a = span.attributes
    operation = a.get("gen_ai.operation.name")
    oi = str(a.get("openinference.span.kind") or "").upper()
    if operation in CHAT_OPERATIONS or oi == "LLM" or ("gen_ai.input.messages" in a and operation is None):
        return "chat"
    if operation == "execute_tool" or oi == "TOOL":
        return "tool"
    return None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _dumps(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def quotes_another_agent(message: dict[str, Any]) -> bool:
    """A user-role message google-adk wrote to show an agent another agent's events: no user said
    it, and what it quotes is in the conversation already (that agent's own model call)."""
    if message.get("role") != "user":
        return False
    text = text_of(message.get("content"))
    if not text.startswith("For context:"):
        return False
    return "<<<BEGIN_QUOTED_AGENT_CONTENT>>>" in text or bool(_ADK_QUOTE.search(text[:2000]))


def genai_messages(value: Any) -> list[dict[str, Any]]:
    """GenAI semconv messages (role + parts) as chat messages; chat-format messages pass through.
    Parts in Gemini's shape (``function_call`` / ``function_response`` / ``text`` keys, no ``type``)
    are read too. A message that only answers tool calls (ADK sends function responses as role
    ``user``) gives tool messages and no turn. A value that is no list of messages (a JSON string cut
    short by an attribute length limit reads as no message at all) is a ``ShapeError``."""
    out: list[dict[str, Any]] = []
    data = _json(value)
    if data is None:
        return out
    if not isinstance(data, list):  # its text is not shown: it may hold what the import masks
        cut = isinstance(data, str) and data.lstrip().startswith(("[", "{"))
        what = "text that is not JSON" if isinstance(data, str) else f"a JSON {type(data).__name__}"
        raise ShapeError(
            (
                f"not a JSON array of messages but {len(data)} characters of JSON cut short (an "
                "attribute length limit, such as OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT or a collector's "
                "truncate processor, dropped the rest)"
            )
            if cut
            else f"not a JSON array of messages but {what}"
        )
    for message in data:
        if not isinstance(message, dict):
            continue
        if "parts" not in message:
            out.append(message)
            continue
        role = message.get("role")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        responses: list[dict[str, Any]] = []
        for part in each(message.get("parts"), "a message's parts"):
            _read_part(part if isinstance(part, dict) else {}, texts, calls, responses)
        out.extend(responses)
        if role == "tool" or (responses and not texts and not calls):
            continue
        chat: dict[str, Any] = {"role": "assistant" if role == "model" else role, "content": "".join(texts)}
        if calls:
            chat["tool_calls"] = calls
        out.append(chat)
    return out


def _read_part(
    part: dict[str, Any], texts: list[str], calls: list[dict[str, Any]], responses: list[dict[str, Any]]
) -> None:
    kind = part.get("type")
    gemini_call = part.get("function_call") or part.get("functionCall")
    gemini_response = part.get("function_response") or part.get("functionResponse")
    if kind is None and isinstance(gemini_call, dict):
        kind, part = "tool_call", {**gemini_call, "arguments": gemini_call.get("args")}
    elif kind is None and isinstance(gemini_response, dict):
        kind, part = "tool_call_response", gemini_response
    if kind == "text" or (kind is None and isinstance(part.get("text"), str)):
        texts.append(str(part.get("content", part.get("text", ""))))
    elif kind == "tool_call":
        calls.append(
            {
                "id": part.get("id"),
                "type": "function",
                "function": {"name": part.get("name"), "arguments": _dumps(part.get("arguments") or {})},
            }
        )
    elif kind in ("tool_call_response", "function_response"):
        responses.append(
            {"role": "tool", "tool_call_id": part.get("id"), "content": _dumps(part.get("response"))}
        )


def openinference_messages(attributes: dict[str, Any], side: str) -> list[dict[str, Any]]:
    """OpenInference's flattened ``llm.<side>_messages.N.message.*`` as chat messages."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _OI_MESSAGE.match(key)
        if not match or match.group(1) != side:
            continue
        message = found.setdefault(int(match.group(2)), {})
        rest = match.group(3)
        call = re.match(r"^tool_calls\.(\d+)\.tool_call\.(.+)$", rest)
        part = re.match(r"^contents\.(\d+)\.message_content\.text$", rest)
        if call:
            calls = message.setdefault("_calls", {})
            entry = calls.setdefault(int(call.group(1)), {"type": "function", "function": {}})
            field_name = call.group(2)
            if field_name == "id":
                entry["id"] = value
            elif field_name.startswith("function."):
                entry["function"][field_name.removeprefix("function.")] = value
        elif part:
            message.setdefault("_parts", {})[int(part.group(1))] = str(value)
        elif rest in ("role", "content", "name", "tool_call_id"):
            message[rest] = value
    out = []
    for index in sorted(found):
        message = found[index]
        calls, parts = message.pop("_calls", {}), message.pop("_parts", {})
        if parts and not message.get("content"):
            message["content"] = "".join(parts[i] for i in sorted(parts))
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        message.setdefault("content", "")
        out.append(message)
    return out


def _usage(a: dict[str, Any]) -> Usage:
    def number(*keys: str) -> int | None:  # the bound a provider's count has (model.token_count)
        for key in keys:
            value = a.get(key)
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, (int, float)):
                return token_count(value)
        return None

    return Usage(
        input_tokens=number("gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        output_tokens=number("gen_ai.usage.output_tokens", "llm.token_count.completion"),
    )


def _chat_io(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    a = span.attributes
    if any(k.startswith("llm.input_messages.") or k.startswith("llm.output_messages.") for k in a):
        return openinference_messages(a, "input"), openinference_messages(a, "output")
    inputs = _messages(span, "gen_ai.input.messages")
    system = a.get("gen_ai.system_instructions")
    if system is not None and not any(m.get("role") == "system" for m in inputs):
        parts = _json(system)
        text = (
            "".join(str(p.get("content", "")) for p in parts if isinstance(p, dict))
            if isinstance(parts, list)
            else str(parts)
        )
        inputs.insert(0, {"role": "system", "content": text})
    return inputs, _messages(span, "gen_ai.output.messages")


def _messages(span: Span, key: str) -> list[dict[str, Any]]:
    try:
        return genai_messages(span.attributes.get(key))
    except ShapeError as exc:
        raise ShapeError(f"span {shown(span.name)} (trace {span.trace_id}): {key}: {exc}") from None


def _conversation(path: Path, key: str, spans: list[Span]) -> Conversation:
    spans = sorted(spans, key=lambda s: (s.start, s.end))
    conv = Conversation(id=key, format="otlp", source=f"{path} (conversation {key})")
    system: dict[str, Any] | None = None
    convo: list[dict[str, Any]] = []
    tools: list[ToolRun] = []
    origin: dict[int, Span] = {}  # id() of a message -> the model call's span whose input or output added it
    feedback: list[Any] = []
    for span in spans:
        kind = _kind(span)
        for k, v in span.attributes.items():
            if k.endswith("feedback") or k.endswith("feedback.score"):
                feedback.append(v)
        if kind == "tool":
            tools.append(seen_at(span, convo))
            continue
        if span.error and conv.error is None:
            conv.error = f"{span.name}: {span.error}"
        if kind != "chat":
            continue
        try:
            inputs, outputs = _chat_io(span)
        except ShapeError as exc:  # a call's messages lost: the conversation would be another one
            raise SpecError(
                f"{path}: {exc}; export the spans again with the whole value (raise or lift the limit), "
                "or leave that conversation out of the file"
            ) from None
        system = system or next((m for m in inputs if m.get("role") == "system"), None)
        rest = [m for m in inputs if m.get("role") != "system" and not quotes_another_agent(m)]
        before = len(convo)
        merge_input(convo, rest)
        origin.update((id(m), span) for m in convo[before:])
        a = span.attributes
        conv.calls.append(
            SeenCall(
                after=len(convo),
                usage=_usage(a),
                model=str(
                    a.get("gen_ai.response.model")
                    or a.get("gen_ai.request.model")
                    or a.get("llm.model_name")
                    or ""
                ),
            )
        )
        convo.extend(outputs)
        origin.update((id(m), span) for m in outputs)
        if span.error is None and bool(inputs) != bool(outputs):  # one side recorded, not the other
            side = "output" if inputs else "input"
            conv.hidden[side] = conv.hidden.get(side, 0) + 1
    place_tool_results(conv, convo, tools, origin)
    offset = 1 if system else 0
    for call in conv.calls:
        call.after += offset
    conv.messages = ([system] if system else []) + convo
    conv.feedback = feedback
    conv.negative_feedback = any(is_negative(f) for f in feedback)
    first = spans[0]
    conv.agent = str(first.attributes.get("gen_ai.agent.name") or "") or next(
        (
            str(s.resource.get("service.name"))
            for s in spans
            if s.resource.get("service.name")
            and not str(s.resource["service.name"]).startswith("unknown_service")
        ),
        "",
    )
    starts = [s.start for s in spans if s.start]
    ends = [s.end for s in spans if s.end]
    if starts:
        conv.started_at = datetime.fromtimestamp(min(starts) / 1e9, UTC).isoformat(timespec="seconds")
        conv.duration_s = round(max(0, max(ends or starts) - min(starts)) / 1e9, 6)
    return conv


def _key(message: dict[str, Any]) -> tuple[Any, ...]:
    calls = tuple(str((c.get("function") or {}).get("name")) for c in message.get("tool_calls") or [])
    return message.get("role"), text_of(message.get("content")), calls, message.get("tool_call_id")


def merge_input(convo: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> None:
    """Add what a model call's input adds to the conversation so far. Usually the input repeats the
    conversation and adds its tail; an agent may also drop a message (ADK drops a call whose tool
    raised) or the oldest ones (a window): then what follows the shared part is added, less what the
    conversation already ends with."""
    have = [_key(m) for m in convo]
    want = [_key(m) for m in inputs]
    shared = 0
    while shared < min(len(have), len(want)) and have[shared] == want[shared]:
        shared += 1
    if shared == len(have):
        convo.extend(inputs[shared:])
        return
    tail = want[shared:]
    overlap = next((n for n in range(min(len(tail), len(have)), 0, -1) if have[-n:] == tail[:n]), 0)
    convo.extend(inputs[shared + overlap :])
