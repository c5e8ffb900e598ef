"""A block of text that shows only its first lines until asked for the rest."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from simlab.tui.render import FOLD_LINES, fold

__all__ = ["FoldedText"]


class FoldedText(Static, can_focus=True):
    """Long tool results stay readable: the first lines, then "… N more lines" (enter unfolds)."""

    BINDINGS = [Binding("enter", "toggle_fold", "Fold/unfold", show=False)]

    def __init__(self, text: Text, max_lines: int = FOLD_LINES, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.full = text
        self.folded, self.hidden = fold(text, max_lines)
        self.unfolded = self.hidden == 0
        self.can_focus = self.hidden > 0

    def on_mount(self) -> None:
        self._show()

    def _show(self) -> None:
        if self.unfolded:
            self.update(self.full)
            return
        shown = self.folded.copy()
        shown.append(
            f"\n… {self.hidden} more line{'s' if self.hidden != 1 else ''} (enter to unfold)", "italic dim"
        )
        self.update(shown)

    def action_toggle_fold(self) -> None:
        if self.hidden:
            self.unfolded = not self.unfolded
            self._show()

    def on_click(self) -> None:
        self.action_toggle_fold()
