"""A LangGraph graph as the agent under test (``agent: {langgraph: module:graph_or_factory}``).

- The target is a compiled graph, a ``StateGraph`` (compiled here), or a factory called once per
  domain with the domain's tools as LangChain tools (``domain_tools`` builds the same for a graph
  made at import time). The graph takes and keeps ``messages`` (``MessagesState``).
- Each trial runs on its own copy of the graph with its own in-memory checkpointer and one thread,
  so trials share nothing and a team's own checkpointer (a database) is never written to. Each user
  message is one run on that thread; the reply is the last AI message. A graph that pauses on
  ``interrupt(value)`` replies with the value (a string, a dict's ``question``/``message``/``text``,
  else JSON) and the next user message resumes it (``Command(resume=message)``). A graph that stops
  at a static breakpoint (``interrupt_before``/``interrupt_after``, the approval pattern) replies
  with the calls it is about to make, and the next user message resumes it (input ``None``: the
  user's message approves, as an app's approve button would, and is not added to the graph's state).
- ``config["configurable"]`` carries the scenario's ``agent_context`` keys (``signed_in_customer``…,
  as an app would pass a user id), ``thread_id``, and ``simlab``: the ``TrialContext`` the tools use.
- Recorded: every node that finishes (``graph_step``, with its state update), the state at the end
  of each turn (``graph_state``), and every chat-model call with its usage (``model_call``, through
  a callback handler, so a router's model call that never enters the state counts too).
- ``probe`` is the single-step check: the opening message on a throwaway copy, stopped by
  ``interrupt_before`` the tool nodes (every ``ToolNode``, or the spec's ``tool_nodes``); the
  pending call is read from the paused state and never runs. A tool reached some other way (inside
  a subgraph) is stopped at the tool boundary instead.
"""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID

from simlab.frameworks.common import (
    CONTEXT_KEY,
    FrameworkAgent,
    TrialContext,
    jsonable,
    load_domain_schemas,
    missing_extra,
    step_limit_hit,
    tool_specs,
    trial_of,
)
from simlab.sim.agent_io import AgentInput, AgentReply
from simlab.sim.probe import ProbeStop, pending_call
from simlab.transcript import GraphState, GraphStep, PendingToolCall

try:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import BaseMessage, HumanMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import StructuredTool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.errors import GraphRecursionError
    from langgraph.graph import StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.pregel import Pregel
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - the extra is part of the test install
    raise missing_extra("langgraph", exc) from None

__all__ = ["LangGraphAgent", "domain_tools", "langchain_tools"]

SHOWN = 300  # characters of a message's text in a graph_step event
SIMLAB_TOOL = (
    "simlab_tool"  # in the metadata of the LangChain tools simlab makes: every other tool is the team's
)
# supersteps of one turn when the spec sets no max_steps (LangGraph's own default is 10,007: a graph
# whose model keeps calling a tool that does not exist ran for minutes and gigabytes)
DEFAULT_GRAPH_STEPS = 50
RESERVED = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map", CONTEXT_KEY)


def langchain_tools(schemas: list[dict[str, Any]]) -> list[Any]:
    """LangChain tools for these tool schemas (OpenAI function format); each runs in the trial its
    run config names."""

    def make(name: str) -> Any:
        async def run(config: RunnableConfig, **arguments: Any) -> str:
            trial = trial_of((config.get("configurable") or {}).get(CONTEXT_KEY), 'config["configurable"]')
            return trial.call(name, arguments, call_id=None)

        return run

    # a dict args_schema: the model sees the domain's own JSON schema; simlab's ToolHandle validates
    return [
        StructuredTool(
            name=name,
            description=description,
            args_schema=schema,
            coroutine=make(name),
            metadata={SIMLAB_TOOL: True},
        )
        for name, description, schema in tool_specs(schemas)
    ]


def domain_tools(domain: str) -> list[Any]:
    """The tools of a domain (``"retail"``, or ``module:attr``) for a graph built at import time."""
    return langchain_tools(load_domain_schemas(domain))


