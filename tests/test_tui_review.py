"""The reviewer's viewer (issue 18), driven by the pilot at 80×24 and 120×40: columns by priority,
search inside one transcript, one tool call opened from the keyboard, clipboard copy."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from simlab.runner.lines import encode_record
from simlab.tui import ViewApp
from simlab.tui.rows import TrialRow
from simlab.tui.screens.compare import CompareScreen
from simlab.tui.screens.compare_runs import RunCompareScreen
from simlab.tui.screens.runs import RunsScreen
from simlab.tui.screens.tool_call import ToolCallScreen
from simlab.tui.screens.transcript import TranscriptScreen
from simlab.tui.summary import LiveProgress, summarize_run
from simlab.tui.widgets.runs_table import RunsTable
from simlab.tui.widgets.tool_call_view import ToolCallView
from simlab.tui.widgets.transcript_view import TranscriptView
from simlab.tui.widgets.trials_table import TrialsTable
from tests import test_tui_app as tui
from tests.sample_runs import sample_record, write_sample_run
from tests.test_tui_app import open_trial, settle, viewer

root = tui.root  # the sample runs, as a fixture

SIZES = [(80, 24), (120, 40)]


@contextlib.asynccontextmanager
async def first_transcript(root: Path, size: tuple[int, int]) -> AsyncIterator[tuple[ViewApp, Pilot, Screen]]:
    """The viewer at ``size`` on the transcript of refund-damaged #1 (two tool calls, passed)."""
    app = viewer(root)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot, await open_trial(pilot, "refund-damaged", 0)


def right_edges(table: DataTable) -> dict[str, int]:
    """Each column's right edge, in cells from the table's left."""
    edge, out = 0, {}
    for column in table.ordered_columns:
        edge += column.get_render_width(table)
        out[str(column.key.value)] = edge
    return out


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_cost_and_failed_checks_are_on_screen_without_scrolling(root: Path, size: tuple[int, int]) -> None:
    app = viewer(root)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("a")  # every trial of the run: the scenario column too
        await pilot.pause()
        table = app.screen.query_one(TrialsTable)
        edges = right_edges(table)
        assert edges["cost"] <= size[0] and edges["failed checks"] <= size[0]
        names = [str(c.key.value) for c in table.ordered_columns]
        assert names.index("failed checks") < names.index("ended") < names.index("turns")
        cells = [str(table.get_cell(row.key, "failed checks")) for row in table.ordered_rows]
        assert not any(c.endswith("…") for c in cells), cells  # names that do not fit are counted
        assert any(c.endswith(" more") for c in cells)  # the sample's longest list does not fit
        if size[0] >= 120:  # room enough for whole names
            assert not any("…" in c for c in cells), cells
        assert isinstance(app, ViewApp)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_one_tool_call_opens_whole_from_the_keyboard_and_copies(root: Path, size: tuple[int, int]) -> None:
    async with first_transcript(root, size) as (app, pilot, screen):
        calls = [v.index for v in screen.query(ToolCallView)]
        assert len(calls) >= 2
        await pilot.press("right_square_bracket", "right_square_bracket")  # the second call
        await pilot.pause()
        assert screen.query_one(f"#ev-{calls[1]}").has_class("target")
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert screen.query_one(f"#ev-{calls[0]}").has_class("target")
        await pilot.press("right_square_bracket", "o")
        await pilot.pause()
        assert isinstance(app.screen, ToolCallScreen)
        view = screen.query_one(f"#ev-{calls[1]}", ToolCallView)
        assert app.screen.call is view.call
        body = str(app.screen.query_one("#tool-call-body").render())
        assert "more lines" not in body  # nothing folded: the whole result
        assert json.dumps(view.result.result, indent=2, ensure_ascii=False).splitlines()[-2].strip() in body
        await pilot.press("y")
        copied = json.loads(app.clipboard)
        assert copied["tool"] == view.call.name and copied["result"] == view.result.result
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TranscriptScreen)
        await pilot.press("y")  # the whole transcript, as markdown
        assert app.clipboard.startswith("#") and "refund-damaged" in app.clipboard
        assert view.call.name in app.clipboard


def notices(app: Any) -> list[str]:
    """Every message the app shows as a toast, kept: a toast leaves the screen after its timeout,
    and a slow machine must not make the test miss it."""
    said: list[str] = []
    shown = app.notify

    def record(message: str, **how: Any) -> Any:
        said.append(message)
        return shown(message, **how)

    app.notify = record
    return said


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_find_inside_one_transcript_walks_its_hits(root: Path, size: tuple[int, int]) -> None:
    async with first_transcript(root, size) as (app, pilot, screen):
        view = screen.query_one(TranscriptView)
        hits = view.matches("A100")
        assert len(hits) >= 2
        said = notices(app)
        await pilot.press("slash", *"a100", "enter")
        await pilot.pause()
        assert screen.query_one(f"#ev-{hits[0]}").has_class("target")
        assert any("hit 1 of" in message for message in said)
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_one(f"#ev-{hits[1]}").has_class("target")
        for hit in hits:  # the conversation was drawn again with the text marked in every hit
            assert screen.query_one(f"#ev-{hit}").highlight == "a100"
        await pilot.press("escape")
        await pilot.press("slash", *"no such words", "enter")
        await pilot.pause()
        assert any("not in this transcript" in message for message in said)


