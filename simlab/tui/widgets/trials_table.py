"""The trials of a scenario (or a whole run): one row each, keyed by unit id.

Columns come by priority, left to right: which trial, its verdict, its cost and the checks it
failed (what a reviewer reads first), then how it ended, its turns and its tool calls. The failed
checks get the room the terminal has left after the columns before them, so at 80 columns cost and
failed checks stay on screen and only the last columns go behind the sideways scroll."""

from __future__ import annotations

from rich.text import Text

from simlab.report.fmt import money
from simlab.tui.render import literal, reason_text, verdict_text
from simlab.tui.rows import TrialRow
from simlab.tui.widgets.keyed_table import KeyedTable

__all__ = ["TrialsTable", "failed_checks_text"]


def failed_checks_text(row: TrialRow, width: int = 40) -> Text:
    """Hard failures in red, then soft ones dim (marked ~); empty when the trial has no checks.
    Only whole names are shown: those that do not fit in ``width`` are counted (``+2 more``);
    a single name longer than ``width`` is cut."""
    if not row.check_count:
        return Text("")
    if not row.hard_failed and not row.soft_failed:
        return Text("none", style="dim")
    names = [(name, "red") for name in row.hard_failed] + [(f"~{name}", "dim") for name in row.soft_failed]
    out = Text(no_wrap=True)
    for i, (name, style) in enumerate(names):
        rest = len(names) - i - 1
        tail = f", +{rest} more" if rest else ""
        piece = (", " if i else "") + name
        if i and len(out) + len(piece) + len(tail) > width:
            out.append(f", +{len(names) - i} more", "dim")
            return out
        out.append(", " if i else "")
        text = literal(name, style)
        if not i and len(text) + len(tail) > width:  # one name longer than the room: cut it
            text.truncate(max(1, width - len(tail) - 1))
            text.append("…")
        out.append(text)
    return out


class TrialsTable(KeyedTable):
    def __init__(self, show_scenario: bool = False, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.show_scenario = show_scenario
        if show_scenario:
            self.add_column("scenario", key="scenario")
        self.add_column("trial", key="trial")
        for name in ("verdict", "cost", "failed checks", "ended", "turns", "tools"):
            self.add_column(name, key=name)

    def fill(self, rows: list[TrialRow], marked: str | None = None, width: int = 0) -> None:
        """Replace the rows, keeping the cursor on the same trial when it is still shown. ``width``
        (the terminal's) sets the room of the failed checks; 0: the widget's own width."""
        current = self.current_key()
        self.clear()
        room = failed_checks_room(rows, self.show_scenario, width or self.size.width or 80)
        for row in rows:
            label = Text()
            label.append("◆ " if row.unit_id == marked else "  ", "bold magenta")
            label.append(f"#{row.trial}")
            cells: list[object] = [_cut(literal(row.scenario_id), SCENARIO_MAX)] if self.show_scenario else []
            cells += [
                label,
                verdict_text(row.verdict),
                Text(money(row.cost_usd), justify="right"),
                failed_checks_text(row, room),
                reason_text(row.termination),
                *(Text(str(c), justify="right") for c in (row.user_turns, row.tool_calls)),
            ]
            self.add_row(*cells, key=row.unit_id)
        self.restore(current)


SCENARIO_MAX = 28  # a longer scenario id is cut in the all-trials list (the crumbs name it whole)
PAD = 2  # a DataTable cell's padding


def _cut(text: Text, width: int) -> Text:
    if len(text) > width:
        text.truncate(width - 1)
        text.append("…")
    return text


def failed_checks_room(rows: list[TrialRow], show_scenario: bool, width: int) -> int:
    """The characters left for the failed checks once the columns before them are drawn (at
    least 16): the widest trial label, verdict and cost, and the scenario when shown."""
    used = max([len("trial"), *(len(f"  #{r.trial}") for r in rows)]) + PAD
    used += max([len("verdict"), *(len(verdict_text(r.verdict)) for r in rows)]) + PAD
    used += max([len("cost"), *(len(money(r.cost_usd)) for r in rows)]) + PAD
    if show_scenario:
        used += min(SCENARIO_MAX, max([len("scenario"), *(len(r.scenario_id) for r in rows)])) + PAD
    return max(16, width - used - 2 - PAD)  # the scroll bar, the column's own padding
