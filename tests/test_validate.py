"""``simlab validate`` in one pass: every problem of every file at once, state paths checked against
the domain's state model, the silent traps (a control signal in a YAML comment, an id a script
invents), suites wherever they live, globs that match nothing and gates that can never hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "personas", tmp_path / "personas")
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def validate(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, list[str], list[str]]:
    code = main(["validate", *paths])
    out, err = capsys.readouterr()
    return code, err.splitlines(), out.splitlines()


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


BROKEN = """id: broken
title: t
domain: retail
persona: impatient-terse
user:
  goall: get a refund
expect:
  forbidden: [issue_store_credt]
  state:
    - {path: orders.A123.totl, equals: 1}
"""
NOBODY = """id: nobody
title: t
domain: no_such_domain_module
persona: nobody-here
user: {goal: g}
"""


def test_every_problem_of_every_file_in_one_pass(project: Path, capsys) -> None:
    write(project, "scenarios/broken.yaml", BROKEN)
    write(project, "scenarios/nobody.yaml", NOBODY)
    code, err, _ = validate(capsys)
    assert code == 2
    assert err == [
        "scenarios/broken.yaml:5: user.goal: required field is missing",
        "scenarios/broken.yaml:6: user.goall: unknown field; did you mean 'goal'? allowed here: goal, known_facts, "
        "never_reveal, success_phrases, reject_phrases, give_up_phrases, opening, script",
        "scenarios/broken.yaml:8: expect.forbidden.0: unknown tool 'issue_store_credt' in domain 'retail'; did you "
        "mean 'issue_store_credit'? (tools: get_customer, find_customer_orders, lookup_order, check_refund_policy, "
        "search_help_center, request_manager_approval, issue_refund, issue_store_credit, send_email, transfer_to_human)",
        "scenarios/broken.yaml:10: expect.state.0.path: 'totl' is not in orders.A123 (Order) of domain 'retail'; did "
        "you mean 'total'? (fields: id, customer, items, total, status, delivered_on, damaged, final_sale, "
        "payment_method)",
        "scenarios/nobody.yaml:3: domain: cannot import 'no_such_domain_module' (No module named "
        "'no_such_domain_module'). Use a built-in domain (retail) or an importable module that defines DOMAIN.",
        "scenarios/nobody.yaml:4: persona: unknown persona 'nobody-here' (known: adversarial-pushy, confused-elderly, "
        "impatient-terse, non-native-speaker, polite-detailed)",
        "6 problems found",
    ]


SHOP = """id: shop
title: t
domain: tests.test_graders_policy:SHOP
persona: impatient-terse
user: {goal: g}
expect:
  state:
    - {path: "orders.A1.total", equals: 40}
    - {path: "orders.A1.totl", equals: 40}
    - {path: "refunds[0].meta.note", exists: true}
    - {path: "refunds.first", exists: true}
    - {path: "orders.A1[0]", exists: true}
  rules:
    - owner: {issue_refund.order_id: "orders.{value}.custmer", principal: signed_in_customer}
"""


def test_state_paths_are_checked_against_the_state_model(project: Path, capsys) -> None:
    write(project, "scenarios/shop.yaml", SHOP)
    code, err, out = validate(capsys)
    assert code == 2
    assert err[:4] == [
        "scenarios/shop.yaml:9: expect.state.1.path: 'totl' is not in orders.A1 (Order) of domain 'shop'; did you "
        "mean 'total'? (fields: customer, total)",
        "scenarios/shop.yaml:11: expect.state.3.path: refunds is a list: use [index] or [field=value], not .first",
        "scenarios/shop.yaml:12: expect.state.4.path: orders.A1 is Order, not a list: [0] cannot index it",
        "scenarios/shop.yaml:14: expect.rules.0.owner.issue_refund.order_id: 'custmer' is not in orders.* (Order) "
        "of domain 'shop'; did you mean 'customer'? (fields: customer, total)",
    ]
    assert out == ["note: scenarios/shop.yaml:10: expect.state.2.path: 'refunds[0].meta.note' goes into "
                   "refunds[0].meta, a free-form value (Any); accepted unchecked"]


SIGNAL_IN_COMMENT = """id: scripted
title: t
domain: retail
persona: impatient-terse
user:
  goal: Get order A123 refunded.
  known_facts: {order_id: A123}
  script:
    - refund A123 please, my customer number is C-99
    - "Great. ###STOP###"
    - Thanks. ###STOP###
    ###GIVE_UP###
