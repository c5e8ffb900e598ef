"""A tool call with its arguments and result, collapsible; a long result is folded."""

from __future__ import annotations

from textual.widgets import Collapsible

from simlab.transcript import ToolCall, ToolResult
from simlab.tui.render import mark, tool_call_title, tool_result_text
from simlab.tui.widgets.folded_text import FoldedText

__all__ = ["ToolCallView"]


class ToolCallView(Collapsible):
    """Title: ``✓ name(args)``; body: pretty arguments and result. Collapsed unless asked."""

    def __init__(
        self,
        call: ToolCall,
        result: ToolResult | None,
        index: int,
        result_index: int | None,
        highlight: str | None = None,
        collapsed: bool = True,
    ) -> None:
        title = mark(tool_call_title(call, result), highlight)
        failed = result is not None and not result.ok
        body = FoldedText(mark(tool_result_text(call, result), highlight), classes="tool-body")
        super().__init__(
            body,
            title=title,  # type: ignore[arg-type]
            collapsed=collapsed,
            id=f"ev-{index}",
            classes="event tool" + (" failed" if failed else ""),
        )
        self.call = call
        self.result = result
        self.index = index
        self.result_index = result_index
        self.highlight = highlight
        self.quiet = False  # set while every call is opened at once: do not scroll to each

    def _watch_collapsed(self, collapsed: bool) -> None:
        self._update_collapsed(collapsed)
        self.post_message(self.Collapsed(self) if collapsed else self.Expanded(self))
        if self.is_mounted and not self.quiet:
            self.call_after_refresh(self.scroll_visible)

    def unfold(self, on: bool) -> None:
        """Show the whole result (``on``) or only its first lines."""
        body = self.query_one(FoldedText)
        if body.hidden and body.unfolded != on:
            body.action_toggle_fold()
