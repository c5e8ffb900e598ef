"""One line under a list: how many rows are shown, which filters are on, hints."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from simlab.inert import one_line
from simlab.tui.render import clean

__all__ = ["StatusLine", "status_text"]


def status_text(shown: int, total: int, noun: str, filters: list[str], hint: str = "") -> Text:
    out = Text()
    out.append(f"{shown:,} of {total:,} {noun}" if shown != total else f"{total:,} {noun}", "bold")
    for label in filters:
        out.append("  ")
        out.append(f" {one_line(label)} ", "reverse")  # a filter on a mode or a check: one line
    if hint:
        out.append("   ")
        out.append(clean(hint), "dim")
    return out


class StatusLine(Static):
    def show(
        self, shown: int, total: int, noun: str, filters: list[str] | None = None, hint: str = ""
    ) -> None:
        self.update(status_text(shown, total, noun, filters or [], hint))
