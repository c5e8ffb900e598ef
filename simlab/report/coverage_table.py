"""``simlab coverage`` in the terminal: one table per area, its rows from ``Coverage`` alone, so the
table says what ``--json`` says (``report/coverage.py`` defines every gap)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from simlab.inert import one_line
from simlab.report.coverage import Coverage, Entry, Section
from simlab.report.fmt import DASH

HEADER = ("item", "what", "covered by", "trials", "missing")


def headline(cov: Coverage) -> str:
    n = len(cov.scenarios)
    domains = ", ".join(cov.domains) or DASH
    return f"coverage of {cov.source}: {n} scenario{'s' * (n != 1)}, domain {domains}"


def verdict_line(cov: Coverage) -> str:
    total = sum(len(s.entries) for s in cov.sections)
    unknown = sum(e.status == "unknown" for s in cov.sections for e in s.entries)
    told = f", {unknown} unknown" if unknown else ""
    return (
        f"{cov.missing} missing of {total} items{told}"
        if cov.missing
        else f"nothing missing ({total} items{told})"
    )


def title(section: Section) -> str:
    return f"{section.area}: {section.missing} missing · {section.meaning}"


def row(entry: Entry, run: bool) -> list[str]:
    """One entry's cells, in ``HEADER``'s order (no trials column without a run)."""
    cells = [entry.name, entry.detail, ", ".join(entry.scenarios) or DASH]
    if run:
        cells.append(DASH if entry.trials is None else str(entry.trials))
    cells.append("; ".join(entry.gaps) or (f"unknown: {entry.unknown}" if entry.unknown else ""))
    return [one_line(c) for c in cells]


def print_coverage(cov: Coverage, console: Console) -> None:
    run = cov.run_id is not None
    console.print(Text(one_line(headline(cov)), style="bold"))
    for note in cov.notes:
        console.print(Text(f"note: {one_line(note)}", style="yellow"))
    for section in cov.sections:
        console.print(Text(one_line(title(section))), soft_wrap=False)  # the console's width, not the table's
        table = Table(pad_edge=False)
        for name in HEADER:
            if name != "trials" or run:
                table.add_column(name, justify="right" if name == "trials" else "left")
        for entry in section.entries:
            style = "red" if entry.status == "missing" else "yellow" if entry.status == "unknown" else ""
            table.add_row(*(Text(c) for c in row(entry, run)), style=style)
        if not section.entries:
            table.add_row(*(Text(DASH) for _ in table.columns))
        console.print(table)
    console.print(Text(verdict_line(cov), style="bold"))
