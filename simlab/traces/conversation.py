"""One imported conversation, in OpenAI chat format, and the transcript of its observed trial.

Why a chat-format middle step: every source (message JSONL, GenAI spans, OpenInference spans)
can say what was said as chat messages, and one conversion to events keeps turns, tool-call
pairing and model calls the same for all of them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simlab.errors import SpecError
from simlab.transcript import (
    AgentMessage,
    ModelCall,
    ObservedFrom,
    Pin,
    Termination,
    TerminationReason,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserMessage,
)

OBSERVED_SCENARIO = "observed"


@dataclass
class SeenCall:
    """A model call the source recorded, made after ``after`` messages of the conversation."""

    after: int
    model: str
    usage: Usage


@dataclass
class Conversation:
    """What a source said about one conversation."""

    id: str
    format: str
    source: str
    messages: list[dict[str, Any]] = field(default_factory=list)  # system / user / assistant / tool
    calls: list[SeenCall] = field(default_factory=list)
    tool_errors: dict[str, str] = field(default_factory=dict)  # call id -> the error the tool returned
    feedback: list[Any] = field(default_factory=list)
    negative_feedback: bool = False
    error: str | None = None
    agent: str = ""  # the model or service that answered, when the source says
    started_at: str = ""
    duration_s: float | None = (
        None  # unknown unless the source has times (OTLP spans do; OpenAI JSONL does not)
    )
    redactions: int = 0
    hidden: dict[str, int] = field(default_factory=dict)  # input/output -> calls with that side unrecorded
    unanswered: list[str] = field(default_factory=list)  # tool results that answer no call (pair_results)


def has_content(t: Transcript) -> bool:
    """Whether a trial says what was said: some text of the user's or the agent's. Spans recorded
    with content capture off carry none (only model calls, tool names, ids and times)."""
    return any(isinstance(e, UserMessage | AgentMessage) and e.text.strip() for e in t.events)


def read_source(path: Path, expected: str) -> str:
    """The text of a source file; an unreadable or non-UTF-8 one is an error naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text ({exc.reason}); expected {expected}") from None


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts (a refusal part's refusal
    included: the Chat Completions API's ``{"type": "refusal", "refusal": …}``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", p.get("content", p.get("refusal", "")))) if isinstance(p, dict) else str(p)
            for p in content
        )
    return str(content)


def reply_of(message: dict[str, Any]) -> str:
    """What an assistant message said: its content, else its ``refusal`` (the Chat Completions
    API gives a model's refusal there, with no content), else the transcript of its spoken reply
    (an audio model's ``audio: {transcript, data}``, with no content)."""
    audio = message.get("audio")
    spoken = audio.get("transcript") if isinstance(audio, dict) else None
    return text_of(message.get("content")) or text_of(message.get("refusal")) or text_of(spoken)


def tool_request(call: Any) -> tuple[Any, Any]:
    """(name, arguments) as a Chat Completions tool call gives them: a function call's
    ``{function: {name, arguments}}``, or a custom tool call's ``{"type": "custom", "custom":
    {name, input}}`` (free text, kept as the raw arguments); (None, None) when it is neither."""
    kind = "custom" if isinstance(call, dict) and call.get("type") == "custom" else "function"
    body = call.get(kind) if isinstance(call, dict) else None
    if not isinstance(body, dict):
        return None, None
    return body.get("name"), body.get("input" if kind == "custom" else "arguments")


def requests_of(message: dict[str, Any], position: int) -> list[tuple[str, str, Any]]:
    """(id in the source, tool name, arguments as given) of each tool call an assistant message
    makes: Chat Completions' function and custom tool calls (``tool_request``) and the legacy
    ``function_call``."""
    out = []
    for i, request in enumerate(message.get("tool_calls") or []):
        name, arguments = tool_request(request)
        given = str(request.get("id") or f"call-{position}-{i}")
        out.append((given, str(name or "unknown"), arguments))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        name = str(legacy.get("name") or "unknown")
        out.append((f"call-{position}-function", name, legacy.get("arguments")))
    return out


_NO_ID = re.compile(r"^\s*(<[^<>]*>|none|null|nil|undefined|unknown|not specified|n/a|-)?\s*$", re.IGNORECASE)


def real_id(value: Any) -> str | None:
    """A tool call id, or None for none or a placeholder (``"<not specified>"``, ``""``, ``"null"``)."""
    if value is None:
        return None
    text = str(value)
    return None if _NO_ID.match(text) else text


