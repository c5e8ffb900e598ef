"""Expectations on the structure of a framework agent's run (LangGraph): which nodes ran. The
single-step check (``first_tool_call``) and the final graph state reuse ``CallSpec`` and
``StateAssertion`` from ``specs/expect.py``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simlab.specs.base import SpecModel

__all__ = ["GraphTrajectory"]


class GraphTrajectory(SpecModel):
    """The nodes a LangGraph graph should visit, matched as ``trajectory`` matches tool calls."""

    mode: Literal["exact", "in_order", "any_order", "subset", "superset"] = "in_order"
    nodes: list[str] = Field(
        min_length=1,
        description="Node names in the order they finish; a node inside a subgraph is 'parent/node'.",
    )
