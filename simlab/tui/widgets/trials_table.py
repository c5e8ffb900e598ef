"""The trials of a scenario (or a whole run): one row each, keyed by unit id."""

from __future__ import annotations

from rich.text import Text

from simlab.tui.render import fmt_cost, literal, reason_text, verdict_text
from simlab.tui.rows import TrialRow
from simlab.tui.widgets.keyed_table import KeyedTable

__all__ = ["TrialsTable", "failed_checks_text"]


def failed_checks_text(row: TrialRow, width: int = 40) -> Text:
    """Hard failures in red, then soft ones dim (marked ~); empty when the trial has no checks."""
    if not row.check_count:
        return Text("")
    if not row.failed_checks and not row.soft_failed:
        return Text("none", style="dim")
    out = Text(overflow="ellipsis", no_wrap=True)
    for i, name in enumerate(row.failed_checks):
        out.append(", " if i else "")
        out.append(literal(name, "red"))
    for i, name in enumerate(row.soft_failed):
        out.append(", " if i or row.failed_checks else "")
        out.append(literal(f"~{name}", "dim"))
    if len(out) > width:
        out.truncate(width - 1)
        out.append("…")
    return out


class TrialsTable(KeyedTable):
    def __init__(self, show_scenario: bool = False, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.show_scenario = show_scenario
        if show_scenario:
            self.add_column("scenario", key="scenario")
        self.add_column("trial", key="trial")
        for name in ("verdict", "ended", "turns", "tools", "cost", "failed checks"):
            self.add_column(name, key=name)

    def fill(self, rows: list[TrialRow], marked: str | None = None) -> None:
        """Replace the rows, keeping the cursor on the same trial when it is still shown."""
        current = self.current_key()
        self.clear()
        for row in rows:
            label = Text()
            label.append("◆ " if row.unit_id == marked else "  ", "bold magenta")
            label.append(f"#{row.trial}")
            cells: list[object] = [literal(row.scenario_id)] if self.show_scenario else []
            counts = [str(row.turns), str(row.tool_calls), fmt_cost(row.cost)]
            cells += [label, verdict_text(row.verdict), reason_text(row.reason),
                      *(Text(c, justify="right") for c in counts), failed_checks_text(row)]
            self.add_row(*cells, key=row.unit_id)
        self.restore(current)
