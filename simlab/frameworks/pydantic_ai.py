"""A pydantic-ai agent as the agent under test (``agent: {pydantic_ai: module:agent_or_factory}``).

- The target is a ``pydantic_ai.Agent``, or a factory called once per domain with the domain's tools
  as pydantic-ai ``Tool``s (``domain_tools`` builds the same for an agent made at import time). The
  tools keep the domain's JSON schemas and find their trial in the run's ``deps``: a
  ``TrialContext`` (``ctx.deps.agent_context`` holds the scenario's ``agent_context``, for
  instructions). pydantic-ai does not validate arguments of schema-built tools; simlab's
  ``ToolHandle`` does, and shows the model what was wrong.
- Each user message is one run (``agent.iter``), with the conversation so far as ``message_history``.
- Recorded: every model request with its usage (``model_call``: input, output and cache-read tokens
  as the model reported them; the cost from the spec's ``price``, else unknown), in order with the
  tool calls it led to.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic_core import SchemaValidator, core_schema

from simlab.frameworks.common import (
    FrameworkAgent,
    load_domain_schemas,
    missing_extra,
    step_limit_hit,
    tool_specs,
    trial_of,
)
from simlab.sim.agent_io import AgentInput, AgentReply

try:
    from pydantic_ai import Agent, RunContext, Tool
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.messages import RetryPromptPart, ToolCallPart
    from pydantic_ai.usage import UsageLimits
except ImportError as exc:  # pragma: no cover - the extra is part of the test install
    raise missing_extra("pydantic-ai", exc) from None

__all__ = ["PydanticAIAgent", "domain_tools", "pydantic_tools"]


def pydantic_tools(schemas: list[dict[str, Any]]) -> list[Any]:
    """pydantic-ai ``Tool``s for these tool schemas (OpenAI function format), each run in the trial
    of the run's ``deps``."""

    def make(name: str, description: str, schema: dict[str, Any]) -> Any:
        async def run(ctx: RunContext[Any], **arguments: Any) -> str:
            return trial_of(ctx.deps, "the run's deps").call(name, arguments)

        tool = Tool.from_schema(run, name=name, description=description, json_schema=schema, takes_ctx=True)
        # arguments that are JSON but no object ("A123", null, a list) are refused as invalid and sent
        # back to the model, as pydantic-ai refuses arguments that are no JSON (from_schema lets
        # anything through, and calling the tool with them would crash the run)
        tool.function_schema.validator = SchemaValidator(core_schema.dict_schema())
        return tool

    return [make(*spec) for spec in tool_specs(schemas)]


def domain_tools(domain: str) -> list[Any]:
    """The tools of a domain (``"retail"``, or ``module:attr``) for an agent built at import time."""
    return pydantic_tools(load_domain_schemas(domain))


class PydanticAIAgent(FrameworkAgent):
    kind = "pydantic_ai"
    extra = "pydantic-ai"

    @classmethod
    def expected(cls) -> str:
        return "a pydantic-ai Agent"

    def is_instance(self, value: Any) -> bool:
        return isinstance(value, Agent)

    def make_tools(self, schemas: list[dict[str, Any]]) -> list[Any]:
        return pydantic_tools(schemas)

    async def respond(self, inp: AgentInput) -> AgentReply:
        agent = self.built_for(inp)
        trial = self.context(inp)
        limits = UsageLimits(request_limit=self.max_steps) if self.max_steps is not None else None
        text = str(inp.messages[-1].get("content") or "")
        asked = time.perf_counter()
        asked_for: dict[str, tuple[str, Any]] = {}  # tool call id -> (name, args) the model asked for
        try:
            async with agent.iter(
                text, deps=trial, message_history=inp.memory.get("history"), usage_limits=limits
            ) as run:
                async for node in run:
                    if Agent.is_model_request_node(node):
                        asked = time.perf_counter()
                        for name, args, reason, call_id in _refused(node.request, asked_for):
                            trial.rejected(name, args, reason, call_id)
                    elif Agent.is_call_tools_node(node):  # the model answered; its tools run next
                        response = node.model_response
                        asked_for.update(
                            {
                                p.tool_call_id: (p.tool_name, p.args)
                                for p in response.parts
                                if isinstance(p, ToolCallPart)
                            }
                        )
                        usage = response.usage
                        trial.model_call(
                            response.model_name or "unknown",
                            usage.input_tokens,
                            usage.output_tokens,
                            usage.cache_read_tokens,
                            time.perf_counter() - asked,
                        )
                    trial.reraise()
        except UsageLimitExceeded as exc:
            trial.reraise()
            limit = (limits or UsageLimits()).request_limit or 0
            raise step_limit_hit("pydantic-ai", limit, "request_limit", exc) from None
        except Exception:
            trial.reraise()
            raise
        trial.reraise()
        result = run.result
        assert result is not None  # the loop ran to its end
        inp.memory["history"] = result.all_messages()
        output = result.output
        return trial.reply(output if isinstance(output, str) else str(output))


def _refused(request: Any, asked_for: dict[str, tuple[str, Any]]) -> list[tuple[str, Any, str, str]]:
    """Tool calls pydantic-ai refused itself and sent back to the model to retry (an unknown tool,
    arguments that are not JSON or fail its validation): they never reached the trial's tools."""
    found = []
    for part in getattr(request, "parts", []):
        # pydantic-ai 2.x: a ToolReturnPart with outcome "retried"; earlier: a RetryPromptPart
        retried = isinstance(part, RetryPromptPart) or getattr(part, "outcome", None) == "retried"
        if retried and getattr(part, "tool_name", None):
            name, args = asked_for.get(part.tool_call_id, (part.tool_name, None))
            content = part.content
            reason = (
                content
                if isinstance(content, str)
                else "; ".join(str(e.get("msg", e)) if isinstance(e, dict) else str(e) for e in content)
            )
            found.append((name, args, reason[:300], part.tool_call_id))
    return found
