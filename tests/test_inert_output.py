"""What simlab prints and stores is inert and holds no secret.

Control characters and line breaks from files never reach the terminal raw and never make a line
that a CI runner obeys; run ids are one folder name; markdown (report table, transcript export)
renders as typed; credentials in ``api_base`` URLs and values of secret-looking environment
variables appear in no file simlab writes and on no screen."""

from __future__ import annotations

import io
import json
import os
import re
import signal
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.inert import InertStream, inert_text, one_line
from simlab.llm.fakes import register_fake, unregister_fake
from simlab.runner.plan import derive_seed
from tests.support import kv_llm_agent, write_project

OSC_TITLE = "\x1b]0;pwned\x07"
COMMANDS = re.compile(r"^\s*::|##\[|##vso\[", re.MULTILINE)


def obeyed(text: str) -> list[str]:
    """Lines a CI runner would read as a workflow command, and raw control characters."""
    found = [m.group() for m in COMMANDS.finditer(text)]
    found += [repr(c) for c in set(re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text))]
    return found


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_project(tmp_path, scenarios=2, trials=1)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    return tmp_path


def tamper(project: Path) -> None:
    """File text with escape sequences and line breaks where ids, categories and rubric ids go."""
    path = project / "transcripts/r/trials.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    manifest = json.loads((project / "transcripts/r/run.json").read_text())
    for r in records:
        old = r["transcript"]["scenario_id"]
        r["transcript"]["scenario_id"] = new = f"{old}{OSC_TITLE}\n::error::fake failure"
        manifest["pins"]["scenarios"][new] = manifest["pins"]["scenarios"].pop(old)
        r["unit_id"] = f"{new}#1"
        r["transcript"]["seed"] = derive_seed(manifest["pins"]["seed"], new, 1)  # what the plan derives for it
        r["checks"] += [
            {"name": "rubric:polite\n::add-mask::oops", "kind": "rubric", "status": "not_run", "hard": True,
             "reason": "no judge", "category": None},
            {"name": "forbid\n##[error]x", "kind": "policy", "status": "fail", "hard": True,
             "reason": "x\n::warning::y", "category": "inject\x1b]52;c;Zm9v\x07"},
            {"name": "\u00a0::error::nbsp", "kind": "policy", "status": "fail", "hard": True,
             "reason": "\u3000::error::ideographic", "category": None},
        ]
        r["verdict"] = "fail"
        r.pop("head")  # a hand edit: the head is computed from the line
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (project / "transcripts/r/run.json").write_text(json.dumps(manifest))
    (project / "suite.yaml").write_text('id: s\nscenarios: ["scenarios/*.yaml"]\n'
                                        'gates: ["pass^1 >= 0.5", {gate: "pass^1 >= 0.5", scope: each}]\n')


def test_text_from_files_never_reaches_the_terminal_raw_nor_drives_ci(project: Path, capfd) -> None:
    tamper(project)
    capfd.readouterr()
    assert main(["report", "r"]) == 0
    assert main(["report", "r", "--format", "csv"]) == 0
    assert main(["gate", "r", "--suite", "suite.yaml"]) == 3  # its scenario is not the suite's: not its run
    assert main(["compare", "r", "r"]) == 0
    out, err = capfd.readouterr()
    assert "fake failure" in out and "add-mask" in out and "inject" in out  # shown, as text
    assert "nbsp" in out
    assert obeyed(out + err) == []
    path = project / "transcripts/r/trials.jsonl"
    record = json.loads(path.read_text().splitlines()[0])
    record["checks"][-1]["kind"] = "policy\x1b[2J\n::error::kind"  # no kind of check: the line is refused
    path.write_text(json.dumps(record) + "\n")
    assert main(["report", "r"]) == 3
    out, err = capfd.readouterr()
    assert "is not a valid trial record (checks." in err and obeyed(out + err) == []


def test_the_stream_guard_defuses_commands_masks_secrets_and_keeps_terminal_styling(monkeypatch) -> None:
    monkeypatch.setenv("SIMLAB_T_SOME_TOKEN", "tok-9f8e7d6c5b4a")
    text = "ok\n  ::error file=x::boom\n\x1b[1m::add-mask::v\x1b[0m\nsee ##[group]x ##vso[task.setvariable]\n" \
           f"{OSC_TITLE} key tok-9f8e7d6c5b4a, http://me:pw12345@host/v1\r"
    out = inert_text(text)
    assert obeyed(out) == [] and "tok-9f8e7d6c5b4a" not in out and "pw12345" not in out
    assert "\\x1b]0;pwned\\x07" in out and "http://me:***@host/v1" in out and "::error file=x::boom" not in out
    on_tty = inert_text("\x1b[1mbold\x1b[0m\rredraw\x1b]0;title\x07", terminal=True)
    assert on_tty == "\x1b[1mbold\x1b[0m\rredraw\\x1b]0;title\\x07"  # colours and redraws stay, OSC does not
    raw = io.StringIO()
    stream = InertStream(raw)
    stream.write("first ::not a line start\n")
    stream.write("::error::x")
    stream.write(" more ::still the same line\n")
    assert raw.getvalue() == "first ::not a line start\n:\u200b:error::x more ::still the same line\n"
    assert one_line("a\nb\x1b[31m\u202e") == "a\\nb\\x1b[31m\\u202e"


