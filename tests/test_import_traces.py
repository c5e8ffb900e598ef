"""``simlab import``: production conversations (OpenAI message JSONL, OTLP JSON with GenAI semconv and
OpenInference spans, written by the real OpenTelemetry SDK) become a run of observed trials, PII
masked before anything is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.runner.store import RunStore
from simlab.transcript import Transcript
from tests.otel_traces import genai_trace_file, openinference_trace_file


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def transcripts(folder: Path) -> list[Transcript]:
    return [r.transcript for r in RunStore(folder).records()]


def shape(t: Transcript) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in t.events:
        if e.type in ("user", "agent"):
            out.append((e.type, e.turn, e.text))
        elif e.type == "tool_call":
            out.append((e.type, e.turn, e.name, e.arguments))
        elif e.type == "tool_result":
            out.append((e.type, e.turn, e.name, e.ok, e.result if e.ok else e.error))
        elif e.type == "model_call":
            out.append((e.type, e.turn, e.model, e.usage.input_tokens, e.usage.output_tokens))
    return out


def test_an_otlp_file_from_the_sdk_imports_to_the_right_transcript(project: Path, capsys):
    source = genai_trace_file(project / "spans.json")
    assert json.loads(source.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]  # the SDK's own OTLP JSON
    assert main(["import", "otlp", str(source), "--run-id", "prod"]) == 0
    assert "imported 1 conversations (2 user turns, 2 tool calls)" in capsys.readouterr().err
    [t] = transcripts(project / "transcripts" / "prod")
    assert shape(t) == [
        ("user", 1, "my order A123 arrived broken, mail me at [REDACTED:email]"),
        ("model_call", 1, "gpt-4o", 100, 10),
        ("tool_call", 1, "lookup_order", {"order_id": "A123"}),
        ("tool_result", 1, "lookup_order", True, {"status": "delivered"}),
        ("model_call", 1, "gpt-4o", 150, 12),
        ("agent", 1, "I see order A123. What would you like?"),
        ("user", 2, "refund it to my card"),
        ("model_call", 2, "gpt-4o", 200, 15),
        ("tool_call", 2, "issue_refund", {"order_id": "A123", "amount": 49.9}),
        ("tool_result", 2, "issue_refund", False, '{"error": "card declined"}'),
        ("model_call", 2, "gpt-4o", 250, 9),
        ("agent", 2, "Your refund of 49.90 is issued."),
    ]
    assert t.termination.reason.value == "observed" and t.simulator.kind == "observed"
    assert t.agent.ref == "support-bot" and t.agent_context == {"system_prompt": "You are a retail support agent."}
    assert t.observed is not None and t.observed.conversation_id == "conv-42" and t.observed.format == "otlp"
    assert t.observed.negative_feedback and t.observed.feedback == ["thumbs_down"] and t.observed.redactions == 1
    assert t.final_state is None and t.domain == "observed"
    assert t.usage_by_role()["agent"].input_tokens == 700


def test_an_openinference_file_imports_to_the_right_transcript(project: Path):
    source = openinference_trace_file(project / "oi.json")
    assert main(["import", "otlp", str(source), "--run-id", "oi"]) == 0
    [t] = transcripts(project / "transcripts" / "oi")
    assert shape(t) == [
        ("user", 1, "what is the status of order B7? call me on [REDACTED:phone]"),
        ("model_call", 1, "claude-x", 30, 5),
        ("tool_call", 1, "lookup_order", {"order_id": "B7"}),
        ("tool_result", 1, "lookup_order", True, {"status": "shipped"}),
        ("model_call", 1, "claude-x", 50, 7),
        ("agent", 1, "Order B7 has shipped."),
    ]
    assert t.observed is not None and t.observed.conversation_id == "s-9" and not t.observed.negative_feedback
    assert t.agent_context == {"system_prompt": "Be brief."}


CONVERSATIONS = [
    {"id": "c1", "model": "gpt-4o", "feedback": {"score": -1}, "messages": [
        {"role": "system", "content": "You are a retail agent."},
        {"role": "user", "content": "refund A123, card 4242 4242 4242 4242"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "issue_refund", "arguments": '{"order_id": "A123", "amount": 49.9}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"refund_id": "R1"}'},
        {"role": "assistant", "content": "Done, refunded. Your code is SECRET-7."}]},
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}],
    {"id": "dana@example.com", "messages": [{"role": "user", "content": "hello"}]},  # an id can hold PII too
]


def write_jsonl(path: Path, items: list[Any]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def test_openai_jsonl_imports_one_trial_per_line_with_pii_masked(project: Path):
    source = write_jsonl(project / "convs.jsonl", CONVERSATIONS)
    (project / "pii.yaml").write_text("patterns: {code: 'SECRET-\\d+'}\nnever_reveal: [A123]\n")
    assert main(["import", "openai", str(source), "--run-id", "prod", "--pii", "pii.yaml"]) == 0
    folder = project / "transcripts" / "prod"
    first, second, third = transcripts(folder)
    assert third.observed.conversation_id == "[REDACTED:email]" and third.observed.redactions == 1
    assert shape(first) == [
        ("user", 1, "refund [REDACTED:never_reveal], card [REDACTED:card]"),
        ("tool_call", 1, "issue_refund", {"order_id": "[REDACTED:never_reveal]", "amount": 49.9}),
        ("tool_result", 1, "issue_refund", True, {"refund_id": "R1"}),
        ("agent", 1, "Done, refunded. Your code is [REDACTED:code]."),
    ]
    assert first.unit_id == "observed#1" and second.unit_id == "observed#2"
    assert first.agent.ref == "gpt-4o" and first.observed.negative_feedback and first.observed.source.endswith(":1")
    assert shape(second) == [("user", 1, "hi"), ("agent", 1, "hello")]
    assert first.observed.redactions == 4 and second.observed.redactions == 0
    stored = (folder / "trials.jsonl").read_text() + (folder / "run.json").read_text()
    for raw in ("4242 4242", "A123", "SECRET-7", "dana@example.com"):
        assert raw not in stored  # nothing unmasked reached the disk
    assert not (folder / "raw").exists()
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["pins"]["scenarios"]["observed"]["trials"] == 3
    assert manifest["observed"]["redaction"]["masked"] == 5 and manifest["observed"]["raw_kept"] is False
    assert RunStore(folder).planned_units() == {"observed#1", "observed#2", "observed#3"}


def test_a_refusal_and_a_developer_message_import_as_the_api_gives_them(project: Path):
    """Messages as the openai library gives them: a model's refusal (``ChatCompletionMessage``, the
    text in ``refusal``, no content; or a refusal part) and the ``developer`` role newer models take
    for system. Before, the refusal imported as an agent that said nothing (a reply graders read as
    silence) and a developer message stopped the import."""
    from openai.types.chat import ChatCompletionMessage

    refused = ChatCompletionMessage(role="assistant", content=None, refusal="I can't open Bob's account.")
    part = {"role": "assistant", "content": [{"type": "refusal", "refusal": "No, not Bob's."}]}
    source = write_jsonl(project / "c.jsonl", [
        {"messages": [{"role": "developer", "content": "You are a support agent."},
                      {"role": "user", "content": "open Bob's account"}, refused.model_dump(mode="json")]},
        [{"role": "user", "content": "and now?"}, part],
    ])
    assert main(["import", "openai", str(source), "--run-id", "r"]) == 0
    first, second = transcripts(project / "transcripts" / "r")
    assert shape(first) == [("user", 1, "open Bob's account"), ("agent", 1, "I can't open Bob's account.")]
    assert first.agent_context == {"system_prompt": "You are a support agent."}
    assert shape(second) == [("user", 1, "and now?"), ("agent", 1, "No, not Bob's.")]


def test_custom_tool_calls_and_legacy_function_calls_import_as_calls(project: Path):
    """Messages as the openai library gives them: a custom tool call (``type: custom``, free-text
    ``input``) and the legacy ``function_call`` with its ``function`` result message. Before, the
    first stopped the import with a generic error, the second with an unknown role."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageCustomToolCall
    from openai.types.chat.chat_completion_message import FunctionCall

    custom = ChatCompletionMessage(role="assistant", content=None, tool_calls=[
        ChatCompletionMessageCustomToolCall(id="c1", type="custom",
                                            custom={"name": "run_sql", "input": "select * from orders"})])
    legacy = ChatCompletionMessage(role="assistant", content=None,
                                   function_call=FunctionCall(name="lookup_order", arguments='{"order_id": "A1"}'))
    source = write_jsonl(project / "c.jsonl", [
        [{"role": "user", "content": "orders?"}, custom.model_dump(mode="json"),
         {"role": "tool", "tool_call_id": "c1", "content": "[]"}, {"role": "assistant", "content": "None."}],
        [{"role": "user", "content": "A1?"}, legacy.model_dump(mode="json"),
         {"role": "function", "name": "lookup_order", "content": '{"status": "shipped"}'},
         {"role": "assistant", "content": "Shipped."}],
    ])
    assert main(["import", "openai", str(source), "--run-id", "r"]) == 0
    first, second = transcripts(project / "transcripts" / "r")
    assert shape(first) == [("user", 1, "orders?"), ("tool_call", 1, "run_sql", None),
                            ("tool_result", 1, "run_sql", True, []), ("agent", 1, "None.")]
    [call] = [e for e in first.events if e.type == "tool_call"]
    assert call.raw_arguments == "select * from orders"  # free text, kept as given
    assert shape(second) == [("user", 1, "A1?"), ("tool_call", 1, "lookup_order", {"order_id": "A1"}),
                             ("tool_result", 1, "lookup_order", True, {"status": "shipped"}),
                             ("agent", 1, "Shipped.")]
    calls = [e.call_id for e in second.events if e.type in ("tool_call", "tool_result")]
    assert len(set(calls)) == 1  # the result is paired with its call


