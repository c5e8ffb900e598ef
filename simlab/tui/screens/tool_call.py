"""One tool call opened from the keyboard (``o`` on the transcript): its whole arguments and its
whole result, nothing folded; ``y`` copies both as JSON."""

from __future__ import annotations

import json

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from simlab.transcript import ToolCall, ToolResult
from simlab.tui.render import tool_call_title, tool_result_text

__all__ = ["ToolCallScreen", "tool_call_json"]


def tool_call_json(call: ToolCall, result: ToolResult | None) -> str:
    """The call and its result as indented JSON: what ``y`` copies."""
    data = {
        "tool": call.name,
        "call_id": call.call_id,
        "turn": call.turn,
        "arguments": call.arguments if call.arguments is not None else call.raw_arguments,
        "result": None if result is None else (result.result if result.ok else None),
        "error": None if result is None or result.ok else result.error,
    }
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


class ToolCallScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,o,q", "close", "Close"),
        Binding("y", "copy", "Copy", tooltip="copy this call and its result as JSON"),
    ]

    def __init__(self, call: ToolCall, result: ToolResult | None) -> None:
        super().__init__()
        self.call, self.result = call, result

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="tool-call"):
            yield Static(Text("Tool call  (y copies, esc closes)", style="bold"))
            yield Static(tool_call_title(self.call, self.result))
            yield Static(tool_result_text(self.call, self.result), id="tool-call-body")

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(tool_call_json(self.call, self.result))
        self.notify(f"copied {self.call.name} ({self.call.call_id}) as JSON", markup=False, timeout=3)

    def action_close(self) -> None:
        self.dismiss(None)
