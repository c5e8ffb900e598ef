"""``simlab lint``: a table of defects planted in a sound scenario, each found with its file, line
and field (exit 2 on an error, 0 on warnings only), and every scenario simlab ships passes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]

# A sound scenario of the retail demo (refund-damaged-card, shortened). Each defect below replaces
# one line of it (by its text) and must be found at that line, in that field.
SOUND = """\
id: planted
title: Damaged mug set refunded to the card
domain: retail
persona: impatient-terse
user:
  goal: Get order A123 (the mug set, arrived broken) refunded in full to the original card.
  opening: my order arrived broken. want my money back.
  known_facts: {order_id: A123, email: dana@example.com}
  never_reveal: {card_number: "4242 4242 4242 4242"}
  success_phrases: ['refund of 49\\.90 to your original card.*(issued|processed)']
  give_up_phrases: ["can't help without (the|an) order (id|number)"]
agent_context: {signed_in_customer: C-17, channel: chat}
max_turns: 10
expect:
  state:
    - {path: "refunds[order_id=A123].amount", equals: 49.90, tolerance: 0.005}
  expected_actions:
    - {tool: issue_refund, args: {order_id: A123, amount: 49.90, method: original_card}}
  trajectory: {mode: in_order, calls: [lookup_order, check_refund_policy, issue_refund]}
  forbidden: [issue_store_credit]
  rules:
    - {before: [check_refund_policy, issue_refund]}
  budgets: {max_tool_calls: 8}
