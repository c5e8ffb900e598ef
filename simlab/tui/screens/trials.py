"""The trials of one scenario (or of the whole run): filter, search, mark two to compare, open one."""

from __future__ import annotations

from collections import Counter

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input

from simlab.tui.data import RunInfo
from simlab.tui.filters import (
    TrialFilter,
    apply,
    check_counts,
    mode_counts,
    termination_counts,
    verdict_counts,
)
from simlab.tui.rows import TrialRow
from simlab.tui.screens.base import RunScreen
from simlab.tui.screens.picker import PickerScreen
from simlab.tui.search import search_rows
from simlab.tui.widgets.crumbs import Crumbs
from simlab.tui.widgets.key_bar import KeyBar
from simlab.tui.widgets.search_bar import SearchBar
from simlab.tui.widgets.status_line import StatusLine
from simlab.tui.widgets.trials_table import TrialsTable

__all__ = ["TrialsScreen"]


class TrialsScreen(RunScreen):
    BINDINGS = [
        Binding("enter", "open", "Open", show=False, tooltip="open the transcript"),
        Binding(
            "f",
            "failed_only",
            "Failed",
            tooltip="failed only: every trial that did not pass (fail, invalid, error, unjudged unless "
            "allow_unjudged counts it; ungraded: did not reach the goal)",
        ),
        Binding("v", "pick('verdict')", "Verdict", tooltip="filter by verdict"),
        Binding(
            "r", "pick('termination')", "Ended", tooltip="filter by how the trial ended (termination reason)"
        ),
        Binding("k", "pick('check')", "Check", tooltip="filter by a failing check"),
        Binding(
            "w",
            "pick('mode')",
            "Why",
            show=False,
            tooltip="filter by failure mode (why trials did not pass); a trial opens at its first faulty "
            "step",
        ),
        Binding(
            "slash", "search", "Search", tooltip="search the text of the trials shown (empty search: off)"
        ),
        Binding("x", "clear", "Clear filters", show=False, tooltip="clear filters and search"),
        Binding(
            "c",
            "compare",
            "Compare",
            tooltip="mark this trial; c on another trial of the scenario compares the two",
        ),
        Binding(
            "m",
            "export",
            "Markdown",
            show=False,
            tooltip="write the trial as markdown to <run>/exports/<unit>.md",
        ),
        Binding("escape", "back", "Back", tooltip="back to the scenarios"),
    ]

    def __init__(self, run: RunInfo, scenario: str | None) -> None:
        super().__init__(run)
        self.filter = TrialFilter(scenario=scenario, allowed=frozenset(run.allow_unjudged()))
        self.marked: str | None = None
        self.shown: list[TrialRow] = []

    def compose(self) -> ComposeResult:
        yield Crumbs([self.run.run_id, self.filter.scenario or "all trials"], id="crumbs")
        yield TrialsTable(show_scenario=self.filter.scenario is None, id="trials")
        yield StatusLine(id="status")
        yield SearchBar(id="search")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(SearchBar).display = False
        self.refresh_data()
        self.query_one(TrialsTable).focus()

    def scope(self) -> list[TrialRow]:
        """The trials this screen is about, before any filter."""
        return apply(self.index.rows, TrialFilter(scenario=self.filter.scenario))

    def refresh_data(self) -> None:
        scope = self.scope()
        self.shown = apply(scope, self.filter)
        self.query_one(TrialsTable).fill(self.shown, self.marked, width=self.app.size.width)
        hint = (
            "c on another trial to compare"
            if self.marked
            else ("no trial matches: x clears the filters" if not self.shown and scope else "")
        )
        self.query_one(StatusLine).show(len(self.shown), len(scope), "trials", self.filter.describe(), hint)
        self.query_one(Crumbs).note("" if self.index.complete else "indexing…")

    def on_resize(self) -> None:
        self.refresh_data()  # the failed checks take the room the new width leaves

    def set_filter(self, flt: TrialFilter) -> None:
        self.filter = flt
        self.refresh_data()

    def current(self) -> TrialRow | None:
        key = self.query_one(TrialsTable).current_key()
        return next((r for r in self.shown if r.unit_id == key), None)

    # -- open --------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        row = self.current()
        record = self.viewer.load(self.run, row) if row else None
        if record is not None:
            from simlab.tui.screens.transcript import TranscriptScreen

            at = row.first_fault_event if row is not None and self.filter.mode is not None else None
            self.app.push_screen(
                TranscriptScreen(self.run, record, highlight=self.filter.query or None, at=at)
            )

    def action_export(self) -> None:
        row = self.current()
        record = self.viewer.load(self.run, row) if row else None
        if record is not None:
            self.viewer.export_markdown(self.run, record)

    # -- filters -----------------------------------------------------------------------------
    def action_failed_only(self) -> None:
        self.set_filter(self.filter.with_(failed_only=not self.filter.failed_only))

    def action_clear(self) -> None:
        self.set_filter(self.filter.cleared())

    def action_pick(self, what: str) -> None:
        scope = self.scope()
        count = {
            "verdict": verdict_counts,
            "termination": termination_counts,
            "check": check_counts,
            "mode": lambda rows: mode_counts(rows, self.filter.allowed),  # as the report counts them
        }[what]
        counts: Counter[str] = count(scope)
        if not counts:
            empty = {"check": "no failing checks in these trials", "mode": "no failure modes in these trials"}
            self.notify(empty.get(what, "nothing to choose from"), markup=False)
            return
        title = {
            "verdict": "Show trials with verdict",
            "termination": "Show trials that ended",
            "check": "Show trials failing check",
            "mode": "Show trials that failed as",
        }[what]

        def chosen(value: str | None) -> None:
            if value is not None:
                self.set_filter(self.filter.with_(**{what: value or None}))

        self.app.push_screen(PickerScreen(title, counts, getattr(self.filter, what)), chosen)

    # -- search ------------------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one(SearchBar).open(self.filter.query)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        bar = self.query_one(SearchBar)
        bar.action_close()
        query = event.value.strip()
        if not query:
            self.set_filter(self.filter.with_(query="", hits=None))
            return
        visible = apply(self.scope(), self.filter.with_(query="", hits=None))
        self.query_one(StatusLine).show(len(visible), len(visible), "trials", [f"searching /{query}…"])
        self._search(str(self.index.path), visible, query)

    @work(thread=True, exclusive=True, group="search")
    def _search(self, path: str, rows: list[TrialRow], query: str) -> None:
        with open(path, "rb") as fh:

            def read(row: TrialRow) -> bytes:
                fh.seek(row.offset)
                return fh.read(row.length)

            hits = search_rows(rows, read, query)
        self.app.call_from_thread(self._found, query, hits)

    def _found(self, query: str, hits: dict[str, int]) -> None:
        self.set_filter(self.filter.with_(query=query, hits=frozenset(hits)))
        total = sum(hits.values())
        self.notify(f"/{query}: {total} hit(s) in {len(hits)} trial(s)", markup=False, timeout=3)

    # -- compare -----------------------------------------------------------------------------
    def action_compare(self) -> None:
        row = self.current()
        if row is None:
            return
        if self.marked is None or self.marked == row.unit_id:
            self.marked = None if self.marked == row.unit_id else row.unit_id
            self.refresh_data()
            return
        first = next((r for r in self.index.rows if r.unit_id == self.marked), None)
        if first is None or first.scenario_id != row.scenario_id:
            self.notify("compare needs two trials of the same scenario", severity="warning", markup=False)
            return
        a, b = self.viewer.load(self.run, first), self.viewer.load(self.run, row)
        self.marked = None
        self.refresh_data()
        if a is not None and b is not None:
            from simlab.tui.screens.compare import CompareScreen

            self.app.push_screen(CompareScreen(self.run, a, b))
