"""One trial: the conversation, its checks (failed first), and the selected check's detail."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input

from simlab.transcript import TrialRecord
from simlab.tui.data import RunInfo
from simlab.tui.messages import CheckChosen, CheckHighlighted
from simlab.tui.screens.base import RunScreen
from simlab.tui.widgets.check_detail import CheckDetail
from simlab.tui.widgets.checks_panel import ChecksPanel
from simlab.tui.widgets.crumbs import Crumbs
from simlab.tui.widgets.key_bar import KeyBar
from simlab.tui.widgets.search_bar import SearchBar
from simlab.tui.widgets.tool_call_view import ToolCallView
from simlab.tui.widgets.transcript_view import TranscriptView
from simlab.tui.widgets.trial_header import TrialHeader

__all__ = ["NARROW", "TranscriptScreen"]

NARROW = 110  # below this width the checks go under the conversation instead of beside it


class TranscriptScreen(RunScreen):
    BINDINGS = [
        Binding(
            "n",
            "next_failed(1)",
            "Next failure",
            tooltip="next failed check: select it and jump to its event",
        ),
        Binding("shift+n", "next_failed(-1)", "Prev failure", show=False, tooltip="previous failed check"),
        Binding(
            "e",
            "toggle_tools",
            "Tool calls",
            tooltip="every tool call: open, then unfold long results, then close again",
        ),
        Binding(
            "tab",
            "switch_pane",
            "Conversation/checks",
            show=False,
            priority=True,
            tooltip="move between the conversation and the checks",
        ),
        Binding(
            "right_square_bracket",
            "next_tool(1)",
            "Next call",
            show=False,
            key_display="]",
            tooltip="select the next tool call (and scroll to it)",
        ),
        Binding(
            "left_square_bracket",
            "next_tool(-1)",
            "Prev call",
            show=False,
            key_display="[",
            tooltip="select the previous tool call",
        ),
        Binding(
            "o",
            "open_tool",
            "Open call",
            tooltip="open the selected tool call (] and [ select one): its whole arguments and result",
        ),
        Binding("slash", "search", "Find", tooltip="find text in this transcript; enter again: the next hit"),
        Binding(
            "y", "copy", "Copy", show=False, tooltip="copy this transcript (as markdown) to the clipboard"
        ),
        Binding("m", "export", "Markdown", tooltip="write this trial as markdown to <run>/exports/<unit>.md"),
        Binding("escape", "back", "Back", tooltip="back to the trials"),
    ]
    HELP_EXTRA = [
        ("enter", "on a check: jump to the event it points at"),
        ("↑ ↓ pgup pgdn", "scroll the conversation, or move in the checks"),
        ("click", "open or close one tool call; unfold one long result"),
    ]

    def __init__(
        self, run: RunInfo, record: TrialRecord, highlight: str | None = None, at: int | None = None
    ) -> None:
        super().__init__(run)
        self.record = record
        self.highlight = highlight
        self.at = at  # an event to show first (a failure mode's first faulty step)
        self._failure = -1
        self._hit = -1

    def compose(self) -> ComposeResult:
        t = self.record.transcript
        yield Crumbs([self.run.run_id, t.scenario_id, f"#{t.trial}"], id="crumbs")
        yield TrialHeader(self.record, id="trial-header")
        yield SearchBar(id="find", placeholder="find in this transcript (enter: next hit, esc: close)")
        with Horizontal(id="body"):
            yield TranscriptView(self.record, highlight=self.highlight, id="conversation")
            with Vertical(id="side", classes="" if self.record.checks else "ungraded"):
                yield ChecksPanel(self.record.checks, id="checks")
                yield CheckDetail(id="check-detail")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(SearchBar).display = False
        self._layout(self.size.width or self.app.size.width)
        view = self.query_one(TranscriptView)
        view.focus()
        match = view.first_match(self.highlight) if self.highlight else None
        if match is not None:  # opened from a search: show the first hit
            view.jump_to(match)
        elif self.at is not None:  # opened from a failure mode: show its first faulty step
            view.jump_to(self.at)
        panel = self.query_one(ChecksPanel)
        if self.record.checks:
            panel.highlighted = 0  # failed checks come first: show the worst at once

    def on_resize(self, event: events.Resize) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        self.set_class(width < NARROW, "narrow")
        self.query_one(ChecksPanel).show_reasons(width >= NARROW)

    def on_check_highlighted(self, message: CheckHighlighted) -> None:
        self.query_one(CheckDetail).show(message.check)

    def on_check_chosen(self, message: CheckChosen) -> None:
        self.query_one(CheckDetail).show(message.check)
        self.jump(message.check.event)

    def jump(self, event: int | None) -> None:
        if event is None:
            self.notify("this check points at no event", markup=False, timeout=3)
            return
        if not self.query_one(TranscriptView).jump_to(event):
            self.notify(f"event {event} is not in this transcript", severity="warning", markup=False)

    def action_next_failed(self, step: int) -> None:
        """Walk the failed checks that point at an event: select each and jump to its event."""
        panel = self.query_one(ChecksPanel)
        positions = panel.failed_positions()
        if not positions:
            self.notify("no failed check points at an event", markup=False, timeout=3)
            return
        self._failure = (self._failure + step) % len(positions)
        panel.highlighted = positions[self._failure]
        check = panel.checks[panel.order[positions[self._failure]]]
        self.query_one(CheckDetail).show(check)
        self.jump(check.event)

    def action_switch_pane(self) -> None:
        panel = self.query_one(ChecksPanel)
        if self.record.checks and not panel.has_focus:
            panel.focus()
        else:
            self.query_one(TranscriptView).focus()

    def action_toggle_tools(self) -> None:
        self.query_one(TranscriptView).toggle_tools()

    def action_export(self) -> None:
        self.viewer.export_markdown(self.run, self.record)

    # -- one tool call -------------------------------------------------------------------------
    def action_next_tool(self, step: int) -> None:
        """Select the next (or previous) tool call: scroll to it and mark it, as a jump does."""
        view = self.query_one(TranscriptView)
        calls = [v.index for v in view.query(ToolCallView)]
        if not calls:
            self.notify("this transcript has no tool call", markup=False, timeout=3)
            return
        now = view.selected_tool()
        at = calls.index(now) if now in calls else (-1 if step > 0 else 0)
        view.jump_to(calls[(at + step) % len(calls)])

    def action_open_tool(self) -> None:
        from simlab.tui.screens.tool_call import ToolCallScreen

        view = self.query_one(TranscriptView)
        index = view.selected_tool()
        if index is None:
            calls = list(view.query(ToolCallView))
            if not calls:
                self.notify("this transcript has no tool call", markup=False, timeout=3)
                return
            index = calls[0].index
            view.jump_to(index)
        widget = view.widget_for(index)
        assert isinstance(widget, ToolCallView)
        self.app.push_screen(ToolCallScreen(widget.call, widget.result))

    # -- find and copy -------------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one(SearchBar).open(self.highlight or "")

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        query = event.value.strip()
        view = self.query_one(TranscriptView)
        if query != (self.highlight or ""):
            self.highlight = query or None
            self._hit = -1
            await view.mark_text(self.highlight)
        hits = view.matches(query) if query else []
        if not hits:
            self.query_one(SearchBar).action_close()
            self.notify(
                f"/{query}: not in this transcript" if query else "search cleared", markup=False, timeout=3
            )
            return
        self._hit = (self._hit + 1) % len(hits)
        view.jump_to(hits[self._hit])
        self.notify(f"/{query}: hit {self._hit + 1} of {len(hits)} (enter: next)", markup=False, timeout=3)

    def action_copy(self) -> None:
        from simlab.tui.export import transcript_markdown

        self.app.copy_to_clipboard(transcript_markdown(self.record))
        self.notify(f"copied {self.record.unit_id} as markdown", markup=False, timeout=3)