"""

ACTION = "    - {tool: issue_refund, args: {order_id: A123, amount: 49.90, method: original_card}}\n"
FACTS = "  known_facts: {order_id: A123, email: dana@example.com}\n"
GOAL = "  goal: Get order A123 (the mug set, arrived broken) refunded in full to the original card.\n"
STATE = '    - {path: "refunds[order_id=A123].amount", equals: 49.90, tolerance: 0.005}\n'
SUCCESS = "  success_phrases: ['refund of 49\\.90 to your original card.*(issued|processed)']\n"
RULE = "    - {before: [check_refund_policy, issue_refund]}\n"

SCRIPT = '  script: ["my order A123 arrived broken", "yes, to the card", "Thanks. ###STOP###"]\n'
J077 = "    - {tool: transfer_to_human, args: {reason: the customer asked, order_id: J077}}\n"
EMAIL = "    - {tool: send_email, args: {to: dana.private@example.org, subject: refund, body: done}}\n"
NEVER = '  never_reveal: {card_number: "4242 4242 4242 4242"}\n'
MAX_TURNS = "max_turns: 10\n"
BUDGET = "  budgets: {max_tool_calls: 8}\n"
FORBIDDEN = "  forbidden: [issue_store_credit]\n"

# (name, lines replaced: (old, new)…, severity, line found at, field, what the message says); a
# replacement may add lines (the script): the line found at is counted in the planted file
DEFECTS = [
    ("unobtainable argument", [(ACTION, J077)],
     "error", 18, "expect.expected_actions.0.args.order_id", "needs 'J077', which the agent cannot learn"),
    ("an id only the goal holds, for a rules user",
     [(ACTION, J077), (GOAL, "  goal: Get order A123 refunded; order J077 is the one to escalate.\n")],
     "error", 18, "expect.expected_actions.0.args.order_id", "only in the user's goal"),
    ("never-reveal value needed",
     [(ACTION, EMAIL), (NEVER, "  never_reveal: {backup_email: dana.private@example.org}\n")],
     "error", 18, "expect.expected_actions.0.args.to", "needs a value only user.never_reveal.backup_email holds"),
    ("wrong expected state", [(STATE, STATE.replace("49.90", "59.90"))],
     "error", 16, "expect.state.0", "refunds[order_id=A123].amount: expected 59.9, got 49.9"),
    ("expected action that fails on replay",
     [(ACTION, "    - {tool: issue_refund, args: {order_id: A125, amount: 19.99}}\n")],
     "error", 18, "expect.expected_actions.0", "has not been delivered"),
    ("required tool forbidden", [(FORBIDDEN, "  forbidden: [issue_refund]\n")],
     "error", 20, "expect.forbidden.0", "issue_refund is forbidden, but expect.expected_actions.0 requires"),
    ("forbidden arguments required",
     [(FORBIDDEN, "  forbidden: [{tool: issue_refund, args: {method: original_card}}]\n")],
     "error", 20, "expect.forbidden.0", "is forbidden, but expect.expected_actions.0 requires that call"),
    ("call limit below the expected calls", [(RULE, "    - {max_calls: {issue_refund: 0}}\n")],
     "error", 22, "expect.rules.0.max_calls.issue_refund", "at most 0 call(s) of issue_refund"),
    ("argument limit without its lifting tool",
     [(RULE, "    - {limit: 'issue_refund.amount <= 40', unless: request_manager_approval}\n")],
     "error", 22, "expect.rules.0.limit", "request_manager_approval is not among the expected actions"),
    ("a required call on someone else's resource",
     [(RULE, '    - owner: {issue_refund.order_id: "orders.{order_id}.customer", principal: signed_in_customer}\n'),
      ("{signed_in_customer: C-17, channel: chat}", "{signed_in_customer: C-22, channel: chat}")],
     "error", 22, "expect.rules.0.owner.issue_refund.order_id", "order_id='A123', which belongs to C-17, not "
     "signed_in_customer=C-22"),
    ("order rule against the trajectory", [(RULE, "    - {before: [issue_refund, lookup_order]}\n")],
     "error", 22, "expect.rules.0.before", "expect.trajectory calls lookup_order first"),
    ("budget below the expected calls", [(BUDGET, "  budgets: {max_tool_calls: 2}\n")],
     "error", 23, "expect.budgets.max_tool_calls", "allows 2 tool call(s), but expect.trajectory.calls needs 3"),
    ("unreachable success phrase", [(SUCCESS, "  success_phrases: ['refund of 59\\.90 (issued|processed)']\n")],
     "error", 10, "user.success_phrases.0", "needs the agent to say '59.90'"),
    ("phrases with a turn cap of 1", [(MAX_TURNS, "max_turns: 1\n")],
     "error", 13, "max_turns", "no success or give-up phrase can ever be matched"),
    ("success phrase matching any reply", [(SUCCESS, "  success_phrases: ['(refund)?']\n")],
     "warning", 10, "user.success_phrases.0", "matches any reply"),
    ("give-up phrase the success phrase shadows", [(SUCCESS, "  success_phrases: ['help']\n")],
     "warning", 11, "user.give_up_phrases.0", "also matches user.success_phrases.0 ('help')"),
    ("script longer than max_turns", [(NEVER, NEVER + SCRIPT), (MAX_TURNS, "max_turns: 2\n")],
     "error", 14, "max_turns", "the script has 4 lines (one a turn), but max_turns is 2"),
    ("phrases a scripted user never reads", [(NEVER, NEVER + SCRIPT)],
     "warning", 11, "user.success_phrases", "a scripted user never matches success_phrases"),
]


def _planted(changes: list[tuple[str, str]]) -> str:
    text = SOUND
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "personas", tmp_path / "personas")
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, err.splitlines(), out.splitlines()


def test_the_sound_scenario_has_no_finding(project: Path, capsys) -> None:
    (project / "scenarios" / "planted.yaml").write_text(SOUND)
    code, err, out = lint(capsys)
    assert (code, err) == (0, [])
    assert out[0].startswith("ok: 1 scenario linted in ") and out[0].endswith(": 0 errors, 0 warnings")


@pytest.mark.parametrize(("name", "changes", "severity", "line", "field", "says"), DEFECTS,
                         ids=[d[0] for d in DEFECTS])
def test_each_planted_defect_is_found_at_its_file_line_and_field(
        project: Path, capsys, name: str, changes: list[tuple[str, str]], severity: str, line: int, field: str,
        says: str) -> None:
    (project / "scenarios" / "planted.yaml").write_text(_planted(changes))
    code, err, _ = lint(capsys)
    prefix = ("" if severity == "error" else "warning: ") + f"scenarios/planted.yaml:{line}: {field}: "
    found = [e for e in err if e.startswith(prefix) and says in e]
    assert found, f"{name}: no line {prefix}…{says}… in\n" + "\n".join(err)
    assert "; fix: " in found[0]
    assert code == (2 if severity == "error" else 0), err


SECRET_MAIL = "dana.private@example.org"
NEEDS_SECRET = (ACTION, ACTION + "    - {tool: send_email, args: {to: Dana.Private@example.org, subject: refund,"
                                 " body: 'sent to  dana.private@EXAMPLE.org'}}\n")  # as an argument, and inside one


@pytest.mark.parametrize(("never", "field"), [
    ("{backup_email: dana.private@example.org}", "user.never_reveal.backup_email"),
    ("[a pin, dana.private@example.org]", "user.never_reveal item 2"),  # the list form: the value is its key
])
@pytest.mark.parametrize("command", [["lint"], ["validate", "--deep"]])
def test_a_never_reveal_value_is_named_by_its_field_never_printed(
        project: Path, capsys, command: list[str], never: str, field: str) -> None:
    """Before, lint said "send_email needs 'dana.private@example.org', which only
    user.never_reveal.backup_email holds": the scenario's secret on the screen and in CI logs (and
    in the field's name, for the list form)."""
    (project / "scenarios" / "planted.yaml").write_text(_planted([NEEDS_SECRET, (NEVER, f"  never_reveal: {never}\n")]))
    assert main(command) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert any(f"expect.expected_actions.1.args.to: send_email needs a value only {field} holds (not shown"
               in line for line in lines), err
    assert any("expect.expected_actions.1.args.body: " in line and f"<{field}>" in line for line in lines), err
    assert SECRET_MAIL not in (out + err).casefold(), err


