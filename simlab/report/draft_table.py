"""``simlab generate``'s outcome for the terminal: a row per draft (kept, flagged or dropped, and
why), and what each model role spent; printed as a table (``print_drafts``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from simlab.inert import one_line
from simlab.report.draft_summary import AUTHOR, GenerateSummary, RoleSpend

if TYPE_CHECKING:
    from rich.console import Console


def outcome_rows(summary: GenerateSummary) -> list[tuple[int, str, str, str]]:
    """(draft, id, outcome, what it adds or why it was dropped) per draft, in draft order: the
    terminal's table, each cell one inert line (a drafted persona's trait is the model's text). A
    draft asked again says its rounds; a flagged one its flag first."""

    def rounds(n: int) -> str:
        return f" (round {n})" if n > 1 else ""

    rows = []
    for k in summary.kept:
        adds = "; ".join(k.adds) or "nothing coverage counts"
        text = f"flag: {k.flag}; adds: {adds}" if k.flag else adds
        rows.append((k.draft, k.id, ("kept, flagged" if k.flag else "kept") + rounds(k.rounds), text))
    rows += [
        (d.draft, d.id or "–", f"dropped: {d.stage}{rounds(d.rounds)}", d.reason) for d in summary.dropped
    ]
    return sorted((draft, one_line(sid), outcome, one_line(text)) for draft, sid, outcome, text in rows)


def cost_lines(summary: GenerateSummary) -> list[str]:
    """What each role spent, as every report says a model role's cost: the author's calls (a file
    written before the roles were kept: its top-level calls and usage), then the plays'."""
    from simlab.report.fmt import count, money

    roles = summary.roles or {
        AUTHOR: RoleSpend(ref=str(summary.model.get("ref", "?")), calls=summary.calls, usage=summary.usage)
    }
    return [
        f"{role} {one_line(spend.ref)}: {spend.calls} calls, {count(spend.usage.input_tokens)} tokens in, "
        f"{count(spend.usage.output_tokens)} out, cost {money(spend.usage.cost_usd)}"
        for role, spend in roles.items()
    ]


def print_drafts(summary: GenerateSummary, console: Console) -> None:
    """The outcome of a ``simlab generate``: its table, the coverage gaps without and with the kept
    drafts, and what each role spent."""
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=Text(f"drafts for {one_line(summary.domain)}: {len(summary.kept)} kept of {summary.asked}"),
        title_justify="left",
        show_edge=False,
    )
    for name in ("draft", "id", "outcome", "adds to coverage / why dropped"):
        table.add_column(
            name, justify="right" if name == "draft" else "left", no_wrap=name in ("draft", "outcome")
        )
    for draft, sid, outcome, text in outcome_rows(summary):
        table.add_row(Text(str(draft)), Text(sid), Text(outcome), Text(text))
    console.print(table)
    console.print(
        Text(
            f"coverage gaps of the suite: {summary.missing_before} without the drafts, "
            f"{summary.missing_after} with the {len(summary.kept)} kept"
        )
    )
    for line in cost_lines(summary):
        console.print(Text(line, style="dim"))