def pair_results(messages: list[dict[str, Any]]) -> list[str]:
    """Give each tool call without an id one of its own (``call-<message>-<index>``) and each tool
    message without one the id of the earliest call still unanswered (of the tool the message
    names, when it names one). A source may leave ids out: the GenAI conventions allow it, and
    Gemini's function calls have none; without this the results were paired with nothing, and a
    policy rule saw a call that never succeeded. A result that answers no call is kept as it is and
    returned, to be said (``Conversation.unanswered``)."""
    unanswered: list[str] = []
    taken = {str(c.get("id")) for m in messages for c in _calls(m) if real_id(c.get("id")) is not None}
    waiting: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        if message.get("role") == "assistant":
            for i, call in enumerate(_calls(message)):
                if real_id(call.get("id")) is None:
                    made = f"call-{position}-{i}"
                    call["id"] = made if made not in taken else f"{made}~{len(taken)}"
                    taken.add(call["id"])
                waiting.append(call)
        elif message.get("role") == "tool":
            given = real_id(message.get("tool_call_id"))
            if given is not None:
                same = [c for c in waiting if str(c.get("id")) == given]
                if same:
                    waiting.remove(same[-1])  # a reused id answers the latest call with it
                elif given not in taken:
                    unanswered.append(f"{given} ({message['name']})" if message.get("name") else given)
                continue
            name = message.get("name")
            pick = next((c for c in waiting if not name or tool_request(c)[0] == name), None)
            if pick is None:
                unanswered.append(f"a result without an id ({name})" if name else "a result without an id")
                continue
            message["tool_call_id"] = pick["id"]
            waiting.remove(pick)
    return unanswered


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _result(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return text


def to_transcript(
    conv: Conversation, *, run_id: str, trial: int, scenario_id: str = OBSERVED_SCENARIO
) -> Transcript:
    """The transcript of an observed trial: turns counted by user messages (a message before the first
    one belongs to turn 1), tool results paired with their calls by id, model calls where they were made."""
    events: list[Any] = []
    names: dict[str, str] = {}  # transcript call id → tool name
    latest: dict[str, str] = {}  # id in the source → transcript id of the latest call with it
    by_name: dict[str, str] = {}  # tool name → transcript id of its latest call (legacy results)
    context: dict[str, Any] = {}
    turn, users = 1, 0
    pending = sorted(conv.calls, key=lambda c: c.after)
    models = {c.model for c in conv.calls if c.model}
    for position, message in enumerate(conv.messages):
        while pending and pending[0].after <= position:
            call = pending.pop(0)
            events.append(ModelCall(turn=turn, role="agent", model=call.model or "unknown", usage=call.usage))
        role = message.get("role")
        if role in ("system", "developer"):  # developer: the system message of newer OpenAI models
            context.setdefault("system_prompt", text_of(message.get("content")))
        elif role == "user":
            users += 1
            turn = users
            events.append(UserMessage(turn=turn, text=text_of(message.get("content"))))
        elif role == "assistant":
            requests = requests_of(message, position)
            for given, name, raw in requests:
                # an id a source reuses (a local model's "call_0" in every reply) is made unique:
                # graders pair each call with its result by id; a tool message answers the latest
                call_id = given if given not in names else f"{given}~{len(names) + 1}"
                latest[given] = call_id
                by_name[name] = call_id
                raw_text = (
                    raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {}, default=str)
                )
                parsed = _result(raw_text)
                names[call_id] = name
                events.append(
                    ToolCall(
                        turn=turn,
                        call_id=call_id,
                        name=name,
                        raw_arguments=raw_text,
                        arguments=parsed if isinstance(parsed, dict) else None,
                    )
                )
            text = reply_of(message)
            if text or not requests:
                events.append(AgentMessage(turn=turn, text=text))
        elif role == "function":  # the legacy result of a function_call: it names the function
            name = str(message.get("name") or "unknown")
            call_id = by_name.get(name, f"call-{position}-function")
            content = text_of(message.get("content"))
            events.append(ToolResult(turn=turn, call_id=call_id, name=name, ok=True, result=_result(content)))
        elif role == "tool":
            given = str(message.get("tool_call_id") or "")
            call_id = latest.get(given, given or f"call-{position}-result")
            error = conv.tool_errors.get(given)
            content = text_of(message.get("content"))
            name = names.get(call_id, message.get("name") or "unknown")
            events.append(
                ToolResult(
                    turn=turn,
                    call_id=call_id,
                    name=name,
                    ok=error is None,
                    result=None if error else _result(content),
                    error=error,
                )
            )
    for call in pending:
        events.append(ModelCall(turn=turn, role="agent", model=call.model or "unknown", usage=call.usage))
    agent = conv.agent or (sorted(models)[0] if len(models) == 1 else "")
    detail = f"imported from {conv.source}" + (
        f"; the source recorded an error: {conv.error}" if conv.error else ""
    )
    return Transcript(
        run_id=run_id,
        unit_id=f"{scenario_id}#{trial}",
        scenario_id=scenario_id,
        persona_id="observed",
        domain="observed",
        trial=trial,
        seed=0,
        agent=Pin(
            kind="observed", ref=agent or "unknown", settings={"models": sorted(models)} if models else {}
        ),
        simulator=Pin(kind="observed", ref="production users"),
        agent_context=context,
        events=events,
        termination=Termination(reason=TerminationReason.OBSERVED, detail=detail, turn=turn),
        final_state=None,
        observed=ObservedFrom(
            format=conv.format,
            source=conv.source,
            conversation_id=conv.id,
            feedback=conv.feedback,
            negative_feedback=conv.negative_feedback,
            error=conv.error,
            redactions=conv.redactions,
            hidden=dict(conv.hidden),
        ),
        started_at=conv.started_at,
        duration_s=conv.duration_s,
    )