class LangGraphAgent(FrameworkAgent):
    kind = "langgraph"
    extra = "langgraph"

    def __init__(self, ref: str, target: Any, *, tool_nodes: list[str] | None = None, **settings: Any):
        super().__init__(ref, target, **settings)
        self.tool_nodes = tool_nodes

    @classmethod
    def expected(cls) -> str:
        return "a LangGraph graph (compiled, or a StateGraph)"

    def is_instance(self, value: Any) -> bool:
        return isinstance(value, (Pregel, StateGraph))

    def make_tools(self, schemas: list[dict[str, Any]]) -> list[Any]:
        return langchain_tools(schemas)

    def prepare(self, value: Any) -> Any:
        return value.compile() if isinstance(value, StateGraph) else value

    def pin(self) -> Any:
        pin = super().pin()
        if self.tool_nodes is not None:
            pin.settings["tool_nodes"] = list(self.tool_nodes)
        return pin

    # --- one trial ----------------------------------------------------------------------------
    def _own_copy(self, inp: AgentInput) -> Any:
        """The graph with a checkpointer of its own: this trial's (or this probe's) alone."""
        return self.built_for(inp).copy(update={"checkpointer": InMemorySaver()})

    def _config(self, inp: AgentInput, trial: TrialContext, thread: str, recorder: Any) -> dict[str, Any]:
        context = {k: v for k, v in inp.context.items() if k not in RESERVED and not str(k).startswith("__")}
        config: dict[str, Any] = {
            "configurable": {**context, "thread_id": thread, CONTEXT_KEY: trial},
            "callbacks": [recorder],
        }
        config["recursion_limit"] = self.step_limit
        return config

    @property
    def step_limit(self) -> int:
        return self.max_steps if self.max_steps is not None else DEFAULT_GRAPH_STEPS

    async def respond(self, inp: AgentInput) -> AgentReply:
        memory = inp.memory
        if "graph" not in memory:
            memory.update(graph=self._own_copy(inp), thread="trial", seen=set(), paused="")
            memory["own_tools"] = _own_tools(memory["graph"])
        graph = memory["graph"]
        trial = self.context(inp)
        config = self._config(inp, trial, memory["thread"], _ModelCalls(trial))
        text = str(inp.messages[-1].get("content") or "")
        known = {str(s.get("function", s).get("name")) for s in inp.tools.schemas}
        asked_for: dict[str, tuple[str, Any]] = {}  # tool call id -> (name, args), from the AI messages
        paused = memory["paused"]
        given: Any = (
            Command(resume=text)
            if paused == "interrupt"
            else None
            if paused == "breakpoint"
            else {"messages": [HumanMessage(text)]}
        )
        try:
            async for namespace, chunk in graph.astream(given, config, stream_mode="updates", subgraphs=True):
                for node, update in (chunk or {}).items():
                    if node.startswith("__"):  # __interrupt__: read from the state below
                        continue
                    shown, omitted = _update(update, memory["seen"])
                    trial.record(
                        GraphStep(turn=inp.turn, node=_path(namespace, node), update=shown, omitted=omitted)
                    )
                    _record_foreign_calls(trial, update, asked_for, known, memory["own_tools"])
                trial.reraise()
        except GraphRecursionError as exc:
            trial.reraise()
            raise step_limit_hit("LangGraph", self.step_limit, "recursion_limit", exc) from None
        except Exception:
            trial.reraise()
            raise
        trial.reraise()
        snapshot = await graph.aget_state(config)
        trial.record(GraphState(turn=inp.turn, values=_values(snapshot.values), next=list(snapshot.next)))
        trial.reraise()
        asked = [i.value for i in snapshot.interrupts]
        memory["paused"] = "interrupt" if asked else "breakpoint" if snapshot.next else ""
        if asked:  # the graph waits for a human: its question is the reply, the user's answer resumes it
            return trial.reply("\n".join(_asked_text(a) for a in asked))
        if snapshot.next:  # a static breakpoint: the calls it is about to make are the reply
            return trial.reply(_pending_text(snapshot.values, list(snapshot.next)))
        return trial.reply(_last_ai_text(snapshot.values))

    async def probe(self, inp: AgentInput) -> PendingToolCall:
        """The first decision for the opening message, on a throwaway copy, stopped before any tool."""
        graph = self._own_copy(inp)
        trial = self.context(inp)
        config = self._config(inp, trial, "probe", _ModelCalls(trial))
        nodes = self.tool_nodes if self.tool_nodes is not None else _tool_nodes(graph)
        text = str(inp.messages[-1].get("content") or "")
        try:
            async for _ in graph.astream(
                {"messages": [HumanMessage(text)]},
                config,
                stream_mode="updates",
                interrupt_before=nodes or None,
            ):
                trial.reraise()
            trial.reraise()
        except ProbeStop as stop:
            return stop.pending
        except Exception:
            if isinstance(trial.stop, ProbeStop):
                return trial.stop.pending
            trial.reraise()
            raise
        snapshot = await graph.aget_state(config)
        calls = _last_ai(snapshot.values).tool_calls if _last_ai(snapshot.values) is not None else []
        if snapshot.next and calls:
            first = calls[0]
            return pending_call(
                first["name"],
                first.get("args") or {},
                first.get("id"),
                f"interrupt_before:{snapshot.next[0]}",
                inp.turn,
            )
        return PendingToolCall(
            turn=inp.turn,
            stopped_at=f"interrupt_before:{','.join(nodes) or '(no tool node)'}",
            reply=_last_ai_text(snapshot.values),
        )


