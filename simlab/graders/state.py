"""Outcome checks on the final environment state: the strongest evidence a trial has.

Three ways a scenario says what the end state must be, all hard checks of kind ``state``:
- ``expect.state`` assertions (equals, not_equals, contains, exists, absent, gt/ge/lt/le), with a
  soft ``partial_credit`` score = fraction of them met;
- ``expect.expected_actions``: reference WRITE actions replayed on a fresh initial state; the agent's
  final state must equal the result, except ``expect.ignore_paths`` (``*`` / ``[*]`` match any key
  or index at one level); a mismatch lists a structural diff;
- ``expect.predicate``: ``module:function(state, transcript) -> bool | (bool, reason)``.

Semantics: numbers compare with the assertion's tolerance and ``"49.90"`` equals 49.9; a path that
does not resolve (or resolves to null) does not ``exist``; every comparison other than ``absent`` /
``exists: false`` fails on a missing path. No final state (a crashed trial) is an error, never a pass.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simlab.env.domain import Domain, Environment
from simlab.env.history import HistoryError, start_state
from simlab.graders.base import Check, GradeContext, scenario_memo
from simlab.graders.comparators import ComparatorError, as_number, load_callable, same_value
from simlab.graders.paths import MISSING, PathError, parse_path, resolve
from simlab.graders.registry import grader
from simlab.graders.served import unless_tools_unseen
from simlab.specs.expect import COMPARISONS, CallSpec, Expect, StateAssertion
from simlab.specs.scenario import Scenario

__all__ = ["Replay", "assertion_label", "check_assertion", "grade_state", "replay_actions", "state_diff"]

SHOWN_DIFFS = 3


def _show(value: Any) -> str:
    if value is MISSING:
        return "missing"
    text = repr(value) if not isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def assertion_label(a: StateAssertion) -> str:
    """``name`` or e.g. ``refunds[order_id=A123].method equals 'original_card'``."""
    if a.name:
        return a.name
    parts = []
    for comp in _given(a):
        value = getattr(a, comp)
        if comp in ("exists", "absent"):
            parts.append(comp if value else f"{comp}: false")
        else:
            parts.append(f"{comp} {_show(value)}")
    tolerance = f" (±{a.tolerance:g})" if "tolerance" in a.model_fields_set else ""
    return f"{a.path} " + " and ".join(parts) + tolerance


def _given(a: StateAssertion) -> list[str]:
    return [c for c in COMPARISONS if c in a.model_fields_set]


def _where_missing(state: Any, path: str) -> str:
    """Which prefix of ``path`` still resolves, so a reviewer sees where the path broke."""
    steps, text, found = parse_path(path), "", ""
    for step in steps:
        piece = (
            f"[{step[0]}={step[1]}]"
            if isinstance(step, tuple)
            else f"[{step}]"
            if isinstance(step, int)
            else (f".{step}" if text else step)
        )
        text += piece
        if resolve(state, text) is MISSING:
            return f"{path} is missing: {text!r} not found" + (f" ({found!r} exists)" if found else "")
        found = text
    return f"{path} is null"


def _one(comp: str, expected: Any, actual: Any, tol: float) -> tuple[bool, str]:
    """One comparison on a resolved value (never MISSING)."""
    if comp == "equals":
        return same_value(expected, actual, tol), f"expected {_show(expected)}, got {_show(actual)}"
    if comp == "not_equals":
        return not same_value(
            expected, actual, tol
        ), f"expected anything but {_show(expected)}, got {_show(actual)}"
    if comp == "contains":
        if isinstance(actual, str):
            ok = isinstance(expected, str) and expected in actual
        elif isinstance(actual, list):
            ok = any(same_value(expected, item, tol) for item in actual)
        elif isinstance(actual, dict):
            ok = str(expected) in actual
        else:
            return (
                False,
                f"cannot look for {_show(expected)} in {_show(actual)} (not a string, list or mapping)",
            )
        return ok, f"expected {_show(actual)} to contain {_show(expected)}"
    number = as_number(actual)
    if number is None:
        return False, f"expected a number {comp} {expected:g}, got {_show(actual)}"
    diff = number - float(expected)
    ok = {"gt": diff > tol, "ge": diff >= -tol, "lt": diff < -tol, "le": diff <= tol}[comp]
    return ok, f"expected {comp} {float(expected):g} (tolerance {tol:g}), got {number:g}"


def check_assertion(a: StateAssertion, state: dict[str, Any]) -> tuple[bool, str, Any]:
    """(met, reason, actual value or MISSING) for one assertion on a state snapshot."""
    actual = resolve(state, a.path)
    present = actual is not MISSING and actual is not None
    for comp in _given(a):
        wanted = getattr(a, comp)
        if comp in ("exists", "absent"):
            should_exist = wanted if comp == "exists" else not wanted
            if present != should_exist:
                why = (
                    f"expected {a.path} to be absent, got {_show(actual)}"
                    if present
                    else _where_missing(state, a.path)
                )
                return False, why, actual
            continue
        if actual is MISSING:
            return False, _where_missing(state, a.path), actual
        ok, why = _one(comp, wanted, actual, a.tolerance)
        if not ok:
            return False, f"{a.path}: {why}", actual
    return True, f"{a.path} = {_show(actual)}", actual


# --- expected-state mode -------------------------------------------------------------------------


def _ignore_steps(pattern: str) -> list[Any]:
    text = pattern.replace("[*]", ".*").lstrip(".")
    return parse_path(text)


def _step_matches(step: Any, key: Any, nodes: tuple[Any, Any]) -> bool:
    if step == "*":
        return True
    if isinstance(step, tuple):
        field, wanted = step
        return any(
            isinstance(n, dict) and n.get(field, MISSING) is not MISSING and _text(n[field]) == wanted
            for n in nodes
        )
    if isinstance(step, int):
        return isinstance(key, int) and (key == step)
    return isinstance(key, str) and key == step


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _ignored(trail: list[tuple[Any, tuple[Any, Any]]], patterns: list[list[Any]]) -> bool:
    """A pattern ignores a node when it matches the node's path or a prefix of it (a whole subtree)."""
    for steps in patterns:
        if len(steps) <= len(trail) and all(_step_matches(s, k, n) for s, (k, n) in zip(steps, trail)):
            return True
    return False


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _identical(a: Any, b: Any) -> bool:
    """Equal containers whose JSON text is the same, so that every leaf pair is ``same_value``;
    decided in C. Text differs wherever the walk might see a difference that ``==`` hides
    (``True`` vs ``1``, key order); NaN, unequal to itself, is left to the walk."""
    if not isinstance(a, (dict, list)) or type(a) is not type(b) or a != b:
        return False
    try:
        text = json.dumps(a)
        return text == json.dumps(b) and "NaN" not in text
    except (TypeError, ValueError):
        return False


