"""The bottom line: the keys of the current screen. One Static, so a screen opens faster than
with Textual's Footer (a widget per key); ``?`` lists them all."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

__all__ = ["KeyBar", "key_hints"]

KEY_NAMES = {"slash": "/", "question_mark": "?", "escape": "esc", "enter": "⏎"}


def key_hints(*sources: object) -> Text:
    """``key description`` for every shown binding of ``sources`` (screens, the app), in order."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for source in sources:
        for b in getattr(source, "BINDINGS", []):
            b = b if isinstance(b, Binding) else Binding(*b)
            if not b.show or not b.description:
                continue
            key = KEY_NAMES.get(b.key.split(",")[0], b.key.split(",")[0])
            out.append(f" {key} ", "bold reverse")
            out.append(f"{b.description} ")
    return out


class KeyBar(Static):
    def on_mount(self) -> None:
        self.update(key_hints(self.screen, self.app))
