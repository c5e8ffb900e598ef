"""A run's scenarios: pass^1..k, flake class, invalid and error counts. The first screen."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from simlab.report.fmt import money, num
from simlab.transcript.verdicts import unjudged_text
from simlab.tui.render import literal
from simlab.tui.screens.base import RunScreen
from simlab.tui.summary import RunOverview, ScenarioProgress, screen_k, summarize_run
from simlab.tui.widgets.crumbs import Crumbs
from simlab.tui.widgets.key_bar import KeyBar
from simlab.tui.widgets.scenarios_table import ScenariosTable
from simlab.tui.widgets.status_line import StatusLine

__all__ = ["ScenariosScreen", "run_summary_text"]


def run_summary_text(s: RunOverview, agent: str, simulator: str) -> Text:
    """Suite figures on one line (pass^1, pass^k, the success rate, invalid, error, cost), what
    each figure is on the next (pass^k is the report's suite figure: the mean over scenarios of
    their valid trials; success counts every graded trial, so the two differ even without invalid
    or error trials), the players on the last."""
    out = Text()
    if s.graded:
        out.append(f"pass^1 {num(s.pass_1)}", "bold")
        if s.k > 1:
            out.append(f" · pass^{s.k} {num(s.pass_k)}", "bold")
            if s.pass_k_scenarios < s.scenarios:
                out.append(f" ({s.pass_k_scenarios}/{s.scenarios} scenarios)", "dim")
        out.append(
            f" · success {num(s.raw_pass_1)} · {s.invalid} invalid · {s.error} error"
            + (
                f" · {unjudged_text(s.unjudged, s.unjudged_as_pass)} unjudged"
                if s.unjudged or s.unjudged_as_pass
                else ""
            )
        )
        if s.graded < s.trials:
            out.append(f" · {s.trials - s.graded} not graded", "yellow")
    else:
        out.append("not graded", "bold yellow")
        out.append(" · how the trials ended")
    out.append(f" · cost {money(s.cost)}")
    if s.graded:
        out.append(
            f"\npass^k: mean over scenarios of their valid trials · success: all {s.graded} graded trials",
            "dim",
        )
    out.append("\nagent ", "dim")
    out.append(literal(agent or "?"))
    out.append(" · simulator ", "dim")
    out.append(literal(simulator or "?"))
    return out


def _troubled(s: ScenarioProgress) -> bool:
    if s.graded:
        return s.passed < s.graded
    return s.goal_reached < s.trials


class ScenariosScreen(RunScreen):
    BINDINGS = [
        Binding("enter", "open", "Trials", show=False, tooltip="the trials of this scenario"),
        Binding("a", "all_trials", "All trials", tooltip="every trial of the run, all scenarios"),
        Binding(
            "f", "failed_only", "Failed only", tooltip="only scenarios with a failed, invalid or error trial"
        ),
        Binding(
            "p",
            "next_k",
            "pass^k",
            tooltip="the k of pass^k on this screen: the run's planned trials, or 1, 2, 3, 5…",
        ),
        Binding("escape", "back", "Runs", tooltip="all runs"),
    ]

    failed_only = False
    k: int | None = None  # chosen with p; None: the run's own (screen_k)

    def compose(self) -> ComposeResult:
        yield Crumbs([self.run.run_id], id="crumbs")
        yield Static(id="run-summary")
        yield ScenariosTable(id="scenarios")
        yield StatusLine(id="status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.refresh_data()
        self.query_one(ScenariosTable).focus()
        self.call_after_refresh(self.viewer.mark_first_screen)

    def refresh_data(self) -> None:
        index = self.index
        summaries = index.progress()
        everything = list(summaries.values())
        graded = any(s.graded for s in everything)
        shown = [s for s in everything if _troubled(s)] if self.failed_only else everything
        k = self.k or screen_k(summaries)
        self.query_one(ScenariosTable).fill(
            shown, graded, k=k, k_limit=4 if self.app.size.width >= 100 else 2
        )
        text = run_summary_text(summarize_run(summaries, k), self.run.pin("agent"), self.run.pin("simulator"))
        if index.problem:  # the error every reader of this run gives: no figure stands
            text = Text("no figures: ", "bold red").append(literal(index.problem))
        for warning in index.warnings():
            text.append("\nwarning: ", "yellow").append(literal(warning))
        self.query_one("#run-summary", Static).update(text)
        note = "" if index.complete else f"indexing… {len(index.rows):,} trials so far"
        if index.bad_lines:
            note += f" {index.bad_lines} unreadable line(s) skipped"
        self.query_one(Crumbs).note(note)
        self.query_one(StatusLine).show(
            len(shown),
            len(everything),
            "scenarios",
            ["with failures"] if self.failed_only else [],
            f"{len(index.rows):,} trials",
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._open(event.row_key.value)

    def action_open(self) -> None:
        self._open(self.query_one(ScenariosTable).current_key())

    def _open(self, scenario: str | None) -> None:
        if scenario is not None:
            from simlab.tui.screens.trials import TrialsScreen

            self.app.push_screen(TrialsScreen(self.run, scenario))

    def action_all_trials(self) -> None:
        from simlab.tui.screens.trials import TrialsScreen

        self.app.push_screen(TrialsScreen(self.run, None))

    def action_next_k(self) -> None:
        """Cycle the screen's k: the run's own, then 1, 2, 3, 5, 8… up to its largest trial count."""
        summaries = self.index.progress()
        top = max((max(s.planned, s.valid_n) for s in summaries.values()), default=1)
        own = screen_k(summaries)
        choices = [own] + [k for k in (1, 2, 3, 5, 8, 16, 32, 64, 100) if k <= top and k != own]
        now = self.k or own
        self.k = choices[(choices.index(now) + 1) % len(choices)] if now in choices else own
        self.notify(
            f"pass^{self.k} on this screen" + (" (the run's own k)" if self.k == own else ""),
            markup=False,
            timeout=2,
        )
        self.refresh_data()

    def action_failed_only(self) -> None:
        self.failed_only = not self.failed_only
        self.refresh_data()