def row(scenario: str, trial: int, verdict: str) -> TrialRow:
    return TrialRow(offset=0, length=0, unit_id=f"{scenario}#{trial}", scenario_id=scenario, trial=trial,
                    verdict=verdict, termination="goal_reached", check_count=1)


def test_one_k_for_the_screen_while_trials_arrive() -> None:
    rows: list[TrialRow] = []
    live = LiveProgress({"a": 8, "b": 8})
    seen = set()
    for trial in range(1, 9):
        for scenario in ("a", "b"):
            rows.append(row(scenario, trial, "pass" if trial % 3 else "fail"))
            overview = summarize_run(live.update(rows))
            seen.add(overview.k)
    assert seen == {8}  # the planned trials: pass^8 from the first trial to the last, never pass^1 → pass^8
    assert overview.pass_k is not None and overview.pass_k_scenarios == 2
    early = summarize_run(LiveProgress({"a": 8, "b": 8}).update(rows[:4]))
    assert early.k == 8 and early.pass_k is None and early.pass_k_scenarios == 0  # undefined yet, not 0
    assert summarize_run(live.update(rows), 3).k == 3  # a chosen k


async def test_runs_and_scenarios_screens_show_one_named_k_and_say_what_each_figure_is(root: Path) -> None:

    app = viewer(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        summary = tui.text_of(app.screen.query_one("#run-summary"))
        assert "pass^k: mean over scenarios of their valid trials · success: all" in summary
        assert " raw " not in summary
        await pilot.press("p")
        await pilot.pause()
        assert app.screen.k is not None
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        table = app.screen.query_one(RunsTable)
        assert [str(c.label) for c in table.ordered_columns][3] == "pass^3"
        await pilot.press("p")
        await pilot.pause()
        assert [str(c.label) for c in table.ordered_columns][3] == "pass^5"


def write_candidate(root: Path) -> None:
    """A second graded run of refund-damaged in which trial #1 now fails and #3 now passes."""

    folder = write_sample_run(root / "cand", "cand", {"refund-damaged": 3}, special=False,
                              created_at="2026-02-01T00:00:00+00:00")
    lines = []
    for trial, verdict in ((1, "fail"), (2, "pass"), (3, "pass")):
        record = sample_record("cand", "refund-damaged", trial)
        record.verdict = verdict
        lines.append(encode_record(record))
    (folder / "trials.jsonl").write_bytes(b"".join(lines))


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_two_runs_compared_scenario_by_scenario_then_the_flipped_trials(root: Path,
                                                                               size: tuple[int, int]) -> None:

    write_candidate(root)
    app = viewer(root, "cand")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        table = app.screen.query_one(RunsTable)
        table.move_cursor(row=table.get_row_index(str((root / "fixture").resolve())))
        await pilot.press("c")  # the base
        table.move_cursor(row=table.get_row_index(str((root / "cand").resolve())))
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunCompareScreen) and screen.diff is not None
        scenarios = screen.query_one("#compare-scenarios", DataTable)
        assert [str(c.label) for c in scenarios.ordered_columns][:3] == ["scenario", "base ^3", "cand ^3"]
        row = scenarios.get_row("refund-damaged")
        assert [str(c) for c in row[3:5]] == ["2/3", "2/3"] and str(row[6]) == "within noise"
        assert str(scenarios.get_row("(pooled)")[0]) == "pooled"
        flips = screen.query_one("#compare-flips", DataTable)
        assert [r.key.value for r in flips.ordered_rows] == ["refund-damaged#1", "refund-damaged#3"]
        assert "pass^3 per scenario" in tui.text_of(screen.query_one("#compare-head"))
        await pilot.press("p")
        await pilot.pause()
        assert screen.diff.k == 5 and str(scenarios.ordered_columns[1].label) == "base ^5"
        assert str(scenarios.get_row("refund-damaged")[1]) == "–"  # n < k (report/fmt.DASH): undefined, not 0
        # a flipped trial opens in both runs, side by side
        flips.focus()
        flips.move_cursor(row=flips.get_row_index("refund-damaged#1"))
        await pilot.press("enter")
        await pilot.pause()
        pair = app.screen
        assert isinstance(pair, CompareScreen) and pair.sides == ("fixture", "cand")
        assert pair.a.unit_id == pair.b.unit_id == "refund-damaged#1"
        assert (pair.a.verdict, pair.b.verdict) == ("pass", "fail")
        headers = [tui.text_of(h).strip() for h in pair.query(".side-header")]
        assert headers[0].startswith("fixture: ") and headers[1].startswith("cand: ")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