def state_diff(expected: Any, actual: Any, ignore: list[str] | None = None) -> list[dict[str, Any]]:
    """Structural differences: ``{path, change, expected?, actual?}``; change is changed | missing
    (expected only) | unexpected (actual only) | length. Raises ``PathError`` on a bad ignore path."""
    patterns = [_ignore_steps(p) for p in ignore or []]
    out: list[dict[str, Any]] = []

    def walk(exp: Any, act: Any, path: str, trail: list[tuple[Any, tuple[Any, Any]]]) -> None:
        if _identical(exp, act):  # nothing under here can differ, ignored or not
            return
        if trail and _ignored(trail, patterns):
            return
        if isinstance(exp, dict) and isinstance(act, dict):
            for key in list(exp) + [k for k in act if k not in exp]:
                walk(
                    exp.get(key, MISSING),
                    act.get(key, MISSING),
                    _join(path, key),
                    trail + [(key, (exp.get(key), act.get(key)))],
                )
            return
        if isinstance(exp, list) and isinstance(act, list):
            if len(exp) != len(act):
                out.append({"path": path, "change": "length", "expected": len(exp), "actual": len(act)})
            for i in range(max(len(exp), len(act))):
                e = exp[i] if i < len(exp) else MISSING
                a = act[i] if i < len(act) else MISSING
                walk(
                    e,
                    a,
                    _join(path, i),
                    trail + [(i, (None if e is MISSING else e, None if a is MISSING else a))],
                )
            return
        if exp is MISSING:
            out.append({"path": path, "change": "unexpected", "actual": act})
        elif act is MISSING:
            out.append({"path": path, "change": "missing", "expected": exp})
        elif not same_value(exp, act):
            out.append({"path": path, "change": "changed", "expected": exp, "actual": act})

    walk(expected, actual, "", [])
    walk = None  # type: ignore[assignment]  # a recursive closure is a reference cycle: break it
    return out


