"""The per-scenario table of the file reports (markdown and HTML), defined once.

Each surface renders the same columns from here: it only escapes and frames the cells. The
terminal's table is narrower by design (it drops columns by priority to fit the width).
"""

from __future__ import annotations

from dataclasses import dataclass

from simlab.report.fmt import DASH, interval, money, pct, per_success
from simlab.results.figures import RunSummary
from simlab.transcript.verdicts import class_label, unjudged_text


@dataclass(frozen=True)
class Table:
    """Column names, whether each is numeric (right-aligned), and one row of cells per scenario.

    The first cell of a row is the scenario id, as written by the author: escape it."""

    header: list[str]
    numeric: list[bool]
    rows: list[list[str]]


def scenario_table(summary: RunSummary, ks: list[int], *, unjudged: bool, costs: bool) -> Table:
    """The table for pass^k at ``ks`` (k > 1; pass^1 is always shown with its interval); the
    unjudged and cost columns only where asked for."""
    more = [k for k in ks if k > 1]
    columns = [("scenario", False), ("pass", True), ("pass^1 [95% CI]", True)]
    columns += [(f"pass^{k}", True) for k in more]
    columns += [("class", False), ("invalid", True), ("errors", True)]
    columns += [("unjudged", True)] if unjudged else []
    columns += [("cost", True), ("$/success", True)] if costs else []
    rows = []
    for sid, s in summary.scenarios.items():
        cells = [sid, f"{s.passes}/{s.n}", interval(s.raw.success)]
        cells += [pct(s.raw.pass_hat_k.get(k)) for k in more]
        cells += [class_label(s.flake_class, DASH), str(s.invalid), str(s.errors)]
        cells += [unjudged_text(s.unjudged, s.unjudged_counted_as_pass)] if unjudged else []
        cells += [money(s.cost_usd), per_success(s.cost_per_success_usd, s.passes)] if costs else []
        rows.append(cells)
    return Table([name for name, _ in columns], [numeric for _, numeric in columns], rows)
