"""Pure rendering of events, checks, summaries and exports: no app needed."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from simlab.transcript import (
    AgentMessage,
    Check,
    ErrorEvent,
    InvalidCall,
    ModelCall,
    Signal,
    Termination,
    TerminationReason,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from simlab.tui.export import export_path, transcript_markdown
from simlab.tui.render import (
    clean,
    event_blocks,
    event_text,
    fold,
    literal,
    pretty_json,
    termination_text,
    tool_call_title,
    tool_result_text,
    verdict_text,
)
from simlab.tui.render_checks import check_detail, check_line, check_order, diff_table
from simlab.tui.trial_diff import differences, first_divergence
from tests.sample_runs import MARKUP_TEXT, sample_record


def plain(renderable: object, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(renderable)
    return console.export_text()


def test_literal_keeps_markup_as_typed() -> None:
    text = literal(MARKUP_TEXT)
    assert "[bold]not bold[/bold]" in text.plain
    assert "[link=https://evil.example]click me[/link]" in text.plain
    assert text.spans == []  # nothing was interpreted as a style or a link


def test_control_characters_become_visible_escapes() -> None:
    text = literal("a\x1b[31mred\x1b[0m\x07\rb\u009bc\td")
    assert "\x1b" not in text.plain and "\x07" not in text.plain and "\r" not in text.plain
    assert "\\x1b[31mred\\x1b[0m" in text.plain
    assert "\\x07" in text.plain and "\\x0d" in text.plain and "\\x9b" in text.plain
    assert "\t" not in text.plain  # tabs expanded
    assert clean("line 1\nline 2") == "line 1\nline 2"  # newlines stay


def test_user_and_agent_messages_are_told_apart() -> None:
    user = event_text(UserMessage(turn=2, text="hello [b]x[/b]"))
    agent = event_text(AgentMessage(turn=2, text="hi"))
    assert user.plain.startswith("USER  turn 2\nhello [b]x[/b]")
    assert agent.plain.startswith("AGENT  turn 2")
    assert user.spans[0].style != agent.spans[0].style  # the labels differ…
    body = user.plain.index("hello")
    assert not any(span.end > body and span.style for span in user.spans)  # …the words are not styled


def test_signals_errors_invalid_calls_and_usage() -> None:
    assert "user signal: give_up" in event_text(Signal(turn=3, role="user", signal="give_up")).plain
    assert "transferred" in event_text(Signal(turn=3, role="agent", signal="transfer")).plain
    err = event_text(ErrorEvent(turn=1, source="agent", kind="auth", message="bad key [red]"))
    assert "error from agent (auth)" in err.plain and "bad key [red]" in err.plain
    inv = event_text(InvalidCall(turn=1, call_id="x", name="nope", reason="unknown tool"))
    assert "invalid call nope: unknown tool" in inv.plain
    usage = event_text(ModelCall(turn=1, role="agent", model="m/x", usage=Usage(
        input_tokens=1200, output_tokens=30, cost_usd=None, latency_s=1.5, retries=2, retry_wait_s=3.0))).plain
    assert "in 1,200" in usage and "out 30" in usage and "cost unknown" in usage and "2 retries" in usage


def test_unknown_cost_is_not_zero() -> None:
    from simlab.report.fmt import money

    assert money(None) == "unknown"  # the reports' word: the viewer formats through report/fmt
    assert money(0.01234) == "$0.0123"


def test_tool_call_title_and_body() -> None:
    call = ToolCall(turn=1, call_id="c", name="lookup", arguments={"order_id": "[bold]A1"}, access="write")
    ok = ToolResult(turn=1, call_id="c", name="lookup", ok=True, result={"status": "delivered"})
    bad = ToolResult(turn=1, call_id="c", name="lookup", ok=False, error="no such order")
    title = tool_call_title(call, ok).plain
    assert title.startswith("✓ lookup(order_id=\"[bold]A1\")") and "write" in title and "delivered" in title
    assert tool_call_title(call, bad).plain.startswith("✗ lookup")
    assert tool_call_title(call, None).plain.startswith("… lookup")
    body = tool_result_text(call, bad).plain
    assert "arguments" in body and "error shown to the agent" in body and "no such order" in body
    raw = ToolCall(turn=1, call_id="c", name="lookup", arguments=None, raw_arguments="{not json")
    assert "{not json" in tool_result_text(raw, None).plain


def test_long_results_are_folded() -> None:
    text = pretty_json({f"key{i}": i for i in range(40)})
    folded, hidden = fold(text, max_lines=12)
    assert len(folded.plain.split("\n")) == 12 and hidden == 42 - 12
    short, none = fold(Text("one\ntwo"))
    assert none == 0 and short.plain == "one\ntwo"
    head, cut = fold(Text("x" * 10000), max_chars=100)
    assert len(head.plain) == 100 and cut == 1  # one line, cut short: still reported as folded


def test_event_blocks_pair_calls_with_results() -> None:
    events = [
        UserMessage(turn=1, text="hi"),
        ToolCall(turn=1, call_id="a", name="t"),
        ToolCall(turn=1, call_id="b", name="t"),
        ToolResult(turn=1, call_id="b", name="t", ok=True),
        ToolResult(turn=1, call_id="a", name="t", ok=True),
        ToolResult(turn=1, call_id="orphan", name="t", ok=True),
        AgentMessage(turn=1, text="ok"),
    ]
    assert event_blocks(events) == [(0, None), (1, 4), (2, 3), (5, None), (6, None)]


def test_verdicts_and_termination() -> None:
    assert verdict_text(None).plain == "· not graded"
    assert verdict_text("invalid").plain == "! invalid"
    term = termination_text(Termination(reason=TerminationReason.MAX_TURNS, detail="cap [12]", turn=12))
    assert term.plain == "— ended: max_turns (cap [12]) at turn 12 —"


def test_checks_are_ordered_failed_first_and_explain_themselves() -> None:
    checks = [
        Check(name="a", kind="state", status="pass"),
        Check(name="soft", kind="trajectory", status="fail", hard=False),
        Check(name="b [x]", kind="policy", status="fail", reason="why\nnot", event=4),
        Check(name="c", kind="rubric", status="not_run"),
        Check(name="d", kind="rubric", status="error"),
    ]
    assert check_order(checks) == [2, 1, 4, 3, 0]
    line = check_line(checks[2]).plain
    assert line.startswith("✗ b [x]") and "→ event 4" in line and "why not" in line
    assert "\n" not in check_line(checks[2], with_reason=False).plain
    assert "soft" in check_line(checks[1]).plain


def test_state_diff_pane() -> None:
    entries = [
        {"path": "refunds[0].method", "change": "changed", "expected": "original_card", "actual": "store_credit"},
        {"path": "refunds[1]", "change": "unexpected", "actual": {"id": "R-2"}},
        {"path": "approvals", "change": "length", "expected": 1, "actual": 0},
        {"path": "outbox[0]", "change": "missing", "expected": "mail"},
    ]
    out = plain(diff_table(entries))
    assert 'refunds[0].method\n  - "original_card"\n  + "store_credit"' in out
    assert "refunds[1]\n  - missing\n  + {\"id\": \"R-2\"}" in out
    assert "  - 1 items\n  + 0 items" in out and 'outbox[0]\n  - "mail"\n  + missing' in out
    check = Check(name="expected_state", kind="state", status="fail", reason="4 differences",
                  details={"diff": ["x"], "diff_entries": entries})
    detail = plain(check_detail(check))
    assert "state diff: 4 difference(s)" in detail and "refunds[1]" in detail
    lines_only = Check(name="s", kind="state", status="fail", details={"diff": ["a: 1 → 2 [b]"]})
    assert "a: 1 → 2 [b]" in plain(check_detail(lines_only))


def test_markdown_export_is_literal_and_fenced() -> None:
    record = sample_record("r", "refund-damaged", 3)
    record.transcript.events[0] = UserMessage(turn=1, text="look: ```` fence\x1b[0m")
    md = transcript_markdown(record)
    assert md.startswith("# refund-damaged\\#3")
    assert "**User** (turn 1)" in md and "> look: \\`\\`\\`\\` fence\\\\x1b\\[0m" in md
    assert "Tool call `issue_store_credit`" in md and "```json" in md
    assert "| fail | forbidden\\(issue\\_store\\_credit\\) | policy |" in md
    assert export_path(__import__("pathlib").Path("run"), "a b#3").as_posix() == "run/exports/a_b_3.md"


def test_compare_names_the_first_divergence() -> None:
    ok, bad = sample_record("r", "s", 1), sample_record("r", "s", 3)
    said = first_divergence(ok, bad)
    assert said.startswith("first difference at turn 1, step 3: #1 called issue_refund(")
    assert "; #3 called issue_store_credit(" in said
    lines = differences(ok, bad)
    assert lines[0] == "#1 pass, ended goal_reached · #3 fail, ended goal_reached"
    assert any(line.startswith("failed only in #3: expected_state") for line in lines)
    assert lines[-1] == said
    assert first_divergence(ok, sample_record("r", "s", 2)) == "same messages, tool calls, signals and ending"


def test_the_trial_header_shows_a_known_zero_cost_like_the_report() -> None:
    from simlab.transcript import Pin
    from simlab.tui.widgets.trial_header import trial_summary
    from tests.sample_runs import sample_record

    record = sample_record("r", "s", 1)
    record.transcript.events = [e for e in record.transcript.events if e.type != "model_call"]
    record.transcript.agent = Pin(kind="python", ref="m:f", settings={"uses_models": False})
    record.transcript.simulator = Pin(kind="rules", ref="rules")
    assert " · $0.0000 · " in trial_summary(record).plain
    record.transcript.agent = Pin(kind="python", ref="m:f")  # it may call models simlab cannot see
    assert " · cost unknown · " in trial_summary(record).plain
