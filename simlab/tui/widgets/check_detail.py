"""The highlighted check in full: reason, where it points, and the state diff of a state check."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from simlab.transcript import Check
from simlab.tui.render_checks import check_detail

__all__ = ["CheckDetail"]


class CheckDetail(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Static(Text("select a check to see its detail", style="dim"), id="check-detail-body")

    def show(self, check: Check) -> None:
        self.query_one("#check-detail-body", Static).update(check_detail(check))
        self.set_class(bool(check.details.get("diff") or check.details.get("diff_entries")), "has-diff")
        self.scroll_home(animate=False)
