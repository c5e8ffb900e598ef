"""An OpenAI Agents SDK agent as the agent under test (``agent: {openai_agents: module:agent_or_factory}``).

- The target is an ``agents.Agent`` (with its handoffs), or a factory called once per domain with the
  domain's tools as ``FunctionTool``s (``domain_tools`` builds the same for an agent made at import
  time). The tools keep the domain's JSON schemas as they are (``strict_json_schema=False``) and find
  their trial in the run's ``context``: a ``TrialContext`` (``ctx.context.agent_context`` holds the
  scenario's ``agent_context``, for dynamic instructions).
- Each user message is one ``Runner.run``, continuing the conversation (``to_input_list``) with the
  agent that answered last, as the SDK's docs do for chat.
- Recorded: every handoff (``handoff`` event, at the moment it happens, so that policy rules can name
  it as ``handoff:<agent>``) and every model call with its usage (``model_call``), from run hooks.
  When the SDK raises, what it had done is still recorded: a model call it never finished (its
  usage unknown), a tool it did not find (an invalid call naming it, as the other adapters record
  the calls their framework refused). An answer its model code could not read (a proxy's HTML page
  sent with 200) is the provider's error, as for the other adapters (``llm/agent_errors.py``).
- Tracing is off, four ways (environment, global switch, no processors, the run config): nothing
  is exported, so a run never reaches the network on its own.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from typing import Any

from simlab.frameworks.common import (
    FrameworkAgent,
    TrialContext,
    load_domain_schemas,
    missing_extra,
    step_limit_hit,
    tool_specs,
    trial_of,
)
from simlab.llm.agent_errors import provider_failure
from simlab.llm.types import ModelError, ModelErrorKind
from simlab.redact import scrub
from simlab.sim.agent_io import AgentInput, AgentReply
from simlab.transcript import Handoff

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # read by the SDK once, at its first use

try:
    import agents
    from agents import (
        Agent,
        FunctionTool,
        MaxTurnsExceeded,
        ModelBehaviorError,
        RunConfig,
        RunContextWrapper,
        RunHooks,
        Runner,
    )
    from agents.run_config import DEFAULT_MAX_TURNS
except ImportError as exc:  # pragma: no cover - the extra is part of the test install
    raise missing_extra("openai-agents", exc) from None

agents.set_tracing_disabled(True)
agents.set_trace_processors([])  # the default processor exports spans to the OpenAI backend

__all__ = ["OpenAIAgentsAgent", "domain_tools", "function_tools"]


def function_tools(schemas: list[dict[str, Any]]) -> list[Any]:
    """``FunctionTool``s for these tool schemas (OpenAI function format), each run in the trial of
    the run's context."""

    def make(name: str, description: str, schema: dict[str, Any]) -> Any:
        async def invoke(ctx: RunContextWrapper[Any], arguments: str) -> str:
            trial = trial_of(ctx.context, "the run's context")
            return trial.call(name, arguments or "{}")

        return FunctionTool(
            name=name,
            description=description,
            params_json_schema=schema,
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    return [make(*spec) for spec in tool_specs(schemas)]


def domain_tools(domain: str) -> list[Any]:
    """The tools of a domain (``"retail"``, or ``module:attr``) for an agent built at import time."""
    return function_tools(load_domain_schemas(domain))


class OpenAIAgentsAgent(FrameworkAgent):
    kind = "openai_agents"
    extra = "openai-agents"

    @classmethod
    def expected(cls) -> str:
        return "an OpenAI Agents SDK Agent"

    def is_instance(self, value: Any) -> bool:
        return isinstance(value, Agent)

    def make_tools(self, schemas: list[dict[str, Any]]) -> list[Any]:
        return function_tools(schemas)

    async def respond(self, inp: AgentInput) -> AgentReply:
        memory = inp.memory
        start = memory.get("agent") or self.built_for(inp)
        trial = self.context(inp)
        given = memory.get("items", []) + [
            {"role": "user", "content": str(inp.messages[-1].get("content") or "")}
        ]
        settings: dict[str, Any] = {"max_turns": self.max_steps} if self.max_steps is not None else {}
        hooks = _Hooks(trial)
        try:
            result = await Runner.run(
                start,
                given,
                context=trial,
                hooks=hooks,
                **settings,
                run_config=RunConfig(tracing_disabled=True, workflow_name="simlab trial"),
            )
        except MaxTurnsExceeded as exc:
            trial.reraise()
            limit = self.max_steps if self.max_steps is not None else DEFAULT_MAX_TURNS
            raise step_limit_hit("Agents SDK", limit, "max_turns", exc) from None
        except Exception as exc:
            trial.reraise()
            hooks.raised(exc)
            trial.reraise()
            raise
        trial.reraise()
        memory["items"] = result.to_input_list()
        memory["agent"] = result.last_agent
        output = result.final_output
        return trial.reply(
            output if isinstance(output, str) else json.dumps(_plain(output), ensure_ascii=False)
        )


class _Hooks(RunHooks[Any]):
    """Handoffs and model calls, recorded as they happen."""

    def __init__(self, trial: TrialContext):
        self.trial = trial
        self.started: dict[int, tuple[float, Any]] = {}
        self.handoffs = itertools.count(1)
        self.last: Any = None  # the model's last answer

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        self.started[id(agent)] = (time.perf_counter(), agent)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        began = self.started.pop(id(agent), (time.perf_counter(), agent))[0]
        self.last = response
        usage = response.usage
        details = getattr(usage, "input_tokens_details", None)
        self.trial.model_call(
            _model_name(agent),
            usage.input_tokens if usage.requests else None,
            usage.output_tokens if usage.requests else None,
            getattr(details, "cached_tokens", None) if usage.requests else None,
            time.perf_counter() - began,
        )

    def raised(self, exc: Exception) -> None:
        """What the run had done when the SDK raised ``exc``: a model call it never finished, a tool
        it did not find. An answer the SDK's model code could not read is the provider's error."""
        pending = list(self.started.values())
        self.started.clear()
        if pending and provider_failure(exc) is None:  # else the loop records the failed call
            if _unreadable_answer(exc):
                said = scrub(f"{type(exc).__name__}: {exc}")[:300]
                raise ModelError(
                    ModelErrorKind.TRANSIENT,
                    "the agent's model answered with no completion (a proxy's page, an error "
                    f"payload): the Agents SDK could not read it ({said})",
                    role="agent",
                    model=_model_name(pending[-1][1]),
                ) from exc
            for began, agent in pending:
                self.trial.model_call(_model_name(agent), None, None, None, time.perf_counter() - began)
        missing = _UNKNOWN_TOOL.match(str(exc)) if isinstance(exc, ModelBehaviorError) else None
        if missing is None:
            return
        for item in getattr(self.last, "output", None) or []:
            if getattr(item, "type", None) == "function_call" and item.name == missing["name"]:
                self.trial.rejected(item.name, item.arguments, str(exc)[:300], item.call_id or None)
                return
        self.trial.rejected(missing["name"], None, str(exc)[:300])

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        self.trial.record(
            Handoff(
                turn=self.trial.turn,
                call_id=f"handoff_{self.trial.turn}_{next(self.handoffs)}",
                source=from_agent.name,
                target=to_agent.name,
            )
        )


_UNKNOWN_TOOL = re.compile(r"Tool (?P<name>.+) not found in agent ")


def _unreadable_answer(exc: BaseException) -> bool:
    """``exc`` is no decision of the SDK's (a ``ModelBehaviorError`` is one) but a plain error its
    own model code raised reading the answer (``'str' object has no attribute 'choices'``)."""
    if isinstance(exc, ModelBehaviorError) or not isinstance(exc, (AttributeError, TypeError, KeyError)):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    module = tb.tb_frame.f_globals.get("__name__", "") if tb is not None else ""
    return module.startswith(("agents.models.", "agents.extensions.models."))


def _model_name(agent: Any) -> str:
    model = agent.model
    if isinstance(model, str):
        return model
    if model is None:
        return "default"
    return str(getattr(model, "model", None) or type(model).__name__)


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(value)
