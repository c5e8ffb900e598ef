"""The agent's hands: ``ToolHandle`` executes domain tools for an agent, records every call and
its result in the transcript, and stops a trial that loops (the same call again and again, or too
many calls in one turn) with ``StopTrial``, which the agent under test cannot catch."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simlab.env.domain import Domain, Environment
from simlab.transcript import ErrorEvent, InvalidCall, ToolCall, ToolFault, ToolResult

__all__ = ["LOOP_REPEATS", "StopTrial", "ToolHandle", "ToolReply"]

LOOP_REPEATS = 3  # the same tool with the same arguments this many times in a row is a loop
MAX_RESULT_BYTES = 1_000_000  # a tool result longer than this (as JSON) is cut before anyone keeps it
SHOWN_OF_CUT = 2_000  # characters of a cut result kept


class StopTrial(BaseException):
    """Ends the trial from inside an agent turn (loop, budget). A BaseException, so that an agent's
    ``except Exception`` cannot swallow it."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        self.detail = detail
        super().__init__(detail)


@dataclass
class ToolReply:
    """What a tool call gave back to the agent."""

    ok: bool
    result: Any = None
    error: str | None = None

    def as_text(self) -> str:
        if self.ok:
            return (
                self.result if isinstance(self.result, str) else json.dumps(self.result, ensure_ascii=False)
            )
        return json.dumps({"error": self.error}, ensure_ascii=False)


