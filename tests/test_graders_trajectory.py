"""Trajectory match modes on one table of runs, precision/recall, and the argument comparators."""

from __future__ import annotations

import json
from typing import Any

import pytest

from simlab.graders.base import GradeContext
from simlab.graders.comparators import ComparatorError, call_matches, call_mismatch, compare_value
from simlab.graders.trajectory import grade_trajectory
from simlab.specs.expect import CallSpec
from simlab.transcript import InvalidCall, Pin, Termination, ToolCall, ToolResult, Transcript, UserMessage
from tests.support import KV, scenario


def same_parity(expected: Any, actual: Any) -> bool:
    """A custom comparator referenced as tests.test_graders_trajectory:same_parity."""
    return int(expected) % 2 == int(actual) % 2


def exploding(expected: Any, actual: Any) -> bool:
    raise RuntimeError("boom")


# --- building transcripts by hand ----------------------------------------------------------------

G = ("get_item", {"key": "a"})
S = ("set_item", {"key": "b", "value": "2"})
S_WRONG = ("set_item", {"key": "c", "value": "2"})
S_INVALID = ("set_item", {"key": "b"}, "arguments do not match the schema: value: Field required")
T = ("transfer_to_human", {"reason": "asked"})
UNKNOWN = ("delete_all", {}, "unknown tool 'delete_all'")


def transcript(calls: list[tuple[Any, ...]]) -> Transcript:
    events: list[Any] = [UserMessage(turn=1, text="Please store b=2.")]
    for n, (name, args, *invalid) in enumerate(calls):
        cid = f"c{n}"
        events.append(ToolCall(turn=1, call_id=cid, name=name, arguments=args, raw_arguments=json.dumps(args)))
        if invalid:
            events.append(InvalidCall(turn=1, call_id=cid, name=name, reason=invalid[0]))
            events.append(ToolResult(turn=1, call_id=cid, name=name, ok=False, error=invalid[0]))
        else:
            events.append(ToolResult(turn=1, call_id=cid, name=name, ok=True, result={"ok": True}))
    return Transcript(run_id="r", unit_id="kv#1", scenario_id="kv", persona_id="tester", domain="kv", trial=1,
                      seed=1, agent=Pin(kind="python", ref="t:a"), simulator=Pin(kind="scripted", ref="s"),
                      events=events, termination=Termination(reason="goal_reached"), final_state=None)


REFERENCE = ["get_item", {"tool": "set_item", "args": {"key": "b"}}, "get_item"]  # look up, store, verify


def grade(calls: list[tuple[Any, ...]], mode: str, reference: list[Any] = REFERENCE) -> list[Any]:
    scn = scenario(expect={"trajectory": {"mode": mode, "calls": reference}})
    return grade_trajectory(GradeContext(transcript(calls), scn, KV))


