"""Two trials of one scenario side by side: why did this one fail when that one passed? Two trials
of one run (``m`` then ``m`` on the trials), or one trial in two runs (a flipped trial of a run
comparison: ``sides`` names the runs)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from simlab.transcript import TrialRecord
from simlab.tui.data import RunInfo
from simlab.tui.screens.base import RunScreen
from simlab.tui.trial_diff import differences
from simlab.tui.widgets.crumbs import Crumbs
from simlab.tui.widgets.key_bar import KeyBar
from simlab.tui.widgets.transcript_view import TranscriptView
from simlab.tui.widgets.trial_header import trial_summary

__all__ = ["CompareScreen"]


class CompareScreen(RunScreen):
    BINDINGS = [
        Binding(
            "e",
            "toggle_tools",
            "Tool calls",
            tooltip="every tool call, both sides: open, then unfold long results, then close again",
        ),
        Binding(
            "tab",
            "switch_side",
            "Other side",
            show=False,
            priority=True,
            tooltip="move between the two conversations",
        ),
        Binding("escape", "back", "Back", tooltip="back to the trials"),
    ]
    HELP_EXTRA = [("↑ ↓ pgup pgdn", "scroll the conversation in focus")]

    def __init__(
        self, run: RunInfo, a: TrialRecord, b: TrialRecord, sides: tuple[str, str] | None = None
    ) -> None:
        super().__init__(run)
        self.a, self.b = a, b
        self.sides = sides

    def compose(self) -> ComposeResult:
        ta, tb = self.a.transcript, self.b.transcript
        if self.sides is None:
            crumbs = [self.run.run_id, ta.scenario_id, f"#{ta.trial} vs #{tb.trial}"]
        else:
            crumbs = [f"{self.sides[0]} → {self.sides[1]}", ta.scenario_id, f"#{ta.trial}"]
        yield Crumbs(crumbs, id="crumbs")
        yield Static(Text("\n".join(differences(self.a, self.b))), id="differences")
        with Horizontal(id="pair"):
            for i, (record, where) in enumerate(((self.a, "left"), (self.b, "right"))):
                with Vertical(classes=f"side {where}"):
                    header = trial_summary(record).split("\n")[0]
                    if self.sides is not None:
                        header = Text(f"{self.sides[i]}: ", style="bold").append(header)
                    yield Static(header, classes="side-header")
                    yield TranscriptView(record, classes="compared")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query(TranscriptView).first().focus()

    def action_switch_side(self) -> None:
        left, right = self.query(TranscriptView)
        (left if right.has_focus_within else right).focus()

    def action_toggle_tools(self) -> None:
        views = list(self.query(TranscriptView))
        state = views[0].toggle_tools()
        for view in views[1:]:
            view.set_tools(state)
