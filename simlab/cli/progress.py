"""The progress bar of ``simlab run``: ETA and running outcome counts, on stderr."""

from __future__ import annotations

import sys
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress

from simlab.transcript import TrialRecord

LABELS = {
    "pass": "pass",
    "fail": "fail",
    "invalid": "invalid",
    "unjudged": "unjudged",
    "goal_reached": "goal",
    "user_gave_up": "gave up",
    "agent_transferred": "transferred",
    "max_turns": "turn cap",
    "agent_loop": "loop",
    "budget_exceeded": "budget",
    "context_window": "context",
    "agent_error": "agent crash",
    "error": "error",
    "script_ended": "script ended",
}


class Progress:
    def __init__(self, total: int, done: int = 0, enabled: bool = True):
        self.counts: dict[str, int] = {}
        self.enabled = enabled and sys.stderr.isatty()
        self._bar = RichProgress(
            TextColumn("[bold]trials"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
            disable=not self.enabled,
        )
        self._task = self._bar.add_task("run", total=total, completed=done, counts="")

    def __enter__(self) -> Progress:
        self._bar.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.__exit__(kind, exc, tb)

    def advance(self, record: TrialRecord) -> None:
        self.tick(record.verdict or record.transcript.termination.reason.value)

    def tick(self, reason: str) -> None:
        """One finished trial, by its verdict (or termination reason when ungraded)."""
        self.counts[reason] = self.counts.get(reason, 0) + 1
        text = " · ".join(f"{LABELS.get(k, k)} {v}" for k, v in sorted(self.counts.items()))
        self._bar.update(self._task, advance=1, counts=text)
