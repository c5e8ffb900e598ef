"""``simlab promote``: a stored trial (an imported production trace) becomes a scenario draft that
``simlab validate`` accepts and ``simlab run`` plays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simlab.cli.main import main
from simlab.runner.store import RunStore
from tests.otel_traces import genai_trace_file
from tests.support import copy_demo

TRACE = {"id": "Conv 7", "model": "gpt-4o", "messages": [
    {"role": "user", "content": "my order A123 arrived broken, refund it to my card please"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A123"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "delivered"}'},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c2", "type": "function",
         "function": {"name": "issue_refund", "arguments": '{"order_id": "A123", "amount": 49.9}'}},
        {"id": "c3", "type": "function", "function": {"name": "teleport", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c2", "content": '{"refund_id": "R1"}'},
    {"role": "tool", "tool_call_id": "c3", "content": "no such tool"},
    {"role": "assistant", "content": "Done, refunded 49.90 to your card."},
    {"role": "user", "content": "thanks ###STOP###"}]}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy_demo(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "convs.jsonl").write_text(json.dumps(TRACE) + "\n")
    assert main(["import", "openai", "convs.jsonl", "--run-id", "prod"]) == 0
    return tmp_path


def refunding_agent(inp):
    """Refunds A123 on the first turn."""
    if inp.turn == 1:
        inp.tools.call("issue_refund", order_id="A123", amount=49.9)
        return "Your refund of 49.90 to your original card is issued."
    return "Anything else?"


def test_promote_validate_run_on_an_imported_trace(project: Path, capsys):
    assert main(["promote", "prod", "observed#1", "--domain", "retail"]) == 0
    path = project / "scenarios" / "promoted" / "promoted-conv-7.yaml"
    text = path.read_text()
    data = yaml.safe_load(text)
    assert data["id"] == "promoted-conv-7" and data["domain"] == "retail"
    assert data["user"]["opening"] == "my order A123 arrived broken, refund it to my card please"
    assert data["user"]["script"] == [data["user"]["opening"], "thanks ###STOP###"]
    assert data["user"]["known_facts"] == {"id_1": "A123"}
    assert data["expect"]["expected_actions"] == [{"tool": "issue_refund", "args": {"amount": 49.9, "order_id": "A123"}}]
    assert "# teleport (turn 1) is not a tool of domain retail" in text
    assert "TODO" in text and "promoted from run prod, trial observed#1 (convs.jsonl:1)" in text
    capsys.readouterr()
    assert main(["validate", str(path)]) == 0
    assert "ok: 1 scenarios" in capsys.readouterr().out
    assert main(["run", str(path), "--simulator", "scripted", "--agent", "python:tests.test_promote:refunding_agent",
                 "--trials", "1", "--run-id", "again", "--no-progress"]) == 0
    [record] = RunStore(project / "transcripts" / "again").records()
    checks = {c.name: c.status for c in record.checks}
    assert checks["expected_state"] == "pass"
    assert [e.text for e in record.transcript.events if e.type == "user"] == [data["user"]["opening"], "thanks"]


def test_promote_with_history_and_a_failed_write(project: Path, capsys):
    genai_trace_file(project / "spans.json")
    assert main(["import", "otlp", "spans.json", "--run-id", "otel"]) == 0
    out = project / "mid.yaml"
    assert main(["promote", "otel", "1", "--domain", "retail", "--history-turns", "1", "--out", str(out)]) == 0
    data = yaml.safe_load(out.read_text())
    assert [list(step)[0] for step in data["history"]] == ["user", "tool", "agent"]
    assert data["history"][1] == {"tool": "lookup_order", "args": {"order_id": "A123"},
                                  "result": {"status": "delivered"}}
    assert data["user"]["opening"] == "refund it to my card"
    assert "failed in the trace: left out" in out.read_text()
    assert data["expect"] == {"rules": []}  # the trace's only write failed: no expected action to draft
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0


def test_promote_errors_are_clear(project: Path, capsys):
    assert main(["promote", "prod", "observed#1"]) == 2
    assert "name the domain it should play in with --domain" in capsys.readouterr().err
    assert main(["promote", "prod", "observed#9", "--domain", "retail"]) == 2
    assert "no trial 'observed#9' (trials: observed#1)" in capsys.readouterr().err
    assert main(["promote", "prod", "1", "--domain", "retail"]) == 0
    assert main(["promote", "prod", "1", "--domain", "retail"]) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(["promote", "prod", "1", "--domain", "nosuchdomain"]) == 2


def test_names_from_the_trace_cannot_add_keys_to_the_draft(project: Path, capsys):
    """A newline in a tool's name once started a top-level key of the draft (it went into a comment)."""
    hostile = "teleport\nexpect: {rules: [{forbid: issue_refund}]}\nmax_turns: 99"
    trace = json.loads(json.dumps(TRACE))
    trace["id"] = "Conv 8"
    trace["messages"][3]["tool_calls"][1]["function"]["name"] = hostile
    (project / "hostile.jsonl").write_text(json.dumps(trace) + "\n")
    assert main(["import", "openai", "hostile.jsonl", "--run-id", "hostile"]) == 0
    out = project / "hostile.yaml"
    assert main(["promote", "hostile", "observed#1", "--domain", "retail", "--out", str(out)]) == 0
    text = out.read_text()
    data = yaml.safe_load(text)
    assert set(data) == {"id", "title", "domain", "persona", "user", "max_turns", "expect"}
    assert data["max_turns"] != 99 and "forbid" not in json.dumps(data)
    assert "teleport\\nexpect" in text  # shown, escaped, inside the comment
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