"""


def test_the_silent_traps_are_warned_about(project: Path, capsys) -> None:
    write(project, "scenarios/scripted.yaml", SIGNAL_IN_COMMENT)
    code, err, out = validate(capsys)
    assert code == 0
    assert err == [
        "warning: scenarios/scripted.yaml:9: user.script.0: states 'C-99', which is not in the user's goal, "
        "known_facts or never_reveal; unless the agent says it first, the invented-identifier check will flag it "
        "(add it to known_facts)",
        "warning: scenarios/scripted.yaml:11: '###STOP###' is a YAML comment, so the control signal is lost; quote "
        "the whole line (- \"Thanks. ###STOP###\") to send it",
        "warning: scenarios/scripted.yaml:12: '###GIVE_UP###' is a YAML comment, so the control signal is lost; "
        "quote the whole line (- \"Thanks. ###STOP###\") to send it",
    ]
    assert out == ["ok: 1 scenarios, 5 personas, 3 warnings"]


def test_a_suite_outside_suites_is_recognised_and_its_scenarios_are_validated(project: Path, capsys) -> None:
    shutil.copy(REPO / "scenarios/retail/refund-damaged-card.yaml", project / "scenarios/card.yaml")
    write(project, "ci/nightly.yaml", 'id: n\nscenarios: ["../scenarios/*.yaml"]\ngates: ["pass^1 >= 0.8"]\n')
    code, err, out = validate(capsys, "ci/nightly.yaml")
    assert (code, err, out) == (0, [], ["ok: 1 scenarios, 5 personas, 1 suite/config file"])


def test_a_scenario_reached_through_a_suite_is_named_from_the_project_folder(project: Path, capsys) -> None:
    """Not `suites/../scenarios/broken.yaml`: the path the project names the file by, in validate,
    lint, coverage and run alike (they share `specs.scenario_files`), and in the pins of a run."""
    write(project, "scenarios/broken.yaml", BROKEN)
    write(project, "suites/nightly.yaml", 'id: n\nscenarios: ["../scenarios/*.yaml"]\n')
    for command in (["validate", "suites/nightly.yaml"], ["lint", "suites/nightly.yaml"],
                    ["coverage", "suites/nightly.yaml"], ["run", "--suite", "suites/nightly.yaml", "--list"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "scenarios/broken.yaml:6: user.goall: unknown field" in err, command
        assert "../" not in err, command


def test_a_suite_glob_that_matches_nothing_and_a_gate_that_can_never_hold(project: Path, capsys) -> None:
    write(project, "suites/nightly.yaml", 'id: n\nscenarios: ["../scenarios/*.yml"]\ngates: ["pass^1 >= 80"]\n')
    code, err, _ = validate(capsys, "suites/nightly.yaml")
    assert code == 2
    assert err == [
        "suites/nightly.yaml:2: scenarios.0: '../scenarios/*.yml' (relative to suites) matches no scenario: no "
        "scenario file matches this pattern",
        "suites/nightly.yaml:3: gates.0: gate 'pass^1 >= 80' can never hold: pass^1 is a rate from 0 to 1 (0.8 "
        "means 80%); did you mean 0.8 or 80%?",
        "2 problems found",
    ]


def test_a_suite_whose_tags_select_nothing(project: Path, capsys) -> None:
    shutil.copy(REPO / "scenarios/retail/refund-damaged-card.yaml", project / "scenarios/card.yaml")
    write(project, "suites/s.yaml", 'id: n\nscenarios: ["../scenarios"]\ntags: [no-such-tag]\n')
    code, err, _ = validate(capsys, "suites/s.yaml")
    assert code == 2 and err[0] == "suites/s.yaml:3: tags: tags ['no-such-tag'] select none of the suite's 1 scenario"


@pytest.mark.parametrize(("gate", "holds"), [
    ("pass^1 >= 80", False), ("pass^3 > 1", False), ("success == 2", False), ("policy_violations < 0", False),
    ("cost_per_success <= -1", False), ("pass^1 >= 80%", True), ("pass^3 >= 0.8", True),
    ("policy_violations == 0", True), ("cost_per_success <= 100", True),
])
def test_gates_that_can_never_hold_are_refused_when_loaded(gate: str, holds: bool) -> None:
    from simlab.specs.gates import Gate

    if holds:
        Gate.model_validate(gate)
    else:
        with pytest.raises(ValueError, match="can never hold"):
            Gate.model_validate(gate)
