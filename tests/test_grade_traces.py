"""``simlab grade-traces``: reference-free checks on imported production traces, a seeded sample
plus every flagged trace, written as a run that reports and gates like any other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.runner.store import RunStore
from simlab.transcript import ToolCall, TrialRecord
from tests.otel_traces import genai_trace_file

RULES = """\
domain: retail
expect:
  rules:
    - {before: [check_refund_policy, issue_refund]}
    - {max_calls: {issue_refund: 1}}
    - owner: {issue_refund.order_id: "orders.{order_id}.customer", principal: signed_in_customer}
  forbidden: [issue_store_credit]
  rubric:
    - {id: no-date-promise, text: Does not promise a date, hard: true}
  groundedness: true
  expected_actions:
    - {tool: issue_refund, args: {order_id: A123}}
  state:
    - {path: "refunds[order_id=A123].method", equals: original_card}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def records(folder: Path) -> list[TrialRecord]:
    return list(RunStore(folder).records())


def test_a_policy_violation_in_a_production_trace_is_found_at_its_step(project: Path, capsys):
    genai_trace_file(project / "spans.json")
    assert main(["import", "otlp", "spans.json", "--run-id", "prod"]) == 0
    (project / "online.yaml").write_text(RULES)
    assert main(["grade-traces", "prod", "--rules", "online.yaml"]) == 0
    err = capsys.readouterr().err
    assert ("policy violation: observed#1: before(check_refund_policy, issue_refund) at turn 2 (call call_2): "
            "issue_refund at turn 2 (call call_2) came before any successful check_refund_policy") in err
    [record] = records(project / "transcripts" / "prod-graded")
    checks = {c.name: c for c in record.checks}
    violation = checks["before(check_refund_policy, issue_refund)"]
    assert violation.status == "fail" and violation.turn == 2 and violation.call_id == "call_2"
    pointed = record.transcript.events[violation.event]
    assert isinstance(pointed, ToolCall) and pointed.name == "issue_refund"
    assert checks["max_calls(issue_refund<=1)"].status == "pass"
    assert checks["forbidden(issue_store_credit)"].status == "pass"
    # what needs a reference or an environment is not run, never passed; so are the judges without a judge
    for name in ("expected_state", "state[0] refunds[order_id=A123].method", "owner(issue_refund.order_id)",
                 "rubric:no-date-promise", "groundedness"):
        assert checks[name].status == "not_run", name
    assert "no environment" in checks["owner(issue_refund.order_id)"].reason
    assert not [c for c in record.checks if c.kind == "drift"]  # the users were real
    assert checks["trace_flags"].details == {"flags": ["error", "negative_feedback"], "picked_by": "flag"}
    assert record.verdict == "fail"


def test_without_a_domain_no_write_after_refusal_is_not_run(project: Path):
    genai_trace_file(project / "spans.json")
    assert main(["import", "otlp", "spans.json", "--run-id", "prod"]) == 0
    (project / "online.yaml").write_text("expect:\n  rules:\n    - no_write_after_refusal: true\n")
    assert main(["grade-traces", "prod", "--rules", "online.yaml", "--out", "g"]) == 0
    [record] = records(project / "transcripts" / "g")
    check = next(c for c in record.checks if c.name == "no_write_after_refusal")
    assert check.status == "not_run" and "domain:" in check.reason
    assert record.verdict == "unjudged"


def conversation(i: int, **meta: Any) -> dict[str, Any]:
    calls = meta.pop("calls", 1)
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"question {i}"}]
    for n in range(calls):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A1"}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": '{"status": "shipped"}',
                         **({"is_error": True} if meta.get("tool_error") else {})})
    messages.append({"role": "assistant", "content": f"answer {i}"})
    return {"id": f"conv-{i}", "messages": messages, **{k: v for k, v in meta.items() if k != "tool_error"}}