@pytest.mark.parametrize("lead", ["\u00a0", "\u3000", "\u2003", "\u202f", "\u1680", "\u0085", "\ufeff",
                                  "\u200b", " \u00a0\t", "\r", "\x1b[1m\u2009"])
@pytest.mark.parametrize("terminal", [False, True])
def test_a_line_that_starts_with_commands_behind_unicode_space_is_broken(lead: str, terminal: bool) -> None:
    """The Actions runner trims Unicode whitespace before it reads ``::``: such a line is broken too."""
    text = f"ok\n{lead}::error::x\n{lead}::add-mask::y"
    def commands(out: str) -> list[str]:
        trimmed = (re.sub(r"^(\x1b\[[0-9;]*m|[\s\u200b-\u200f\ufeff])*", "", line) for line in out.split("\n"))
        return [line for line in trimmed if line.startswith("::")]

    out = inert_text(text, terminal=terminal)
    assert commands(text) and not commands(out)
    assert "error::x" in out and "add-mask::y" in out  # shown, never obeyed
    raw = io.StringIO()
    InertStream(raw).write(f"{lead}::error::z\n")
    assert not commands(raw.getvalue()) and "error::z" in raw.getvalue()


def test_error_messages_are_inert_too(project: Path, capfd) -> None:
    (project / "scenarios" / "bad.yaml").write_text("id: x\ntitle: [1\n")
    os.symlink(project / "scenarios/bad.yaml", project / "scenarios" / "bad\n::error::link.yaml")
    capfd.readouterr()
    assert main(["validate"]) == 2
    out, err = capfd.readouterr()
    assert "bad" in out + err and obeyed(out + err) == []


@pytest.mark.parametrize("run_id", ["..", ".", "ABSOLUTE", "../x", "a/b", "a\nb", "a\x1b[2Jb", " lead", ""])
def test_a_run_id_is_one_printable_folder_name(project: Path, capsys, run_id: str) -> None:
    elsewhere = project.parent / "elsewhere"
    run_id = str(elsewhere) if run_id == "ABSOLUTE" else run_id
    before = sorted(p.name for p in project.iterdir())
    assert main(["run", "--run-id", run_id, "--no-progress"]) == 2
    assert "--run-id" in capsys.readouterr().err
    assert sorted(p.name for p in project.iterdir()) == before  # nothing written anywhere
    assert not (project / "trials.jsonl").exists() and not elsewhere.exists() and not (project.parent / "x").exists()


