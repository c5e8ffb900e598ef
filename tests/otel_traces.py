"""Production-like traces written by the real OpenTelemetry SDK (in-memory exporter), encoded to
OTLP JSON by the SDK's own OTLP encoder: what an instrumented agent would export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode


def _parts(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def _provider(service: str, limits: SpanLimits | None = None) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}), span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _write(exporter: InMemorySpanExporter, path: Path) -> Path:
    path.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))
    return path


def genai_trace_file(path: Path, max_attribute_length: int | None = None) -> Path:
    """One conversation of two turns, each turn its own trace, joined by gen_ai.conversation.id. Turn 1
    looks up an order; turn 2 refunds it without checking the refund policy and with a failing tool.
    ``max_attribute_length``: the SDK's own limit on an attribute's length (SpanLimits, what
    OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT sets), which cuts longer values short."""
    provider, exporter = _provider("support-bot", SpanLimits(max_attribute_length=max_attribute_length))
    tracer = provider.get_tracer("agent")
    system = json.dumps([_text("You are a retail support agent.")])
    user1 = _parts("user", _text("my order A123 arrived broken, mail me at dana@example.com"))
    call1 = _parts("assistant", {"type": "tool_call", "id": "call_1", "name": "lookup_order",
                                 "arguments": {"order_id": "A123"}})
    answer1 = _parts("tool", {"type": "tool_call_response", "id": "call_1", "response": {"status": "delivered"}})
    reply1 = _parts("assistant", _text("I see order A123. What would you like?"))
    user2 = _parts("user", _text("refund it to my card"))
    call2 = _parts("assistant", {"type": "tool_call", "id": "call_2", "name": "issue_refund",
                                 "arguments": {"order_id": "A123", "amount": 49.9}})
    reply2 = _parts("assistant", _text("Your refund of 49.90 is issued."))

    def chat(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], tokens: tuple[int, int]) -> None:
        with tracer.start_as_current_span("chat gpt-4o", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o",
            "gen_ai.conversation.id": "conv-42", "gen_ai.system_instructions": system,
            "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs),
            "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1]}):
            pass

    def tool(name: str, call_id: str, arguments: dict[str, Any], result: Any, error: str | None = None) -> None:
        with tracer.start_as_current_span(f"execute_tool {name}", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(arguments), "gen_ai.tool.call.result": json.dumps(result),
            "gen_ai.conversation.id": "conv-42"}) as span:
            if error:
                span.set_status(Status(StatusCode.ERROR, error))

    with tracer.start_as_current_span("invoke_agent support", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-42"}):
        chat([user1], [call1], (100, 10))
        tool("lookup_order", "call_1", {"order_id": "A123"}, {"status": "delivered"})
        chat([user1, call1, answer1], [reply1], (150, 12))
    with tracer.start_as_current_span("invoke_agent support", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-42",
            "user.feedback": "thumbs_down"}):
        chat([user1, call1, answer1, reply1, user2], [call2], (200, 15))
        tool("issue_refund", "call_2", {"order_id": "A123", "amount": 49.9}, {"error": "card declined"},
             error="card declined")
        chat([user1, call1, answer1, reply1, user2, call2], [reply2], (250, 9))
    return _write(exporter, path)


def openinference_trace_file(path: Path) -> Path:
    """One OpenInference-instrumented conversation: an LLM span asking for a tool, the TOOL span, the
    LLM span answering (flattened llm.input_messages.N.message.* attributes)."""
    provider, exporter = _provider("oi-agent")
    tracer = provider.get_tracer("openinference")

    def messages(side: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for n, m in enumerate(items):
            prefix = f"llm.{side}_messages.{n}.message"
            out[f"{prefix}.role"] = m["role"]
            if m.get("content") is not None:
                out[f"{prefix}.content"] = m["content"]
            if m.get("tool_call_id"):
                out[f"{prefix}.tool_call_id"] = m["tool_call_id"]
            for k, call in enumerate(m.get("tool_calls", [])):
                out[f"{prefix}.tool_calls.{k}.tool_call.id"] = call["id"]
                out[f"{prefix}.tool_calls.{k}.tool_call.function.name"] = call["name"]
                out[f"{prefix}.tool_calls.{k}.tool_call.function.arguments"] = json.dumps(call["arguments"])
        return out

    system = {"role": "system", "content": "Be brief."}
    user = {"role": "user", "content": "what is the status of order B7? call me on +1 415 555 0134"}
    ask = {"role": "assistant", "tool_calls": [{"id": "t1", "name": "lookup_order", "arguments": {"order_id": "B7"}}]}
    result = {"role": "tool", "tool_call_id": "t1", "content": '{"status": "shipped"}'}
    answer = {"role": "assistant", "content": "Order B7 has shipped."}
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT", "session.id": "s-9"}):
        with tracer.start_as_current_span("llm", attributes={
                "openinference.span.kind": "LLM", "llm.model_name": "claude-x", "llm.token_count.prompt": 30,
                "llm.token_count.completion": 5, **messages("input", [system, user]), **messages("output", [ask])}):
            pass
        with tracer.start_as_current_span("lookup_order", attributes={
                "openinference.span.kind": "TOOL", "tool.name": "lookup_order", "input.value": '{"order_id": "B7"}',
                "output.value": '{"status": "shipped"}'}):
            pass
        with tracer.start_as_current_span("llm", attributes={
                "openinference.span.kind": "LLM", "llm.model_name": "claude-x", "llm.token_count.prompt": 50,
                "llm.token_count.completion": 7, **messages("input", [system, user, ask, result]),
                **messages("output", [answer])}):
            pass
    return _write(exporter, path)


def orphan_tool_trace_file(path: Path) -> Path:
    """A conversation (one trace, joined by gen_ai.conversation.id), then a trace of tool spans alone:
    no conversation id and no model call (a background job's, or one whose parent was not exported)."""
    provider, exporter = _provider("support-bot")
    tracer = provider.get_tracer("agent")
    user = _parts("user", _text("hello"))
    reply = _parts("assistant", _text("Hi, how can I help?"))
    with tracer.start_as_current_span("invoke_agent support", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-1"}):
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps([user]), "gen_ai.output.messages": json.dumps([reply])}):
            pass
    for name in ("sync_inventory", "sync_inventory"):
        with tracer.start_as_current_span(f"execute_tool {name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": "<not specified>"}):
            pass
    return _write(exporter, path)


