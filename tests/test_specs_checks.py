"""Scenarios against their domain: the module imports, the state fits, every tool named exists."""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = str(Path(__file__).parent / "fixtures" / "specs")
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

import pytest  # noqa: E402
from spec_helpers import PROJECT, SCENARIO, problems, write  # noqa: E402

from simlab.env.checks import check_scenarios  # noqa: E402
from simlab.specs import load_personas, load_scenarios, scenario_files  # noqa: E402

INLINE = SCENARIO.replace("persona: polite", "persona: {id: me, description: Me.}")
TOOLS = "(tools: lookup_order, check_refund_policy, issue_refund, issue_store_credit)"


def check(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, "s.yaml", text)
    found = problems(check_scenarios, load_scenarios([path], {}))
    return [p.replace(f"{path}:", "s.yaml:") for p in found]


def test_the_fixture_project_passes() -> None:
    loaded = load_scenarios(scenario_files(["scenarios"], base=PROJECT), load_personas(PROJECT / "personas"))
    domains = check_scenarios(loaded)
    assert sorted(domains) == ["inline-persona", "refund-damaged-impatient"]
    assert {d.name for d in domains.values()} == {"mini"}


@pytest.mark.parametrize("ref", ["minidomain", "minidomain:DOMAIN", "minidomain:make_domain"])
def test_domain_references(tmp_path: Path, ref: str) -> None:
    path = write(tmp_path, "s.yaml", INLINE.replace("domain: minidomain", f"domain: {ref}"))
    assert check_scenarios(load_scenarios([path], {}))["s1"].name == "mini"


def test_unknown_domain_module(tmp_path: Path) -> None:
    found = check(tmp_path, INLINE.replace("domain: minidomain", "domain: mycompany.evals.nope"))
    assert found == [
        "s.yaml:3: domain: cannot import 'mycompany.evals.nope' (No module named 'mycompany'). Use a built-in "
        "domain (retail) or an importable module that defines DOMAIN."
    ]


def test_module_without_a_domain(tmp_path: Path) -> None:
    found = check(tmp_path, INLINE.replace("domain: minidomain", "domain: minidomain:NOT_A_DOMAIN"))
    assert found == ["s.yaml:3: domain: 'minidomain:NOT_A_DOMAIN' does not define a simlab Domain as NOT_A_DOMAIN"]


def test_domain_factory_that_fails(tmp_path: Path) -> None:
    found = check(tmp_path, INLINE.replace("domain: minidomain", "domain: minidomain:broken"))
    assert found == [
        "s.yaml:3: domain: cannot load domain 'minidomain:broken': RuntimeError: the domain factory fell over"
    ]


def test_domain_module_that_crashes_on_import(tmp_path: Path) -> None:
    found = check(tmp_path, INLINE.replace("domain: minidomain", "domain: broken_import"))
    assert found == [
        "s.yaml:3: domain: cannot load domain 'broken_import': ZeroDivisionError: module-level code failed"
    ]


