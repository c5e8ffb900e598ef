"""Two runs side by side (``c`` on a run, ``c`` on another): per scenario pass^k at one k, valid
success with the difference's 95 % interval and its verdict, the pooled line, then the trials
whose verdict flipped; enter on one opens it in both runs side by side. The figures are ``simlab
compare``'s (``tui/runs_diff.py``)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from simlab.errors import SimlabError
from simlab.report.fmt import change, num
from simlab.results.figures import PooledChange, ScenarioChange
from simlab.transcript.verdicts import class_label
from simlab.tui.data import RunInfo
from simlab.tui.render import literal, verdict_text
from simlab.tui.rows import TrialRow
from simlab.tui.runs_diff import RunsDiff, diff_runs
from simlab.tui.widgets.crumbs import Crumbs
from simlab.tui.widgets.key_bar import KeyBar

__all__ = ["RunCompareScreen"]

VERDICT_STYLE = {"regressed": "bold red", "improved": "bold green", "within noise": "", "no data": "dim"}


def _interval(row: ScenarioChange | PooledChange) -> str:
    return change(row.difference, row.low, row.high)


class RunCompareScreen(Screen):
    BINDINGS = [
        Binding("p", "next_k", "pass^k", tooltip="the k of pass^k on this screen: 1, 2, 3, 5, 8…"),
        Binding("escape", "back", "Back", tooltip="back to the runs"),
    ]

    HELP_EXTRA = [("enter", "on a flipped trial: the trial in both runs, side by side")]

    def __init__(
        self, base: RunInfo, candidate: RunInfo, base_rows: list[TrialRow], cand_rows: list[TrialRow]
    ) -> None:
        super().__init__()
        self.base, self.candidate = base, candidate
        self.rows = (base_rows, cand_rows)
        self.k: int | None = None
        self.diff: RunsDiff | None = None

    def compose(self) -> ComposeResult:
        yield Crumbs(["runs", f"{self.base.run_id} → {self.candidate.run_id}"], id="crumbs")
        with VerticalScroll(id="run-compare"):
            yield Static(id="compare-head")
            yield DataTable(id="compare-scenarios", cursor_type="row", zebra_stripes=True)
            yield Static(id="compare-flips-title")
            yield DataTable(id="compare-flips", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        self.refresh_data()
        self.query_one("#compare-scenarios", DataTable).focus()

    def refresh_data(self) -> None:
        from simlab.report.build import build

        head = self.query_one("#compare-head", Static)
        try:
            base, cand = build(self.base.folder, write=False), build(self.candidate.folder, write=False)
            diff = self.diff = diff_runs(
                base,
                cand,
                *self.rows,
                k=self.k,
                allow_unjudged=(self.base.allow_unjudged(), self.candidate.allow_unjudged()),
            )
        except SimlabError as exc:  # a run that no reader may trust: say why, show no figure
            head.update(Text("no comparison: ", "bold red").append(literal(str(exc).splitlines()[0])))
            return
        c = diff.comparison
        text = Text(
            f"pass^{diff.k} per scenario (valid trials) · success: valid trials, candidate − base with "
            "its 95% interval",
            style="dim",
        )
        for line in c.pins_differ:
            text.append("\nwarning: pins differ: ", "yellow").append(literal(line))
        for warning in c.warnings:
            text.append("\nwarning: ", "yellow").append(literal(warning))
        if c.only_in_candidate:  # only in base: a warning above (compare_runs.base_only_phrase)
            text.append("\nonly in candidate (new, cannot regress): ", "dim")
            text.append(literal(", ".join(c.only_in_candidate)))
        head.update(text)
        table = self.query_one("#compare-scenarios", DataTable)
        table.clear(columns=True)
        for name in (
            "scenario",
            f"base ^{diff.k}",
            f"cand ^{diff.k}",
            "base",
            "cand",
            "Δ success [95% CI]",
            "verdict",
            "class",
        ):
            table.add_column(name, key=name)
        for row in c.scenarios:
            before, after = diff.pass_k.get(row.scenario, (None, None))
            flake = f"{class_label(row.flake_class.base)} → {class_label(row.flake_class.candidate)}"
            table.add_row(
                literal(row.scenario),
                Text(num(before), justify="right"),
                Text(num(after), justify="right"),
                f"{row.base.c}/{row.base.n}",
                f"{row.candidate.c}/{row.candidate.n}",
                _interval(row),
                Text(row.verdict, style=VERDICT_STYLE[row.verdict]),
                Text(flake, style="bold magenta" if row.flipped else ""),
                key=row.scenario,
            )
        p = c.pooled
        table.add_row(
            Text("pooled", "bold"),
            "",
            "",
            f"{p.base.c}/{p.base.n}",
            f"{p.candidate.c}/{p.candidate.n}",
            _interval(p),
            Text(p.verdict, style=VERDICT_STYLE[p.verdict]),
            "",
            key="(pooled)",
        )
        self.query_one("#compare-flips-title", Static).update(
            Text(
                f"\ntrials that flipped ({len(diff.flips)}): passed in one run, not in the other",
                style="bold",
            )
        )
        flips = self.query_one("#compare-flips", DataTable)
        flips.clear(columns=True)
        for name in ("trial", "base", "candidate"):
            flips.add_column(name, key=name)
        for flip in diff.flips:
            flips.add_row(
                literal(flip.unit_id), verdict_text(flip.base), verdict_text(flip.candidate), key=flip.unit_id
            )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "compare-flips":
            return
        event.stop()
        unit = event.row_key.value
        rows = [next((r for r in side if r.unit_id == unit), None) for side in self.rows]
        if rows[0] is None or rows[1] is None:
            return
        from simlab.tui.app import ViewApp
        from simlab.tui.screens.compare import CompareScreen

        app = self.app
        assert isinstance(app, ViewApp)
        a, b = app.load(self.base, rows[0]), app.load(self.candidate, rows[1])
        if a is not None and b is not None:
            app.push_screen(
                CompareScreen(self.candidate, a, b, sides=(self.base.run_id, self.candidate.run_id))
            )

    def action_next_k(self) -> None:
        choices = (1, 2, 3, 5, 8, 16, 32)
        now = self.diff.k if self.diff else 1
        self.k = next((k for k in choices if k > now), choices[0])
        self.refresh_data()

    def action_back(self) -> None:
        self.app.pop_screen()
