"""Environments: domain state, tools with derived schemas, and tool execution."""

from simlab.env.domain import BUILTIN_DOMAINS, Domain, Environment, deep_merge, load_domain
from simlab.env.tools import READ, WRITE, Access, Tool, ToolError, ToolOutcome, make_tool, tool

__all__ = [
    "BUILTIN_DOMAINS",
    "READ",
    "WRITE",
    "Access",
    "Domain",
    "Environment",
    "Tool",
    "ToolError",
    "ToolOutcome",
    "deep_merge",
    "load_domain",
    "make_tool",
    "tool",
]