MODES = ("exact", "in_order", "any_order", "subset", "superset")
#                                             exact  in_order any_order subset superset
TABLE: list[tuple[str, list[Any], tuple[bool, ...]]] = [
    ("same",            [G, S, G],            (True, True, True, True, True)),
    ("extra_between",   [G, T, S, G],         (False, True, True, False, True)),
    ("wrong_order",     [S, G, G],            (False, False, True, True, True)),
    ("dup_then_store",  [G, G, S],            (False, False, True, True, True)),
    ("duplicate_extra", [G, S, G, G],         (False, True, True, True, True)),
    ("one_get_short",   [G, S],               (False, False, False, True, True)),
    ("missing_store",   [G, G],               (False, False, False, True, False)),
    ("invalid_args",    [G, S_INVALID, G],    (False, False, False, False, False)),
    ("wrong_args",      [G, S_WRONG, G],      (False, False, False, False, False)),
    ("unknown_tool",    [G, S, G, UNKNOWN],   (False, True, True, False, True)),
    ("no_calls",        [],                   (False, False, False, True, False)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("label", "calls", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_match_modes_on_the_same_runs(label: str, calls: list[Any], expected: tuple[bool, ...], mode: str) -> None:
    checks = grade(calls, mode)
    main = checks[0]
    assert main.name == f"trajectory:{mode}" and main.kind == "trajectory" and main.hard
    assert main.status == ("pass" if expected[MODES.index(mode)] else "fail"), (label, main.reason)
    if main.status == "fail":
        assert main.reason
        if calls:
            assert main.event is not None and main.turn == 1


def test_reason_names_the_missing_call_and_points_at_the_near_miss() -> None:
    main = grade([G, S_WRONG, G], "in_order")[0]
    assert 'set_item(key="b") is missing after get_item' in main.reason
    assert "nearest is set_item" in main.reason
    assert main.event == 3 and main.call_id == "c1"


def test_reason_for_an_unexpected_call_in_subset_mode() -> None:
    main = grade([G, S, UNKNOWN], "subset")[0]
    assert "unexpected delete_all" in main.reason and "[invalid]" in main.reason
    assert main.call_id == "c2"


def test_exact_mode_reports_the_first_differing_position() -> None:
    main = grade([G, T, S, G], "exact")[0]
    assert main.reason.startswith("call 2: expected set_item")
    assert main.call_id == "c1"


def test_any_order_counts_required_repeats() -> None:
    main = grade([G, S], "any_order")[0]
    assert "needed 2 times" in main.reason


def test_precision_and_recall_use_multiset_overlap() -> None:
    checks = {c.name: c for c in grade([G, G, G, S_INVALID, T], "in_order")}
    precision, recall = checks["tool_precision"], checks["tool_recall"]
    assert not precision.hard and not recall.hard
    assert precision.score == pytest.approx(2 / 5)  # two gets matched; extra get, invalid set, transfer not
    assert recall.score == pytest.approx(2 / 3)
    assert precision.details["invalid"] == 1 and precision.details["matched"] == 2
    perfect = {c.name: c for c in grade([G, S, G], "exact")}
    assert perfect["tool_precision"].score == 1.0 and perfect["tool_precision"].status == "pass"


def test_precision_with_no_calls_is_not_run_not_zero() -> None:
    checks = {c.name: c for c in grade([], "in_order")}
    assert checks["tool_precision"].status == "not_run" and checks["tool_precision"].score is None
    assert checks["tool_recall"].score == 0.0


def test_no_trajectory_configured_gives_no_checks() -> None:
    assert grade_trajectory(GradeContext(transcript([G]), scenario(), KV)) == []


def test_a_broken_comparator_is_an_error_not_a_mismatch() -> None:
    ref = [{"tool": "set_item", "args": {"key": "b"}, "compare": {"key": "no.such.module:fn"}}]
    checks = grade([S], "in_order", ref)
    assert checks[0].status == "error" and "cannot import" in checks[0].reason


def test_per_argument_comparators_in_a_trajectory() -> None:
    ref = [{"tool": "set_item", "args": {"key": "B "}, "compare": {"key": "casefold", "value": {"regex": r"^\d+$"}}}]
    assert grade([S], "exact", ref)[0].status == "pass"
    assert grade([("set_item", {"key": "b", "value": "two"})], "exact", ref)[0].status == "fail"


# --- comparators --------------------------------------------------------------------------------

@pytest.mark.parametrize(("expected", "actual", "how", "ok"), [
    (49.9, 49.90, "exact", True),
    (49.9, "49.90", "exact", True),
    ({"a": [1, 2.0]}, {"a": [1.0, 2]}, "exact", True),
    ({"a": 1}, '{"a": 1}', "exact", True),  # JSON string parsed first
    ([1, 2], "[1, 2]", "exact", True),
    ("A123", "a123", "exact", False),
    (True, 1, "exact", False),
    (None, None, "exact", True),
    ("x", "anything", "ignore", True),
    ("Dana Smith", "  dana   SMITH ", "casefold", True),
    ("Dana", "Dan", "casefold", False),
    (100, 100.004, {"number": {"tolerance": 0.01}}, True),
    (100, 100.02, {"number": {"tolerance": 0.01}}, False),
    (100, "100.0", "number", True),
    (100, "lots", "number", False),
    ("2026-07-01", "July 1, 2026", "date", True),
    ("2026-07-01", "1 Jul 2026", "date", True),
    ("2026-07-01", "July 1st 2026", "date", True),
    ("2026-07-01", "2026-07-01T15:30:00Z", "date", True),
    ("2026-07-01", "2026-07-02", "date", False),
    ("2026-07-01", "01/07/2026", "date", False),  # ambiguous day/month: refused, never guessed
    (r"A\d{3}", "order A123", "regex", True),  # search, not fullmatch
    (r"^A\d{3}$", "order A123", "regex", False),
    (None, "refund for a damaged item", {"regex": "damag"}, True),
    (["card", "original_card"], "card", "one_of", True),
    (["card", "original_card"], "store_credit", "one_of", False),
    (None, 49.9, {"one_of": [49.90, 50]}, True),
    (3, 5, "tests.test_graders_trajectory:same_parity", True),
    (3, 4, "tests.test_graders_trajectory:same_parity", False),
])
def test_comparators(expected: Any, actual: Any, how: Any, ok: bool) -> None:
    result, reason = compare_value(expected, actual, how)
    assert result is ok, reason
    assert reason


def test_a_mismatch_reason_shows_expected_and_actual() -> None:
    ok, reason = compare_value("original_card", "store_credit", "exact")
    assert not ok and "original_card" in reason and "store_credit" in reason


@pytest.mark.parametrize("how", ["fuzzy", "no.such.module:fn", "tests.test_graders_trajectory:exploding",
                                 {"regex": "("}, {"number": 1, "regex": "x"}])
def test_misconfigured_comparators_raise(how: Any) -> None:
    with pytest.raises(ComparatorError):
        compare_value("1", "1", how)


def test_unreadable_expected_date_is_a_scenario_error() -> None:
    with pytest.raises(ComparatorError):
        compare_value("01/07/2026", "2026-07-01", "date")


def _call(name: str, args: dict[str, Any] | None, raw: str | None = None) -> ToolCall:
    return ToolCall(turn=1, call_id="c", name=name, arguments=args, raw_arguments=raw or json.dumps(args))


def test_call_matches_compares_only_named_arguments() -> None:
    spec = CallSpec(tool="set_item", args={"key": "b"})
    assert call_matches(spec, _call("set_item", {"key": "b", "value": "anything"}), True)
    assert not call_matches(spec, _call("set_item", {"key": "c", "value": "2"}), True)
    assert not call_matches(spec, _call("get_item", {"key": "b"}), True)
    assert call_matches("set_item", _call("set_item", {}), True)
    assert call_mismatch(spec, _call("set_item", {"value": "2"})) == "argument 'key' is missing"


def test_an_invalid_call_never_matches() -> None:
    assert not call_matches("set_item", _call("set_item", {"key": "b", "value": "2"}), False)


def test_json_string_arguments_are_parsed_before_comparing() -> None:
    spec = CallSpec(tool="set_item", args={"key": {"id": 7}, "value": [1, 2]})
    call = _call("set_item", {"key": '{"id": 7}', "value": "[1, 2.0]"})
    assert call_matches(spec, call, True)
    raw_only = _call("set_item", None, raw='{"key": {"id": 7}, "value": [1, 2]}')
    assert call_matches(spec, raw_only, True)


def test_ignored_argument_may_be_absent() -> None:
    spec = CallSpec(tool="set_item", args={"key": "b", "value": "x"}, compare={"value": "ignore"})
    assert call_matches(spec, _call("set_item", {"key": "b"}), True)
