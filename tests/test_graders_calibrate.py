"""Judge calibration: labels file, agreement, Cohen's kappa, both error directions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from simlab.errors import SpecError
from simlab.graders.calibrate import calibrate, calibrate_file, cohen_kappa, format_report, load_labels
from simlab.llm import FunctionModel

FIXTURES = Path(__file__).parent / "fixtures" / "calibration"
LABELS = FIXTURES / "LABELS.yaml"


def keyword_judge(messages: list[dict[str, Any]], tools: Any) -> str:
    """A deliberately imperfect judge: dates mean 'Friday', confirmation means the word 'confirm'."""
    criterion = re.search(r"^Criterion: (.*)$", messages[0]["content"], re.MULTILINE)
    assert criterion, "the criterion belongs in the system message"
    data = messages[1]["content"]
    if "date" in criterion.group(1):
        ok = "Friday" not in data  # misses 'Monday 3 June': a false pass
    else:
        ok = "confirm" in data.lower()  # misses 'Shall I refund ...?': a false fail
    return '{"verdict": "%s", "reason": "keyword rule"}' % ("yes" if ok else "no")


def test_kappa_hand_computed() -> None:
    # judge \ human   yes  no
    #   yes            4    1      a=4 both yes, b=1 false pass
    #   no             2    3      c=2 false fail, d=3 both no;  n=10
    # p_o = (4+3)/10 = 0.7;  judge yes 5, human yes 6, judge no 5, human no 4
    # p_e = (5*6 + 5*4)/100 = 0.5;  kappa = (0.7-0.5)/(1-0.5) = 0.4
    assert cohen_kappa(4, 1, 2, 3) == pytest.approx(0.4)
    # the fixture's table: a=3, b=1, c=1, d=2, n=7: p_o=5/7, p_e=(4*4+3*3)/49=25/49, kappa=(10/49)/(24/49)=5/12
    assert cohen_kappa(3, 1, 1, 2) == pytest.approx(5 / 12)
    assert cohen_kappa(3, 0, 0, 2) == pytest.approx(1.0)  # perfect, both labels present
    assert cohen_kappa(0, 3, 2, 0) == pytest.approx(-12 / 13)  # p_o=0, p_e=(3*2+2*3)/25=12/25: -12/25 / 13/25
    # a constant judge against mixed human labels carries no information: kappa 0 (defined)
    assert cohen_kappa(2, 2, 0, 0) == 0.0  # p_o=0.5, p_e=(4*2+0*2)/16=0.5


def test_kappa_degenerate_cases_are_none_not_zero() -> None:
    assert cohen_kappa(0, 0, 0, 0) is None  # nothing judged
    assert cohen_kappa(5, 0, 0, 0) is None  # every label yes and the judge agrees: p_e = 1
    assert cohen_kappa(0, 0, 0, 5) is None  # every label no
    assert cohen_kappa(4, 0, 1, 0) is None  # every human label yes: the set cannot measure kappa
    assert cohen_kappa(0, 2, 0, 3) is None  # every human label no


def test_load_fixture_labels() -> None:
    items = load_labels(LABELS)
    assert [i.id for i in items] == ["friday-date", "vague-date", "confirmed-date", "confirmed-confirm",
                                     "unconfirmed-confirm", "late-date", "inline-confirm"]
    by = {i.id: i for i in items}
    assert by["friday-date"].label == "no" and by["vague-date"].label == "yes"  # YAML booleans read as labels
    assert by["unconfirmed-confirm"].label == "no"  # 'fail' accepted
    assert by["late-date"].transcript.unit_id == "refund-late#1"  # from trials.jsonl#unit_id
    assert by["unconfirmed-confirm"].transcript.unit_id == "refund-damaged#2"  # a TrialRecord file
    inline = by["inline-confirm"].transcript
    assert [e.type for e in inline.events] == ["user", "agent", "user", "tool_call", "tool_result", "agent"]
    assert [e.turn for e in inline.events] == [1, 1, 2, 2, 2, 2]
    assert by["confirmed-confirm"].criterion.startswith("The agent asks the customer to confirm")
    assert by["friday-date"].source.endswith("LABELS.yaml:12")


async def test_calibrate_fixture_with_function_judge() -> None:
    judge = FunctionModel(keyword_judge, model="fake/keyword-judge", role="judge")
    report = await calibrate_file(LABELS, judge)
    assert (report.n, report.both_yes, report.both_no, report.false_passes, report.false_fails) == (7, 3, 2, 1, 1)
    assert report.agreement == pytest.approx(5 / 7) and report.kappa == pytest.approx(5 / 12)
    assert [(o.item_id, o.human, o.judge) for o in report.disagreements] == [
        ("confirmed-confirm", "yes", "no"), ("late-date", "no", "yes")]
    assert report.errors == [] and len(report.calls) == 7 and {c.role for c in report.calls} == {"judge"}
    assert report.usage.input_tokens and report.usage.cost_usd is None
    text = format_report(report)
    assert "agreement      71.4% (5 of 7)" in text and "Cohen's kappa  0.42" in text
    assert "false passes   1" in text and "false fails    1" in text
    assert "FALSE PASS late-date (no-date-promise)" in text and "label note: promises Monday 3 June" in text
    assert "FALSE FAIL confirmed-confirm" in text and "cost unknown" in text


async def test_judge_errors_are_left_out_and_listed() -> None:
    items = load_labels(LABELS)

    def flaky(messages: list[dict[str, Any]], tools: Any) -> str:
        return "no idea" if "Friday" in messages[1]["content"] else keyword_judge(messages, tools)

    report = await calibrate(items, FunctionModel(flaky, role="judge"), max_attempts=2)
    assert report.n == 6 and [o.item_id for o in report.errors] == ["friday-date"]
    assert report.errors[0].judge is None and "malformed" in report.errors[0].reason
    assert "Judge errors (left out of agreement and kappa)" in format_report(report)


async def test_single_label_set_reports_kappa_undefined(tmp_path: Path) -> None:
    (tmp_path / "labels.yaml").write_text(
        "- conversation: [{user: hi}, {agent: It arrives Friday.}]\n  criterion: {id: d, text: no date}\n  label: yes\n"
        "- conversation: [{user: hi}, {agent: Soon.}]\n  criterion: {id: d, text: no date}\n  label: yes\n")
    report = await calibrate_file(tmp_path / "labels.yaml", FunctionModel(keyword_judge, role="judge"))
    assert report.kappa is None and report.false_fails == 1 and report.agreement == 0.5
    assert "undefined (every human label is the same" in format_report(report)


def test_label_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.yaml"
    path.write_text(
        "criteria: {c: Criterion}\n"
        "items:\n"
        "  - transcript: nope.json\n    criterion: c\n    label: yes\n"
        "  - conversation: [{user: hi}]\n    criterion: missing\n    label: no\n"
        "  - transcript: run.jsonl#x#1\n    criterion: c\n    label: no\n")
    (tmp_path / "run.jsonl").write_text('{"unit_id": "y#1", "transcript": {}}\n')
    with pytest.raises(SpecError) as err:
        load_labels(path)
    problems = err.value.problems
    assert len(problems) == 3
    assert problems[0].startswith(f"{path}:3: items.0.transcript: cannot read")
    assert "items.1.criterion: unknown criterion 'missing' (known: c)" in problems[1]
    assert "no trial 'x#1'" in problems[2]

    path.write_text("items:\n  - conversation: [{user: hi}]\n    transcript: a.json\n    criterion: c\n"
                    "    label: maybe\n    colour: red\n")
    with pytest.raises(SpecError) as err:
        load_labels(path)
    text = str(err.value)
    assert "label" in text and "colour: unknown field" in text and f"{path}:" in text
