"""The fake models of the benches: an LLM agent that calls one tool per turn, an LLM user who
stops after three replies. Instant, or sleeping like a provider (asynchronously).

A trial of the retail demo then makes 9 model calls (agent: a tool call and a reply on each of
3 turns; user: 3 replies, the first message being the scenario's scripted opening) and 3 tool
calls, whatever the scenario.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

AGENT_TEXT = ("I have checked our help center for you: a refund goes back to the original card within 5 "
              "business days once it is issued. Is there anything else I can help you with?")
USER_TEXT = "ok. and what about my refund for order A123, when do I get the money back?"
CALLS_PER_TRIAL = 9


def agent_reply(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> Any:
    """After the user speaks: search the help center; after the tool result: answer."""
    last = messages[-1]
    if last["role"] == "tool":
        return AGENT_TEXT
    query = str(last.get("content") or "refund")[:40]
    return {"tool_calls": [{"name": "search_help_center", "arguments": {"query": query}}]}


def user_reply(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> str:
    """The simulator sees its own turns as 'assistant'; the third reply ends the conversation."""
    own = sum(1 for m in messages if m["role"] == "assistant")
    return "Great, that is all I needed, thanks. ###STOP###" if own >= 3 else USER_TEXT


def sleeping(reply: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    """``reply`` after an asynchronous sleep: a provider's latency without its CPU."""

    async def slow(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> Any:
        await asyncio.sleep(seconds)
        return reply(messages, tools)

    return slow


def double_models(delay_s: float = 0.0) -> tuple[Any, Any]:
    """(agent, simulator) on simlab's own test double ``FunctionModel`` (no LiteLLM)."""
    from simlab.llm.fakes import FunctionModel
    from simlab.sim.agents import LLMAgent
    from simlab.sim.simulators import LLMSimulator

    class Unrecorded(FunctionModel):
        """``FunctionModel`` keeps every request for assertions; a bench must not grow with trials."""

        async def chat(self, messages: Any, **kwargs: Any) -> Any:
            try:
                return await super().chat(messages, **kwargs)
            finally:
                self.calls.clear()

    agent_fn = sleeping(agent_reply, delay_s) if delay_s else agent_reply
    user_fn = sleeping(user_reply, delay_s) if delay_s else user_reply
    return (LLMAgent(Unrecorded(agent_fn, model="fake/bench-agent", role="agent")),
            LLMSimulator(Unrecorded(user_fn, model="fake/bench-user", role="simulator")))


def litellm_models(delay_s: float = 0.0, *, limiter: Any = None) -> tuple[Any, Any]:
    """(agent, simulator) as ``LiteLLMModel``s on the fake provider: the real ``litellm.acompletion``."""
    from simlab.llm.client import LiteLLMModel
    from simlab.sim.agents import LLMAgent
    from simlab.sim.simulators import LLMSimulator

    agent, user = register_litellm_fakes(delay_s)
    return (LLMAgent(LiteLLMModel(agent, role="agent", temperature=0.0, limiter=limiter)),
            LLMSimulator(LiteLLMModel(user, role="simulator", temperature=0.7, limiter=limiter)))


def register_litellm_fakes(delay_s: float = 0.0) -> tuple[str, str]:
    """Register the two fakes as ``simlab-fake/bench-agent`` and ``simlab-fake/bench-user``."""
    from simlab.llm.fakes import register_fake

    agent_fn = sleeping(agent_reply, delay_s) if delay_s else agent_reply
    user_fn = sleeping(user_reply, delay_s) if delay_s else user_reply
    return register_fake("bench-agent", agent_fn), register_fake("bench-user", user_fn)


HTTP_KEY_ENV = "SIMLAB_BENCH_KEY"  # LiteLLM's OpenAI client wants a key; the fake server takes any


def http_models(base_url: str, *, limiter: Any = None) -> tuple[Any, Any]:
    """(agent, simulator) as ``LiteLLMModel``s talking HTTP to ``fake_server.py`` at ``base_url``:
    transport, JSON and all of LiteLLM's own work counted, as in a user's run."""
    import os

    from simlab.llm.client import LiteLLMModel
    from simlab.sim.agents import LLMAgent
    from simlab.sim.simulators import LLMSimulator

    os.environ.setdefault(HTTP_KEY_ENV, "bench")
    return (LLMAgent(LiteLLMModel("openai/bench-agent", role="agent", temperature=0.0, api_base=base_url,
                                  api_key_env=HTTP_KEY_ENV, limiter=limiter)),
            LLMSimulator(LiteLLMModel("openai/bench-user", role="simulator", temperature=0.7, api_base=base_url,
                                      api_key_env=HTTP_KEY_ENV, limiter=limiter)))
