"""The ``/`` prompt: text to look for across the trials the list shows."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

__all__ = ["SearchBar"]


class SearchBar(Input):
    """Hidden until ``/``; enter searches, escape closes (an empty search clears the last one)."""

    BINDINGS = [Binding("escape", "close", "Close search", show=False)]

    def __init__(
        self,
        placeholder: str = "search visible trials (enter: search, empty: clear, esc: close)",
        **kwargs: object,
    ) -> None:
        super().__init__(placeholder=placeholder, **kwargs)  # type: ignore[arg-type]

    def open(self, value: str = "") -> None:
        self.value = value
        self.display = True
        self.focus()

    def action_close(self) -> None:
        self.display = False
        self.screen.focus_next()
