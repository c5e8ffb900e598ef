"""The checks of a trial, failed first; moving shows a check, enter jumps to its event."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from simlab.transcript import Check
from simlab.tui.messages import CheckChosen, CheckHighlighted
from simlab.tui.render_checks import check_line, check_order

__all__ = ["ChecksPanel"]


class ChecksPanel(OptionList):
    def __init__(self, checks: list[Check], **kwargs: object) -> None:
        self.checks = checks
        self.order = check_order(checks)
        self.with_reasons = True
        super().__init__(*self._build_options(), **kwargs)  # type: ignore[arg-type]

    def _build_options(self) -> list[Option]:
        if not self.checks:
            return [Option(Text("not graded: no checks recorded", style="dim"), id="none", disabled=True)]
        return [Option(check_line(self.checks[i], self.with_reasons), id=str(i)) for i in self.order]

    def show_reasons(self, on: bool) -> None:
        """Reasons under each check (wide screens) or names only (the detail pane has the reason)."""
        if on != self.with_reasons:
            self.with_reasons = on
            highlighted = self.highlighted
            self.clear_options()
            self.add_options(self._build_options())
            self.highlighted = highlighted

    def failed_positions(self) -> list[int]:
        """Option positions of the failed checks that point at an event."""
        return [
            pos
            for pos, i in enumerate(self.order)
            if self.checks[i].status == "fail" and self.checks[i].event is not None
        ]

    def _check(self, option: Option) -> Check | None:
        if option.id is None or not option.id.isdigit():
            return None
        return self.checks[int(option.id)]

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        check = self._check(event.option)
        if check is not None:
            self.post_message(CheckHighlighted(check))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        check = self._check(event.option)
        if check is not None:
            self.post_message(CheckChosen(check))
