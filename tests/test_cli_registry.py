"""The command line as a registry (``cli/main.COMMANDS``): every command a module with
``configure`` and ``run``; the parser the same as before the commands moved there (flags,
defaults, help); ``--help`` imports only its command's module and none of the heavy packages; and
the Markdown reference (``cli/reference.py``) covers every command and flag."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.cli import reference
from simlab.cli.main import COMMANDS, build_parser, command_module, command_named, main
from tests.cli_shape import shape, subcommands

FIXTURE = Path(__file__).parent / "fixtures" / "cli" / "parser.json"
# what a command module may not import at its top: its --help, and building the whole parser, would load it
HEAVY = ("pydantic", "rich", "yaml", "litellm", "textual", "simlab.specs", "simlab.runner", "simlab.report",
         "simlab.results", "simlab.env", "simlab.llm", "simlab.graders", "simlab.tui", "simlab.transcript",
         "simlab.serve", "asyncio", "inspect", "subprocess", "ssl")


def test_the_parser_keeps_every_command_flag_default_and_help_as_it_was():
    """``tests/fixtures/cli/parser.json`` was written from the parser before the registry."""
    assert shape(build_parser()) == json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_every_command_is_a_module_of_the_registry_with_its_pair():
    assert list(subcommands(build_parser())) == list(COMMANDS)
    for name in COMMANDS:
        module = command_module(name)
        assert callable(module.configure) and callable(module.run), name
        assert isinstance(getattr(module, "DESCRIPTION", ""), str), name


def test_the_parser_of_one_command_is_that_command_of_the_whole_parser():
    """``main`` builds the arguments of the command given only: the same as in the whole parser."""
    whole = shape(build_parser())
    for name in COMMANDS:
        alone = shape(build_parser([name]))
        assert alone["commands"][name] == whole["commands"][name], name
        assert [c["help"] for c in alone["commands"].values()] == [c["help"] for c in whole["commands"].values()]
        others = [c for other, c in alone["commands"].items() if other != name]
        assert all([a["dest"] for a in c["arguments"]] == ["help"] for c in others), name  # listed only


@pytest.mark.parametrize(("argv", "named"), [
    (["run", "--help"], "run"), (["--help"], None), (["-h", "gate"], "gate"), (["bogus"], None),
    (["grade-traces", "r", "--rules", "x"], "grade-traces"), ([], None), (["--version"], None),
])
def test_the_command_named_by_the_arguments(argv: list[str], named: str | None):
    assert command_named(argv) == named


def _imported_by(code: str, tmp_path: Path, prefixes: tuple[str, ...] = HEAVY) -> list[str]:
    script = ("import sys\n" + code + "\n"
              f"print('\\n'.join(m for m in sys.modules if m.startswith({prefixes!r})), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"}, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr.split()  # stdout: the help


def test_building_the_parser_imports_nothing_heavy(tmp_path: Path):
    found = _imported_by("from simlab.cli.main import build_parser\nbuild_parser()", tmp_path)
    assert found == []
    assert _imported_by("import json", tmp_path) == []  # the probe itself starts clean


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["validate", "--help"]])
def test_help_imports_nothing_heavy(tmp_path: Path, argv: list[str]):
    assert _imported_by(_help(argv), tmp_path) == []


def _help(argv: list[str]) -> str:
    return ("from simlab.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit as done:\n    assert done.code == 0, done.code\n")


@pytest.mark.parametrize(("argv", "modules"), [
    (["--help"], []), (["run", "--help"], ["simlab.cli.run_cmd"]),
    (["import", "openai", "--help"], ["simlab.cli.import_cmd", "simlab.cli.import_observed", "simlab.cli.import_openai"]),
])
def test_help_imports_only_the_module_of_its_command(tmp_path: Path, argv: list[str], modules: list[str]):
    found = _imported_by(_help(argv), tmp_path, prefixes=("simlab.cli.",))
    assert sorted(set(found) - {"simlab.cli.main", "simlab.cli.argtypes"}) == modules


def test_the_probe_sees_a_heavy_import(tmp_path: Path):
    """The check above can fail: a command that loads the spec machinery is seen."""
    assert "simlab.specs" in _imported_by("import simlab.specs", tmp_path)


def test_run_outside_a_project_suggests_simlab_init(tmp_path: Path):
    done = subprocess.run([sys.executable, "-m", "simlab", "run"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "simlab init" in done.stderr and "no simlab.yaml" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing written: no transcripts folder either


def test_run_in_a_project_without_scenarios_keeps_its_own_error(tmp_path: Path, monkeypatch, capsys):
    """With a simlab.yaml the project exists: the missing scenarios folder is the error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "simlab.yaml").write_text("agent: python:nowhere:agent\n")
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "scenarios" in err and "simlab init" not in err


def test_the_reference_covers_every_command_and_flag():
    parser = build_parser()
    text = reference.render(parser)
    for name, sub in subcommands(parser).items():
        assert f"\n## simlab {name}\n" in text
        assert f"[`{name}`](#simlab-{name})" in text
        section = text.split(f"\n## simlab {name}\n", 1)[1].split("\n## ", 1)[0]
        parsers = [sub, *(reference._format_parser(p) for p in subcommands(sub).values())]
        for each in parsers:
            for action in each._actions:
                if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
                    continue
                choices = "{" + ",".join(action.choices) + "}" if action.choices else None
                words = action.option_strings or [action.metavar or choices or action.dest]
                for word in words:
                    assert f"`{word}" in section or f" {word}" in section, (name, word)
                assert reference._cell(action.help or "") in section, (name, action.dest)
    assert "| `--workers WORKERS` | `1` |" in text  # a default
    assert "| `--suite SUITE` | *required* |" in text  # gate's
    assert "rules \\| scripted \\| a LiteLLM model string" in text  # a pipe in help stays in its cell


def test_the_reference_leaves_out_what_help_hides():
    text = reference.render()
    gate = text.split("\n## simlab gate\n", 1)[1].split("\n## ", 1)[0]
    assert "--json" not in gate  # gate's --json is SUPPRESSed in --help


def test_the_reference_is_a_module_to_run(tmp_path: Path):
    done = subprocess.run([sys.executable, "-m", "simlab.cli.reference"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == reference.render()
    assert done.stdout.startswith("# simlab command line\n")


def test_the_reference_does_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    narrow = reference.render()
    monkeypatch.setenv("COLUMNS", "200")
    assert reference.render() == narrow
