"""A small chooser for a filter value, each value with how many trials have it."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from simlab.tui.render import literal_line

__all__ = ["PickerScreen"]

ANY = ""


class PickerScreen(ModalScreen[str | None]):
    """Dismisses with the chosen value, ``""`` for "any" (filter off), or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, counts: Counter[str], current: str | None) -> None:
        super().__init__()
        self.title_text = title
        self.values = [ANY] + [value for value, _ in counts.most_common()]
        self.counts = counts
        self.current = current

    def compose(self) -> ComposeResult:
        options = [Option(Text("any (filter off)", style="italic"), id="0")]
        for i, value in enumerate(self.values[1:], 1):
            prompt = literal_line(value)  # a mode or a check name: one line, never more
            prompt.append(f"  {self.counts[value]}", "dim")
            options.append(Option(prompt, id=str(i)))
        with Vertical(id="picker"):
            yield Static(Text(self.title_text, style="bold"), id="picker-title")
            yield OptionList(*options, id="picker-options")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self.values.index(self.current) if self.current in self.values else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.values[int(event.option.id or 0)])

    def action_cancel(self) -> None:
        self.dismiss(None)