def test_every_scenario_is_checked(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", INLINE.replace("domain: minidomain", "domain: nope_a"))
    b = write(tmp_path, "b.yaml", INLINE.replace("s1", "s2") + "expect: {forbidden: [nope]}\n")
    found = problems(check_scenarios, load_scenarios([a, b], {}))
    assert len(found) == 2
    assert found[0].startswith(f"{a}:3: domain: cannot import 'nope_a'")
    assert found[1].startswith(f"{b}:7: expect.forbidden.0: unknown tool 'nope'")


# --- initial_state ------------------------------------------------------------------------------


def test_initial_state_that_does_not_fit_the_state_model(tmp_path: Path) -> None:
    text = INLINE + "initial_state:\n  orders:\n    A123: {total: lots}\n    B9: {total: 3}\n  store_credit: []\n"
    assert check(tmp_path, text) == [
        "s.yaml:9: initial_state.orders.A123.total: Input should be a valid number, unable to parse string as a "
        "number (got 'lots')",
        "s.yaml:10: initial_state.orders.B9.customer: required field is missing",
        "s.yaml:11: initial_state.store_credit: Input should be a valid dictionary (got a list)",
    ]


def test_initial_state_keys_the_model_would_drop_silently(tmp_path: Path) -> None:
    text = INLINE + "initial_state:\n  ordrs: {}\n  refunds:\n    - {order_id: A123, amount: 1, method: card, note: x}\n"
    assert check(tmp_path, text) == [
        "s.yaml:8: initial_state.ordrs: not in the state of domain 'mini'; did you mean 'orders'? "
        "(allowed here: orders, refunds, store_credit)",
        "s.yaml:10: initial_state.refunds.0.note: not in the state of domain 'mini' "
        "(allowed here: order_id, amount, method)",
    ]


def test_initial_state_unknown_key_in_a_strict_model_is_reported_once(tmp_path: Path) -> None:
    text = INLINE.replace("domain: minidomain", "domain: minidomain:STRICT") + "initial_state:\n  ordrs: {}\n"
    assert check(tmp_path, text) == [
        "s.yaml:8: initial_state.ordrs: unknown field; did you mean 'orders'? allowed here: orders, refunds, store_credit"
    ]


def test_initial_state_overrides_merge_with_the_seed(tmp_path: Path) -> None:
    text = INLINE + "initial_state:\n  orders:\n    A123: {damaged: true}\n"
    path = write(tmp_path, "s.yaml", text)
    domain = check_scenarios(load_scenarios([path], {}))["s1"]
    state = domain.build_state({"orders": {"A123": {"damaged": True}}})
    assert state.orders["A123"].customer == "C-17"  # type: ignore[attr-defined]


def test_state_paths_must_start_at_a_state_field(tmp_path: Path) -> None:
    text = INLINE + ("expect:\n  state:\n    - {path: 'refundz[order_id=A123].method', equals: x}\n"
                     "    - {path: 'refunds[0].method', equals: x}\n  ignore_paths: [orders.A123.status, ordrs]\n")
    assert check(tmp_path, text) == [
        "s.yaml:9: expect.state.0.path: 'refundz' is not in the state of domain 'mini'; did you mean 'refunds'? "
        "(fields: orders, refunds, store_credit)",
        "s.yaml:11: expect.ignore_paths.1: 'ordrs' is not in the state of domain 'mini'; did you mean 'orders'? "
        "(fields: orders, refunds, store_credit)",
    ]


# --- tool names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "line", "field", "name"),
    [
        ("trajectory: {calls: [lookup_order, lookup_ordr]}", 8, "expect.trajectory.calls.1", "lookup_ordr"),
        ("trajectory:\n    calls:\n      - {tool: check_policy}", 10, "expect.trajectory.calls.0.tool", "check_policy"),
        ("forbidden: [store_credit]", 8, "expect.forbidden.0", "store_credit"),
        ("forbidden:\n    - tool: wire_money\n      args: {}", 9, "expect.forbidden.0.tool", "wire_money"),
        ("expected_actions:\n    - {tool: refund_it}", 9, "expect.expected_actions.0.tool", "refund_it"),
        ("rules:\n    - before:\n        - lookup_order\n        - refund", 11, "expect.rules.0.before.1", "refund"),
        ("rules:\n    - max_calls:\n        refund: 1", 10, "expect.rules.0.max_calls.refund", "refund"),
        ("rules:\n    - {limit: 'refund.amount <= 100'}", 9, "expect.rules.0.limit", "refund"),
        ("rules:\n    - limit: issue_refund.amount < 5\n      unless: approval", 10, "expect.rules.0.unless",
         "approval"),
        ("rules:\n    - {after_confirmation: refund}", 9, "expect.rules.0.after_confirmation", "refund"),
        ("rules:\n    - forbid_args: {tool: wire_money, args: {to: x}}", 9, "expect.rules.0.forbid_args.tool",
         "wire_money"),
        ("rules:\n    - owner:\n        refund.order_id: orders.customer\n        principal: customer", 10,
         "expect.rules.0.owner.refund.order_id", "refund"),
    ],
)
def test_unknown_tool_names_file_line_and_field(tmp_path: Path, expect: str, line: int, field: str, name: str) -> None:
    [msg] = check(tmp_path, INLINE + f"expect:\n  {expect}\n")
    assert msg.startswith(f"s.yaml:{line}: {field}: unknown tool {name!r} in domain 'mini'")
    assert msg.endswith(TOOLS)


def test_unknown_tool_suggests_the_closest(tmp_path: Path) -> None:
    [msg] = check(tmp_path, INLINE + "expect: {forbidden: [issue_store_credt]}\n")
    assert msg == (f"s.yaml:7: expect.forbidden.0: unknown tool 'issue_store_credt' in domain 'mini'; "
                   f"did you mean 'issue_store_credit'? {TOOLS}")


def test_every_unknown_tool_is_reported(tmp_path: Path) -> None:
    text = INLINE + "expect:\n  trajectory: {calls: [a, b]}\n  forbidden: [c]\n  rules:\n    - {before: [d, e]}\n"
    assert len(check(tmp_path, text)) == 5


# --- arguments of reference calls ---------------------------------------------------------------


def test_unknown_argument_names(tmp_path: Path) -> None:
    text = INLINE + ("expect:\n  trajectory:\n    calls:\n      - {tool: issue_refund, args: {ammount: 3}}\n"
                     "  forbidden:\n    - {tool: issue_store_credit, args: {customer: C-17, credit: 5}}\n")
    assert check(tmp_path, text) == [
        "s.yaml:10: expect.trajectory.calls.0.args.ammount: tool 'issue_refund' has no argument 'ammount'; "
        "did you mean 'amount'? (arguments: order_id, amount, method)",
        "s.yaml:12: expect.forbidden.0.args.credit: tool 'issue_store_credit' has no argument 'credit' "
        "(arguments: customer, amount)",
    ]


def test_expected_actions_must_be_complete_calls(tmp_path: Path) -> None:
    text = INLINE + ("expect:\n  expected_actions:\n    - tool: issue_refund\n      args: {order_id: A123}\n"
                     "    - {tool: issue_refund, args: {order_id: A123, amount: lots}}\n")
    assert check(tmp_path, text) == [
        "s.yaml:10: expect.expected_actions.0.args.amount: required field is missing",
        "s.yaml:11: expect.expected_actions.1.args.amount: Input should be a valid number, unable to parse string "
        "as a number (got 'lots')",
    ]


def test_partial_args_are_fine_outside_expected_actions(tmp_path: Path) -> None:
    text = INLINE + "expect:\n  trajectory: {calls: [{tool: issue_refund, args: {order_id: A123}}]}\n"
    path = write(tmp_path, "s.yaml", text)
    assert check_scenarios(load_scenarios([path], {}))
