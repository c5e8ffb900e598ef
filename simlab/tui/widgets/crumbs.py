"""The top line: where you are (run › scenario › trial) and what the data is doing (indexing, live)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from simlab.tui.render import clean

__all__ = ["Crumbs", "crumbs_text"]


def crumbs_text(parts: list[str], note: str = "") -> Text:
    out = Text()
    out.append("simlab", "bold")
    for part in parts:
        out.append(" › ", "dim")
        out.append(clean(part))
    if note:
        out.append("   ")
        out.append(clean(note), "italic dim")
    return out


class Crumbs(Static):
    def __init__(self, parts: list[str], **kwargs: object) -> None:
        super().__init__(crumbs_text(parts), **kwargs)  # type: ignore[arg-type]
        self.parts = parts

    def note(self, text: str) -> None:
        self.update(crumbs_text(self.parts, text))
