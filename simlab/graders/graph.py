"""Checks on a LangGraph agent's own trace: which nodes ran (``expect.graph_trajectory``) and what
the graph state was at the end (``expect.graph_state``).

A graph trajectory is the ``graph_step`` events in order, one per node that finished (a node inside
a subgraph is ``parent/node``, and the parent node itself finishes after its inner nodes). It is
matched with the tool-call trajectory's own modes (``graders/trajectory.py``), node names standing
for tool names; so a supervisor that routes to the wrong worker fails it even when every message
reads well. The final graph state is the last ``graph_state`` event (recorded at the end of each
agent turn); its assertions use the syntax and semantics of ``expect.state``.

An agent that records no graph (any kind but ``langgraph``) gets ``not_run`` for both, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from simlab.graders.base import Check, GradeContext, check_at
from simlab.graders.registry import grader
from simlab.graders.state import assertion_label, check_assertion
from simlab.graders.trajectory import MODES, max_matching
from simlab.transcript import GraphState, GraphStep, ToolCall

__all__ = ["grade_graph", "node_path"]

# the tool-call wording of the shared matchers, said of graph steps
_WORDS = (
    ("()", ""),
    ("no later call to", "no later step of"),
    ("no call to", "no step of"),
    (" calls", " steps"),
    ("call ", "step "),
)


def node_path(events: Sequence[object]) -> list[tuple[int, str]]:
    """(event index, node) for every node that finished, in order."""
    return [(i, e.node) for i, e in enumerate(events) if isinstance(e, GraphStep)]


def _no_graph(ctx: GradeContext) -> str | None:
    kind = ctx.transcript.agent.kind
    if kind == "langgraph":
        return None
    return f"the agent (kind {kind}) is not a LangGraph graph: it records no graph steps or state"


def _trajectory(ctx: GradeContext) -> list[Check]:
    spec = ctx.scenario.expect.graph_trajectory
    if spec is None:
        return []
    name = f"graph_trajectory:{spec.mode}"
    why = _no_graph(ctx)
    if why:
        return [Check(name=name, kind="trajectory", status="not_run", reason=why)]
    path = node_path(ctx.transcript.events)
    steps = [(i, ToolCall(turn=0, call_id=str(i), name=node), True) for i, node in path]
    refs: list[str] = list(spec.nodes)
    same = lambda r, p: refs[r] == steps[p][1].name  # noqa: E731
    ok, reason, event = MODES[spec.mode](refs, steps, same)  # type: ignore[arg-type]
    for old, new in _WORDS:
        reason = reason.replace(old, new)
    if not ok and event is None and path:
        event = path[-1][0]
    matched = max_matching(refs, steps, same)  # type: ignore[arg-type]
    details = {"reference": refs, "visited": [node for _, node in path], "matched": len(matched)}
    return [
        Check(
            name=name,
            kind="trajectory",
            status="pass" if ok else "fail",
            reason=reason,
            details=details,
            **(check_at(ctx.transcript, event) if not ok else {}),
        )
    ]


def _state(ctx: GradeContext) -> list[Check]:
    assertions = ctx.scenario.expect.graph_state
    if not assertions:
        return []
    why = _no_graph(ctx)
    last = next(
        (
            i
            for i in range(len(ctx.transcript.events) - 1, -1, -1)
            if isinstance(ctx.transcript.events[i], GraphState)
        ),
        None,
    )
    if why is None and last is None:
        why = "no graph state was recorded: the trial ended before the graph finished a turn"
    checks = []
    for a in assertions:
        name = f"graph_state: {assertion_label(a)}"
        if why or last is None:
            checks.append(Check(name=name, kind="state", status="not_run", reason=why or ""))
            continue
        state = ctx.transcript.events[last]
        assert isinstance(state, GraphState)
        met, reason, _ = check_assertion(a, state.values)
        checks.append(
            Check(
                name=name,
                kind="state",
                status="pass" if met else "fail",
                reason=reason,
                **check_at(ctx.transcript, last),
            )
        )
    return checks


def grade_graph(ctx: GradeContext) -> list[Check]:
    """The graph-trajectory and graph-state checks a scenario asks for ([] when it asks for none)."""
    return _trajectory(ctx) + _state(ctx)


@grader("graph", kind="trajectory")
def graph_grader() -> Callable[[GradeContext], list[Check]]:
    """A LangGraph agent's own trace: ``expect.graph_trajectory`` and ``expect.graph_state``."""
    return grade_graph
