"""``?``: the keys of the screen you came from, and of the whole app."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from simlab.transcript.verdicts import CLASSES, VERDICT_INFO, legend

__all__ = ["HelpScreen", "keys_of", "keys_table"]

KEY_NAMES = {"slash": "/", "question_mark": "?", "escape": "esc", "shift+n": "N"}
LEGEND = "\n".join([
    "verdicts: " + legend(), *(f"  {v.label}: {v.meaning}" for v in VERDICT_INFO.values()),
    "classes: " + "  ".join(f"{c.label} ({c.meaning})" for c in CLASSES.values()),
    "adjusted pass^k leaves invalid, error and unjudged trials out; the raw rate counts them."])

Keys = list[tuple[str, str]]


def keys_of(node: object) -> Keys:
    """(key, description) of a screen's or app's bindings, plus its ``HELP_EXTRA`` lines."""
    out: Keys = []
    for b in getattr(node, "BINDINGS", []):
        b = b if isinstance(b, Binding) else Binding(*b)
        if b.description:
            out.append((", ".join(KEY_NAMES.get(k, k) for k in b.key.split(",")), b.tooltip or b.description))
    return out + list(getattr(node, "HELP_EXTRA", []))


def keys_table(sections: list[tuple[str, Keys]]) -> Group:
    """A heading and a two-column table (key, what it does) per section."""
    parts: list[Text | Table] = []
    for i, (title, keys) in enumerate(sections):
        parts.append(Text(("\n" if i else "") + title, style="bold underline"))
        table = Table(box=None, show_header=False, pad_edge=False, expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True, width=12)
        table.add_column("what", ratio=1)
        for key, what in keys:
            table.add_row(Text(key), Text(what))
        parts.append(table)
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close")]

    def __init__(self, screen: Screen) -> None:
        super().__init__()
        name = type(screen).__name__.removesuffix("Screen").lower()
        self.sections = [(f"{name} screen", keys_of(screen)), ("everywhere", keys_of(screen.app))]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("Keys  (esc closes)", style="bold"))
            yield Static(keys_table(self.sections))
            yield Static(Text(LEGEND, style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)