def import_many(project: Path) -> None:
    items = [conversation(i) for i in range(60)]
    items[5] = conversation(5, feedback="thumbs_down")
    items[17] = conversation(17, calls=3)  # the same call three times: a loop
    items[33] = conversation(33, tool_error=True)
    items[41] = conversation(41, calls=4)  # also a loop, and long with long_tool_calls: 3
    (project / "many.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    assert main(["import", "openai", "many.jsonl", "--run-id", "many"]) == 0


def graded_units(project: Path, run: str) -> set[str]:
    return {r.unit_id for r in records(project / "transcripts" / run)}


def test_a_seeded_sample_plus_every_flagged_trace(project: Path, capsys):
    import_many(project)
    (project / "online.yaml").write_text("expect: {rules: [{max_calls: {lookup_order: 2}}]}\n"
                                         "sample: {rate: 0.2, seed: 7, flags: {long_tool_calls: 3}}\n")
    assert main(["grade-traces", "many", "--rules", "online.yaml", "--out", "a"]) == 0
    assert main(["grade-traces", "many", "--rules", "online.yaml", "--out", "b"]) == 0
    assert main(["grade-traces", "many", "--rules", "online.yaml", "--out", "c", "--seed", "8"]) == 0
    a, b, c = graded_units(project, "a"), graded_units(project, "b"), graded_units(project, "c")
    flagged = {"observed#6", "observed#18", "observed#34", "observed#42"}
    assert flagged <= a and flagged <= c
    assert a == b and a != c  # the same seed picks the same traces
    assert 4 < len(a - flagged) < 25  # about 20 % of the 56 others
    manifest = json.loads((project / "transcripts" / "a" / "run.json").read_text())
    info = manifest["grade_traces"]
    assert info["population"] == 60 and info["sample"]["rate"] == 0.2 and info["sample"]["seed"] == 7
    assert info["flagged"] == {"observed#6": ["negative_feedback"], "observed#18": ["loop"],
                               "observed#34": ["error"], "observed#42": ["loop", "long"]}
    assert set(info["sampled"]) == a - flagged
    assert RunStore(project / "transcripts" / "a").planned_units() == a  # complete: it planned what it graded
    capsys.readouterr()
    assert main(["report", "a", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["trials"] == len(a) and summary["completeness"] == {"planned": len(a), "finished": len(a), "unplanned": 0, "manifest": True}
    verdicts = {r.unit_id: r.verdict for r in records(project / "transcripts" / "a")}
    assert verdicts["observed#18"] == "fail" and verdicts["observed#6"] == "pass"


def test_rate_zero_grades_only_flagged_traces_and_the_gate_reads_the_run(project: Path):
    import_many(project)
    (project / "online.yaml").write_text("expect: {rules: [{max_calls: {lookup_order: 2}}]}\n")
    assert main(["grade-traces", "many", "--rules", "online.yaml", "--out", "z", "--rate", "0"]) == 0
    assert graded_units(project, "z") == {"observed#6", "observed#18", "observed#34", "observed#42"}
    (project / "suite.yaml").write_text('id: online\nscenarios: []\ngates: ["policy_violation_rate <= 50%"]\n')
    assert main(["gate", "z", "--suite", "suite.yaml"]) == 0  # 18 and 42 of the 4 break max_calls: 50 %
    (project / "suite.yaml").write_text('id: online\nscenarios: []\ngates: ["policy_violation_rate <= 1%"]\n')
    assert main(["gate", "z", "--suite", "suite.yaml"]) == 1


def test_bad_rules_and_runs_are_clear_errors(project: Path, capsys):
    import_many(project)
    (project / "online.yaml").write_text("expect:\n  rulez: []\n")
    assert main(["grade-traces", "many", "--rules", "online.yaml"]) == 2
    assert "online.yaml:2: expect.rulez" in capsys.readouterr().err
    (project / "online.yaml").write_text("sample: {rate: 2}\n")
    assert main(["grade-traces", "many", "--rules", "online.yaml"]) == 2
    assert "online.yaml:1: sample.rate" in capsys.readouterr().err
    (project / "online.yaml").write_text("expect: {}\n")
    assert main(["grade-traces", "many", "--rules", "online.yaml", "--rate", "5"]) == 2
    assert main(["grade-traces", "nope", "--rules", "online.yaml"]) == 2
    capsys.readouterr()
    assert main(["grade", "many"]) == 2  # simlab grade needs scenario files: it says which command to use
    assert "many holds imported traces, which have no scenario: grade them with `simlab grade-traces many" \
        in capsys.readouterr().err


def test_the_judges_grade_a_trace_through_the_real_litellm_path(project: Path):
    from simlab.llm.fakes import register_fake, unregister_fake

    seen: list[str] = []

    def judge(messages, tools=None, **_):
        seen.append(messages[-1]["content"])
        return json.dumps({"verdict": "no", "reason": "it promised a date"})

    genai_trace_file(project / "spans.json")
    assert main(["import", "otlp", "spans.json", "--run-id", "prod"]) == 0
    (project / "online.yaml").write_text("expect:\n  rubric:\n    - {id: no-date-promise, text: Does not promise a "
                                         "date, hard: true}\n")
    model = register_fake("traces-judge", judge)
    try:
        assert main(["grade-traces", "prod", "--rules", "online.yaml", "--judge", model]) == 0
    finally:
        unregister_fake("traces-judge")
    [record] = records(project / "transcripts" / "prod-graded")
    check = next(c for c in record.checks if c.name == "rubric:no-date-promise")
    assert check.status == "fail" and record.verdict == "fail"
    assert "Your refund of 49.90 is issued." in seen[0]  # the judge read the production conversation
    assert [e.role for e in record.transcript.events if e.type == "model_call"][-1] == "judge"
    manifest = json.loads((project / "transcripts" / "prod-graded" / "run.json").read_text())
    assert manifest["pins"]["judge"] == model


@pytest.fixture
def graded(project: Path) -> Path:
    """An imported OTLP trace, graded (set up outside the viewer's event loop)."""
    genai_trace_file(project / "spans.json")
    assert main(["import", "otlp", "spans.json", "--run-id", "prod"]) == 0
    (project / "online.yaml").write_text(RULES)
    assert main(["grade-traces", "prod", "--rules", "online.yaml"]) == 0
    return project / "transcripts"


async def test_the_viewer_opens_a_graded_production_trace(graded: Path):
    from simlab.tui.widgets.tool_call_view import ToolCallView
    from tests.test_tui_app import open_trial, settle, text_of, viewer

    app = viewer(graded, "prod-graded")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_trial(pilot, "observed", 0)
        await pilot.pause()
        detail = text_of(screen.query_one("#check-detail-body"))  # the first failed check is shown at once
        assert "came before any successful check_refund_policy" in detail.replace("\n", " ")
        assert screen.query_one("#ev-8", ToolCallView) is not None  # the step the violation points at