def test_validate_deep_runs_lint_and_plain_validate_does_not(project: Path, capsys) -> None:
    (project / "scenarios" / "planted.yaml").write_text(SOUND.replace(STATE, STATE.replace("49.90", "59.90")))
    assert main(["validate"]) == 0
    capsys.readouterr()
    assert main(["validate", "--deep"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("scenarios/planted.yaml:16: expect.state.0: the expected actions, replayed, do not reach ")
    assert err[-1] == "1 problem found"


def test_a_scenario_that_does_not_validate_is_reported_not_linted(project: Path, capsys) -> None:
    (project / "scenarios" / "planted.yaml").write_text(SOUND.replace("forbidden: [issue_store_credit]",
                                                                      "forbidden: [issue_store_credt]"))
    code, err, _ = lint(capsys)
    assert code == 2
    assert err[0].startswith("scenarios/planted.yaml:20: expect.forbidden.0: unknown tool 'issue_store_credt'")
    assert err[-1].startswith("0 scenarios linted in ")


def test_a_suite_decides_who_plays_the_user(project: Path, capsys) -> None:
    """The same scenario: phrases a scripted user never reads only under a scripted suite."""
    (project / "scenarios" / "planted.yaml").write_text(SOUND)
    (project / "suites").mkdir()
    (project / "suites" / "s.yaml").write_text("id: s\nscenarios: ['../scenarios/*.yaml']\nsimulator: scripted\n")
    code, err, _ = lint(capsys, "suites/s.yaml")
    assert code == 0  # its opening is the one line a scripted user says; find_customer_orders shows A123
    assert [e.split(": ", 3)[2] for e in err] == ["user.success_phrases", "user.give_up_phrases"]
    assert err[0].startswith("warning: scenarios/planted.yaml:10: user.success_phrases: a scripted")
    code, err, _ = lint(capsys, "--simulator", "rules", "suites/s.yaml")
    assert (code, err) == (0, [])


def test_an_llm_user_is_told_its_goal_and_ignores_give_up_phrases(project: Path, capsys) -> None:
    (project / "scenarios" / "planted.yaml").write_text(SOUND.replace(FACTS, "  known_facts: {email: x@y.z}\n"))
    code, err, _ = lint(capsys, "--simulator", "llm")
    assert code == 0  # the goal names A123: an LLM user can say it
    assert [e.split(": ", 3)[2] for e in err] == ["user.give_up_phrases"]
    assert "an LLM user never matches give_up_phrases" in err[0]


@pytest.mark.parametrize("where", ["scenarios", "tests/clinic"])
def test_every_shipped_scenario_passes_lint(where: str, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, err, out = lint(capsys, where)
    assert code == 0, err
    assert not [e for e in err if not e.startswith("warning: ")]
    assert out[0].startswith("ok: ")


def test_the_starter_project_passes_lint(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # its domain module, as the CLI puts the project on sys.path
    assert main(["init"]) == 0
    capsys.readouterr()
    code, err, out = lint(capsys)
    assert (code, err) == (0, [])
    assert out[0].startswith("ok: 2 scenarios linted in ")


def test_a_phrase_whose_shortest_match_is_huge_is_read_without_building_it(project: Path, capsys) -> None:
    """``((x{1000}){1000}){1000}`` matches only a billion characters: no example is built (it would
    take gigabytes), the phrase is still read, and its give-up phrase is still checked."""
    huge = "  success_phrases: ['((x{1000}){1000}){1000}', 'help']\n"
    (project / "scenarios" / "planted.yaml").write_text(_planted([(SUCCESS, huge)]))
    code, err, _ = lint(capsys)
    assert code == 0
    assert [e.split(": ", 3)[2] for e in err] == ["user.give_up_phrases.0"]
    assert "also matches user.success_phrases.1 ('help')" in err[0]
