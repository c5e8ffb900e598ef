"""Efficiency counts, the termination check and budgets.

Why these definitions:

- tool errors are results that were not ok of calls that ran; invalid calls (unknown tool, arguments
  that are not JSON or fail the schema) are counted apart and not again as errors
  (``transcript.counts.tool_counts``: the results row and the viewer count with it too).
- a recovery is one episode: one or more failures (errors or invalid calls) of a tool followed later
  by a success of the same tool (err, err, ok = 1 recovery).
- faults: the scenario's injected faults (``faults:``, ``tool_fault`` events), the agent's calls of
  a faulted tool after each fault (``attempts_after``), and the faults it got past (``recovered``: a
  later call of that tool that succeeded and was not itself faulted).
- a redundant call repeats tool + canonical arguments whose latest identical call succeeded; a
  retry after an error is not redundant.
- loop: the same tool + arguments 3 times in a row, or the trial ended with agent_loop or max_turns.
- tokens and cost per role sum the recorded model calls; one unknown part makes the sum unknown
  (None). A role that recorded no model call is zero when its pin is an LLM (it made no call) or a
  deterministic simulator (scripted, rules), and unknown for a Python agent, which may spend tokens
  without recording them. Budgets (tokens, cost) cover the trial: agent + simulator; judge usage is
  reported beside them.
- events carry no timestamps, so time to first agent action is the model-call latency (every role)
  before the first ToolCall or AgentMessage — a lower bound — reported with that event's turn.
- the termination check fails on max_turns, agent_loop, budget_exceeded and context_window; an
  infrastructure error is ``not_run`` here (the verdict reports it as ``error``).
- a domain tool that crashed (raised, hung, returned what cannot be recorded, left an invalid
  state: ``base.tool_crashes``) is a hard ``tool_crash:TOOL`` check in ``error`` per tool, naming
  the exception: the tool is to blame, and the verdict is ``error`` (``verdicts.PRECEDENCE``).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from simlab.graders.base import Check, GradeContext, check_at, tool_crashes
from simlab.graders.policy import calls_of
from simlab.graders.registry import grader
from simlab.transcript import AgentMessage, ModelCall, ToolCall, ToolFault, Transcript, Usage, UserMessage
from simlab.transcript.counts import tool_counts
from simlab.transcript.model import spends_nothing_unseen

__all__ = ["efficiency_counts", "grade_efficiency", "LOOP_REPEATS", "FAILING_TERMINATIONS"]

LOOP_REPEATS = 3
FAILING_TERMINATIONS = ("max_turns", "agent_loop", "budget_exceeded", "context_window", "agent_error")


def call_key(call: ToolCall) -> str:
    """Tool name + canonical arguments (sorted JSON; the raw text when not JSON)."""
    if call.arguments is not None:
        args = json.dumps(call.arguments, sort_keys=True, default=str)
    else:
        try:
            args = json.dumps(json.loads(call.raw_arguments), sort_keys=True)
        except (ValueError, TypeError, RecursionError):  # not JSON, or nested too deeply to parse
            args = call.raw_arguments
    return f"{call.name}\x00{args}"


def _usage_dict(usage: Usage | None, calls: int) -> dict[str, Any]:
    if usage is None:
        return {
            "model_calls": calls,
            "input_tokens": None,
            "output_tokens": None,
            "cached_tokens": None,
            "total_tokens": None,
            "cost_usd": None,
        }
    known = usage.input_tokens is not None and usage.output_tokens is not None
    total = usage.input_tokens + usage.output_tokens if known else None  # type: ignore[operator]
    return {
        "model_calls": calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "total_tokens": total,
        "cost_usd": usage.cost_usd,
    }


def _by_role(t: Transcript) -> dict[str, dict[str, Any]]:
    sums = t.usage_by_role()
    n = {
        role: sum(1 for e in t.events if isinstance(e, ModelCall) and e.role == role)
        for role in ("agent", "simulator", "judge")
    }
    zero = Usage(input_tokens=0, output_tokens=0, cached_tokens=0, cost_usd=0.0)
    out = {}
    for role, pin in (("agent", t.agent), ("simulator", t.simulator)):
        fallback = zero if spends_nothing_unseen(pin.kind, pin.settings) else None
        out[role] = _usage_dict(sums.get(role, fallback), n[role])
    if "judge" in sums:
        out["judge"] = _usage_dict(sums["judge"], n["judge"])
    return out


def _sum(values: list[Any]) -> Any:
    return None if any(v is None for v in values) else sum(values)


def efficiency_counts(transcript: Transcript) -> dict[str, Any]:
    """Counts, usage and latency of one trial (JSON-ready; None means unknown)."""
    t = transcript
    calls = calls_of(t)
    last_ok: dict[str, bool] = {}
    failing: set[str] = set()
    redundant = recoveries = run = best_run = 0
    previous = None
    for c in calls:
        key = call_key(c.call)
        if last_ok.get(key):
            redundant += 1
        last_ok[key] = c.ok
        run = run + 1 if key == previous else 1
        best_run, previous = max(best_run, run), key
        if not c.ok:
            failing.add(c.call.name)
        elif c.call.name in failing:
            failing.discard(c.call.name)
            recoveries += 1
    faulted = {e.call_id for e in t.events if isinstance(e, ToolFault)}
    faults = _fault_counts(calls, faulted)
    roles = _by_role(t)
    trial_roles = [roles["agent"], roles["simulator"]]
    model_calls = [e for e in t.events if isinstance(e, ModelCall)]
    latencies = [e.usage.latency_s for e in model_calls]
    first = next((i for i, e in enumerate(t.events) if isinstance(e, (ToolCall, AgentMessage))), None)
    before_first = [e.usage.latency_s for e in t.events[: first or 0] if isinstance(e, ModelCall)]
    reason = t.termination.reason.value
    return {
        "user_turns": sum(isinstance(e, UserMessage) for e in t.events),
        "agent_turns": sum(isinstance(e, AgentMessage) for e in t.events),
        **tool_counts(t.events),
        "recoveries": recoveries,
        "faults": faults,
        "redundant_calls": redundant,
        "max_repeat_run": best_run,
        # one definition: the agent repeated one call (max_turns is a cap, counted under terminations)
        "loop": best_run >= LOOP_REPEATS or reason == "agent_loop",
        "termination": reason,
        "usage": roles,
        "total_tokens": _sum([r["total_tokens"] for r in trial_roles]),
        "cached_tokens": _sum([r["cached_tokens"] for r in trial_roles]),
        "cost_usd": _sum([r["cost_usd"] for r in trial_roles]),
        "model_call_latency_s": {
            "count": len(latencies),
            "total": round(sum(latencies), 6),
            "p50": statistics.median(latencies) if latencies else None,
            "max": max(latencies, default=None),
            "per_call": latencies,
        },
        "duration_s": t.duration_s,
        "time_to_first_action_s": round(sum(before_first), 6) if first is not None else None,
        "first_action_turn": getattr(t.events[first], "turn", None) if first is not None else None,
        "first_action_event": first,
        "retries": sum(e.usage.retries for e in model_calls),
        "retry_wait_s": round(sum(e.usage.retry_wait_s for e in model_calls), 6),
    }


def _fault_counts(calls: list[Any], faulted: set[str]) -> dict[str, int]:
    """Injected faults (``faults:``), the agent's later calls of each faulted tool, and how many
    faults it got past: a later call of the same tool that succeeded and was not itself faulted."""
    attempts = recovered = 0
    hit = [c for c in calls if c.call.call_id in faulted]
    for f in hit:
        later = [c for c in calls if c.index > f.index and c.call.name == f.call.name]
        attempts += len(later)
        recovered += any(c.ok and c.call.call_id not in faulted for c in later)
    return {"injected": len(hit), "attempts_after": attempts, "recovered": recovered}


def _termination(t: Transcript) -> Check:
    term = t.termination
    reason = term.reason.value
    text = reason + (f": {term.detail}" if term.detail else "")
    if reason in FAILING_TERMINATIONS:
        where = check_at(t, len(t.events) - 1) if t.events else {"turn": term.turn}
        return Check(
            name="termination",
            kind="efficiency",
            status="fail",
            reason=f"the trial hit a cap: {text}",
            details={"reason": reason, "detail": term.detail},
            **where,
        )
    if reason == "error":
        return Check(
            name="termination",
            kind="efficiency",
            status="not_run",
            reason=f"infrastructure error, reported by the verdict: {text}",
            details={"reason": reason},
        )
    return Check(
        name="termination",
        kind="efficiency",
        status="pass",
        reason=f"ended normally: {text}",
        details={"reason": reason},
    )


def _nth(t: Transcript, kind: type, n: int) -> int | None:
    """Index of the n-th (1-based) event of ``kind``."""
    seen = 0
    for i, e in enumerate(t.events):
        if isinstance(e, kind):
            seen += 1
            if seen == n:
                return i
    return None


def _crossing(t: Transcript, attr: str, limit: float) -> int | None:
    """Index of the trial model call (agent or simulator) whose running total first passes ``limit``."""
    total = 0.0
    for i, e in enumerate(t.events):
        if isinstance(e, ModelCall) and e.role != "judge":
            if attr == "tokens":
                total += (e.usage.input_tokens or 0) + (e.usage.output_tokens or 0)
            else:
                total += e.usage.cost_usd or 0.0
            if total > limit:
                return i
    return None


def _over_at(t: Transcript, field: str, limit: float) -> int | None:
    """Index of the event that first went over a budget (None for wall time: no timestamps)."""
    kinds: dict[str, type] = {
        "max_user_turns": UserMessage,
        "max_agent_turns": AgentMessage,
        "max_tool_calls": ToolCall,
    }
    if field in kinds:
        return _nth(t, kinds[field], int(limit) + 1)
    if field == "max_tokens":
        return _crossing(t, "tokens", limit)
    if field == "max_cost_usd":
        return _crossing(t, "cost", limit)
    return None


_BUDGETS = (
    ("max_user_turns", "user_turns", "user turns"),
    ("max_agent_turns", "agent_turns", "agent turns"),
    ("max_tool_calls", "tool_calls", "tool calls"),
    ("max_tokens", "total_tokens", "tokens"),
    ("max_cost_usd", "cost_usd", "USD"),
    ("max_seconds", "duration_s", "seconds"),
)


def _why_unknown(t: Transcript, counts: dict[str, Any], key: str) -> str:
    field = "cost_usd" if key == "cost_usd" else "total_tokens"
    whys = []
    for role, pin in (("agent", t.agent), ("simulator", t.simulator)):
        usage = counts["usage"][role]
        if usage[field] is None:
            whys.append(
                f"the {pin.kind} {role} recorded no model calls"
                if usage["model_calls"] == 0
                else f"a {role} model call did not report it"
            )
    return "; ".join(whys)


def _budgets(ctx: GradeContext, counts: dict[str, Any]) -> list[Check]:
    """One hard check per budget given; an unknown amount is ``not_run``, never a pass."""
    budgets = ctx.scenario.expect.budgets
    if budgets is None:
        return []
    t = ctx.transcript
    checks = []
    for field, key, what in _BUDGETS:
        limit = getattr(budgets, field)
        if limit is None:
            continue
        actual = counts[key]
        name, details = f"budget:{field}", {"limit": limit, "actual": actual}
        if actual is None:
            unknown = "cost unknown" if field == "max_cost_usd" else "tokens unknown"
            checks.append(
                Check(
                    name=name,
                    kind="budget",
                    status="not_run",
                    details=details,
                    reason=f"{unknown} ({_why_unknown(t, counts, key)}), so the budget of "
                    f"{_show(limit)} {what} cannot be checked",
                )
            )
        elif actual <= limit:
            checks.append(
                Check(
                    name=name,
                    kind="budget",
                    status="pass",
                    details=details,
                    reason=f"{_show(actual)} {what} within the budget of {_show(limit)}",
                )
            )
        else:
            index = _over_at(t, field, float(limit))
            checks.append(
                Check(
                    name=name,
                    kind="budget",
                    status="fail",
                    details=details,
                    reason=f"{_show(actual)} {what} over the budget of {_show(limit)}",
                    **(check_at(t, index) if index is not None else {}),
                )
            )
    return checks


def _show(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def live_part(t: Transcript) -> Transcript:
    """The transcript without its history (a scenario's ``history:``, given, not played)."""
    if not t.history_events:
        return t
    return t.model_copy(update={"events": t.events[t.history_events :], "history_events": 0})


def _shift(checks: list[Check], by: int) -> list[Check]:
    """Checks computed on the live part point into the whole transcript."""
    if not by:
        return checks
    return [c.model_copy(update={"event": c.event + by}) if c.event is not None else c for c in checks]


def grade_efficiency(ctx: GradeContext) -> list[Check]:
    """The soft ``efficiency`` check (counts in details), the hard ``termination`` check, budgets.
    A scenario's history is left out unless ``expect.budgets.count_history`` asks for it."""
    budgets = ctx.scenario.expect.budgets
    whole = ctx.transcript
    if whole.history_events and not (budgets and budgets.count_history):
        live = live_part(whole)
        checks = grade_efficiency(replace(ctx, transcript=live))
        for check in checks:
            if check.name == "efficiency" and check.details.get("first_action_event") is not None:
                check.details["first_action_event"] += whole.history_events
            if check.name == "efficiency":
                check.details["history_events_left_out"] = whole.history_events
        return _shift(checks, whole.history_events)
    counts = efficiency_counts(ctx.transcript)
    summary = Check(
        name="efficiency",
        kind="efficiency",
        status="pass",
        hard=False,
        details=counts,
        reason=(
            f"{counts['user_turns']} user turns, {counts['tool_calls']} tool calls "
            f"({counts['invalid_calls']} invalid, {counts['tool_errors']} errors, "
            f"{counts['redundant_calls']} redundant), cost "
            + ("unknown" if counts["cost_usd"] is None else f"${counts['cost_usd']:.4f}")
            + (
                f", {counts['faults']['injected']} injected faults ({counts['faults']['recovered']} "
                "recovered)"
                if counts["faults"]["injected"]
                else ""
            )
        ),
    )
    return [summary, _termination(ctx.transcript), *_tool_crashes(ctx.transcript), *_budgets(ctx, counts)]


def _tool_crashes(t: Transcript) -> list[Check]:
    """One ``tool_crash:TOOL`` check per domain tool that misbehaved, at its first crash."""
    out: dict[str, Check] = {}
    for index, tool, event in tool_crashes(t):
        if tool not in out:
            out[tool] = Check(
                name=f"tool_crash:{tool}",
                kind="efficiency",
                status="error",
                reason=f"the domain's tool {tool} failed: {event.message} (the tool's bug, not the "
                "agent's or the user's)",
                details={"tool": tool, "fault": event.kind, "message": event.message},
                **check_at(t, index),
            )
    return list(out.values())


@grader("efficiency", kind="efficiency")
def efficiency_grader() -> Callable[[GradeContext], list[Check]]:
    """Counts, how the trial ended, ``expect.budgets``."""
    return grade_efficiency
