"""A whole conversation, scrollable: one widget per event, a tool call and its result as one."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget

from simlab.transcript import ToolCall, ToolResult, TrialRecord
from simlab.tui.render import event_blocks, event_text, termination_text, tool_call_title, tool_result_text
from simlab.tui.widgets.event_view import EndView, EventView
from simlab.tui.widgets.folded_text import FoldedText
from simlab.tui.widgets.tool_call_view import ToolCallView

__all__ = ["TranscriptView"]


class TranscriptView(VerticalScroll):
    """``jump_to(i)`` scrolls to event ``i`` (a tool result lands on its call) and marks it."""

    def __init__(
        self, record: TrialRecord, highlight: str | None = None, expanded: bool = False, **kwargs: object
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.record = record
        self.highlight = highlight
        self.expanded = expanded
        self.owner: dict[int, int] = {}  # event index → index of the widget showing it

    def compose(self) -> ComposeResult:
        events = self.record.transcript.events
        for i, j in event_blocks(events):
            event = events[i]
            self.owner[i] = i
            if isinstance(event, ToolCall):
                if j is not None:
                    self.owner[j] = i
                yield ToolCallView(
                    event,
                    events[j] if j is not None else None,  # type: ignore[arg-type]
                    i,
                    j,
                    highlight=self.highlight,
                    collapsed=not self.expanded,
                )
            else:
                yield EventView(event, i, highlight=self.highlight)
        yield EndView(termination_text(self.record.transcript.termination))

    def first_match(self, term: str) -> int | None:
        """Index of the first event whose shown text contains ``term`` (any case)."""
        hits = self.matches(term)
        return hits[0] if hits else None

    def matches(self, term: str) -> list[int]:
        """Indexes of the events (a tool call with its result as one) whose shown text contains
        ``term`` (any case), in order."""
        needle = term.lower()
        events = self.record.transcript.events
        found = []
        for i, j in event_blocks(events):
            event = events[i]
            if isinstance(event, ToolCall):
                result = events[j] if j is not None else None
                result = result if isinstance(result, ToolResult) else None
                text = tool_call_title(event, result).plain + tool_result_text(event, result).plain
            else:
                text = event_text(event).plain
            if needle and needle in text.lower():
                found.append(i)
        return found

    async def mark_text(self, term: str | None) -> None:
        """Draw the conversation again with ``term`` marked wherever it is shown."""
        self.highlight = term
        self.owner.clear()
        await self.recompose()

    def selected_tool(self) -> int | None:
        """The index of the tool call marked as the target (by a jump or ``]``), or None."""
        for widget in self.query(".target"):
            if isinstance(widget, ToolCallView):
                return widget.index
        return None

    def widget_for(self, index: int) -> Widget | None:
        owner = self.owner.get(index)
        if owner is None:
            return None
        return self.query_one(f"#ev-{owner}")

    def jump_to(self, index: int) -> bool:
        """Scroll event ``index`` into view, expand it if it is a collapsed tool call, mark it."""
        target = self.widget_for(index)
        if target is None:
            return False
        for old in self.query(".target"):
            old.remove_class("target")
        target.add_class("target")
        if isinstance(target, ToolCallView):
            target.collapsed = False
        self.call_after_refresh(self.scroll_to_widget, target, animate=False, top=True)
        return True

    def toggle_tools(self) -> str:
        """Cycle every tool call: closed → open (long results folded) → open and unfolded → closed.
        Returns the new state; the view keeps its place instead of following each call."""
        views = list(self.query(ToolCallView))
        if any(v.collapsed for v in views):
            state = "open"
        elif any(v.query_one(FoldedText).hidden and not v.query_one(FoldedText).unfolded for v in views):
            state = "unfolded"
        else:
            state = "closed"
        self.set_tools(state)
        return state

    def set_tools(self, state: str) -> None:
        """``closed``, ``open`` or ``unfolded`` for every tool call."""
        self.expanded = state != "closed"
        for view in self.query(ToolCallView):
            view.quiet = True
            view.collapsed = state == "closed"
            view.unfold(state == "unfolded")
        self.call_after_refresh(self._loud)

    def _loud(self) -> None:
        for view in self.query(ToolCallView):
            view.quiet = False
