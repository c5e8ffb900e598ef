"""The viewer app, built from data by ``make_app``: a transcripts folder and the run to open.

Indexing runs in one background thread, newest request first, after the first screen is drawn;
screens redraw as batches of trials arrive. A timer polls the indexed runs' files and reads only
what was appended, so a run still being written fills in while you watch.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

from textual.app import App
from textual.binding import Binding

from simlab.errors import UsageError
from simlab.tui.data import RunIndex, RunInfo, discover_runs, find_run
from simlab.tui.messages import TrialsAppended
from simlab.tui.rows import TrialRow

__all__ = ["ViewApp", "make_app"]

DARK, LIGHT = "textual-dark", "textual-light"


class ViewApp(App[None]):
    CSS_PATH = "view.tcss"
    TITLE = "simlab view"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("question_mark", "help", "Keys", tooltip="this list of keys"),
        Binding(
            "t",
            "toggle_theme",
            "Light/dark theme",
            show=False,
            tooltip="switch between the light and the dark theme",
        ),
        Binding("q", "quit", "Quit", tooltip="quit the viewer (in a pop-up such as this one: close it)"),
    ]

    def __init__(
        self, root: Path, run: RunInfo | None, *, poll_interval: float | None = 1.0, theme: str = DARK
    ) -> None:
        super().__init__()
        self.root = root
        self.start_run = run
        self.poll_interval = poll_interval
        self.theme = theme
        self.indexes: dict[str, RunIndex] = {}
        self._queue: list[str] = []
        self._busy: str | None = None
        self.started_at = time.perf_counter()
        self.first_screen_at: float | None = None

    # -- screens -----------------------------------------------------------------------------
    def on_mount(self) -> None:
        from simlab.tui.screens.runs import RunsScreen
        from simlab.tui.screens.scenarios import ScenariosScreen

        if self.start_run is not None:
            self.index(self.start_run, first=True)
        self.push_screen(RunsScreen())
        if self.start_run is not None:
            self.push_screen(ScenariosScreen(self.start_run))
        if self.poll_interval:
            self.set_interval(self.poll_interval, self._poll)

    def mark_first_screen(self) -> None:
        if self.first_screen_at is None:
            self.first_screen_at = time.perf_counter()

    def action_help(self) -> None:
        from simlab.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT if self.current_theme.dark else DARK

    # -- data --------------------------------------------------------------------------------
    def index(self, run: RunInfo, first: bool = False) -> RunIndex:
        """The run's index, queued for reading when new (``first``: before the others)."""
        index = self.indexes.get(run.key)
        if index is None:
            index = self.indexes[run.key] = RunIndex(run)
            self._queue.append(run.key)
        if first and run.key in self._queue:
            self._queue.remove(run.key)
            self._queue.insert(0, run.key)
        self.call_after_refresh(self._pump)
        return index

    def _pump(self) -> None:
        if self._busy is not None or not self._queue:
            return
        key = self._busy = self._queue.pop(0)
        self.run_worker(
            partial(self._read, self.indexes[key]),
            thread=True,
            group="index",
            name=f"index {key}",
            exit_on_error=False,
        )

    def _read(self, index: RunIndex) -> None:
        """In a thread: read what is new, posting each batch; always report the end."""
        try:
            for batch in index.read_new():
                self.post_message(TrialsAppended(index.info.key, len(batch), False))
        finally:
            try:
                self.call_from_thread(self._read_done, index.info.key)
            except RuntimeError:  # the app is closing
                pass

    def _read_done(self, key: str) -> None:
        self._busy = None
        self._broadcast(key, 0, True)
        self._pump()

    def on_trials_appended(self, message: TrialsAppended) -> None:
        self._broadcast(message.key, message.count, message.complete)

    def _broadcast(self, key: str, count: int, complete: bool) -> None:
        for screen in self.screen_stack:
            screen.post_message(TrialsAppended(key, count, complete))

    def _poll(self) -> None:
        for key, index in self.indexes.items():
            if index.complete and key != self._busy and key not in self._queue and index.changed():
                self._queue.append(key)
        self._pump()

    def load(self, run: RunInfo, row: TrialRow) -> Any:
        """The full record of a trial, or None (and a notice) when it cannot be read."""
        try:
            return self.index(run).record(row)
        except Exception as exc:  # a hand-edited or newer-schema line: say so, keep browsing
            first = str(exc).strip().splitlines()[:3]
            self.notify(
                f"cannot read trial {row.unit_id}: " + " ".join(first), severity="error", markup=False
            )
            return None

    def export_markdown(self, run: RunInfo, record: Any) -> Path | None:
        from simlab.tui.export import export_path, transcript_markdown

        path = export_path(run.folder, record.unit_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(transcript_markdown(record), encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot write {path}: {exc.strerror or exc}", severity="error", markup=False)
            return None
        self.notify(f"wrote {path}", title="markdown", markup=False)
        return path


def make_app(
    root: Path | str = "transcripts",
    target: str | None = None,
    *,
    poll_interval: float | None = 1.0,
    theme: str = DARK,
) -> ViewApp:
    """The viewer for ``target`` (a run id under ``root``, or a run folder; default: the newest run).

    Raises ``UsageError`` when there is no such run (or no run at all)."""
    root = Path(root)
    run = find_run(root, target)
    if run is None:
        if target:
            known = ", ".join(r.run_id for r in discover_runs(root)[:5])
            raise UsageError(
                f"no run {target!r}: not a run folder, nor a run id under {root}/"
                + (f" (runs there: {known})" if known else "")
            )
        raise UsageError(f"no runs in {root}/ yet; record one with `simlab run`, or name a run folder")
    return ViewApp(root, run, poll_interval=poll_interval, theme=theme)
