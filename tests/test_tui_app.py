"""The viewer driven by the pilot: every screen, its keys, and what they do to the data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable

from simlab.tui import ViewApp, make_app
from simlab.tui.screens.compare import CompareScreen
from simlab.tui.screens.help import HelpScreen
from simlab.tui.screens.picker import PickerScreen
from simlab.tui.screens.runs import RunsScreen
from simlab.tui.screens.scenarios import ScenariosScreen
from simlab.tui.screens.transcript import TranscriptScreen
from simlab.tui.screens.trials import TrialsScreen
from simlab.tui.widgets.check_detail import CheckDetail
from simlab.tui.widgets.checks_panel import ChecksPanel
from simlab.tui.widgets.tool_call_view import ToolCallView
from tests.sample_runs import sample_record, write_sample_run


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_sample_run(tmp_path / "runs" / "fixture")
    write_sample_run(tmp_path / "runs" / "older", "older", {"refund-damaged": 2}, graded=False,
                     created_at="2025-12-01T00:00:00+00:00", special=False)
    return tmp_path / "runs"


def viewer(root: Path, target: str | None = None, **kwargs: object) -> ViewApp:
    return make_app(root, target, poll_interval=kwargs.pop("poll_interval", None), **kwargs)  # type: ignore[arg-type]


async def settle(pilot: Pilot) -> None:
    """Wait until every queued index has been read and the screens have redrawn."""
    app = pilot.app
    assert isinstance(app, ViewApp)
    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app._busy is None and not app._queue and all(i.complete for i in app.indexes.values()):
            break
    await pilot.pause()


def text_of(widget: Widget) -> str:
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join("".join(seg.text for seg in line).rstrip() for line in lines)


def keys(table: DataTable) -> list[str]:
    return [row.key.value for row in table.ordered_rows]  # type: ignore[misc]


async def open_trial(pilot: Pilot, scenario: str, downs: int) -> TranscriptScreen:
    screen = pilot.app.screen
    assert isinstance(screen, ScenariosScreen)
    table = screen.query_one(DataTable)
    table.move_cursor(row=table.get_row_index(scenario))
    await pilot.press("enter")
    await pilot.press(*["down"] * downs, "enter")
    await pilot.pause()
    assert isinstance(pilot.app.screen, TranscriptScreen)
    return pilot.app.screen


async def test_opens_the_newest_run_and_goes_back_to_all_runs(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ScenariosScreen) and app.screen.run.run_id == "fixture"
        assert keys(app.screen.query_one(DataTable)) == ["refund-damaged", "final-sale", "literal-markup"]
        summary = text_of(app.screen.query_one("#run-summary"))
        assert "1 invalid · 1 error" in summary and "openai/gpt-4o" in summary
        await pilot.press("f")  # scenarios with a failure only
        assert keys(app.screen.query_one(DataTable)) == ["refund-damaged", "final-sale"]
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)
        runs = app.screen.query_one(DataTable)
        assert [Path(k).name for k in keys(runs)] == ["fixture", "older"]
        assert "not graded" in text_of(runs)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ScenariosScreen) and app.screen.run.run_id == "older"
        assert "not graded" in text_of(app.screen.query_one("#run-summary"))


async def test_named_run_opens_directly(root: Path) -> None:
    app = viewer(root, "older")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ScenariosScreen) and app.screen.run.run_id == "older"
        assert app.first_screen_at is not None


async def test_trials_screen_filters(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a")  # every trial of the run
        screen = app.screen
        assert isinstance(screen, TrialsScreen)
        table = screen.query_one(DataTable)
        assert len(keys(table)) == 6
        await pilot.press("f")
        assert keys(table) == ["final-sale#1", "final-sale#2", "refund-damaged#3"]
        await pilot.press("x", "v")
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("down", "down", "enter")  # any, pass, then the second most common verdict
        assert len(keys(table)) == 1 and screen.filter.verdict is not None
        await pilot.press("x", "r")
        await pilot.press("end", "enter")
        assert keys(table) == ["final-sale#2"] and screen.filter.termination == "error"
        await pilot.press("x", "k")
        options = app.screen.query_one("#picker-options")
        assert "expected_state" in text_of(options)
        await pilot.press("escape")
        assert screen.filter.check is None and len(keys(table)) == 6
        screen.set_filter(screen.filter.with_(check="expected_state"))
        assert keys(table) == ["refund-damaged#3"]
        assert "failing expected_state" in text_of(screen.query_one("#status"))


async def test_search_across_visible_trials(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a", "slash")
        await pilot.press(*"store credit", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrialsScreen)
        assert keys(screen.query_one(DataTable)) == ["refund-damaged#3"]
        await pilot.press("enter")
        assert isinstance(app.screen, TranscriptScreen) and app.screen.highlight == "store credit"
        await pilot.pause()
        assert app.screen.query_one("#ev-6").has_class("target")  # the first hit: "refunded as store credit"
        await pilot.press("escape", "slash", "ctrl+u", "enter")  # an empty search clears it
        assert len(keys(screen.query_one(DataTable))) == 6


async def test_compare_two_trials_of_a_scenario(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # refund-damaged
        await pilot.press("c", "down", "down")
        assert "◆" in text_of(app.screen.query_one(DataTable))
        await pilot.press("c")
        assert isinstance(app.screen, CompareScreen)
        diff = text_of(app.screen.query_one("#differences"))
        assert "#1 pass" in diff and "#3 fail" in diff and "first difference at turn 1" in diff
        await pilot.press("e")
        assert all(not v.collapsed for v in app.screen.query(ToolCallView))
        await pilot.press("escape")
        assert isinstance(app.screen, TrialsScreen)


async def test_compare_refuses_trials_of_different_scenarios(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a", "c", "end", "c")
        assert isinstance(app.screen, TrialsScreen)
        assert any("same scenario" in n.message for n in app._notifications)


async def test_selecting_a_failed_check_jumps_to_its_event(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_trial(pilot, "refund-damaged", 2)
        panel = screen.query_one(ChecksPanel)
        assert panel.highlighted == 0  # the first failed check is shown at once
        assert "refunds[0].method" in text_of(screen.query_one("#check-detail-body"))
        panel.focus()
        forbidden = next(pos for pos, i in enumerate(panel.order) if panel.checks[i].event == 4)
        panel.highlighted = forbidden
        await pilot.press("enter")
        await pilot.pause()
        target = screen.query_one("#ev-4", ToolCallView)
        assert target.has_class("target") and not target.collapsed
        assert "event 4" in text_of(screen.query_one("#check-detail-body"))


async def test_next_failure_walks_failed_checks_and_shows_the_state_diff(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_trial(pilot, "refund-damaged", 2)
        assert screen.has_class("narrow")
        await pilot.press("n")
        assert screen.query_one("#ev-4").has_class("target")
        panel = screen.query_one(ChecksPanel)
        expected_state = next(pos for pos, i in enumerate(panel.order) if panel.checks[i].name == "expected_state")
        panel.highlighted = expected_state
        await pilot.pause()
        detail = screen.query_one(CheckDetail)
        assert detail.has_class("has-diff")
        shown = text_of(detail.query_one("#check-detail-body"))
        assert "state diff" in shown and "refunds[0].method" in shown


async def test_tool_calls_expand_and_long_results_fold(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_trial(pilot, "refund-damaged", 0)
        lookup = screen.query_one("#ev-2", ToolCallView)
        assert lookup.collapsed
        await pilot.press("e")
        assert not lookup.collapsed
        body = text_of(lookup.query_one("FoldedText"))
        assert "more lines (enter to unfold)" in body
        lookup.query_one("FoldedText").focus()
        await pilot.press("enter")
        assert "enter to unfold" not in text_of(lookup.query_one("FoldedText"))


async def test_messages_are_shown_literally(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_trial(pilot, "literal-markup", 0)
        shown = text_of(screen.query_one("#ev-0"))
        assert "[bold]not bold[/bold]" in shown
        assert "[link=https://evil.example]click me[/link]" in shown
        assert "\\x1b[31mred\\x1b[0m" in shown and "\x1b" not in shown
        content = screen.query_one("#ev-0").render()
        assert not any("link" in str(span.style) or "bold" == str(span.style) for span in content.spans)


async def test_markdown_export_writes_a_file_and_says_where(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_trial(pilot, "refund-damaged", 2)
        await pilot.press("m")
        path = root / "fixture" / "exports" / "refund-damaged_3.md"
        assert path.read_text().startswith("# refund-damaged\\#3")
        assert any(str(path) in n.message for n in app._notifications)
        await pilot.press("escape", "up", "m")  # also from the trial list
        assert (root / "fixture" / "exports" / "refund-damaged_2.md").exists()


async def test_help_theme_and_quit(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = "\n".join(text_of(w) for w in app.screen.query("#help Static"))
        assert "search the text of the trials shown" in shown and "compares the two" in shown
        assert "light and the dark theme" in shown and "enter" in shown
        await pilot.press("escape")
        assert isinstance(app.screen, TrialsScreen)
        assert app.theme == "textual-dark"
        await pilot.press("t")
        assert app.theme == "textual-light" and not app.current_theme.dark
        await pilot.press("t", "q")
        assert app.theme == "textual-dark"
    assert app.return_code == 0


async def test_views_refresh_while_a_run_is_written(root: Path) -> None:
    manifest = root / "fixture" / "run.json"  # the run plans a fourth trial, still to come
    manifest.write_text(manifest.read_text().replace('"trials": 3', '"trials": 4'))
    app = viewer(root, poll_interval=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        trials = app.screen.query_one(DataTable)
        assert len(keys(trials)) == 3
        with open(root / "fixture" / "trials.jsonl", "a") as fh:
            fh.write(sample_record("fixture", "refund-damaged", 4).model_dump_json() + "\n")
            fh.write(sample_record("fixture", "brand-new", 1).model_dump_json()[:50])  # still being written
        for _ in range(40):
            await pilot.pause(0.05)
            if len(keys(trials)) == 4:
                break
        assert keys(trials)[-1] == "refund-damaged#4"
        await pilot.press("escape")
        await pilot.pause()
        scenarios = app.screen.query_one(DataTable)
        assert "4" in text_of(scenarios).split("refund-damaged", 1)[1].split("\n", 1)[0]


def test_unknown_run_is_a_usage_error(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from simlab.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "simlab.yaml").write_text("transcripts: runs\n")
    assert main(["view", "nope"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    (tmp_path / "simlab.yaml").write_text("transcripts: empty\n")
    assert main(["view"]) == 2
    assert "no runs in empty/" in capsys.readouterr().err


def test_view_does_not_import_litellm_or_pandas(root: Path) -> None:
    code = f"""
