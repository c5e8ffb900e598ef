"""``simlab import otlp`` on files the real instrumentation wrote (tests/fixtures/traces, produced by
``generate.py`` there with google-adk 2.13, opentelemetry-instrumentation-openai-v2 and OpenInference):
content captured or not, in spans or in log events; ADK's function responses and failed tool calls."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from simlab.cli.main import main
from simlab.runner.store import RunStore
from simlab.transcript import AgentMessage, ToolCall, ToolResult, Transcript, TrialRecord, UserMessage
from tests.support import copy_demo

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
ADK_USERS = ["where is my order A123?", "refund it please", "please try again"]
ADK_CALLS = ["lookup_order", "issue_refund", "issue_refund"]  # the refund raised once, then succeeded


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy_demo(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def imported(project: Path, name: str, capsys: pytest.CaptureFixture[str], *,
             spans_only: bool = False) -> tuple[list[Transcript], str]:
    """Import a fixture (``spans_only``: its spans, as an exporter of spans alone writes them)."""
    if spans_only:
        (project / name).write_text((FIXTURES / name).read_text().splitlines()[0] + "\n")
    else:
        shutil.copy(FIXTURES / name, project / name)
    assert main(["import", "otlp", name, "--run-id", "prod"]) == 0
    err = capsys.readouterr().err
    return [r.transcript for r in RunStore(project / "transcripts" / "prod").records()], err


def users(t: Transcript) -> list[str]:
    return [e.text for e in t.events if isinstance(e, UserMessage)]


def calls(t: Transcript) -> list[str]:
    return [e.name for e in t.events if isinstance(e, ToolCall)]


def graded(project: Path, rules: str, capsys: pytest.CaptureFixture[str]) -> tuple[TrialRecord, str]:
    (project / "online.yaml").write_text(rules)
    assert main(["grade-traces", "prod", "--rules", "online.yaml"]) == 0
    [record] = RunStore(project / "transcripts" / "prod-graded").records()
    return record, capsys.readouterr().err


@pytest.mark.parametrize("name", ["adk_default.jsonl", "openai_v2_default.jsonl"])
def test_traces_without_content_say_so_and_how_to_turn_capture_on(project: Path, capsys, name: str):
    [t], err = imported(project, name, capsys)
    assert "carry no message content" in err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in err
    assert not any(e.text for e in t.events if isinstance(e, UserMessage | AgentMessage))


def test_model_outputs_hidden_by_openinference_are_said_missing(project: Path, capsys):
    """OPENINFERENCE_HIDE_OUTPUTS (written by openinference-instrumentation-openai itself): each
    call's input is there, its output is not. The later calls' inputs give back every reply but the
    last ("You are welcome."), which the import dropped without a word before."""
    [t], err = imported(project, "openinference_hidden_outputs.jsonl", capsys)
    assert users(t) == ["where is my order A123?", "thanks!"] and calls(t) == ["lookup_order"]
    assert [e.text for e in t.events if isinstance(e, AgentMessage)] == ["Order A123 was delivered yesterday."]
    assert "note: 3 model call(s) in 1 conversation(s) (chat-1) have their input but no output" in err, err
    assert "its last one above all" in err and "OPENINFERENCE_HIDE_OUTPUTS" in err
    shutil.copy(FIXTURES / "openinference_openai.jsonl", project / "shown.jsonl")  # outputs shown
    assert main(["import", "otlp", "shown.jsonl", "--run-id", "shown"]) == 0
    assert "no output" not in capsys.readouterr().err


def test_model_inputs_hidden_by_openinference_are_said_missing(project: Path, capsys):
    """OPENINFERENCE_HIDE_INPUTS: the user's messages and the tools' results are in no call's
    output. Before, a conversation of no user turn and a call without result came in, exit 0."""
    [t], err = imported(project, "openinference_hidden_inputs.jsonl", capsys)
    assert users(t) == [] and calls(t) == ["lookup_order"]
    assert "note: 3 model call(s) in 1 conversation(s) (chat-1) have their output but no input" in err, err
    assert "the user's messages and the tools' results are missing" in err and "OPENINFERENCE_HIDE_INPUTS" in err


def test_adk_traces_without_content_keep_their_tool_calls_once_each(project: Path, capsys):
    [t], _ = imported(project, "adk_default.jsonl", capsys)
    assert calls(t) == ADK_CALLS
    results = [e for e in t.events if isinstance(e, ToolResult)]
    assert [(e.name, e.ok) for e in results] == [("lookup_order", True), ("issue_refund", False), ("issue_refund", True)]
    assert "card declined" in str(results[1].error)


def test_a_conversation_without_content_is_unjudged_never_passed(project: Path, capsys):
    imported(project, "adk_default.jsonl", capsys)
    record, _ = graded(project, "expect:\n  rules:\n    - {after_confirmation: issue_refund}\n"
                                "    - {max_calls: {issue_refund: 2}}\n", capsys)
    checks = {c.name: c for c in record.checks}
    assert record.verdict == "unjudged"
    assert checks["message_content"].status == "not_run"
    assert "no message content" in checks["message_content"].reason
    assert [c.status for n, c in checks.items() if n.startswith("after_confirmation")] == ["not_run"]
    assert checks["max_calls(issue_refund<=2)"].status == "pass"  # tool spans still tell the calls


def test_a_conversation_without_content_under_empty_rules_is_unjudged(project: Path, capsys):
    imported(project, "openai_v2_default.jsonl", capsys)
    record, err = graded(project, "", capsys)
    assert record.verdict == "unjudged"
    assert "verdicts: unjudged 1" in err and "1 of 1 traces carry no message content" in err


@pytest.mark.parametrize(("name", "side"), [("openinference_hidden_outputs.jsonl", "output"),
                                            ("openinference_hidden_inputs.jsonl", "input")])
def test_a_conversation_with_hidden_inputs_or_outputs_is_unjudged_never_passed(
        project: Path, capsys, name: str, side: str):
    """Part of what was said is missing (the agent's last reply, or the user's words): its text is not
    judged on the rest, and the trial has no verdict; the same rules pass it with everything recorded."""
    imported(project, name, capsys)
    record, _ = graded(project, "", capsys)
    checks = {c.name: c for c in record.checks}
    assert record.verdict == "unjudged", record.checks
    assert checks["message_content"].status == "not_run" and checks["message_content"].hard
    assert f"3 model call(s)' {side} unrecorded" in checks["message_content"].reason
    shutil.rmtree(project / "transcripts")
    imported(project, "openinference_openai.jsonl", capsys)
    assert graded(project, "", capsys)[0].verdict == "pass"


def test_adk_event_only_content_is_read_from_the_log_records(project: Path, capsys):
    [t], err = imported(project, "adk_event_only.jsonl", capsys)
    assert "no message content" not in err
    assert users(t) == ADK_USERS
    assert [e.text for e in t.events if isinstance(e, AgentMessage)] == [
        "Order A123 was delivered. What else?", "The refund of 49.90 is issued."]
    assert calls(t) == ADK_CALLS


def test_openai_v2_event_content_is_read_from_the_log_events(project: Path, capsys):
    [t], err = imported(project, "openai_v2_event_only.jsonl", capsys)
    assert "no message content" not in err
    assert users(t) == ["where is my order A123?", "thanks!"]
    assert calls(t) == ["lookup_order"]
    [result] = [e for e in t.events if isinstance(e, ToolResult)]
    assert result.ok and result.result == {"order_id": "A123", "status": "delivered"}
    assert [e.text for e in t.events if isinstance(e, AgentMessage)] == [
        "Order A123 was delivered yesterday.", "You are welcome."]
    assert t.agent_context["system_prompt"] == "You are a support agent."


def test_openinference_spans_from_the_real_instrumentation_import(project: Path, capsys):
    [t], err = imported(project, "openinference_openai.jsonl", capsys)
    assert users(t) == ["where is my order A123?", "thanks!"] and calls(t) == ["lookup_order"]


def test_adk_function_responses_add_no_user_turn(project: Path, capsys):
    [t], err = imported(project, "adk_span_only.jsonl", capsys, spans_only=True)
    assert users(t) == ADK_USERS
    assert "(3 user turns, 3 tool calls)" in err
    assert [(e.name, e.turn) for e in t.events if isinstance(e, ToolCall)] == [
        ("lookup_order", 1), ("issue_refund", 2), ("issue_refund", 3)]


def test_promote_of_an_adk_trace_writes_no_empty_user_line(project: Path, capsys):
    imported(project, "adk_span_only.jsonl", capsys, spans_only=True)
    assert main(["promote", "prod", "1", "--domain", "retail", "--out", "draft.yaml"]) == 0
    text = (project / "draft.yaml").read_text()
    assert '- ""' not in text
    assert yaml.safe_load(text)["user"]["script"] == ADK_USERS


def test_a_failed_adk_tool_call_is_counted_once(project: Path, capsys):
    [t], _ = imported(project, "adk_span_only.jsonl", capsys, spans_only=True)
    assert calls(t) == ADK_CALLS
    refunds = [e for e in t.events if isinstance(e, ToolResult) and e.name == "issue_refund"]
    assert [e.ok for e in refunds] == [False, True]  # ADK reuses the id issue_refund_0: the retry is its own
    assert "card declined" in str(refunds[0].error) and refunds[1].result == {"order_id": "A123", "refund": "issued"}
    record, _ = graded(project, "expect:\n  rules:\n    - {max_calls: {issue_refund: 2}}\n", capsys)
    assert {c.name: c.status for c in record.checks}["max_calls(issue_refund<=2)"] == "pass"


def test_tool_spans_of_no_conversation_are_reported_not_imported_as_conversations(project: Path, capsys):
    from tests.otel_traces import orphan_tool_trace_file

    orphan_tool_trace_file(project / "spans.json")
    assert main(["import", "otlp", "spans.json", "--run-id", "prod"]) == 0
    err = capsys.readouterr().err
    assert "imported 1 conversations (1 user turns, 0 tool calls)" in err
    assert "2 tool span(s) (sync_inventory) in 2 trace(s) belong to no conversation" in err
    [t] = [r.transcript for r in RunStore(project / "transcripts" / "prod").records()]
    assert users(t) == ["hello"]


def test_tool_spans_without_ids_answer_the_call_made_under_their_parent(project: Path, capsys):
    from tests.otel_traces import parallel_agents_trace_file

    parallel_agents_trace_file(project / "spans.json")
    assert main(["import", "otlp", "spans.json", "--run-id", "prod"]) == 0
    [t] = [r.transcript for r in RunStore(project / "transcripts" / "prod").records()]
    asked = {e.call_id: e.arguments["q"] for e in t.events if isinstance(e, ToolCall) and e.arguments}
    answered = {e.call_id: e.result["found"] for e in t.events if isinstance(e, ToolResult)}
    assert len(asked) == 2 and answered == asked


def test_promote_of_a_trace_without_content_says_so_and_scripts_no_empty_turns(project: Path, capsys):
    imported(project, "openai_v2_default.jsonl", capsys)
    assert main(["promote", "prod", "1", "--domain", "retail", "--out", "draft.yaml"]) == 0
    assert "carries no message content" in capsys.readouterr().err
    text = (project / "draft.yaml").read_text()
    assert '- ""' not in text and "script" not in yaml.safe_load(text)["user"]


def test_gemini_shaped_function_responses_add_no_user_turn():
    from simlab.traces.otlp import genai_messages

    messages = genai_messages([
        {"role": "user", "parts": [{"text": "refund A123"}]},
        {"role": "model", "parts": [{"function_call": {"id": "f1", "name": "issue_refund", "args": {"id": "A123"}}}]},
        {"role": "user", "parts": [{"function_response": {"id": "f1", "name": "issue_refund",
                                                          "response": {"ok": True}}}]},
        {"role": "model", "parts": [{"text": "Done."}]}])
    assert [(m["role"], m.get("content")) for m in messages] == [
        ("user", "refund A123"), ("assistant", ""), ("tool", '{"ok": true}'), ("assistant", "Done.")]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "issue_refund", "arguments": '{"id": "A123"}'}


def test_adk_parallel_sub_agents_reusing_a_call_id_get_their_own_results(project: Path, capsys):
    # google-adk's ParallelAgent: both sub-agents' model outputs call search with id search_0
    [t], _ = imported(project, "adk_parallel.jsonl", capsys, spans_only=True)
    asked = {e.call_id: e.arguments["q"] for e in t.events if isinstance(e, ToolCall) and e.arguments}
    answered = {e.call_id: e.result["found"] for e in t.events if isinstance(e, ToolResult)}
    assert sorted(asked.values()) == ["flights", "hotels"] and answered == asked


def test_two_adk_sessions_in_one_trace_are_two_conversations(project: Path, capsys):
    """A batch job's span around two sessions (two users): one trace, two gen_ai.conversation.id;
    each conversation keeps its own turns, calls and plain-text tool results, in any script."""
    found, _ = imported(project, "adk_two_sessions.jsonl", capsys)
    by_id = {t.observed.conversation_id if t.observed else "": t for t in found}
    assert sorted(by_id) == ["session-a", "session-b"], sorted(by_id)
    a, b = by_id["session-a"], by_id["session-b"]
    assert users(a) == ["où est ma commande A123?"] and users(b) == ["我的订单 B456？"]
    assert calls(a) == calls(b) == ["lookup_order"]
    [ra], [rb] = ([e for e in t.events if isinstance(e, ToolResult)] for t in (a, b))
    assert "A123: geliefert ✓" in str(ra.result) and "B456: geliefert ✓" in str(rb.result)
    replies = [[e.text for e in t.events if isinstance(e, AgentMessage)] for t in (a, b)]
    assert replies == [["Réponse : Bestellung A123: geliefert ✓ 📦"], ["Réponse : Bestellung B456: geliefert ✓ 📦"]]


def test_adk_quoting_another_agents_events_adds_no_user_turn(project: Path, capsys):
    """ADK shows a sub-agent what the agent before it did as user-role "For context: …" messages:
    the user never said them; the conversation keeps the user's two turns and both agents' calls."""
    [t], _ = imported(project, "adk_transfer.jsonl", capsys)
    assert users(t) == ["I want a refund for A123", "yes, refund it"]
    assert calls(t) == ["transfer_to_agent", "lookup_order"]
    assert [e.text for e in t.events if isinstance(e, AgentMessage)] == [
        "A123 can be refunded.", "Done: the refund is on its way."]
    assert "For context" not in t.model_dump_json()


@pytest.mark.parametrize("name", ["openai_v2_plain_tools.jsonl", "openinference_plain_tools.jsonl"])
def test_plain_text_tool_results_and_any_script_import_as_written(project: Path, capsys, name: str):
    [t], _ = imported(project, name, capsys)
    assert users(t) == ["¿Dónde está mi pedido A123? 📦", "danke schön"] and calls(t) == ["lookup_order"]
    [result] = [e for e in t.events if isinstance(e, ToolResult)]
    assert result.ok and result.result == "Bestellung A123: geliefert ✓ (not JSON)"


def test_openllmetry_spans_import(project: Path, capsys):
    """traceloop's opentelemetry-instrumentation-openai (OpenLLMetry), latest GenAI conventions."""
    [t], err = imported(project, "openllmetry_openai.jsonl", capsys)
    assert users(t) == ["where is my order A123?", "thanks!"] and calls(t) == ["lookup_order"]
    assert "carry no message content" not in err