def parallel_agents_trace_file(path: Path) -> Path:
    """Two sub-agents of one conversation each ask for ``search``; B's tool runs first. The tool
    spans carry ADK's placeholder id, so only their parent spans say which call each answers."""
    provider, exporter = _provider("research-bot")
    tracer = provider.get_tracer("agent")
    user = _parts("user", _text("compare flights and hotels"))
    asks = {name: _parts("assistant", {"type": "tool_call", "id": f"{name}-call", "name": "search",
                                       "arguments": {"q": name}}) for name in ("flights", "hotels")}
    with tracer.start_as_current_span("invoke_agent root", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-p"}):
        agents = {name: tracer.start_span(f"invoke_agent {name}", attributes={
            "gen_ai.operation.name": "invoke_agent"}) for name in ("flights", "hotels")}
        for name in ("flights", "hotels"):
            with trace.use_span(agents[name], end_on_exit=False), tracer.start_as_current_span(
                    "chat gpt-4o", attributes={
                        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                        "gen_ai.input.messages": json.dumps([user]),
                        "gen_ai.output.messages": json.dumps([asks[name]])}):
                pass
        for name in ("hotels", "flights"):
            with trace.use_span(agents[name], end_on_exit=False), tracer.start_as_current_span(
                    "execute_tool search", attributes={
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.id": "<not specified>",
                        "gen_ai.tool.call.result": json.dumps({"found": name})}):
                pass
        for span in agents.values():
            span.end()
    return _write(exporter, path)


def no_id_trace_file(path: Path, *, tool_spans: bool) -> Path:
    """Tool calls and their responses with ``id: null``, as the GenAI conventions allow (Gemini's
    function calls carry no id): the policy is checked, then a refund issued, each answered in
    order; ``tool_spans`` adds an ``execute_tool`` span for each, without ``gen_ai.tool.call.id``."""
    provider, exporter = _provider("gemini-bot")
    tracer = provider.get_tracer("agent")
    user = _parts("user", _text("refund order A1"))
    check = _parts("assistant", {"type": "tool_call", "id": None, "name": "check_refund_policy",
                                 "arguments": {"order_id": "A1"}})
    allowed = _parts("tool", {"type": "tool_call_response", "id": None, "response": {"allowed": True}})
    refund = _parts("assistant", {"type": "tool_call", "id": None, "name": "issue_refund",
                                  "arguments": {"order_id": "A1"}})
    done = _parts("tool", {"type": "tool_call_response", "id": None, "response": {"refund_id": "R1"}})
    reply = _parts("assistant", _text("Refunded."))
    context = {"gen_ai.conversation.id": "gem-1"}

    def chat(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> None:
        with tracer.start_as_current_span("chat gemini", attributes={
                **context, "gen_ai.operation.name": "chat", "gen_ai.request.model": "gemini-2.5-flash",
                "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs)}):
            pass

    def tool(name: str, result: dict[str, Any]) -> None:
        if tool_spans:
            with tracer.start_as_current_span(f"execute_tool {name}", attributes={
                    **context, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    "gen_ai.tool.call.result": json.dumps(result)}):
                pass

    with tracer.start_as_current_span("invoke_agent shop", attributes=context):
        chat([user], [check])
        tool("check_refund_policy", {"allowed": True})
        chat([user, check, allowed], [refund])
        tool("issue_refund", {"refund_id": "R1"})
        chat([user, check, allowed, refund, done], [reply])
    return _write(exporter, path)