def test_the_raw_file_is_kept_only_when_asked(project: Path):
    source = write_jsonl(project / "convs.jsonl", CONVERSATIONS)
    assert main(["import", "openai", str(source), "--run-id", "kept", "--keep-raw"]) == 0
    assert (project / "transcripts" / "kept" / "raw" / "convs.jsonl").read_text() == source.read_text()


def test_an_imported_run_reports_and_views_like_any_run(project: Path, capsys):
    source = write_jsonl(project / "convs.jsonl", CONVERSATIONS)
    assert main(["import", "openai", str(source), "--run-id", "prod"]) == 0
    assert main(["report", "prod", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["run_id"] == "prod" and summary["ungraded"] == 3
    assert summary["completeness"] == {"planned": 3, "finished": 3, "unplanned": 0, "manifest": True}
    assert main(["report", "prod"]) == 0
    assert "3 trials are not graded: run `simlab grade-traces prod --rules RULES.yaml`" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [
    ("not json\n", "bad.jsonl:1: not JSON"),
    ('{"messages": [{"role": "bot", "content": "x"}]}\n',
     "bad.jsonl:1: messages[0]: expected an object with role system/developer/user/assistant/tool/function (got 'bot')"),
    ('[{"role": "assistant", "tool_calls": [{"id": 1}]}]\n',
     "bad.jsonl:1: messages[0].tool_calls[0]: expected {id, function: {name, arguments}}"),
    ("\n", "bad.jsonl: no conversation found"),
])
def test_bad_jsonl_is_a_clear_error(project: Path, capsys, content: str, message: str):
    (project / "bad.jsonl").write_text(content)
    assert main(["import", "openai", "bad.jsonl"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (project / "transcripts").exists()


def test_bad_otlp_and_bad_options_are_clear_errors(project: Path, capsys):
    (project / "x.json").write_text('{"spans": []}')
    assert main(["import", "otlp", "x.json"]) == 2
    assert "x.json: not OTLP JSON: expected an object with 'resourceSpans' (a list)" in capsys.readouterr().err
    (project / "pii.yaml").write_text("patterns: {x: '('}\n")
    write_jsonl(project / "c.jsonl", CONVERSATIONS)
    assert main(["import", "openai", "c.jsonl", "--pii", "pii.yaml"]) == 2
    assert "pii.yaml:1: patterns: x: not a valid regular expression" in capsys.readouterr().err
    assert main(["import", "openai", "c.jsonl", "--scenario-id", "Bad Id"]) == 2
    assert main(["import", "openai", "c.jsonl", "--run-id", "a"]) == 0
    assert main(["import", "openai", "c.jsonl", "--run-id", "a"]) == 2
    assert "a run is already there; write under a new run id" in capsys.readouterr().err


def test_messages_cut_short_by_an_attribute_length_limit_are_a_clear_error(project: Path, capsys):
    """The SDK's attribute length limit (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) cuts gen_ai.input.messages
    short: the JSON no longer parses. Before, such a call read as no message at all, and the import
    said "imported 1 conversations (1 user turns…)" of a conversation of two, exit 0."""
    source = genai_trace_file(project / "spans.json", max_attribute_length=300)
    values = [a["value"].get("stringValue", "") for line in [json.loads(source.read_text())]
              for s in line["resourceSpans"][0]["scopeSpans"][0]["spans"] for a in s["attributes"]
              if a["key"] == "gen_ai.input.messages"]
    assert values and max(len(v) for v in values) == 300  # the SDK cut them
    assert main(["import", "otlp", str(source), "--run-id", "cut"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {source}: span \"chat gpt-4o\" (trace "), err
    assert "gen_ai.input.messages: not a JSON array of messages but 300 characters of JSON cut short" in err
    assert "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in err and "Traceback" not in err
    assert "dana@example.com" not in err  # the value itself is never shown: the import would mask it
    assert not (project / "transcripts" / "cut").exists()
    assert main(["import", "otlp", str(genai_trace_file(project / "whole.json", 4096)), "--run-id", "w"]) == 0


@pytest.mark.parametrize(("edit", "says"), [
    (lambda span: span["attributes"][0].update(value={"intValue": "abc"}), 'intValue "abc" is not an integer'),
    (lambda span: span.update(endTimeUnixNano="NaN"), 'endTimeUnixNano "NaN" is not an integer'),
    (lambda span: span.update(status="ERROR"), 'status holds "ERROR", not an object'),
    (lambda span: span.update(events=7), "events holds 7, not a list"),
    (lambda span: span["attributes"][0].update(value={"arrayValue": {"values": True}}),
     "arrayValue holds true, not a list of values"),
    (lambda span: span["attributes"][0].update(value={"doubleValue": "many"}), 'doubleValue "many" is not a number'),
])
def test_values_the_otlp_json_mapping_does_not_allow_are_clear_errors(project: Path, capsys, edit, says: str):
    """Each crashed the import with an internal error (int(), iteration, .get on a string)."""
    source = genai_trace_file(project / "spans.json")
    document = json.loads(source.read_text())
    edit(document["resourceSpans"][0]["scopeSpans"][0]["spans"][0])
    source.write_text(json.dumps(document))
    assert main(["import", "otlp", str(source), "--run-id", "bad"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {source}: not OTLP JSON as an exporter writes it: span "), err
    assert says in err and "internal error" not in err and "Traceback" not in err


def test_a_reused_call_id_is_made_unique_and_each_result_pairs_with_its_own_call(project: Path):
    """A local model answering "call_0" in every reply: each call keeps its own result."""
    from simlab.graders.policy import calls_of

    call = {"id": "call_0", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\": \"A1\"}"}}
    messages = [{"role": "user", "content": "where is A1?"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_0", "content": "{\"error\": \"busy\"}"},
                {"role": "assistant", "content": None, "tool_calls": [{**call, "function": {**call["function"], "name": "find_order"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "{\"status\": \"shipped\"}"},
                {"role": "assistant", "content": "It shipped."}]
    source = write_jsonl(project / "convs.jsonl", [{"messages": messages}])
    assert main(["import", "openai", str(source), "--run-id", "prod"]) == 0
    [t] = transcripts(project / "transcripts" / "prod")
    pairs = [(c.call.name, c.call.call_id, c.result.name if c.result else None, c.result.result if c.result else None)
             for c in calls_of(t)]
    assert pairs[0][1] != pairs[1][1]
    assert [(p[0], p[2], p[3]) for p in pairs] == [("lookup_order", "lookup_order", {"error": "busy"}),
                                                   ("find_order", "find_order", {"status": "shipped"})]


def test_keys_and_tokens_in_an_import_are_masked_like_a_runs_own_secrets(project: Path):
    keys = ["sk-proj-4f9aZ81kLmNoPqRs", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "AKIAIOSFODNN7EXAMPLE",
            "AIzaSyA1234567890abcdefghijklmnopqrstu", "xoxb-1234567890-abcdefghij"]
    said = "my keys: " + ", ".join(keys) + "; and the header was Bearer eyJhbGciOiJIUzI1NiJ9.payload"
    source = write_jsonl(project / "keys.jsonl", [{"messages": [{"role": "user", "content": said},
                                                                {"role": "assistant", "content": "noted"}]}])
    assert main(["import", "openai", str(source), "--run-id", "keys"]) == 0
    stored = (project / "transcripts" / "keys" / "trials.jsonl").read_text()
    assert not [k for k in [*keys, "eyJhbGciOiJIUzI1NiJ9"] if k in stored]
    [t] = transcripts(project / "transcripts" / "keys")
    assert t.events[0].text.count("[REDACTED:secret]") == 6 and t.observed.redactions == 6


@pytest.mark.parametrize("run", ["a", "1", "a.", "a@", "@a", "1 ", "+1 ", "-", "x@y."])
def test_masking_is_linear_in_the_text(run: str):
    """1 MB of what made the e-mail pattern scan once per position (10 s on 100 KB before) is
    masked in one pass; the bench (bench/bench_pii.py) measures the time."""
    from simlab.traces.pii import Redactor

    text = run * (1_000_000 // len(run)) + " write to dana@example.com"
    masked = Redactor().text(text)
    assert masked.endswith(" write to [REDACTED:email]")  # masked, after a megabyte of the worst case


def test_a_gate_on_an_imported_run_not_graded_advises_only_grade_traces(project: Path, capsys):
    """An imported run's trials were never played: ``simlab grade`` cannot grade them (they have no
    scenario), ``simlab grade-traces`` does. The gate's advice is its origin's (run.json), alone."""
    source = write_jsonl(project / "convs.jsonl", CONVERSATIONS)
    assert main(["import", "openai", str(source), "--run-id", "prod"]) == 0
    (project / "prod-gates.yaml").write_text(
        'id: prod\nscenarios: []\ngates:\n  - "policy_violation_rate <= 0.1"\n'
    )
    capsys.readouterr()
    assert main(["gate", "prod", "--suite", "prod-gates.yaml"]) == 3
    text = " ".join(capsys.readouterr().out.split())
    assert "3 of 3 trials are not graded" in text, text
    assert "simlab grade-traces prod --rules RULES.yaml" in text and "simlab grade prod" not in text, text


@pytest.mark.parametrize("tool_spans", [False, True], ids=["messages", "tool spans"])
def test_calls_and_results_without_ids_pair_in_order(project: Path, tool_spans: bool):
    """The GenAI conventions allow a tool call and its response without an id (Gemini gives none):
    each response answers the earliest call still unanswered. Before, every result was paired
    with no call, so the policy rule below saw no successful check and failed a correct agent."""
    from simlab.graders.policy import calls_of
    from tests.otel_traces import no_id_trace_file

    source = no_id_trace_file(project / "spans.json", tool_spans=tool_spans)
    assert main(["import", "otlp", str(source), "--run-id", "prod"]) == 0
    [t] = transcripts(project / "transcripts" / "prod")
    pairs = [(c.call.name, c.result.name if c.result else None, c.result.result if c.result else None)
             for c in calls_of(t)]
    assert pairs == [("check_refund_policy", "check_refund_policy", {"allowed": True}),
                     ("issue_refund", "issue_refund", {"refund_id": "R1"})]
    assert all(e.call_id and e.call_id != "None" for e in t.events if e.type in ("tool_call", "tool_result"))
    (project / "online.yaml").write_text("expect: {rules: [{before: [check_refund_policy, issue_refund]}]}\n")
    assert main(["grade-traces", "prod", "--rules", "online.yaml", "--out", "g"]) == 0
    [graded] = RunStore(project / "transcripts" / "g").records()
    assert graded.verdict == "pass"


def test_openai_results_without_ids_pair_and_a_result_of_no_call_is_said(project: Path, capsys):
    """OpenAI messages as the library gives them, one tool message without ``tool_call_id`` (it
    answers the earliest open call of the tool it names) and one whose id no call has (kept,
    paired with none, and said); an audio reply's transcript is what the agent said."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
    from openai.types.chat.chat_completion_audio import ChatCompletionAudio
    from openai.types.chat.chat_completion_message_function_tool_call import Function

    asks = ChatCompletionMessage(role="assistant", content=None, tool_calls=[
        ChatCompletionMessageFunctionToolCall(id="c1", type="function",
                                              function=Function(name="lookup_order", arguments='{"order_id": "A1"}')),
        ChatCompletionMessageFunctionToolCall(id="c2", type="function",
                                              function=Function(name="check_stock", arguments='{}'))])
    spoken = ChatCompletionMessage(role="assistant", content=None, audio=ChatCompletionAudio(
        id="a1", data="UklGRg==", expires_at=0, transcript="It shipped yesterday."))
    source = write_jsonl(project / "c.jsonl", [{"id": "conv-9", "messages": [
        {"role": "user", "content": "A1?"}, asks.model_dump(mode="json"),
        {"role": "tool", "name": "check_stock", "content": '{"left": 3}'},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        {"role": "tool", "tool_call_id": "zzz", "content": '{"x": 1}'},
        spoken.model_dump(mode="json")]}])
    assert main(["import", "openai", str(source), "--run-id", "r"]) == 0
    assert "conversation conv-9): 1 tool result(s) answer no tool call of the conversation (zzz)" in (
        capsys.readouterr().err)
    [t] = transcripts(project / "transcripts" / "r")
    from simlab.graders.policy import calls_of

    assert [(c.call.name, c.result.result if c.result else None) for c in calls_of(t)] == [
        ("lookup_order", {"status": "shipped"}), ("check_stock", {"left": 3})]
    assert shape(t)[-1] == ("agent", 1, "It shipped yesterday.")


def test_credentials_in_tool_arguments_are_masked_as_an_object_and_as_json_text(project: Path):
    """Arguments given as an object hold a key and its value apart, so no pattern of one string
    saw ``api_key`` beside its value; as JSON text, ``"token": "…"`` had no ``=`` to match."""
    call = {"id": "c1", "type": "function", "function": {"name": "connect", "arguments": {
        "order_id": "A1", "api_key": "plainsecretvalue1", "nested": [{"password": "hunter22x"}]}}}
    text_call = {"id": "c2", "type": "function", "function": {
        "name": "connect", "arguments": '{"order_id": "A2", "access_token": "tok_abcdefgh", "max_tokens": "64"}'}}
    source = write_jsonl(project / "k.jsonl", [{"messages": [
        {"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": [call, text_call]},
        {"role": "assistant", "content": "done"}]}])
    assert main(["import", "openai", str(source), "--run-id", "k"]) == 0
    stored = (project / "transcripts" / "k" / "trials.jsonl").read_text()
    assert not [s for s in ("plainsecretvalue1", "hunter22x", "tok_abcdefgh") if s in stored]
    [t] = transcripts(project / "transcripts" / "k")
    first, second = [e for e in t.events if e.type == "tool_call"]
    assert first.arguments == {"order_id": "A1", "api_key": "[REDACTED:secret]",
                               "nested": [{"password": "[REDACTED:secret]"}]}
    assert second.arguments == {"order_id": "A2", "access_token": "[REDACTED:secret]", "max_tokens": "64"}


def test_a_conversation_of_no_message_is_left_out_and_said(project: Path, capsys):
    """An empty message list was imported as a trial (unjudged, with advice about content capture)."""
    source = write_jsonl(project / "e.jsonl", [{"id": "none", "messages": []}, [],
                                               [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]])
    assert main(["import", "openai", str(source), "--run-id", "e"]) == 0
    err = capsys.readouterr().err
    assert "imported 1 conversations" in err and "2 conversation(s) hold no message" in err and "e.jsonl:1" in err
    assert len(transcripts(project / "transcripts" / "e")) == 1
    only_empty = write_jsonl(project / "f.jsonl", [{"id": "none", "messages": []}])
    assert main(["import", "openai", str(only_empty), "--run-id", "f"]) == 2
    assert "no conversation holds a message: nothing to import" in capsys.readouterr().err