def test_openllmetry_spans_without_content_say_which_switch_turns_it_on(project: Path, capsys):
    [t], err = imported(project, "openllmetry_no_content.jsonl", capsys)
    assert users(t) == [] and "carry no message content" in err
    assert "TRACELOOP_TRACE_CONTENT" in err


def test_an_agents_sdk_handoff_traced_by_openinference_is_the_models_transfer_call_once(project: Path, capsys):
    """OpenInference writes the Agents SDK's handoff as a TOOL span "handoff to billing" (input: the
    agent it left, output: the agent it reached): the same step as the model's transfer_to_billing
    call, not a second call with the text "triage" as its arguments."""
    [t], _ = imported(project, "openinference_agents_handoff.jsonl", capsys)
    assert users(t) == ["I want a refund for A123", "yes please"]
    assert calls(t) == ["transfer_to_billing", "lookup_order"]
    assert [e.text for e in t.events if isinstance(e, AgentMessage)] == [
        "A123 can be refunded. Shall I?", "Done: the refund is on its way."]


@pytest.mark.parametrize("bad", ['{"intValue": "-5"}', '{"intValue": "1180591620717411303424"}',
                                 '{"doubleValue": 1e30}'])
def test_an_imported_token_count_no_call_can_have_is_unknown(project: Path, capsys, bad: str):
    """A trace's token count goes through the one bound a provider's does (transcript/model.token_count):
    a negative or impossible figure is unknown, never a figure that overflows the run's head."""
    text = (FIXTURES / "openllmetry_openai.jsonl").read_text()
    (project / "bad.jsonl").write_text(text.replace(
        '"gen_ai.usage.input_tokens", "value": {"intValue": "12"}',
        f'"gen_ai.usage.input_tokens", "value": {bad}'))
    assert main(["import", "otlp", "bad.jsonl", "--run-id", "prod"]) == 0
    [t] = [r.transcript for r in RunStore(project / "transcripts" / "prod").records()]
    counts = [e.usage.input_tokens for e in t.events if getattr(e, "usage", None) is not None]
    assert None in counts and all(c is None or 0 <= c <= 10**12 for c in counts), counts
    assert main(["report", "prod", "--json"]) in (0, 3)