class _ModelCalls(BaseCallbackHandler):
    """A LangChain callback handler: one ``model_call`` per chat-model call, with its usage."""

    run_inline = True  # called in the graph's own thread and order

    def __init__(self, trial: TrialContext):
        self.trial = trial
        self.started: dict[UUID, tuple[float, str]] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, metadata: Any = None, **kw: Any
    ) -> None:
        self._start(run_id, serialized, metadata, kw)

    def on_llm_start(
        self, serialized: Any, prompts: Any, *, run_id: UUID, metadata: Any = None, **kw: Any
    ) -> None:
        self._start(run_id, serialized, metadata, kw)

    def _start(self, run_id: UUID, serialized: Any, metadata: Any, kw: dict[str, Any]) -> None:
        name = (
            (metadata or {}).get("ls_model_name")
            or (kw.get("invocation_params") or {}).get("model")
            or (serialized or {}).get("name")
            or "unknown"
        )
        self.started[run_id] = (time.perf_counter(), str(name))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kw: Any) -> None:
        began, name = self.started.pop(run_id, (time.perf_counter(), "unknown"))
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        message = getattr(generation, "message", None)
        meta = getattr(message, "usage_metadata", None) or {}
        name = (getattr(message, "response_metadata", None) or {}).get("model_name") or name
        tokens = ((response.llm_output or {}).get("token_usage") or {}) if not meta else {}
        cached = (meta.get("input_token_details") or {}).get("cache_read") if meta else None
        self.trial.model_call(
            name,
            meta.get("input_tokens", tokens.get("prompt_tokens")),
            meta.get("output_tokens", tokens.get("completion_tokens")),
            cached,
            time.perf_counter() - began,
        )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        self.started.pop(run_id, None)


def _tool_nodes(graph: Any) -> list[str]:
    return [name for name, node in graph.nodes.items() if isinstance(getattr(node, "bound", None), ToolNode)]


def _path(namespace: tuple[str, ...], node: str) -> str:
    return "/".join([part.split(":", 1)[0] for part in namespace] + [node])


def _is_message(value: Any) -> bool:
    return isinstance(value, BaseMessage)


def _short(message: Any) -> dict[str, Any]:
    text = _text(message)  # a tool's whole result is its tool_result event: here only its start
    shown = text if len(text) <= SHOWN else text[:SHOWN] + "…"
    out: dict[str, Any] = {"type": message.type, "text": jsonable(shown)}
    calls = getattr(message, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"name": c.get("name"), "args": jsonable(c.get("args"))} for c in calls]
    if message.type == "tool":
        out["tool"] = getattr(message, "name", None)
    return out


def _update(update: Any, seen: set[str]) -> tuple[dict[str, Any] | None, int]:
    """A node's update as JSON data; messages short, and only those not shown before."""
    if update is None:
        return None, 0
    if not isinstance(update, dict):
        return {"value": jsonable(update)}, 0
    omitted = 0
    out: dict[str, Any] = {}
    for key, value in update.items():
        items = value if isinstance(value, list) else [value]
        if items and all(_is_message(m) for m in items):
            fresh = []
            for message in items:
                mid = message.id or f"anon-{id(message)}"
                if mid in seen:
                    omitted += 1
                    continue
                seen.add(mid)
                fresh.append(_short(message))
            out[str(key)] = fresh
        else:
            out[str(key)] = jsonable(value)
    return out, omitted