class ToolHandle:
    """Executes domain tools for the agent and records each call in the transcript."""

    def __init__(
        self,
        env: Environment,
        record: Callable[[Any], None],
        *,
        turn: int = 0,
        max_calls_per_turn: int = 50,
        max_result_bytes: int = MAX_RESULT_BYTES,
    ):
        self._env = env
        self._max_result = max_result_bytes
        self._record = record
        self.turn = turn
        self._max_calls = max_calls_per_turn
        self._calls_this_turn = 0
        self._last_key: str | None = None
        self._repeats = 0
        self._next_id = 0  # calls made in the trial
        self._ids: set[str] = set()  # call ids recorded in the trial
        self._schemas: list[dict[str, Any]] | None = None
        self._closed = False

    def close(self) -> None:
        """The trial is over: a call made now (a sync agent's abandoned thread, run on) is refused
        with ``StopTrial``, before it runs or is recorded, and one still running changes no state."""
        self._closed = True
        self._env.freeze()

    def _refuse_when_closed(self) -> None:
        if self._closed:
            raise StopTrial("budget_exceeded", "the trial is over: its agent turn was cut off")

    def start_turn(self, turn: int) -> None:
        """A new user message: the same call again after it is a fresh attempt, not a loop."""
        self.turn = turn
        self._calls_this_turn = 0
        self._last_key, self._repeats = None, 0

    @property
    def domain(self) -> Domain:
        """The trial's domain (a tool server lists its tools)."""
        return self._env.domain

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools in the OpenAI function format: this trial's own copy, made once (a model
        client that changes them, as LiteLLM does for some providers, copies them first)."""
        if self._schemas is None:
            self._schemas = self._env.tool_schemas()
        return self._schemas

    def call(self, tool: str, arguments: dict[str, Any] | str | None = None, /, **kwargs: Any) -> ToolReply:
        """Run ``tool`` and record the call. Arguments come as keywords, with any names a tool may
        have (``call("find_customer", name="Ana")``), or as one dict or raw JSON text — how a model
        adapter passes them, optionally with ``call_id=`` (the model's id for the call); keywords
        beside a dict are merged into it."""
        call_id = None
        if arguments is not None:
            call_id = kwargs.pop("call_id", None)
        if kwargs:
            arguments = {**(arguments if isinstance(arguments, dict) else {}), **kwargs}
        return self._run(tool, arguments, call_id)

    def _run(self, name: str, arguments: dict[str, Any] | str | None, call_id: str | None) -> ToolReply:
        self._refuse_when_closed()
        call_id = self._own_id(call_id)
        outcome = self._env.execute(name, arguments)
        self._refuse_when_closed()  # it ran while the trial ended: nothing of it is recorded
        self._record(
            ToolCall(
                turn=self.turn,
                call_id=call_id,
                name=name,
                arguments=outcome.arguments,
                raw_arguments=outcome.raw_arguments,
                access=outcome.access.value if outcome.access else None,
            )
        )
        if outcome.invalid_reason is not None:
            self._record(
                InvalidCall(turn=self.turn, call_id=call_id, name=name, reason=outcome.invalid_reason)
            )
        result = _bounded(outcome.result, self._max_result)
        self._record(
            ToolResult(
                turn=self.turn, call_id=call_id, name=name, ok=outcome.ok, result=result, error=outcome.error
            )
        )
        injected = outcome.extra.get("injected")
        if injected:  # the scenario's faults: block hit this call on purpose
            self._record(
                ToolFault(
                    turn=self.turn,
                    call_id=call_id,
                    name=name,
                    kind=injected["kind"],
                    call_number=injected["call"],
                    fault=injected["fault"],
                )
            )
        fault = outcome.extra.get("fault")
        if fault:  # the domain misbehaved (crash, hang, a READ tool that wrote): say so apart from the result
            self._record(
                ErrorEvent(turn=self.turn, source="tool", kind=str(fault), message=outcome.error or "")
            )
        self._watch_for_loops(name, outcome.raw_arguments)
        return ToolReply(outcome.ok, result, outcome.error)

    def rejected(
        self, name: str, arguments: dict[str, Any] | str | None, reason: str, call_id: str | None = None
    ) -> None:
        """Record a call the agent's framework answered itself without running it (an unknown
        tool, arguments its validation refused): an invalid call with the framework's message, seen
        by the efficiency and loop checks like any other; the domain never ran it."""
        self._refuse_when_closed()
        call_id = self._own_id(call_id)
        raw, parsed = _raw_and_parsed(arguments)
        self._record(
            ToolCall(turn=self.turn, call_id=call_id, name=name, arguments=parsed, raw_arguments=raw)
        )
        self._record(
            InvalidCall(turn=self.turn, call_id=call_id, name=name, reason=f"the framework: {reason}")
        )
        self._record(
            ToolResult(turn=self.turn, call_id=call_id, name=name, ok=False, result=None, error=reason)
        )
        self._watch_for_loops(name, raw)

    def outside(
        self,
        name: str,
        arguments: dict[str, Any] | str | None,
        ok: bool,
        result: Any,
        call_id: str | None = None,
    ) -> None:
        """Record a call the agent ran through a tool of its own (a framework's tool node holding the
        team's tools, not the domain's): the trajectory and policy checks see it, the domain never
        ran it (``ToolCall.outside``), so its state says nothing of it."""
        self._refuse_when_closed()
        call_id = self._own_id(call_id)
        raw, parsed = _raw_and_parsed(arguments)
        self._record(
            ToolCall(
                turn=self.turn, call_id=call_id, name=name, arguments=parsed, raw_arguments=raw, outside=True
            )
        )
        self._record(
            ToolResult(
                turn=self.turn,
                call_id=call_id,
                name=name,
                ok=ok,
                result=result if ok else None,
                error=None if ok else str(result),
            )
        )
        self._watch_for_loops(name, raw)

    def _own_id(self, call_id: str | None) -> str:
        """The call's id in this transcript. A model that reuses ids (a local server answering
        "call_0" in every reply) gets one of its own per call, because the graders pair calls,
        results and injected faults by id; the agent keeps the model's id in its own messages."""
        self._next_id += 1
        call_id = call_id or f"call_{self.turn}_{self._next_id}"
        if call_id in self._ids:
            call_id = f"{call_id}~{self._next_id}"
        self._ids.add(call_id)
        return call_id

    def _watch_for_loops(self, name: str, raw: str) -> None:
        self._calls_this_turn += 1
        key = f"{name}\x00{_canonical(raw)}"
        self._repeats = self._repeats + 1 if key == self._last_key else 1
        self._last_key = key
        if self._repeats >= LOOP_REPEATS:
            raise StopTrial(
                "agent_loop", f"{name} called {self._repeats} times in a row with the same arguments"
            )
        if self._calls_this_turn > self._max_calls:
            raise StopTrial("agent_loop", f"more than {self._max_calls} tool calls in one turn")


def _bounded(result: Any, limit: int) -> Any:
    """``result``, or, when its JSON is longer than ``limit`` bytes, a short account of it that the
    agent sees and the transcript keeps (a tool that answers 300 MB never fills memory twice)."""
    if isinstance(result, (bool, int, float)) or result is None:
        return result
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) * 4 > limit else len(text)
    if size <= limit:
        return result
    return {
        "cut": f"the result is {size:,} bytes, over the limit of {limit:,} (max_tool_result_bytes): "
        f"only its first {SHOWN_OF_CUT:,} characters are kept",
        "start": text[:SHOWN_OF_CUT],
    }


def _raw_and_parsed(arguments: dict[str, Any] | str | None) -> tuple[str, dict[str, Any] | None]:
    raw = (
        arguments
        if isinstance(arguments, str)
        else json.dumps(arguments or {}, ensure_ascii=False, default=str)
    )
    return raw, arguments if isinstance(arguments, dict) else None


def _canonical(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), sort_keys=True)
    except (ValueError, TypeError, RecursionError):  # not JSON, or nested too deeply to parse
        return raw
