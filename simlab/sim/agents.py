"""Agents under test: a Python callable, or an LLM that calls the domain's tools.

A Python agent is any sync or async callable taking one ``AgentInput`` and returning the reply
text (or an ``AgentReply``). It acts on the world only through ``inp.tools.call(tool, **args)``,
which executes the domain tool and records the call and its result in the transcript.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from simlab.env.domain import Environment
from simlab.errors import SpecError
from simlab.imports import RefError, load_callable
from simlab.llm.types import ChatModel, Message
from simlab.transcript import ErrorEvent, InvalidCall, ModelCall, Pin, ToolCall, ToolResult

LOOP_REPEATS = 3  # the same tool with the same arguments this many times in a row is a loop


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
            return self.result if isinstance(self.result, str) else json.dumps(self.result, ensure_ascii=False)
        return json.dumps({"error": self.error}, ensure_ascii=False)


class ToolHandle:
    """Executes domain tools for the agent and records each call in the transcript."""

    def __init__(self, env: Environment, record: Callable[[Any], None], *, turn: int = 0,
                 max_calls_per_turn: int = 50):
        self._env = env
        self._record = record
        self.turn = turn
        self._max_calls = max_calls_per_turn
        self._calls_this_turn = 0
        self._last_key: str | None = None
        self._repeats = 0
        self._next_id = 0
        self._schemas: list[dict[str, Any]] | None = None

    def start_turn(self, turn: int) -> None:
        """A new user message: the same call again after it is a fresh attempt, not a loop."""
        self.turn = turn
        self._calls_this_turn = 0
        self._last_key, self._repeats = None, 0

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
        self._next_id += 1
        call_id = call_id or f"call_{self.turn}_{self._next_id}"
        outcome = self._env.execute(name, arguments)
        self._record(ToolCall(
            turn=self.turn, call_id=call_id, name=name, arguments=outcome.arguments,
            raw_arguments=outcome.raw_arguments, access=outcome.access.value if outcome.access else None,
        ))
        if outcome.invalid_reason is not None:
            self._record(InvalidCall(turn=self.turn, call_id=call_id, name=name, reason=outcome.invalid_reason))
        self._record(ToolResult(turn=self.turn, call_id=call_id, name=name, ok=outcome.ok,
                                result=outcome.result, error=outcome.error))
        fault = outcome.extra.get("fault")
        if fault:  # the domain misbehaved (crash, hang, a READ tool that wrote): say so apart from the result
            self._record(ErrorEvent(turn=self.turn, source="tool", kind=str(fault), message=outcome.error or ""))
        self._watch_for_loops(name, outcome.raw_arguments)
        return ToolReply(outcome.ok, outcome.result, outcome.error)

    def _watch_for_loops(self, name: str, raw: str) -> None:
        self._calls_this_turn += 1
        key = f"{name}\x00{_canonical(raw)}"
        self._repeats = self._repeats + 1 if key == self._last_key else 1
        self._last_key = key
        if self._repeats >= LOOP_REPEATS:
            raise StopTrial("agent_loop", f"{name} called {self._repeats} times in a row with the same arguments")
        if self._calls_this_turn > self._max_calls:
            raise StopTrial("agent_loop", f"more than {self._max_calls} tool calls in one turn")


def _canonical(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), sort_keys=True)
    except (ValueError, TypeError, RecursionError):  # not JSON, or nested too deeply to parse
        return raw


@dataclass
class AgentInput:
    """Everything an agent gets for one turn."""

    messages: list[Message]  # the conversation so far: {"role": "user"|"assistant", "content": str}
    context: dict[str, Any]  # the scenario's agent_context
    tools: ToolHandle
    policy: str
    seed: int
    turn: int
    memory: dict[str, Any] = field(default_factory=dict)  # kept across the turns of one trial
    record: Callable[[Any], None] | None = None  # appends an event (e.g. a ModelCall) to the transcript


@dataclass
class AgentReply:
    text: str
    transfer: bool = False  # the agent handed the conversation to a human


class Agent:
    """Base of the agent adapters: one ``respond`` per user turn."""

    def pin(self) -> Pin:
        raise NotImplementedError

    async def respond(self, inp: AgentInput) -> AgentReply:
        raise NotImplementedError


class PythonAgent(Agent):
    def __init__(self, func: Callable[[AgentInput], Any], ref: str):
        self.func = func
        self.ref = ref

    def pin(self) -> Pin:
        """``uses_models = False`` on the callable declares that it spends no tokens we cannot see."""
        uses_models = getattr(self.func, "uses_models", None)
        return Pin(kind="python", ref=self.ref, settings={} if uses_models is None else {"uses_models": uses_models})

    async def respond(self, inp: AgentInput) -> AgentReply:
        value = self.func(inp)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, AgentReply):
            return value
        if not isinstance(value, str):
            raise TypeError(f"agent {self.ref} returned {type(value).__name__}; return the reply text")
        return AgentReply(text=value)


def load_python_agent(ref: str, *, source: str = "agent") -> PythonAgent:
    """Import ``module:attr`` (the module may also be a path to a .py file)."""
    try:
        return PythonAgent(load_callable(ref, example="examples.retail_agents:careful_agent"), ref)
    except RefError as exc:  # an import error in user code is a spec problem, shown in one line
        raise SpecError(f"{source}: {exc}") from None


def render_context(context: dict[str, Any]) -> str:
    if not context:
        return ""
    lines = "\n".join(f"- {key}: {value}" for key, value in context.items())
    return f"\n\n# Context of this conversation\n{lines}"


class LLMAgent(Agent):
    """A tool-calling LLM: within one turn it calls tools until it answers in text (step cap)."""

    def __init__(self, model: ChatModel, *, system_prompt: str | None = None, max_steps: int = 10,
                 transfer_tools: tuple[str, ...] = ("transfer_to_human",)):
        self.model = model
        self.system_prompt = system_prompt
        self.max_steps = max_steps
        self.transfer_tools = transfer_tools

    def pin(self) -> Pin:
        pin = self.model.pin()
        settings = {**pin.settings, "max_steps": self.max_steps}
        if self.system_prompt is not None:
            settings["system_prompt_sha256"] = hashlib.sha256(self.system_prompt.encode()).hexdigest()
        return Pin(kind="llm", ref=pin.ref, settings=settings)

    async def respond(self, inp: AgentInput) -> AgentReply:
        history: list[Message] = inp.memory.setdefault("history", [
            {"role": "system", "content": (self.system_prompt or inp.policy) + render_context(inp.context)}
        ])
        history.append(inp.messages[-1])  # the user's newest message
        transferred = False
        for _ in range(self.max_steps):
            result = await self.model.chat(history, tools=inp.tools.schemas, seed=inp.seed)
            if inp.record:
                inp.record(ModelCall(turn=inp.turn, role="agent", model=self.model.model, usage=result.usage))
            if not result.tool_calls:
                text = result.text or ""
                history.append({"role": "assistant", "content": text})
                return AgentReply(text=text, transfer=transferred)
            history.append({
                "role": "assistant",
                "content": result.text or "",  # strict servers need a string here (see llm.client.wire_messages)
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in result.tool_calls
                ],
            })
            for call in result.tool_calls:
                reply = inp.tools.call(call.name, call.arguments, call_id=call.id)
                history.append({"role": "tool", "tool_call_id": call.id, "content": reply.as_text()})
                transferred = transferred or (reply.ok and call.name in self.transfer_tools)
            if transferred:
                return AgentReply(text=result.text or "", transfer=True)
        raise StopTrial("agent_loop", f"no text reply after {self.max_steps} tool-call rounds in one turn")
