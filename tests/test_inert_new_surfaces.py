"""The newest surfaces keep simlab's promise: text from a file (a scenario's check names, a persona's
traits, a model's draft, ``triage.json``, a judge's answer) is printed inert, and no secret shows.

Each test plays real parts: a project on disk run by the CLI, fake models on the real LiteLLM
path, a strict OpenAI-compatible server on 127.0.0.1 that echoes the key it was sent. The screen
is a terminal (``FORCE_COLOR``: the stream guard keeps the colour sequences a terminal library
writes, so a sequence from a file that reaches it raw would drive the terminal)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.llm.fakes import register_fake, unregister_fake
from tests.support import copy_demo, write_project

# markup, a hyperlink, terminal control (clear screen, cursor up, carriage return), CI commands, HTML
HOSTILE = (
    "[bold red]RICH[/] [link=http://evil.invalid]L[/link] \x1b]8;;http://evil.invalid\x1b\\o\x1b]8;;\x1b\\ "
    "\x1b[2J\x1b[1A\rOVER\n::error::pwn\n::add-mask::m ##[error]e ##vso[task.x] <script>alert(1)</script>"
    " $\\color{red}{X}$"  # GitHub renders $…$ as math: markdown would show a formula, not the text
)
RAW_CONTROL = ("\x1b[2J", "\x1b[1A", "\x1b]8;")  # what only the text from a file could bring
SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colours a report writes itself


def command_lines(text: str) -> list[str]:
    """Lines a CI runner would obey (``::cmd`` at a line's start, behind spaces) and raw controls."""
    found = [line for line in text.splitlines() if re.match(r"[\s\u200b\ufeff]*::", SGR.sub("", line))]
    return found + [c for c in RAW_CONTROL if c in text] + (["\r"] if "\r" in text else [])


def yaml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted string


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """simlab's streams behave as on a terminal (colour and cursor sequences of rich's kept)."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "240")


@pytest.fixture
def hostile_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run ``r`` of a KV project whose failing state assertion and policy rule are named with
    ``HOSTILE`` (names a scenario author writes: they become check names and failure modes)."""
    write_project(tmp_path, scenarios=1, trials=2)
    path = tmp_path / "scenarios" / "s0.yaml"
    path.write_text(
        path.read_text()
        + "expect:\n  state:\n    - {path: items.k0, equals: nope, name: " + yaml_str(HOSTILE) + "}\n"
        + "  rules:\n    - {max_calls: {set_item: 0}, name: " + yaml_str("rule " + HOSTILE) + "}\n"
    )
    (tmp_path / "suite.yaml").write_text('id: s\nscenarios: ["scenarios/*.yaml"]\ngates: ["pass^1 >= 0.5"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    return tmp_path


# -- JUnit ---------------------------------------------------------------------------------------


def test_junit_names_failing_checks_one_line_each_so_no_line_is_a_ci_command(hostile_run: Path, capfd) -> None:
    assert main(["gate", "r", "--suite", "suite.yaml", "--junit", "j.xml"]) == 1
    text = (hostile_run / "j.xml").read_text(encoding="utf-8")
    root = ET.fromstring(text)
    shown = "\n".join(e.text or "" for e in root.iter()) + "\n".join(v for e in root.iter() for v in e.attrib.values())
    assert "::error::pwn" in shown and "RICH" in shown  # the check is named, as data
    assert command_lines(shown) == [], command_lines(shown)
    assert "<script>" not in text


# -- markdown: the report and the step summary --------------------------------------------------


def test_markdown_shows_the_why_section_s_modes_as_typed(hostile_run: Path, monkeypatch, capfd) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(hostile_run / "summary.md"))
    capfd.readouterr()
    assert main(["report", "r", "--format", "markdown"]) == 0
    assert main(["gate", "r", "--suite", "suite.yaml"]) == 1
    markdown = capfd.readouterr().out + (hostile_run / "summary.md").read_text(encoding="utf-8")
    why = [line for line in markdown.splitlines() if "set\\_item" in line]  # a failure mode's row
    assert why and all("RICH" in line for line in why)
    rows = [line.split("|", 2)[2] for line in markdown.splitlines() if "RICH" in line]  # past a cell or two
    assert len(rows) >= 4  # the why row and two failing checks, in the report and the step summary
    for row in rows:
        assert not re.search(r"(?<!\\)\$\\", row), row  # no $ left to open a formula
        assert not re.search(r"(?<!\\)[<\[`*]", row), row  # nor a tag, a link, code or emphasis


# -- simlab triage --------------------------------------------------------------------------------


def test_triage_shows_a_tampered_triage_file_as_typed(hostile_run: Path, terminal: None, capfd) -> None:
    triage = {
        "schema_version": 1, "run_id": HOSTILE, "judge": {"ref": HOSTILE},
        "causes": [{"mode": HOSTILE, "blame": "agent", "trials": 2, "representative": "kv-0#1",
                    "fault_type": "wrong_decision", "cause": HOSTILE}],
        "calls": 1,
    }
    (hostile_run / "transcripts/r/triage.json").write_text(json.dumps(triage))
    capfd.readouterr()
    assert main(["triage", "r"]) == 0
    out, err = capfd.readouterr()
    plain = SGR.sub("", out)
    assert "triage of [bold red]RICH[/] [link=http://evil.invalid]L[/link]" in plain  # never read as markup
    assert command_lines(out + err) == [] and "]8;" not in out.replace("\\x1b]8;", "")


def test_triage_evidence_gives_the_judge_each_check_on_one_line(hostile_run: Path) -> None:
    seen: list[list[dict[str, Any]]] = []

    def judge(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> str:
        seen.append(messages)
        return json.dumps({"fault_type": "wrong_decision", "cause": "It stored the value, see event #1."})

    model = register_fake("inert-triage-judge", judge)
    try:
        assert main(["triage", "r", "--judge", model]) == 0
    finally:
        unregister_fake("inert-triage-judge")
    evidence = re.search(r'<data id="\w+">\n(.*?)\n</data id=', seen[0][1]["content"], re.DOTALL)
    assert evidence is not None
    lines = evidence.group(1).splitlines()
    assert not any(line.startswith("::") for line in lines), lines  # a check name cannot add lines
    assert len(lines) == 7 + 3, "\n".join(map(repr, lines))  # mode … "failing checks:", 3 checks
    hostile = [line for line in lines[7:] if "RICH" in line]
    assert len(hostile) == 2 and all(" ::error::pwn " in c for c in hostile), hostile  # named, on its line


# -- simlab generate ------------------------------------------------------------------------------

DRAFT = {
    "id": "email-receipt",
    "title": "Customer wants the order receipt by email",
    "persona": {"id": "busy-parent", "description": "A parent writing between two school runs.",
                "traits": [HOSTILE]},
    "goal": "Have the receipt of your last order emailed to you.",
    "opening": "can you email me the receipt please",
    "known_facts": {"email": "dana@example.com"},
    "success_phrases": ["(sent|emailed)"],
    "agent_context": {"signed_in_customer": "C-17"},
    "expected_actions": [
        {"tool": "get_customer", "args": {"customer_id": "C-17"}},
        {"tool": "send_email", "args": {"to": "dana@example.com", "subject": "Your receipt",
                                        "body": "Here is the receipt of your order."}},
    ],
}


def test_generate_s_table_shows_a_drafted_persona_trait_inert(tmp_path: Path, monkeypatch, terminal, capfd):
    copy_demo(tmp_path)
    monkeypatch.chdir(tmp_path)
    model = register_fake("inert-drafter", lambda messages, tools=None, **_: json.dumps(DRAFT))
    try:
        assert main(["generate", "--model", model, "-n", "1", "--trials", "0"]) == 0
    finally:
        unregister_fake("inert-drafter")
    out, err = capfd.readouterr()
    assert "kept" in out and "persona traits:" in out  # what the draft adds: the trait, as data
    assert command_lines(out + err) == [], command_lines(out + err)
    assert "[bold red]RICH[/]" in SGR.sub("", out)


# -- secrets: simlab triage against a provider that echoes them --------------------------------

JUDGE_KEY = "sk-FAKEjudge-7c6b5a4d3e2f1a0b9c8d"
JUDGE_HEADER = "xk-FAKEheader-0a9b8c7d6e5f4a3b"


def echoing_server(replies: dict[str, Any]) -> Any:
    """A strict server whose next ``echoes`` answers are 500s quoting the credentials it was sent."""
    from tests.strict_server import StrictServer, _error

    class Echoing(StrictServer):
        echoes = 0

        def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
            if self.echoes > 0:
                self.echoes -= 1
                sent = {k.lower(): v for k, v in headers.items()}
                said = f"upstream refused {sent.get('authorization')} (x-api-key {sent.get('x-api-key')})"
                return 500, _error(said, "server_error")
            return super()._answer(path, headers, raw)

    return Echoing(replies, api_key=JUDGE_KEY)


def leaks(root: Path, text: str) -> list[str]:
    secrets = [JUDGE_KEY, JUDGE_HEADER]
    found = [f"{p.relative_to(root)}: {s}" for p in root.rglob("*") if p.is_file() and p.name != "simlab.yaml"
             for s in secrets if s.encode() in p.read_bytes()]
    return found + [f"output: {s}" for s in secrets if s in text]


def test_triage_keeps_the_judge_s_key_and_headers_out_of_every_file_and_the_screen(
        hostile_run: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    def judge(request: dict[str, Any]) -> str:  # a model that repeats the key it runs under
        return json.dumps({"fault_type": "wrong_decision",
                           "cause": f"The agent stored k0 (it ran with key {JUDGE_KEY}), see event #1."})

    monkeypatch.setenv("T_JUDGE_API_KEY", JUDGE_KEY)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(hostile_run / "summary.md"))
    with echoing_server({"judge-x": judge}) as server:
        server.echoes = 100
        config = (hostile_run / "simlab.yaml").read_text() + (
            f"judge: {{model: openai/judge-x, api_base: '{server.base}', api_key_env: T_JUDGE_API_KEY,\n"
            f"        params: {{extra_headers: {{X-Api-Key: '{JUDGE_HEADER}'}}}}}}\n")
        (hostile_run / "simlab.yaml").write_text(config)
        assert main(["triage", "r", "--judge", "openai/judge-x"]) == 3  # every call refused: undecided
        undecided = json.loads((hostile_run / "transcripts/r/triage.json").read_text())["causes"][0]
        assert "upstream refused Bearer *** (x-api-key ***)" in undecided["undecided"]  # its words, masked
        server.echoes = 0
        assert main(["triage", "r", "--judge", "openai/judge-x"]) == 0
        assert server.answered == 1
    cause = json.loads((hostile_run / "transcripts/r/triage.json").read_text())["causes"][0]["cause"]
    assert "it ran with key ***" in cause
    assert main(["triage", "r", "--json"]) == 0
    assert main(["report", "r", "--html", "r.html"]) == 0
    assert main(["report", "r", "--format", "markdown"]) == 0
    # simlab.yaml names a judge now, which the suite (naming none) plays with: r, played without, is not its run
    assert main(["gate", "r", "--suite", "suite.yaml", "--junit", "j.xml"]) == 3
    out, err = capfd.readouterr()
    assert "cause" in out and "wrong_decision" in out
    assert leaks(hostile_run, out + err) == []


# -- the viewer: the failure-mode picker and the filters' status line --------------------------


async def test_the_viewer_s_picker_and_status_line_show_a_mode_on_one_line() -> None:
    from collections import Counter

    from textual.app import App
    from textual.widgets import OptionList

    from simlab.tui.screens.picker import PickerScreen
    from simlab.tui.widgets.status_line import status_text

    mode = "agent: state " + HOSTILE + " at set_item"
    app: App[None] = App()
    async with app.run_test(size=(120, 20)) as pilot:
        counts = Counter({mode: 2, "agent: other": 1})
        await app.push_screen(PickerScreen("Show trials that failed as", counts, None))
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        prompts = [options.get_option_at_index(i).prompt for i in range(options.option_count)]
    shown = [getattr(p, "plain", str(p)) for p in prompts]
    assert len(shown) == 3 and "RICH" in shown[1] and "\\n::error::pwn" in shown[1]
    assert all("\n" not in text and "\x1b" not in text and "\r" not in text for text in shown), shown
    line = status_text(1, 3, "trials", [f"mode {mode}"]).plain
    assert "\n" not in line and "\x1b" not in line and "\\n::error::pwn" in line


def test_generate_keeps_the_author_s_key_and_headers_out_of_every_file_and_the_screen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    copy_demo(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T_AUTHOR_API_KEY", JUDGE_KEY)
    with echoing_server({"author-x": lambda request: json.dumps(DRAFT)}) as server:
        server.echoes = 100  # every answer a 500 that quotes the credentials
        (tmp_path / "simlab.yaml").write_text(
            "scenarios: [scenarios]\npersonas: personas\n"
            f"judge: {{model: openai/author-x, api_base: '{server.base}', api_key_env: T_AUTHOR_API_KEY,\n"
            f"        params: {{extra_headers: {{X-Api-Key: '{JUDGE_HEADER}'}}}}}}\n")
        assert main(["generate", "--model", "openai/author-x", "-n", "1", "--trials", "0"]) == 3
        server.echoes = 0
        assert main(["generate", "--model", "openai/author-x", "-n", "1", "--trials", "0", "--json"]) == 0
    out, err = capfd.readouterr()
    assert "upstream refused Bearer ***" in out + err and "email-receipt" in out
    assert leaks(tmp_path, out + err) == []
