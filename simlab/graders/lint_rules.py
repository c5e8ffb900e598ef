"""Expectations of one scenario that contradict each other, for ``simlab lint`` (``lint.py``):
a tool the scenario requires that ``forbidden`` or a rule forbids (by name, by arguments, by a
call limit, an argument limit or an order), a budget or a cap below what the expected calls need,
``max_turns`` below the script's length."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from simlab.graders.comparators import as_number, same_value
from simlab.specs.base import COMPARISONS
from simlab.specs.expect import LIMIT, CallSpec

if TYPE_CHECKING:
    from simlab.graders.lint import Lint

REQUIRING = (
    "exact",
    "in_order",
    "any_order",
    "superset",
)  # trajectory modes in which every call is needed


def required_calls(lint: Lint) -> list[tuple[tuple[Any, ...], CallSpec]]:
    """The calls a passing trial makes: expected actions, a trajectory that needs all its calls,
    the first tool call; each with the field that asks for it."""
    expect = lint.scenario.expect
    calls: list[tuple[tuple[Any, ...], CallSpec]] = [
        (("expect", "expected_actions", i), a) for i, a in enumerate(expect.expected_actions)
    ]
    if expect.trajectory is not None and expect.trajectory.mode in REQUIRING:
        calls += [
            (
                ("expect", "trajectory", "calls", i),
                c if isinstance(c, CallSpec) else CallSpec(tool=c),
            )
            for i, c in enumerate(expect.trajectory.calls)
        ]
    if expect.first_tool_call is not None:
        calls.append((("expect", "first_tool_call"), expect.first_tool_call))
    return calls


def contradictions(lint: Lint) -> None:
    calls = required_calls(lint)
    _forbidden(lint, calls)
    _rules(lint, calls)
    _owners(lint, calls)
    _order(lint)
    _budgets(lint)


def _name(loc: tuple[Any, ...]) -> str:
    return ".".join(map(str, loc))


def _matches(forbidden: CallSpec, call: CallSpec) -> bool:
    """A call with every argument a forbidden entry names (an entry without arguments: any call)."""
    return forbidden.tool == call.tool and all(
        name in call.args and same_value(value, call.args[name]) for name, value in forbidden.args.items()
    )


def _forbidden(lint: Lint, calls: list[tuple[tuple[Any, ...], CallSpec]]) -> None:
    for i, item in enumerate(lint.scenario.expect.forbidden):
        entry = item if isinstance(item, CallSpec) else CallSpec(tool=item)
        for loc, call in calls:
            if _matches(entry, call):
                what = f"{entry.tool} with {entry.args}" if entry.args else entry.tool
                lint.error(
                    ("expect", "forbidden", i),
                    f"{what} is forbidden, but {_name(loc)} requires that call",
                    "drop the forbidden entry or the call that requires it",
                )
                break


def _rules(lint: Lint, calls: list[tuple[tuple[Any, ...], CallSpec]]) -> None:
    expect = lint.scenario.expect
    needed: Counter[str] = Counter(a.tool for a in expect.expected_actions)
    if expect.trajectory is not None and expect.trajectory.mode in ("exact", "in_order"):
        trajectory = Counter(c if isinstance(c, str) else c.tool for c in expect.trajectory.calls)
        for tool, count in trajectory.items():
            needed[tool] = max(needed[tool], count)
    for i, rule in enumerate(expect.rules):
        for tool, most in (rule.max_calls or {}).items():
            if needed[tool] > most:
                lint.error(
                    ("expect", "rules", i, "max_calls", tool),
                    f"at most {most} call(s) of {tool} are "
                    f"allowed, but the expected calls make {needed[tool]}",
                    "raise the limit or drop the extra expected calls",
                )
        if rule.forbid_args:
            entry = CallSpec(
                tool=str(rule.forbid_args.get("tool", "")),
                args=dict(rule.forbid_args.get("args") or {}),
            )
            for loc, call in calls:
                if _matches(entry, call):
                    lint.error(
                        ("expect", "rules", i, "forbid_args"),
                        f"the rule forbids {entry.tool} with "
                        f"{entry.args}, but {_name(loc)} requires that call",
                        "drop the rule or correct the call's arguments",
                    )
                    break
        if rule.limit:
            _limit(lint, i, rule.limit, rule.unless, calls)


def _limit(
    lint: Lint,
    i: int,
    limit: str,
    unless: str | None,
    calls: list[tuple[tuple[Any, ...], CallSpec]],
) -> None:
    match = LIMIT.match(limit)
    if match is None:
        return
    tool, arg, op, raw = match.groups()
    bound = as_number(raw.strip().strip("'\""))
    earlier: set[str] = set()
    for loc, call in calls:
        if loc[1] == "expected_actions" and call.tool == tool and arg in call.args:
            value = as_number(call.args[arg])
            held = (
                COMPARISONS[op](value, bound)
                if value is not None and bound is not None
                else COMPARISONS[op](str(call.args[arg]), raw.strip().strip("'\""))
            )
            if not held and not (unless and unless in earlier):
                lifted = f"; {unless} is not among the expected actions before it" if unless else ""
                lint.error(
                    ("expect", "rules", i, "limit"),
                    f"{limit!r} forbids {_name(loc)} ({arg} = {call.args[arg]!r}){lifted}",
                    f"add {unless} before it to the expected actions"
                    if unless
                    else "correct the limit or the expected action",
                )
                return
        earlier.add(call.tool)


def _owners(lint: Lint, calls: list[tuple[tuple[Any, ...], CallSpec]]) -> None:
    """An ``owner`` rule with a ``principal`` (an agent_context key) against the required calls'
    arguments, on the start state: a required call on someone else's resource, or a principal the
    agent_context lacks, can never pass the rule."""
    from simlab.env.history import HistoryError, start_state
    from simlab.graders.paths import MISSING, PathError
    from simlab.graders.policy import _owner_of  # the policy grader's own reading of an owner path

    scenario = lint.scenario
    rules = [(i, r.owner) for i, r in enumerate(scenario.expect.rules) if r.owner and "principal" in r.owner]
    if not rules:
        return
    try:
        initial = start_state(lint.domain, scenario).model_dump(mode="json")
    except (ValueError, HistoryError):
        return  # validate reports it
    for i, owner in rules:
        key = owner["principal"]
        if key not in scenario.agent_context:
            lint.error(
                ("expect", "rules", i, "owner", "principal"),
                f"agent_context has no {key!r}, so the rule cannot be judged",
                f"add {key} to agent_context, or name a key it has",
            )
            continue
        principal = scenario.agent_context[key]
        for checked, path in owner.items():
            tool, _, arg = checked.partition(".")
            for loc, call in calls:
                if checked == "principal" or call.tool != tool or arg not in call.args:
                    continue
                try:
                    found = _owner_of(initial, path, {**call.args, "value": call.args[arg]})
                except PathError:
                    break  # validate reports it
                if found is not MISSING and str(found) != str(principal):
                    lint.error(
                        ("expect", "rules", i, "owner", checked),
                        f"{_name(loc)} uses {arg}="
                        f"{call.args[arg]!r}, which belongs to {found}, not {key}={principal}",
                        "correct the call's argument, the agent_context or the rule",
                    )
                    break


def _order(lint: Lint) -> None:
    """``before: [A, B]`` against an order the scenario itself gives (expected actions, an ordered
    trajectory)."""
    expect = lint.scenario.expect
    orders: list[tuple[str, list[str]]] = [("expected_actions", [a.tool for a in expect.expected_actions])]
    if expect.trajectory is not None and expect.trajectory.mode in ("exact", "in_order"):
        orders.append(("trajectory", [c if isinstance(c, str) else c.tool for c in expect.trajectory.calls]))
    for i, rule in enumerate(expect.rules):
        if not rule.before:
            continue
        first, then = rule.before
        for where, names in orders:
            if then in names and first in names and names.index(first) > names.index(then):
                lint.error(
                    ("expect", "rules", i, "before"),
                    f"{first} must come before every {then}, but expect.{where} calls {then} first",
                    f"reorder expect.{where} or correct the rule",
                )
                break


def _budgets(lint: Lint) -> None:
    from simlab.sim.simulators.scripted import script_of

    scenario = lint.scenario
    expect = scenario.expect
    counts = {"expected_actions": len(expect.expected_actions)}
    if expect.trajectory is not None and expect.trajectory.mode in REQUIRING:
        counts["trajectory.calls"] = len(expect.trajectory.calls)
    field, least = max(counts.items(), key=lambda kv: kv[1])
    most = expect.budgets.max_tool_calls if expect.budgets else None
    if most is not None and least > most:
        lint.error(
            ("expect", "budgets", "max_tool_calls"),
            f"the budget allows {most} tool call(s), but expect.{field} needs {least}",
            f"raise max_tool_calls to at least {least}",
        )
    steps = scenario.max_turns * scenario.limits.max_agent_steps
    if least > steps:
        lint.error(
            ("max_turns",),
            f"max_turns {scenario.max_turns} × limits.max_agent_steps "
            f"{scenario.limits.max_agent_steps} allow {steps} tool-call rounds, but expect.{field} needs "
            f"{least} calls",
            "raise max_turns or limits.max_agent_steps",
        )
    if scenario.user.script:
        lines = len(script_of(scenario))
        if scenario.max_turns < lines:
            lint.error(
                ("max_turns",),
                f"the script has {lines} lines (one a turn), but max_turns is "
                f"{scenario.max_turns}: its last {lines - scenario.max_turns} never play",
                f"raise max_turns to {lines}, or shorten the script",
            )
    if lint.kind not in ("scripted", "replay") and scenario.user.script:
        lint.warn(
            ("user", "script"),
            f"a {lint.kind} user does not play user.script (only the scripted simulator does)",
            "play the scenario with the scripted simulator (a suite's simulator: "
            "scripted), or drop the script",
        )