def _diff_line(d: dict[str, Any]) -> str:
    where = d["path"] or "(root)"
    if d["change"] == "missing":
        return f"{where}: {_show(d['expected'])} → missing"
    if d["change"] == "unexpected":
        return f"{where}: missing → {_show(d['actual'])} (unexpected)"
    if d["change"] == "length":
        return f"{where}: {d['expected']} items → {d['actual']} items"
    return f"{where}: {_show(d['expected'])} → {_show(d['actual'])}"


def _replayed(ctx: GradeContext, expect: Expect) -> tuple[str | None, Any]:
    """(error reason, expected snapshot) of replaying the reference actions on a fresh initial state.

    The same for every trial of a scenario, so it is kept in the scenario's memo: a replay
    deep-copies the whole state several times and cost more than the rest of the grading together.
    """
    return scenario_memo(ctx, "expected_state_replay", lambda c: _replay(c, expect))


def _replay(ctx: GradeContext, expect: Expect) -> tuple[str | None, Any]:
    replay = replay_actions(ctx.domain, ctx.scenario, expect.expected_actions)
    if replay.failed is None:
        return None, replay.state
    if replay.failed < 0:
        return f"scenario bug: {replay.error}", None
    action = expect.expected_actions[replay.failed]
    return (
        f"scenario bug: reference action {replay.failed + 1} {action.tool} failed on replay: {replay.error}"
    ), None


@dataclass
class Replay:
    """The oracle run of reference actions: the state they reach, each one's result, or which
    failed (``failed``: its index; -1: the start state itself could not be built) and why."""

    state: dict[str, Any] | None = None
    results: list[Any] = field(default_factory=list)
    failed: int | None = None
    error: str = ""


def replay_actions(domain: Domain, scenario: Scenario, actions: list[CallSpec]) -> Replay:
    """``actions`` run in order on a fresh start state of ``scenario`` (its history's writes held),
    no model involved: the expected-state check and ``simlab lint`` (``graders/lint.py``) both."""
    try:
        env = Environment(domain, start_state(domain, scenario))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return Replay(failed=-1, error=f"initial state is invalid: {exc}")
    except HistoryError as exc:
        return Replay(failed=-1, error=str(exc))
    results: list[Any] = []
    for i, action in enumerate(actions):
        outcome = env.execute(action.tool, action.args)
        if not outcome.ok:
            return Replay(results=results, failed=i, error=str(outcome.error))
        results.append(outcome.result)
    return Replay(state=env.snapshot(), results=results)


