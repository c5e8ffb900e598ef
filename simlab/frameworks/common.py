"""What the three framework adapters share: the trial as the frameworks' tools see it
(``TrialContext``), loading ``module:attr`` as an object or a factory of one, the lazy import with a
clear error when an extra is missing, and model-call usage in simlab's terms."""

from __future__ import annotations

import importlib
import json
from typing import Any

from simlab.errors import SpecError
from simlab.imports import RefError, load_attr
from simlab.redact import map_strings, scrub
from simlab.sim.agent_io import AgentInput, AgentReply
from simlab.sim.tool_handle import StopTrial
from simlab.transcript import ModelCall, Pin, Usage
from simlab.transcript.model import cost_usd, token_count

__all__ = ["FrameworkAgent", "TrialContext", "require", "usage_of"]

CONTEXT_KEY = "simlab"  # where a LangGraph run config carries the TrialContext


def require(module: str, extra: str) -> Any:
    """Import a framework adapter (``simlab.frameworks.X``), or stop with what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SpecError(f"agent: {exc}") from None


def missing_extra(extra: str, exc: ImportError) -> ImportError:
    """The error an adapter raises when its framework is not installed: what to install."""
    return ImportError(
        f"this agent needs the {extra!r} extra, which is not installed ({exc}); install it with: "
        f"pip install 'simlab[{extra}]'"
    )


class TrialContext:
    """One agent turn of one trial, as the framework's tools and the team's code see it.

    ``agent_context`` is the scenario's ``agent_context`` (e.g. the signed-in customer), ``policy``
    the domain's policy text, ``turn`` the conversation turn. ``call`` runs a domain tool through
    the trial's ``ToolHandle`` (recorded, loop-checked) and returns what the model is shown.
    """

    def __init__(self, inp: AgentInput, *, transfer_tools: tuple[str, ...], price: dict[str, float] | None):
        self.agent_context: dict[str, Any] = dict(inp.context)
        self.policy = inp.policy
        self.turn = inp.turn
        self._inp = inp
        self._transfer_tools = transfer_tools
        self._price = price
        self.transferred = False
        self.stop: BaseException | None = (
            None  # a StopTrial (or probe stop) to re-raise through the framework
        )

    def call(self, name: str, arguments: dict[str, Any] | str | None, call_id: str | None = None) -> str:
        if self.stop is not None:  # the trial is over (a budget ran out in a callback): no more tool calls
            raise self.stop
        try:
            reply = self._inp.tools.call(name, arguments if arguments is not None else {}, call_id=call_id)
        except (
            BaseException
        ) as exc:  # StopTrial, ProbeStop: kept, in case the framework wraps what it catches
            self.stop = exc
            raise
        if reply.ok and name in self._transfer_tools:
            self.transferred = True
        return reply.as_text()

    def rejected(
        self, name: str, arguments: dict[str, Any] | str | None, reason: str, call_id: str | None = None
    ) -> None:
        """A tool call the framework refused itself (``ToolHandle.rejected``); a loop it trips
        stops the trial at the next step."""
        try:
            self._inp.tools.rejected(name, arguments, reason, call_id)
        except StopTrial as exc:
            self.stop = self.stop or exc

    def outside(
        self,
        name: str,
        arguments: dict[str, Any] | str | None,
        ok: bool,
        result: Any,
        call_id: str | None = None,
    ) -> None:
        """A call the agent ran through a tool of its own (``ToolHandle.outside``)."""
        try:
            self._inp.tools.outside(name, arguments, ok, result, call_id)
        except StopTrial as exc:
            self.stop = self.stop or exc

    def record(self, event: Any) -> None:
        """Append an event to the transcript; a limit it trips stops the trial at the next step."""
        if self._inp.record is None:
            return
        try:
            self._inp.record(event)
        except StopTrial as exc:
            self.stop = self.stop or exc

    def model_call(
        self,
        model: str,
        input_tokens: int | None,
        output_tokens: int | None,
        cached_tokens: int | None = None,
        latency_s: float = 0.0,
    ) -> None:
        self.record(
            ModelCall(
                turn=self.turn,
                role="agent",
                model=model or "unknown",
                usage=usage_of(input_tokens, output_tokens, cached_tokens, latency_s, self._price),
            )
        )

    def reraise(self) -> None:
        """After a framework run: the stop it may have swallowed or wrapped."""
        if self.stop is not None:
            raise self.stop

    def reply(self, text: str) -> AgentReply:
        return AgentReply(text=text, transfer=self.transferred)


def usage_of(
    input_tokens: int | None,
    output_tokens: int | None,
    cached_tokens: int | None,
    latency_s: float,
    price: dict[str, float] | None,
) -> Usage:
    """Tokens as the framework reported them (None: it did not); the cost from the spec's ``price``,
    else unknown (a framework reports no prices)."""
    input_tokens, output_tokens = token_count(input_tokens), token_count(output_tokens)
    cost = None
    if price is not None and input_tokens is not None and output_tokens is not None:
        cost = cost_usd(
            (input_tokens * price.get("input", 0.0) + output_tokens * price.get("output", 0.0)) / 1_000_000
        )
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=token_count(cached_tokens),
        cost_usd=cost,
        latency_s=round(latency_s, 6),
    )


def tool_specs(schemas: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, description, JSON schema of the arguments) of each tool in OpenAI function format."""
    out = []
    for schema in schemas:
        fn = schema.get("function", schema)
        out.append(
            (
                fn["name"],
                fn.get("description") or fn["name"],
                fn.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    return out


def load_domain_schemas(domain: str) -> list[dict[str, Any]]:
    """The tool schemas of a domain named as in a scenario (``retail``, ``module:attr``)."""
    from simlab.env.domain import load_domain

    return load_domain(domain).tool_schemas()


def jsonable(value: Any, depth: int = 0) -> Any:
    """JSON data for a transcript: plain values as they are, models dumped, anything else its text;
    strings scrubbed of anything shaped like a secret."""
    if depth > 20:
        return "…"
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(str(k)): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return map_strings(json.loads(json.dumps(dump(mode="json"), default=str)), scrub)
        except Exception:  # an odd model: its text will do
            pass
    text = str(value)
    return scrub(text if len(text) <= 500 else text[:499] + "…")


class FrameworkAgent:
    """The part of every adapter that is not about the framework: the target (the framework's agent
    object, or a factory called with the domain's tools, once per domain), the pin, the price."""

    kind = ""
    extra = ""

    def __init__(
        self,
        ref: str,
        target: Any,
        *,
        transfer_tools: tuple[str, ...] = ("transfer_to_human",),
        price: dict[str, float] | None = None,
        max_steps: int | None = None,
    ):
        self.ref = ref
        self._target = target
        self.transfer_tools = transfer_tools
        self.price = price
        self.max_steps = max_steps
        self._built: dict[str, Any] = {}

    @classmethod
    def load(cls, ref: str, **settings: Any) -> FrameworkAgent:
        try:
            target = load_attr(ref, example=f"mypkg.agents:{cls.kind}_agent")
        except RefError as exc:
            raise SpecError(f"agent: {exc}") from None
        agent = cls(ref, target, **settings)
        if not agent.is_instance(target) and not callable(target):
            raise SpecError(
                f"agent: {ref} is a {type(target).__name__}, not {cls.expected()} nor a factory of one"
            )
        return agent

    # what each adapter says about its framework
    @classmethod
    def expected(cls) -> str:
        raise NotImplementedError

    def is_instance(self, value: Any) -> bool:
        raise NotImplementedError

    def make_tools(self, schemas: list[dict[str, Any]]) -> list[Any]:
        raise NotImplementedError

    async def respond(self, inp: AgentInput) -> AgentReply:
        """One agent turn through the framework (the simlab Agent protocol)."""
        raise NotImplementedError

    def prepare(self, value: Any) -> Any:
        """What the target (or the factory's result) becomes before use (e.g. compile a graph)."""
        return value

    def built_for(self, inp: AgentInput) -> Any:
        """The framework's agent for this trial's domain: the target itself, or the factory's result."""
        if self.is_instance(self._target):
            key = ""
        else:
            key = json.dumps([s.get("function", s).get("name") for s in inp.tools.schemas])
        if key not in self._built:
            value = self._target if not key else self._call_factory(inp)
            self._built[key] = self.prepare(value)
        return self._built[key]

    def _call_factory(self, inp: AgentInput) -> Any:
        made = self._target(self.make_tools(inp.tools.schemas))
        if not self.is_instance(made):
            raise TypeError(f"the factory {self.ref} returned a {type(made).__name__}, not {self.expected()}")
        return made

    def context(self, inp: AgentInput) -> TrialContext:
        return TrialContext(inp, transfer_tools=self.transfer_tools, price=self.price)

    def pin(self) -> Pin:
        settings: dict[str, Any] = {}
        if self.price is not None:
            settings["price"] = dict(self.price)
        if self.max_steps is not None:
            settings["max_steps"] = self.max_steps
        return Pin(kind=self.kind, ref=self.ref, settings=settings)


def step_limit_hit(kind: str, limit: int, setting: str, exc: BaseException) -> StopTrial:
    """The trial's end when a framework stopped its own run at its step limit: the agent looped
    (``agent_loop``, a fail), never a crash and never a hang."""
    return StopTrial(
        "agent_loop",
        f"the {kind} agent ran {limit} steps in one turn without answering ({setting} "
        f"{limit}, the framework's {type(exc).__name__}); raise it with the agent's "
        "max_steps if the agent needs more",
    )


def trial_of(value: Any, where: str) -> TrialContext:
    """The ``TrialContext`` a tool was called with, or a clear error when it runs outside a trial."""
    if isinstance(value, TrialContext):
        return value
    raise RuntimeError(
        f"a simlab domain tool was called outside a simlab trial (no TrialContext in {where}); "
        "run the agent with simlab, or give it your own tools"
    )


ADAPTERS = {
    "langgraph": ("simlab.frameworks.langgraph", "LangGraphAgent"),
    "openai_agents": ("simlab.frameworks.openai_agents", "OpenAIAgentsAgent"),
    "pydantic_ai": ("simlab.frameworks.pydantic_ai", "PydanticAIAgent"),
}


def build_framework_agent(spec: Any, *, transfer_tools: tuple[str, ...]) -> FrameworkAgent:
    """The adapter for an ``AgentSpec`` naming a framework agent (its framework imported now)."""
    kind, ref = spec.framework
    module_name, class_name = ADAPTERS[kind]
    adapter = getattr(require(module_name, kind), class_name)
    settings: dict[str, Any] = {
        "transfer_tools": transfer_tools,
        "price": spec.price.model_dump() if spec.price is not None else None,
        "max_steps": spec.max_steps if "max_steps" in spec.model_fields_set else None,
    }
    if kind == "langgraph":
        settings["tool_nodes"] = spec.tool_nodes
    return adapter.load(ref, **settings)
