"""Outcome checks: state assertions, partial credit, expected-state replay with diffs, predicates."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from pydantic import BaseModel

from simlab.env import READ, WRITE, Domain, Environment, ToolError, tool
from simlab.graders.base import GradeContext, verdict_of
from simlab.graders.state import grade_state, state_diff
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.transcript import Pin, Termination, Transcript
from tests.support import KV, kv_agent, make_trial, scenario

# --- a small refunds domain whose WRITE generates ids and timestamps -----------------------------

_ids = itertools.count(1)


class Refund(BaseModel):
    id: str
    order_id: str
    amount: float
    method: str
    created_at: str


class ShopState(BaseModel):
    orders: dict[str, dict[str, Any]] = {}
    refunds: list[Refund] = []


@tool(READ)
def lookup_order(state: ShopState, order_id: str) -> dict[str, Any]:
    """Look up an order.

    Args:
        order_id: The order.
    """
    return state.orders[order_id]


@tool(WRITE)
def issue_refund(state: ShopState, order_id: str, amount: float, method: str) -> dict[str, Any]:
    """Refund an order.

    Args:
        order_id: The order.
        amount: How much.
        method: original_card or store_credit.
    """
    if order_id not in state.orders:
        raise ToolError(f"no order {order_id}")
    n = next(_ids)
    refund = Refund(id=f"R-{n}", order_id=order_id, amount=amount, method=method, created_at=f"2026-07-01T10:{n:02d}")
    state.refunds.append(refund)
    state.orders[order_id]["status"] = "refunded"
    return refund.model_dump()


SHOP = Domain(name="shop", state_model=ShopState, tools=[lookup_order, issue_refund], policy="Refund carefully.",
              seed_state={"orders": {"A123": {"customer": "C-17", "total": 49.90, "status": "delivered"}}})


def transcript(final_state: dict[str, Any] | None) -> Transcript:
    return Transcript(run_id="r", unit_id="s#1", scenario_id="s", persona_id="tester", domain="shop", trial=1,
                      seed=1, agent=Pin(kind="python", ref="t:a"), simulator=Pin(kind="scripted", ref="s"),
                      termination=Termination(reason="goal_reached"), final_state=final_state)


def agent_final_state(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """What an agent making these calls leaves behind (ids and timestamps differ from any replay)."""
    env = Environment(SHOP, SHOP.build_state())
    for name, args in calls:
        assert env.execute(name, args).ok
    return env.snapshot()


def grade(expect: dict[str, Any], final: dict[str, Any] | None, domain: Domain = SHOP) -> dict[str, Any]:
    checks = grade_state(GradeContext(transcript(final), scenario(domain="shop", expect=expect), domain))
    return {c.name: c for c in checks}


STATE = {
    "orders": {"A123": {"customer": "C-17", "total": 49.9, "status": "refunded", "note": "arrived broken",
                        "tags": ["damaged", "vip"], "approved_by": None}},
    "refunds": [{"order_id": "A123", "method": "original_card", "amount": "49.90"}],
}

# --- assertions: every comparison, pass and fail ------------------------------------------------

ASSERTIONS: list[tuple[dict[str, Any], bool]] = [
    ({"path": "refunds[order_id=A123].method", "equals": "original_card"}, True),
    ({"path": "refunds[order_id=A123].method", "equals": "store_credit"}, False),
    ({"path": "orders.A123.total", "equals": 49.90}, True),
    ({"path": "refunds[0].amount", "equals": 49.9}, True),  # "49.90" string vs 49.9 number
    ({"path": "orders.A123.total", "equals": 50}, False),
    ({"path": "orders.A123.total", "equals": 50, "tolerance": 0.5}, True),
    ({"path": "orders.A123.status", "not_equals": "delivered"}, True),
    ({"path": "orders.A123.status", "not_equals": "refunded"}, False),
    ({"path": "orders.A123.note", "contains": "broken"}, True),
    ({"path": "orders.A123.note", "contains": "Broken"}, False),
    ({"path": "orders.A123.tags", "contains": "vip"}, True),
    ({"path": "orders.A123.tags", "contains": "fragile"}, False),
    ({"path": "orders.A123", "contains": "customer"}, True),
    ({"path": "orders", "contains": "B999"}, False),
    ({"path": "refunds[order_id=A123]", "exists": True}, True),
    ({"path": "refunds[order_id=B999]", "exists": True}, False),
    ({"path": "refunds[order_id=B999]", "absent": True}, True),
    ({"path": "refunds[order_id=A123]", "absent": True}, False),
    ({"path": "orders.A123.approved_by", "exists": False}, True),  # null counts as not there
    ({"path": "orders.A123.total", "gt": 49.0}, True),
    ({"path": "orders.A123.total", "gt": 49.9}, False),
    ({"path": "orders.A123.total", "ge": 49.90}, True),
    ({"path": "orders.A123.total", "ge": 49.95, "tolerance": 0.1}, True),
    ({"path": "orders.A123.total", "lt": 49.9}, False),
    ({"path": "orders.A123.total", "lt": 50}, True),
    ({"path": "orders.A123.total", "le": 49.9}, True),
    ({"path": "orders.A123.total", "le": 49.8}, False),
    ({"path": "orders.A123.total", "ge": 40, "le": 60}, True),
    ({"path": "orders.A123.status", "gt": 1}, False),  # not a number
    ({"path": "refunds[1].method", "equals": "original_card"}, False),  # missing
]


@pytest.mark.parametrize(("assertion", "ok"), ASSERTIONS, ids=[f"{i}" for i in range(len(ASSERTIONS))])
def test_each_comparison(assertion: dict[str, Any], ok: bool) -> None:
    checks = grade({"state": [assertion]}, STATE)
    check = next(c for name, c in checks.items() if name != "partial_credit")
    assert check.kind == "state" and check.hard
    assert check.status == ("pass" if ok else "fail"), check.reason


def test_a_failure_shows_expected_and_actual() -> None:
    check = grade({"state": [{"path": "refunds[order_id=A123].method", "equals": "store_credit"}]}, STATE)
    c = check["refunds[order_id=A123].method equals 'store_credit'"]
    assert "'store_credit'" in c.reason and "'original_card'" in c.reason
    assert c.details["actual"] == "original_card"


def test_a_missing_path_says_where_it_broke() -> None:
    assertion = {"path": "refunds[order_id=B999].method", "equals": "original_card", "name": "refunded"}
    checks = grade({"state": [assertion]}, STATE)
    c = checks["refunded"]
    assert c.status == "fail" and "missing" in c.reason
    assert "'refunds[order_id=B999]' not found" in c.reason and "'refunds' exists" in c.reason
    assert c.details["missing"] is True


def test_partial_credit_is_the_fraction_of_sub_goals_met() -> None:
    checks = grade({"state": [
        {"path": "refunds[order_id=A123].method", "equals": "original_card", "name": "refund to card"},
        {"path": "orders.A123.status", "equals": "refunded", "name": "order refunded"},
        {"path": "orders.A123.tags", "contains": "apology-sent", "name": "apology"},
    ]}, STATE)
    credit = checks["partial_credit"]
    assert not credit.hard and credit.score == pytest.approx(2 / 3)
    assert credit.details == {"met": ["refund to card", "order refunded"], "unmet": ["apology"]}


def test_nothing_configured_gives_no_checks() -> None:
    assert grade({}, STATE) == {}


def test_no_final_state_is_an_error_never_a_pass() -> None:
    checks = grade({"state": [{"path": "orders", "exists": True}], "predicate": "tests.test_graders_state:always"},
                   None)
    assert {c.status for c in checks.values()} == {"error"}
    assert verdict_of(transcript(None), list(checks.values())) == "error"


# --- expected-state replay ----------------------------------------------------------------------

REFUND = {"tool": "issue_refund", "args": {"order_id": "A123", "amount": 49.9, "method": "original_card"}}


def test_replay_matches_when_generated_fields_are_ignored() -> None:
    final = agent_final_state(("lookup_order", {"order_id": "A123"}),
                              ("issue_refund", {"order_id": "A123", "amount": "49.90", "method": "original_card"}))
    strict = grade({"expected_actions": [REFUND]}, final)["expected_state"]
    assert strict.status == "fail"
    assert {line.split(":")[0] for line in strict.details["diff"]} == {"refunds[0].id", "refunds[0].created_at"}
    for ignore in (["refunds[*].id", "refunds.*.created_at"], ["refunds[order_id=A123].id", "refunds[0].created_at"],
                   ["refunds"]):
        check = grade({"expected_actions": [REFUND], "ignore_paths": ignore}, final)["expected_state"]
        assert check.status == "pass", (ignore, check.reason)


def test_replay_mismatch_gives_a_structural_diff() -> None:
    final = agent_final_state(("issue_refund", {"order_id": "A123", "amount": 50, "method": "store_credit"}),
                              ("issue_refund", {"order_id": "A123", "amount": 5, "method": "store_credit"}))
    check = grade({"expected_actions": [REFUND], "ignore_paths": ["refunds[*].id", "refunds[*].created_at"]},
                  final)["expected_state"]
    assert check.status == "fail" and check.hard and check.kind == "state"
    diff = check.details["diff"]
    assert "refunds: 1 items → 2 items" in diff
    assert "refunds[0].amount: 49.9 → 50.0" in diff
    assert "refunds[0].method: 'original_card' → 'store_credit'" in diff
    assert any(line.startswith("refunds[1]: missing → ") and "(unexpected)" in line for line in diff)
    assert check.reason.startswith("4 difference(s) from the expected state (expected → actual): refunds: 1 items")
    assert "+1 more" in check.reason


def test_a_failing_reference_action_is_a_scenario_error() -> None:
    bad = {"tool": "issue_refund", "args": {"order_id": "Z9", "amount": 1, "method": "original_card"}}
    check = grade({"expected_actions": [REFUND, bad]}, agent_final_state())["expected_state"]
    assert check.status == "error"
    assert "reference action 2 issue_refund failed" in check.reason and "no order Z9" in check.reason


def test_state_diff_reports_added_removed_and_changed() -> None:
    diff = state_diff({"a": {"x": 1, "gone": True}, "n": 49.9, "l": [1, 2]},
                      {"a": {"x": "1.0", "new": 3}, "n": 49.90, "l": [1]}, ignore=["a.*.ignored"])
    assert diff == [
        {"path": "a.gone", "change": "missing", "expected": True},
        {"path": "a.new", "change": "unexpected", "actual": 3},
        {"path": "l", "change": "length", "expected": 2, "actual": 1},
        {"path": "l[1]", "change": "missing", "expected": 2},
    ]
    assert state_diff({"a": {"k1": {"t": 1}, "k2": {"t": 2}}}, {"a": {"k1": {"t": 9}, "k2": {"t": 8}}},
                      ignore=["a.*.t"]) == []


def test_bad_ignore_path_is_an_error() -> None:
    check = grade({"expected_actions": [REFUND], "ignore_paths": ["refunds[a b c"]}, agent_final_state())
    assert check["expected_state"].status == "error"


def test_replay_against_a_real_trial_of_the_kv_domain() -> None:
    scn = scenario(expect={"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}],
                           "state": [{"path": "items.b", "equals": 2}]})
    t = asyncio.run(run_trial(make_trial(PythonAgent(kv_agent, "t:kv"), RulesSimulator(), scn=scn)))
    checks = {c.name: c for c in grade_state(GradeContext(t, scn, KV))}
    assert checks["expected_state"].status == "pass", checks["expected_state"].reason
    assert checks["items.b equals 2"].status == "pass"  # "2" in state vs 2 in YAML


# --- predicate hook -----------------------------------------------------------------------------

def always(state: dict[str, Any], transcript: Transcript) -> bool:
    return True


def refunded(state: dict[str, Any], transcript: Transcript) -> bool:
    return state["orders"]["A123"]["status"] == "refunded"


def explained(state: dict[str, Any], transcript: Transcript) -> tuple[bool, str]:
    return False, f"{len(state['refunds'])} refunds, wanted none"


def raising(state: dict[str, Any], transcript: Transcript) -> bool:
    raise KeyError("orders")


def wrong_type(state: dict[str, Any], transcript: Transcript) -> str:
    return "yes"


def mutating(state: dict[str, Any], transcript: Transcript) -> bool:
    state.clear()
    return True


@pytest.mark.parametrize(("ref", "status", "reason"), [
    ("tests.test_graders_state:refunded", "pass", "predicate holds"),
    ("tests.test_graders_state:explained", "fail", "1 refunds, wanted none"),
    ("tests.test_graders_state:raising", "error", "predicate raised KeyError"),
    ("tests.test_graders_state:wrong_type", "error", "returned str"),
    ("tests.test_graders_state:missing_fn", "error", "has no callable 'missing_fn'"),
    ("no_such_module_xyz:fn", "error", "cannot import 'no_such_module_xyz'"),
])
def test_predicate_hook(ref: str, status: str, reason: str) -> None:
    check = grade({"predicate": ref}, STATE)[f"predicate:{ref}"]
    assert check.status == status and reason in check.reason and check.hard


def test_predicate_cannot_change_the_stored_state() -> None:
    final = {"orders": {}}
    assert grade({"predicate": "tests.test_graders_state:mutating"}, final)
    assert final == {"orders": {}}


def test_labels_tell_apart_assertions_that_differ_only_in_tolerance() -> None:
    checks = grade({"state": [{"path": "orders.A123.total", "equals": 50},
                              {"path": "orders.A123.total", "equals": 50, "tolerance": 0.5}]}, STATE)
    assert checks["orders.A123.total equals 50"].status == "fail"
    assert checks["orders.A123.total equals 50 (±0.5)"].status == "pass"
    assert checks["partial_credit"].score == 0.5