def _values(values: Any) -> dict[str, Any]:
    """The state's channels as JSON data, a list of messages as its length."""
    if not isinstance(values, dict):
        return {"value": jsonable(values)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, list) and value and all(_is_message(m) for m in value):
            out[str(key)] = len(value)
        else:
            out[str(key)] = jsonable(value)
    return out


def _text(message: Any) -> str:
    return str(getattr(message, "text", "") or "")  # langchain-core 1.x: a property (a str)


def _last_ai(values: Any) -> Any:
    messages = values.get("messages") if isinstance(values, dict) else None
    for message in reversed(messages or []):
        if getattr(message, "type", None) == "ai":
            return message
        if getattr(message, "type", None) == "human":
            return None
    return None


def _last_ai_text(values: Any) -> str:
    if not isinstance(values, dict) or "messages" not in values:
        raise ValueError(
            "the graph's state has no 'messages': simlab sends each user message as "
            "{'messages': [HumanMessage]} and reads the reply from the last AI message"
        )
    message = _last_ai(values)
    return _text(message) if message is not None else ""


ASKED_FIELDS = ("question", "message", "text", "prompt", "content")


def _asked_text(value: Any) -> str:
    """What an ``interrupt(value)`` says to the user: a string as it is, a mapping's question (or
    message, text, prompt, content), anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        said = next((value[k] for k in ASKED_FIELDS if isinstance(value.get(k), str)), None)
        if said is not None:
            return said
    return json.dumps(jsonable(value), ensure_ascii=False)


def _pending_text(values: Any, waiting: list[str]) -> str:
    """The reply of a graph paused at a static breakpoint: its last words and the calls it is about
    to make, for the user to approve."""
    last = _last_ai(values)
    calls = [c for c in (getattr(last, "tool_calls", None) or [])]
    text = _last_ai_text(values)
    if not calls:
        return text or f"(paused before {', '.join(waiting)}; reply to continue)"
    planned = "; ".join(
        f"{c.get('name')} {json.dumps(jsonable(c.get('args') or {}), ensure_ascii=False)}" for c in calls
    )
    return (f"{text}\n" if text else "") + f"Before I go on, I will call: {planned}. Shall I go ahead?"


def _own_tools(graph: Any) -> set[str]:
    """Names of the team's own tools in the graph's tool nodes (subgraphs included): tools simlab
    did not make, whose calls the domain never runs."""
    graphs = [graph, *(sub for _, sub in graph.get_subgraphs(recurse=True))]
    return {
        name
        for g in graphs
        for node in g.nodes.values()
        if isinstance(getattr(node, "bound", None), ToolNode)
        for name, tool in node.bound.tools_by_name.items()
        if not (tool.metadata or {}).get(SIMLAB_TOOL)
    }


def _record_foreign_calls(
    trial: TrialContext, update: Any, asked_for: dict[str, tuple[str, Any]], known: set[str], own: set[str]
) -> None:
    """Tool calls of this update that no tool of the trial ran, recorded from the graph's messages:
    a call to one of the team's own tools (``outside``: the trajectory sees it, the domain did not
    run it), a call the tool node answered itself for a tool nobody has, and a call whose arguments
    the model's parser refused (an AI message's ``invalid_tool_calls``) (``rejected``: an invalid
    call). Calls asked for in this update are remembered in ``asked_for``."""
    messages = update.get("messages") if isinstance(update, dict) else None
    for message in messages if isinstance(messages, list) else [messages] if messages is not None else []:
        for call in getattr(message, "tool_calls", None) or []:
            asked_for[str(call.get("id"))] = (str(call.get("name")), call.get("args"))
        for bad in getattr(message, "invalid_tool_calls", None) or []:  # arguments its parser refused
            reason = str(bad.get("error") or "the arguments are not a JSON object")[:SHOWN]
            trial.rejected(str(bad.get("name") or "?"), bad.get("args"), reason, bad.get("id"))
        if getattr(message, "type", None) != "tool":
            continue
        call_id = str(getattr(message, "tool_call_id", "") or "")
        name, args = asked_for.get(call_id, (str(getattr(message, "name", None) or "?"), None))
        failed = getattr(message, "status", None) == "error"
        if name in own:
            trial.outside(name, args, not failed, _text(message)[:SHOWN], call_id or None)
        elif failed and name not in known:
            trial.rejected(name, args, _text(message)[:SHOWN], call_id or None)
