"""Every screen at a fixed terminal size, against an SVG approved by a person.

Built from the deterministic sample run (fixed dates, no randomness). After an intended change
to a screen, look at the report and accept with ``pytest tests/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from simlab.tui import ViewApp, make_app
from tests.sample_runs import write_sample_run

SMALL, LARGE = (80, 24), (120, 40)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., ViewApp]:
    write_sample_run(tmp_path / "runs" / "fixture")
    write_sample_run(tmp_path / "runs" / "older", "older", {"refund-damaged": 2}, graded=False,
                     created_at="2025-12-01T00:00:00+00:00", special=False)
    monkeypatch.chdir(tmp_path)  # the runs screen names the folder: keep it the same every time

    def build(**kwargs: Any) -> ViewApp:
        return make_app("runs", None, poll_interval=None, **kwargs)

    return build


def after(*keys: str) -> Callable[[Pilot], Any]:
    """Wait for the index, then press ``keys`` (each followed by a redraw)."""

    async def run(pilot: Pilot) -> None:
        app = pilot.app
        assert isinstance(app, ViewApp)
        for _ in range(200):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app._busy is None and not app._queue and all(i.complete for i in app.indexes.values()):
                break
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()

    return run


FAILED_TRIAL = ("enter", "down", "down", "enter")  # refund-damaged #3


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_scenarios_screen(snap_compare: Any, app: Callable[..., ViewApp], size: tuple[int, int]) -> None:
    assert snap_compare(app(), terminal_size=size, run_before=after())


def test_runs_screen(snap_compare: Any, app: Callable[..., ViewApp]) -> None:
    assert snap_compare(app(), terminal_size=SMALL, run_before=after("escape"))


def test_trials_screen_all_trials(snap_compare: Any, app: Callable[..., ViewApp]) -> None:
    assert snap_compare(app(), terminal_size=SMALL, run_before=after("a", "f"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_transcript_screen(snap_compare: Any, app: Callable[..., ViewApp], size: tuple[int, int]) -> None:
    assert snap_compare(app(), terminal_size=size, run_before=after(*FAILED_TRIAL, "n"))


def test_transcript_screen_light_theme(snap_compare: Any, app: Callable[..., ViewApp]) -> None:
    assert snap_compare(app(theme="textual-light"), terminal_size=SMALL, run_before=after(*FAILED_TRIAL))


def test_compare_screen(snap_compare: Any, app: Callable[..., ViewApp]) -> None:
    assert snap_compare(app(), terminal_size=LARGE, run_before=after("enter", "c", "down", "down", "c"))


def test_help_screen(snap_compare: Any, app: Callable[..., ViewApp]) -> None:
    assert snap_compare(app(), terminal_size=SMALL, run_before=after("enter", "question_mark"))


def test_verdict_picker(snap_compare: Any, app: Callable[..., ViewApp]) -> None:
    assert snap_compare(app(), terminal_size=SMALL, run_before=after("a", "v"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_trials_screen_columns_by_priority(snap_compare: Any, app: Callable[..., ViewApp],
                                           size: tuple[int, int]) -> None:
    assert snap_compare(app(), terminal_size=size, run_before=after("a"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_tool_call_screen(snap_compare: Any, app: Callable[..., ViewApp], size: tuple[int, int]) -> None:
    assert snap_compare(app(), terminal_size=size, run_before=after(*FAILED_TRIAL, "right_square_bracket", "o"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_find_in_transcript(snap_compare: Any, app: Callable[..., ViewApp], size: tuple[int, int]) -> None:
    keys = after(*FAILED_TRIAL, "slash", *"a100", "enter", "escape")

    async def run(pilot: Pilot) -> None:  # the hits stay marked; the toast (on a timer) is cleared
        await keys(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app(), terminal_size=size, run_before=run)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_run_compare_screen(snap_compare: Any, app: Callable[..., ViewApp], size: tuple[int, int]) -> None:
    from tests.test_tui_review import write_candidate

    write_candidate(Path("runs"))
    assert snap_compare(app(), terminal_size=size, run_before=after("escape", "down", "c", "up", "c"))