def _expected_state(ctx: GradeContext, expect: Expect, final: dict[str, Any]) -> Check:
    name = "expected_state"
    error, expected = _replayed(ctx, expect)
    if error is not None:
        return Check(name=name, kind="state", status="error", reason=error)
    try:
        diff = copy.deepcopy(state_diff(expected, final, expect.ignore_paths))  # no link into the cache
    except PathError as exc:
        return Check(name=name, kind="state", status="error", reason=f"bad ignore_paths entry: {exc}")
    if not diff:
        return Check(
            name=name,
            kind="state",
            status="pass",
            reason=f"final state equals the state after {len(expect.expected_actions)} reference actions",
        )
    lines = [_diff_line(d) for d in diff]
    more = f"; +{len(lines) - SHOWN_DIFFS} more" if len(lines) > SHOWN_DIFFS else ""
    return Check(
        name=name,
        kind="state",
        status="fail",
        reason=f"{len(diff)} difference(s) from the expected state (expected → actual): "
        + "; ".join(lines[:SHOWN_DIFFS])
        + more,
        details={"diff": lines, "diff_entries": diff},
    )


def _predicate(ref: str, final: dict[str, Any], ctx: GradeContext) -> Check:
    name = f"predicate:{ref}"
    try:
        func = load_callable(ref)
        result = func(copy.deepcopy(final), ctx.transcript)
    except ComparatorError as exc:
        return Check(name=name, kind="state", status="error", reason=f"predicate: {exc}")
    except Exception as exc:  # user code
        return Check(
            name=name, kind="state", status="error", reason=f"predicate raised {type(exc).__name__}: {exc}"
        )
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        ok, reason = result[0], str(result[1])
    elif isinstance(result, bool):
        ok, reason = result, "predicate holds" if result else "predicate does not hold"
    else:
        return Check(
            name=name,
            kind="state",
            status="error",
            reason=f"predicate returned {type(result).__name__}; return a bool or (bool, reason)",
        )
    return Check(name=name, kind="state", status="pass" if ok else "fail", reason=reason)


def grade_state(ctx: GradeContext) -> list[Check]:
    """State assertions, partial credit, expected-state replay and the predicate hook."""
    expect = ctx.scenario.expect
    if not (expect.state or expect.expected_actions or expect.predicate):
        return []
    final = ctx.transcript.final_state
    if final is None:
        names = (
            [assertion_label(a) for a in expect.state]
            + (["expected_state"] if expect.expected_actions else [])
            + ([f"predicate:{expect.predicate}"] if expect.predicate else [])
        )
        return [
            Check(name=n, kind="state", status="error", reason="the transcript has no final state to check")
            for n in names
        ]
    checks: list[Check] = []
    met: list[str] = []
    unmet: list[str] = []
    for a in expect.state:
        label = assertion_label(a)
        try:
            ok, reason, actual = check_assertion(a, final)
        except PathError as exc:
            unmet.append(label)
            checks.append(Check(name=label, kind="state", status="error", reason=f"bad path: {exc}"))
            continue
        (met if ok else unmet).append(label)
        checks.append(
            Check(
                name=label,
                kind="state",
                status="pass" if ok else "fail",
                reason=reason,
                details={
                    "path": a.path,
                    "actual": None if actual is MISSING else actual,
                    "missing": actual is MISSING,
                },
            )
        )
    if expect.state:
        score = len(met) / len(expect.state)
        checks.append(
            Check(
                name="partial_credit",
                kind="state",
                status="pass" if not unmet else "fail",
                hard=False,
                score=score,
                reason=f"{len(met)} of {len(expect.state)} sub-goals met",
                details={"met": met, "unmet": unmet},
            )
        )
    if expect.expected_actions:
        checks.append(_expected_state(ctx, expect, final))
    if expect.predicate:
        checks.append(_predicate(expect.predicate, final, ctx))
    # an agent service that used none of the served tools, or an agent that ran tools of its own: not run
    return unless_tools_unseen(ctx, checks, state=True)


@grader("state", kind="state")
def state_grader() -> Callable[[GradeContext], list[Check]]:
    """End state: ``expect.state`` assertions, partial credit, ``expected_actions`` replayed, the
    predicate."""
    return grade_state