def test_markdown_report_table_is_well_formed_with_one_trial_per_scenario(project: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["report", "r", "--format", "markdown"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(table) == 2 + 2  # header, separator, two scenarios
    cells = [len(re.findall(r"(?<!\\)\|", line)) for line in table]
    assert len(set(cells)) == 1 and cells[0] == 6 + 1, table  # six columns, in every row


def test_the_markdown_transcript_export_renders_as_typed() -> None:
    from simlab.transcript import UserMessage
    from simlab.tui.export import transcript_markdown
    from tests.sample_runs import sample_record

    record = sample_record("r`x", "s", 1)
    record.transcript.events[0] = UserMessage(turn=1, text="<b>bold</b> and *em* and [link](http://x) #1")
    md = transcript_markdown(record)
    assert "> \\<b\\>bold\\</b\\> and \\*em\\* and \\[link\\]\\(http://x\\) \\#1" in md
    assert "run: ``r`x``" in md  # a backtick in a name cannot close its code span
    assert "<b>" not in md and "*em*" not in md


# -- secrets -------------------------------------------------------------------------------

PASSWORD = "s3cret-Passw0rd"
KEY = "FAKEkey-7a6b5c4d3e2f1a0b"


def leaks(root: Path, text: str, secrets: list[str]) -> list[str]:
    found = [f"{p.relative_to(root)}: {s}" for p in root.rglob("*") if p.is_file() and p.name != "simlab.yaml"
             for s in secrets if s.encode() in p.read_bytes()]
    for p in root.rglob("*.parquet"):
        import pandas as pd

        frame = pd.read_parquet(p).astype(str).to_string()
        found += [f"{p.name} (decoded): {s}" for s in secrets if s in frame]
    return found + [f"output: {s}" for s in secrets if s in text]


def test_credentials_in_api_base_are_masked_everywhere_and_pins_stay_comparable(tmp_path, monkeypatch, capfd):
    model = register_fake("inert-agent", kv_llm_agent)
    try:
        write_project(tmp_path, scenarios=1, trials=2)
        config = (f"agent: {{model: {model}, api_base: 'http://user:{PASSWORD}@127.0.0.1:9/v1?api_key={KEY}'}}\n"
                  "simulator: rules\ntrials: 2\n")
        (tmp_path / "simlab.yaml").write_text(config)
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--run-id", "p", "--no-progress"]) == 0
        assert main(["report", "p", "--json"]) == 0
        assert main(["report", "p", "--format", "markdown", "--out", "p.md"]) == 0
        manifest = json.loads((tmp_path / "transcripts/p/run.json").read_text())
        assert manifest["pins"]["agent"]["api_base"] == "http://user:***@127.0.0.1:9/v1?api_key=***"
        (tmp_path / "simlab.yaml").write_text(config.replace(PASSWORD, "0ther-Passw0rd"))
        assert main(["run", "--run-id", "p", "--no-progress"]) == 0  # only the password changed: same pins
        (tmp_path / "simlab.yaml").write_text(config.replace("127.0.0.1:9", "127.0.0.1:8"))
        assert main(["run", "--run-id", "p", "--no-progress"]) == 2  # another host: refused, and said so
        out, err = capfd.readouterr()
        assert "api_base: stored 'http://user:***@127.0.0.1:9/v1?api_key=***'" in err
        assert leaks(tmp_path, out + err, [PASSWORD, "0ther-Passw0rd", KEY]) == []
    finally:
        unregister_fake("inert-agent")


def leaky_agent(inp):
    raise RuntimeError(f"bad key {os.environ['SIMLAB_T_LEAKY_TOKEN']} for http://bob:{PASSWORD}@db.local/x")


def test_an_agent_exception_holding_a_key_is_stored_and_shown_without_it(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("SIMLAB_T_LEAKY_TOKEN", KEY)  # not key-shaped: masked because of its variable's name
    write_project(tmp_path, scenarios=1, trials=1, agent="python:tests.test_inert_output:leaky_agent")
    monkeypatch.chdir(tmp_path)
    main(["run", "--run-id", "leak", "--no-progress"])
    assert main(["report", "leak", "--json", "--checks-table"]) == 0
    out, err = capfd.readouterr()
    record = json.loads((tmp_path / "transcripts/leak/trials.jsonl").read_text())
    assert record["transcript"]["termination"]["detail"].startswith("the agent raised RuntimeError: bad key ***")
    assert "http://bob:***@db.local/x" in record["transcript"]["termination"]["detail"]
    assert any(e["type"] == "error" and "bad key ***" in e["message"] for e in record["transcript"]["events"])
    assert leaks(tmp_path, out + err, [KEY, PASSWORD]) == []


def test_a_spec_error_quoting_a_dotenv_file_shows_no_key(tmp_path, monkeypatch, capfd):
    write_project(tmp_path, scenarios=1)
    (tmp_path / ".env").write_text(f"DB_PASSWORD={PASSWORD}\nOPENAI_API_KEY=sk-live-{KEY}\n")
    os.symlink(tmp_path / ".env", tmp_path / "scenarios" / "evil.yaml")
    (tmp_path / ".env2").write_text(f"MY_SERVICE_TOKEN={KEY}\n")
    os.symlink(tmp_path / ".env2", tmp_path / "scenarios" / "evil2.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["validate"]) == 2
    assert main(["run", "--run-id", "x", "--no-progress"]) == 2
    out, err = capfd.readouterr()
    assert "evil.yaml" in out + err and "evil2.yaml" in out + err
    assert "DB_PASSWORD=***" in out + err and "MY_SERVICE_TOKEN=***" in out + err
    assert KEY[:12] not in out + err and PASSWORD[:8] not in out + err  # the excerpt is cut: no part of it


# -- Ctrl-C -------------------------------------------------------------------------------


class InterruptingStream(io.StringIO):
    """stderr that delivers a second Ctrl-C (a real SIGINT to this process) while the first is
    being reported."""

    def write(self, text: str) -> int:
        if "interrupted" in text and not getattr(self, "fired", False):
            self.fired = True
            os.kill(os.getpid(), signal.SIGINT)
        return super().write(text)


def test_a_double_ctrl_c_during_start_up_exits_130_without_a_traceback(tmp_path, monkeypatch) -> None:
    import simlab.cli.main as cli_main
    import simlab.cli.run_cmd as run_cmd

    def starting(args):  # the first Ctrl-C lands while the command's modules are imported
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run_cmd, "run", starting)
    stderr = InterruptingStream()
    monkeypatch.setattr("sys.stderr", stderr)
    before = signal.getsignal(signal.SIGINT)
    assert cli_main.main(["run"]) == 130  # the second one neither escapes nor prints a traceback
    assert stderr.fired and "interrupted" in stderr.getvalue() and "Traceback" not in stderr.getvalue()
    assert signal.getsignal(signal.SIGINT) is before  # called in-process: the handler is left as found


def test_the_console_script_ignores_further_ctrl_c_once_interrupted(monkeypatch) -> None:
    import simlab.cli.main as cli_main

    def interrupted(argv=None):
        raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(cli_main, "main", interrupted)
    monkeypatch.setattr(cli_main, "_EXITING", False)
    try:
        with pytest.raises(SystemExit) as exit_:
            cli_main.entry()
        assert exit_.value.code == 130 and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
