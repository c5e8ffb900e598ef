"""The agents under test, gathered: the contract (``agent_io``), the tool handle (``tool_handle``),
and the two built-in adapters, a Python callable (``python_agent``) and an LLM (``llm_agent``).
Import from here or from those modules; users import ``AgentInput`` and ``AgentReply`` from
``simlab``."""

from simlab.sim.agent_io import Agent, AgentInput, AgentReply
from simlab.sim.llm_agent import LLMAgent, render_context
from simlab.sim.python_agent import PythonAgent, load_python_agent
from simlab.sim.tool_handle import LOOP_REPEATS, StopTrial, ToolHandle, ToolReply

__all__ = [
    "LOOP_REPEATS",
    "Agent",
    "AgentInput",
    "AgentReply",
    "LLMAgent",
    "PythonAgent",
    "StopTrial",
    "ToolHandle",
    "ToolReply",
    "load_python_agent",
    "render_context",
]