import asyncio, sys
from simlab.tui import make_app

async def main():
    app = make_app({str(root)!r}, poll_interval=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter", "enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "TranscriptScreen", app.screen

asyncio.run(main())
import simlab.cli.view_cmd  # the command module too
assert "litellm" not in sys.modules, "litellm imported"
assert "pandas" not in sys.modules, "pandas imported"
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


async def test_tab_moves_between_panes_and_e_cycles_tool_calls(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_trial(pilot, "refund-damaged", 2)
        conversation, panel = screen.query_one("#conversation"), screen.query_one(ChecksPanel)
        assert conversation.has_focus
        await pilot.press("tab")
        assert panel.has_focus
        await pilot.press("tab")
        assert conversation.has_focus
        lookup = screen.query_one("#ev-2", ToolCallView)
        await pilot.press("e")
        assert not lookup.collapsed and not lookup.query_one("FoldedText").unfolded
        await pilot.press("e")
        assert lookup.query_one("FoldedText").unfolded
        await pilot.press("e")
        assert lookup.collapsed


async def test_a_trial_that_does_not_validate_is_reported_not_fatal(root: Path) -> None:
    path = root / "fixture" / "trials.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = lines[0].replace('"type":"user"', '"type":"hologram"', 1)
    path.write_text("\n".join(lines) + "\n")
    app = viewer(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter", "enter")  # refund-damaged #1, the broken one
        assert isinstance(app.screen, TrialsScreen)
        assert any("cannot read trial refund-damaged#1" in n.message for n in app._notifications)
        await pilot.press("down", "enter")
        assert isinstance(app.screen, TranscriptScreen)


async def test_trials_by_failure_mode_open_at_their_first_faulty_step(root: Path) -> None:
    app = viewer(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a", "w")
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("down", "enter")  # any, then the mode of the most trials
        screen = app.screen
        assert isinstance(screen, TrialsScreen) and screen.filter.mode is not None
        table = screen.query_one(DataTable)
        shown = [r for r in screen.shown]
        assert shown and {r.failure_mode for r in shown} == {screen.filter.mode} and len(keys(table)) == len(shown)
        assert f"mode {screen.filter.mode}" in text_of(screen.query_one("#status"))
        first = shown[0]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        assert app.screen.at == first.first_fault_event is not None
        await pilot.press("escape", "x")
        assert screen.filter.mode is None and len(keys(table)) == 6
