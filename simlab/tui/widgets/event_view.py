"""One transcript event that is not a tool call: a message, a signal, a model call, an error."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from simlab.tui.render import event_text

__all__ = ["EventView"]

CLASSES = {
    "user": "user",
    "agent": "agent",
    "signal": "signal",
    "model_call": "usage",
    "error": "error",
    "invalid_call": "invalid",
    "tool_result": "tool",
}


class EventView(Static):
    """Styled by its class (``user``, ``agent``…): the stylesheet tells speakers apart."""

    def __init__(self, event: Any, index: int, highlight: str | None = None) -> None:
        kind = getattr(event, "type", "other")
        super().__init__(id=f"ev-{index}", classes=f"event {CLASSES.get(kind, 'other')}")
        self.event = event
        self.index = index
        self.highlight = highlight

    def on_mount(self) -> None:
        self.update(event_text(self.event, self.highlight))


class EndView(Static):
    """The termination line closing a transcript."""

    def __init__(self, text: Text) -> None:
        super().__init__(text, classes="event end")
