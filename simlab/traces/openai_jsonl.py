"""OpenAI-style message lists, one conversation a line (JSONL).

A line is a JSON list of chat messages, or an object with ``messages`` and optionally ``id``,
``model``, ``feedback`` (anything; negative when it is a number below 0, ``false``, or says
down/bad/negative) and ``error``. Messages are ``{role, content}`` with ``tool_calls`` on the
assistant's (function calls, and custom tool calls whose ``input`` is free text) and
``tool_call_id`` on a tool's (the Chat Completions shape; a ``developer`` message is a system
message, an assistant's ``refusal`` is what it said; the legacy ``function_call`` and its
``function`` message are a call and its result); a tool message may say ``"is_error": true``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simlab.errors import SpecError
from simlab.traces.conversation import Conversation, pair_results, read_source, tool_request

ROLES = ("system", "developer", "user", "assistant", "tool", "function")  # developer: newer models'
# system; function: the legacy result of an assistant's function_call


def is_negative(feedback: Any) -> bool:
    """Whether user feedback as a source gives it reads as negative."""
    if isinstance(feedback, bool):
        return feedback is False
    if isinstance(feedback, (int, float)):
        return feedback < 0
    if isinstance(feedback, str):
        return feedback.strip().lower() in (
            "down",
            "thumbs_down",
            "thumbs-down",
            "bad",
            "negative",
            "-1",
            "👎",
        )
    if isinstance(feedback, dict):
        return any(
            is_negative(v)
            for k, v in feedback.items()
            if k in ("score", "value", "rating", "thumbs", "label")
        )
    if isinstance(feedback, list):
        return any(is_negative(v) for v in feedback)
    return False


def read_openai_jsonl(path: Path) -> list[Conversation]:
    """Every conversation of the file; a line that is not one is an error naming file, line and why."""
    text = read_source(path, "JSONL, one conversation a line")
    problems: list[str] = []
    found: list[Conversation] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except (ValueError, RecursionError) as exc:
            problems.append(f"{where}: not JSON ({exc}); expected one conversation a line")
            continue
        conv, problem = _conversation(data, where, number)
        if problem:
            problems.append(f"{where}: {problem}")
        elif conv is not None:
            found.append(conv)
    if problems:
        raise SpecError(problems)
    if not found:
        raise SpecError(
            f"{path}: no conversation found (expected JSONL: one message list or {{messages: [...]}} a line)"
        )
    return found


def _conversation(data: Any, where: str, number: int) -> tuple[Conversation | None, str | None]:
    meta: dict[str, Any] = {}
    if isinstance(data, dict):
        meta, messages = data, data.get("messages")
    else:
        messages = data
    if not isinstance(messages, list):
        return None, "expected a list of messages or an object with 'messages' (a list)"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            got = message.get("role") if isinstance(message, dict) else type(message).__name__
            return None, f"messages[{i}]: expected an object with role {'/'.join(ROLES)} (got {got!r})"
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            return None, f"messages[{i}].tool_calls: expected a list of tool calls"
        for j, call in enumerate(calls):
            if not isinstance(tool_request(call)[0], str):
                return None, (
                    f"messages[{i}].tool_calls[{j}]: expected {{id, function: {{name, arguments}}}} or "
                    "{id, type: custom, custom: {name, input}}"
                )
        legacy = message.get("function_call")
        if legacy is not None and not (isinstance(legacy, dict) and isinstance(legacy.get("name"), str)):
            return None, f"messages[{i}].function_call: expected {{name, arguments}}"
    feedback = meta.get("feedback")
    unanswered = pair_results(messages)
    errors = {
        str(m.get("tool_call_id")): str(m.get("content") or "tool error")
        for m in messages
        if m.get("role") == "tool" and m.get("is_error")
    }
    conv = Conversation(
        id=str(meta.get("id") or meta.get("conversation_id") or f"line-{number}"),
        format="openai",
        source=where,
        messages=[{k: v for k, v in m.items() if k != "is_error"} for m in messages],
        tool_errors=errors,
        feedback=[] if feedback is None else [feedback],
        negative_feedback=is_negative(feedback),
        error=str(meta["error"]) if meta.get("error") else None,
        agent=str(meta.get("model") or ""),
        unanswered=unanswered,
    )
    return conv, None
