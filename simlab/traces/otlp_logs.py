"""OTLP JSON log records (``resourceLogs``): where instrumentation puts message content as events.

Why: with content capture in ``EVENT_ONLY`` mode (and on the openai-v2 instrumentation's default
conventions) the spans carry no messages; the log records, tied to their span by ``spanId``, do.
Two shapes are read:

- ``gen_ai.client.inference.operation.details`` (current GenAI semconv, google-adk): the same
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` a span
  would carry, as attributes;
- the semconv 1.30 events (``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message``: the input; ``gen_ai.choice``: the output),
  one message a record, in its body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simlab.errors import SpecError
from simlab.traces.otlp_json import attributes_of, each, object_of, value_of

CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_INPUT_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


@dataclass
class LogRecord:
    span_id: str
    name: str
    body: Any
    attributes: dict[str, Any]


def log_records(where: str, document: dict[str, Any]) -> list[LogRecord]:
    """The log records of one OTLP JSON document tied to a span (others say nothing about a call)."""
    resource_logs = document.get("resourceLogs") or []
    if not isinstance(resource_logs, list):
        raise SpecError(f"{where}: not OTLP JSON: 'resourceLogs' must be a list")
    out = []
    for resource in resource_logs:
        for scope in each(object_of(resource, "resourceLogs").get("scopeLogs"), "scopeLogs"):
            for raw in each(object_of(scope, "scopeLogs").get("logRecords"), "logRecords"):
                if not isinstance(raw, dict) or not raw.get("spanId"):
                    continue
                attributes = attributes_of(raw.get("attributes"))
                name = str(raw.get("eventName") or attributes.get("event.name") or "")
                out.append(
                    LogRecord(
                        span_id=str(raw["spanId"]),
                        name=name,
                        body=value_of(raw.get("body")),
                        attributes=attributes,
                    )
                )
    return out


def content_from_logs(records: list[LogRecord]) -> dict[str, Any]:
    """The content attributes a span's log records give it (empty: none)."""
    found: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for record in records:
        for key in CONTENT_KEYS:
            if key in record.attributes:
                found.setdefault(key, record.attributes[key])
        body = record.body if isinstance(record.body, dict) else {}
        if record.name in _INPUT_EVENTS:
            inputs.append(_message(_INPUT_EVENTS[record.name], body))
        elif record.name == "gen_ai.choice":
            message = body.get("message")
            chosen: dict[str, Any] = message if isinstance(message, dict) else {}
            outputs.append(_message(str(chosen.get("role") or "assistant"), chosen))
    if inputs:
        found.setdefault("gen_ai.input.messages", inputs)
    if outputs:
        found.setdefault("gen_ai.output.messages", outputs)
    return found


def _message(role: str, body: dict[str, Any]) -> dict[str, Any]:
    """A semconv 1.30 event body as a chat message (content absent when capture was off)."""
    content = body.get("content")
    message: dict[str, Any] = {"role": role, "content": "" if content is None else content}
    if role == "tool":
        message["tool_call_id"] = body.get("id")
    calls = []
    for call in body.get("tool_calls") or []:
        if isinstance(call, dict):
            given = call.get("function")
            function: dict[str, Any] = given if isinstance(given, dict) else {}
            calls.append(
                {
                    "id": call.get("id"),
                    "type": "function",
                    "function": {"name": function.get("name"), "arguments": function.get("arguments", {})},
                }
            )
    if calls:
        message["tool_calls"] = calls
    return message
