"""Long lines break between phrases, never inside one (issue 28): the report's notes, the gates'
noise and INCONCLUSIVE lines, ``checks not run``, ``simlab compare``'s per-trial lines, at 160
columns (a CI log); JSON output is never wrapped at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.report.terminal import PIPED_WIDTH
from simlab.report.wrap import phrase_lines

REPO = Path(__file__).resolve().parents[1]
ENDS = (";", ",", ":", "—", "·")  # a line broken between phrases ends so, or the next opens an aside
WIDE = "100000"


def broken_well(line: str, following: str) -> bool:
    return line.rstrip().endswith(ENDS) or following.lstrip().startswith("(")


@pytest.mark.parametrize("width", [30, 60, 100, 160])
def test_phrase_lines_keep_every_word_and_break_after_a_phrase(width: int) -> None:
    text = ("noise: an agent exactly at pass^1 = 0.5 fails this gate 97.6% of the time (10 scenarios, "
            "n=4 per scenario); to fail at most 5% of the time at pass^1 = 0.55, run 636 trials per scenario")
    lines = phrase_lines(text, width, indent=4)
    assert " ".join(" ".join(lines).split()) == text
    assert all(len(line) <= width for line in lines)
    assert all(line.startswith("    ") for line in lines[1:])
    if width >= 100:  # room for whole phrases: every break is between two of them
        assert all(broken_well(a, b) for a, b in zip(lines, lines[1:], strict=False)), lines


def test_a_tool_calls_arguments_stay_whole_when_a_break_outside_them_fits() -> None:
    text = ('  store-credit-refused#1: first differs at turn 1, step 3: was an agent reply, now tool call '
            'check_refund_policy({"method": "original_card", "order_id": "B310"})')
    lines = phrase_lines(text, 150, indent=4)
    assert lines == ["  store-credit-refused#1: first differs at turn 1, step 3: was an agent reply,",
                     '    now tool call check_refund_policy({"method": "original_card", "order_id": "B310"})']
    assert phrase_lines("short", 160) == ["short"]
    assert phrase_lines("x" * 12, 5) == ["xxxxx", "xxxxx", "xx"]  # no space at all: cut, never lost


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("scenarios", "personas", "examples", "suites"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def output(capsys: Any, monkeypatch: pytest.MonkeyPatch, args: list[str], columns: str | None) -> list[str]:
    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
    capsys.readouterr()
    main(args)
    return capsys.readouterr().out.splitlines()


def assert_broken_between_phrases(narrow: list[str], wide: list[str]) -> int:
    """Every line of the wide output longer than 160 columns (tables aside) is in the piped
    output as lines of at most 160 columns that end between two phrases; how many there were."""
    assert max(len(line) for line in narrow) <= PIPED_WIDTH
    long = [w for w in wide if len(w) > PIPED_WIDTH and not set(w) & set("│┃━─")]
    for w in long:
        start = next(i for i, n in enumerate(narrow) if n.strip() and w.startswith(n.rstrip()))
        parts = [narrow[start]]
        while " ".join(p.strip() for p in parts) != w.strip():
            parts.append(narrow[start + len(parts)])
            assert len(parts) < 10, (w, parts)
        assert len(parts) > 1
        for line, following in zip(parts, parts[1:], strict=False):
            assert broken_well(line, following), f"broken mid-phrase:\n{line}\n{following}"
    return len(long)


@pytest.mark.slow  # plays the nightly suite (40 trials) and two runs to compare, offline
def test_nothing_breaks_mid_phrase_at_160_columns(project: Path, capsys: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    narrow = output(capsys, monkeypatch, ["run", "--suite", "suites/nightly.yaml", "--run-id", "night",
                                          "--no-progress"], None)
    wide = (output(capsys, monkeypatch, ["report", "night"], WIDE)
            + output(capsys, monkeypatch, ["gate", "night", "--suite", "suites/nightly.yaml"], WIDE))
    shown = " ".join(" ".join(narrow).split())
    assert "rubric:no-wrong-order ×4" in shown and "to fail at most 5% of the time" in shown
    assert any(line.lstrip().startswith("checks not run") for line in narrow)
    assert assert_broken_between_phrases(narrow, wide) >= 3  # checks not run, unjudged, the gates' noise

    main(["run", "--run-id", "base", "--no-progress"])  # the flaky demo agent
    main(["run", "--run-id", "cand", "--no-progress", "--agent", "python:examples.retail_agents:careful_agent",
          "--trials", "2"])
    narrow = output(capsys, monkeypatch, ["compare", "base", "cand"], None)
    wide = output(capsys, monkeypatch, ["compare", "base", "cand"], WIDE)
    assert assert_broken_between_phrases(narrow, wide) >= 1  # a first difference, at least

    for args in (["compare", "base", "cand", "--json"], ["report", "night", "--json"]):
        text = output(capsys, monkeypatch, args, "40")
        assert text == output(capsys, monkeypatch, args, WIDE)  # the width changes nothing
        strings = list(strings_of(json.loads("\n".join(text))))
        assert strings and not any("\n" in s for s in strings)


def strings_of(value: Any) -> Any:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings_of(item)
