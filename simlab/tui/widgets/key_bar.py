"""The bottom line: the keys of the current screen, then the app's own (``?`` keys, ``q`` quit),
kept at the right end whatever the width. One widget, so a screen opens faster than with
Textual's Footer (a widget per key); ``?`` lists them all. How a key reads (``]``, never
``right_square_bracket``) is ``key_label``'s, for this bar and the help alike."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

__all__ = ["KeyBar", "key_hints", "key_label", "shown_bindings"]

KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "escape": "esc",
    "shift+n": "N",
    "right_square_bracket": "]",
    "left_square_bracket": "[",
}


def key_label(binding: Binding, *, first_only: bool = False) -> str:
    """How ``binding``'s keys read: its ``key_display``, else a short name for each key."""
    if binding.key_display:
        return binding.key_display
    keys = binding.key.split(",")[:1] if first_only else binding.key.split(",")
    return ", ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in keys)


def shown_bindings(source: object) -> list[Binding]:
    """``source``'s bindings (a screen's, the app's) that have a description, as ``Binding``s."""
    out = []
    for b in getattr(source, "BINDINGS", []):
        b = b if isinstance(b, Binding) else Binding(*b)
        if b.description:
            out.append(b)
    return out


def _hints(source: object) -> list[tuple[str, str]]:
    return [(key_label(b, first_only=True), b.description) for b in shown_bindings(source) if b.show]


def _text(hints: list[tuple[str, str]]) -> Text:
    out = Text(no_wrap=True, overflow="ellipsis")
    for key, what in hints:
        out.append(f" {key} ", "bold reverse")
        out.append(f"{what} ")
    return out


def key_hints(screen: object, app: object, width: int | None = None) -> Text:
    """``key description`` for every shown binding of ``screen``, then ``app``'s at the right.

    With ``width``, the app's keys (help, quit) always show: the screen's hints that do not fit
    are left out whole, the last first (``esc`` back last of all), never cut mid-word."""
    left, right = _hints(screen), _hints(app)
    if width is None:
        return _text(left + right)
    right_text = _text(right)
    while left and len(_text(left)) + right_text.cell_len > width:
        drop = next((i for i in range(len(left) - 1, -1, -1) if left[i][0] != "esc"), len(left) - 1)
        del left[drop]
    out = _text(left)
    out.append(" " * max(0, width - out.cell_len - right_text.cell_len))
    return out.append_text(right_text)


class KeyBar(Widget):
    def render(self) -> Text:
        return key_hints(self.screen, self.app, self.size.width)
