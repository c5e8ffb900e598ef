"""The viewer's own messages: data arriving, and widgets asking their screen to act."""

from __future__ import annotations

from textual.message import Message

from simlab.transcript import Check

__all__ = ["CheckChosen", "CheckHighlighted", "TrialsAppended"]


class TrialsAppended(Message, bubble=False):
    """New trials were indexed for a run (the first read, or a run still being written).

    Posted by the indexing thread to the app, which hands it to every screen; it does not
    bubble, so a screen's copy never comes back to the app."""

    def __init__(self, key: str, count: int, complete: bool) -> None:
        super().__init__()
        self.key = key  # RunInfo.key
        self.count = count
        self.complete = complete


class CheckHighlighted(Message):
    """The cursor in the checks panel moved to a check: show its detail."""

    def __init__(self, check: Check) -> None:
        super().__init__()
        self.check = check


class CheckChosen(Message):
    """A check was selected: jump to the event it points at."""

    def __init__(self, check: Check) -> None:
        super().__init__()
        self.check = check
