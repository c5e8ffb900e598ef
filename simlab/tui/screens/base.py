"""What every data screen shares: its run, and refreshing when that run's trials arrive."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, cast

from textual.screen import Screen

from simlab.tui.data import RunIndex, RunInfo
from simlab.tui.messages import TrialsAppended

if TYPE_CHECKING:
    from simlab.tui.app import ViewApp

__all__ = ["RunScreen"]


class RunScreen(Screen):
    """A screen showing one run. ``refresh_data`` redraws from the run's index; while the screen
    is covered by another, arrivals only mark it stale and it redraws when it is shown again."""

    REFRESH_EVERY = 0.25  # seconds: while a big run is read, redraw at most this often

    def __init__(self, run: RunInfo) -> None:
        super().__init__()
        self.run = run
        self._stale = False
        self._last = 0.0
        self._pending = False

    @property
    def viewer(self) -> ViewApp:
        return cast("ViewApp", self.app)

    @property
    def index(self) -> RunIndex:
        return self.viewer.index(self.run)

    def refresh_data(self) -> None:  # pragma: no cover - overridden
        pass

    def on_trials_appended(self, message: TrialsAppended) -> None:
        if message.key != self.run.key:
            return
        if not self.is_current:
            self._stale = True
            return
        wait = self.REFRESH_EVERY - (time.monotonic() - self._last)
        if message.complete or wait <= 0:
            self._redraw()
        elif not self._pending:
            self._pending = True
            self.set_timer(wait, self._redraw)

    def _redraw(self) -> None:
        self._pending = False
        self._last = time.monotonic()
        self.refresh_data()

    def on_screen_resume(self) -> None:
        if self._stale:
            self._stale = False
            self.refresh_data()

    def action_back(self) -> None:
        self.app.pop_screen()
