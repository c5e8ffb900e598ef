"""``?``: the keys of the screen you came from, and of the whole app."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from simlab.report.wrap import phrase_lines
from simlab.transcript.verdicts import CLASSES, VERDICT_INFO, legend
from simlab.tui.widgets.key_bar import key_label, shown_bindings

__all__ = ["HelpScreen", "keys_of", "keys_table"]

LEGEND = "\n".join(
    [
        "verdicts: " + legend(),
        *(f"  {v.label}: {v.meaning}" for v in VERDICT_INFO.values()),
        "classes: " + "  ".join(f"{c.label} ({c.meaning})" for c in CLASSES.values()),
        "adjusted pass^k leaves invalid, error and unjudged trials out; the raw rate counts them.",
    ]
)

Keys = list[tuple[str, str]]


def keys_of(node: object) -> Keys:
    """(key, description) of a screen's or app's bindings, plus its ``HELP_EXTRA`` lines."""
    out: Keys = [(key_label(b), b.tooltip or b.description) for b in shown_bindings(node)]
    return out + list(getattr(node, "HELP_EXTRA", []))


class Phrases:
    """Text that wraps between its phrases at whatever width it is given (``report/wrap.py``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in phrase_lines(self.text, options.max_width, indent=2):
            yield Text(line, no_wrap=True, overflow="ellipsis")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(max(map(cell_len, self.text.split()), default=1), cell_len(self.text))


def keys_table(sections: list[tuple[str, Keys]]) -> Group:
    """A heading and a two-column table (key, what it does) per section; the key column as wide as
    its widest key (never cut), what a key does wrapped between its phrases."""
    parts: list[Text | Table] = []
    key_width = max((cell_len(key) for _, keys in sections for key, _ in keys), default=1)
    for i, (title, keys) in enumerate(sections):
        parts.append(Text(("\n" if i else "") + title, style="bold underline"))
        table = Table(box=None, show_header=False, pad_edge=False, expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True, width=key_width)
        table.add_column("what", ratio=1)
        for key, what in keys:
            table.add_row(Text(key), Phrases(what))
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
