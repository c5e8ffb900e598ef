"""Every run in the transcripts folder: when, who played, how many trials, suite pass^k, cost."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable

from simlab.tui.data import RunInfo, discover_runs
from simlab.tui.messages import TrialsAppended
from simlab.tui.summary import RunOverview, summarize_run
from simlab.tui.widgets.crumbs import Crumbs
from simlab.tui.widgets.key_bar import KeyBar
from simlab.tui.widgets.runs_table import RunsTable
from simlab.tui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from simlab.tui.app import ViewApp

__all__ = ["RunsScreen"]


class RunsScreen(Screen):
    BINDINGS = [
        Binding("enter", "open", "Open run", show=False, tooltip="open the run"),
        Binding("r", "rescan", "Rescan folder", tooltip="read the transcripts folder again"),
        Binding(
            "c",
            "compare",
            "Compare",
            tooltip="mark this run; c on another run compares the two (this one is the base)",
        ),
        Binding(
            "p", "next_k", "pass^k", tooltip="the one k of the pass^k column for every run: 1, 2, 3, 5, 8…"
        ),
    ]
    K_CHOICES = (1, 2, 3, 5, 8, 16, 32)

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[RunInfo] = []
        self.last_opened: str | None = None  # the cursor goes back to the run you come back from
        self.k = 3  # one k for every run, as `simlab runs` (--k 3)
        self.marked: str | None = None  # the base of a comparison

    @property
    def viewer(self) -> ViewApp:
        return cast("ViewApp", self.app)

    def compose(self) -> ComposeResult:
        yield Crumbs(["runs"], id="crumbs")
        yield RunsTable(id="runs")
        yield StatusLine(id="status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(RunsTable).focus()

    def on_screen_resume(self) -> None:
        self.action_rescan()
        start = self.viewer.start_run
        self.query_one(RunsTable).restore(self.last_opened or (start.key if start else None))

    def action_rescan(self) -> None:
        self.runs = discover_runs(self.viewer.root)
        for run in self.runs:
            self.viewer.index(run)  # index the ones not read yet, in the background
        self.refresh_data()

    def refresh_data(self) -> None:
        summaries: dict[str, RunOverview | None] = {}
        for run in self.runs:
            index = self.viewer.indexes.get(run.key)
            summaries[run.key] = (
                summarize_run(index.progress(), self.k)
                if index is not None and index.complete and not index.problem
                else None
            )
        self.query_one(RunsTable).fill(self.runs, summaries, self.k, marked=self.marked)
        self.query_one(StatusLine).show(
            len(self.runs),
            len(self.runs),
            "runs",
            hint="c on another run to compare the two" if self.marked else f"in {self.viewer.root}",
        )

    def action_compare(self) -> None:
        key = self.query_one(RunsTable).current_key()
        if key is None:
            return
        if self.marked is None or self.marked == key:
            self.marked = None if self.marked == key else key  # shown by ◆ and the status line, not a toast
            self.refresh_data()
            return
        base = next((r for r in self.runs if r.key == self.marked), None)
        cand = next((r for r in self.runs if r.key == key), None)
        indexes = [self.viewer.indexes.get(r.key) if r else None for r in (base, cand)]
        if base is None or cand is None or not all(i is not None and i.complete for i in indexes):
            self.notify("both runs must be read first", severity="warning", markup=False)
            return
        from simlab.tui.screens.compare_runs import RunCompareScreen

        self.marked = None
        self.refresh_data()
        self.app.push_screen(RunCompareScreen(base, cand, list(indexes[0].rows), list(indexes[1].rows)))  # type: ignore[union-attr]

    def action_next_k(self) -> None:
        self.k = self.K_CHOICES[(self.K_CHOICES.index(self.k) + 1) % len(self.K_CHOICES)]
        self.refresh_data()

    def on_trials_appended(self, message: TrialsAppended) -> None:
        if self.is_current and message.complete:
            self.refresh_data()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._open(event.row_key.value)

    def action_open(self) -> None:
        self._open(self.query_one(RunsTable).current_key())

    def _open(self, key: str | None) -> None:
        run = next((r for r in self.runs if r.key == key), None)
        if run is not None:
            from simlab.tui.screens.scenarios import ScenariosScreen

            self.last_opened = run.key
            self.app.push_screen(ScenariosScreen(run))
