"""Two trials of one scenario side by side: why did this one fail when that one passed?"""

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
        Binding("e", "toggle_tools", "Tool calls",
                tooltip="every tool call, both sides: open, then unfold long results, then close again"),
        Binding("tab", "switch_side", "Other side", show=False, priority=True,
                tooltip="move between the two conversations"),
        Binding("escape", "back", "Back", tooltip="back to the trials"),
    ]
    HELP_EXTRA = [("↑ ↓ pgup pgdn", "scroll the conversation in focus")]

    def __init__(self, run: RunInfo, a: TrialRecord, b: TrialRecord) -> None:
        super().__init__(run)
        self.a, self.b = a, b

    def compose(self) -> ComposeResult:
        ta, tb = self.a.transcript, self.b.transcript
        yield Crumbs([self.run.run_id, ta.scenario_id, f"#{ta.trial} vs #{tb.trial}"], id="crumbs")
        yield Static(Text("\n".join(differences(self.a, self.b))), id="differences")
        with Horizontal(id="pair"):
            for record, where in ((self.a, "left"), (self.b, "right")):
                with Vertical(classes=f"side {where}"):
                    yield Static(trial_summary(record).split("\n")[0], classes="side-header")
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
