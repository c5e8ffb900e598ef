"""Agents built with a framework, tested as teams build them: a LangGraph graph
(``simlab.frameworks.langgraph``), an OpenAI Agents SDK agent (``simlab.frameworks.openai_agents``)
or a pydantic-ai agent (``simlab.frameworks.pydantic_ai``), each an optional extra
(``pip install 'simlab[langgraph]'``), imported only when a spec names that kind of agent.

Each adapter is thin. The domain's tools become the framework's own tool objects, built once per
domain from the same JSON schemas an LLM agent sees; at call time each finds its trial through the
framework's run context (LangGraph's ``config["configurable"]["simlab"]``, the SDK's ``context``,
pydantic-ai's ``deps``: a ``TrialContext``) and runs through the trial's ``ToolHandle``, so state
checks, trajectories, policy rules and loop detection work as for a built-in agent.
"""

from simlab.frameworks.common import TrialContext

__all__ = ["TrialContext"]
