"""Every run in the transcripts folder, newest first."""

from __future__ import annotations

from rich.text import Text

from simlab.report.fmt import money, num
from simlab.tui.data import RunInfo
from simlab.tui.render import literal
from simlab.tui.summary import RunOverview
from simlab.tui.widgets.keyed_table import KeyedTable

__all__ = ["RunsTable", "short"]


def short(ref: str, width: int = 24) -> str:
    """A model or agent reference that fits: ``python:pkg.mod:agent`` shows as ``agent (python)``."""
    if ref.startswith("python:"):
        ref = ref.rsplit(":", 1)[-1] + " (python)"
    return ref if len(ref) <= width else "…" + ref[-(width - 1) :]


class RunsTable(KeyedTable):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.k = 0

    def fill(
        self,
        runs: list[RunInfo],
        summaries: dict[str, RunOverview | None],
        k: int = 3,
        marked: str | None = None,
    ) -> None:
        """The runs, with pass^k at the one ``k`` of the screen (the column is named by it)."""
        current = self.current_key()
        if k != self.k:
            self.clear(columns=True)
            self.k = k
            for name in (
                "run",
                "created",
                "trials",
                f"pass^{k}",
                "cost",
                "agent",
                "simulator",
            ):  # by priority
                self.add_column(name, key=name if not name.startswith("pass^") else "pass^k")
        else:
            self.clear()
        for run in runs:
            s = summaries.get(run.key)
            created = run.created_at.replace("T", " ")[:16]
            if s is None:
                trials, rate, cost = Text("…", style="dim"), Text("…", style="dim"), Text("…", style="dim")
            else:
                trials = Text(f"{s.trials:,}", justify="right")
                rate = Text(
                    num(s.pass_k) if s.pass_k is not None else ("not graded" if not s.graded else "n < k"),
                    justify="right",
                    style="" if s.pass_k is not None else "dim",
                )
                cost = Text(money(s.cost), justify="right")
            label = Text("◆ " if run.key == marked else "", "bold magenta").append(
                literal(run.run_id, "bold")
            )
            self.add_row(
                label,
                Text(created),
                trials,
                rate,
                cost,
                literal(short(run.pin("agent"))),
                literal(short(run.pin("simulator"), 16)),
                key=run.key,
            )
        self.restore(current)
