"""The per-scenario summary printed after a run: trials, terminations, goal-reached rate."""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console
from rich.table import Table

from simlab.runner.prepare import RunPlan
from simlab.runner.store import RunStore


def print_run_summary(store: RunStore, plan: RunPlan, console: Console | None = None) -> None:
    console = console or Console()
    by_scenario: dict[str, Counter[str]] = defaultdict(Counter)
    for unit_id, reason in store.finished_units().items():
        by_scenario[unit_id.rsplit("#", 1)[0]][reason or "unknown"] += 1
    table = Table(title=f"run {plan.run_id}", title_justify="left")
    table.add_column("scenario")
    table.add_column("trials", justify="right")
    table.add_column("goal reached", justify="right")
    table.add_column("terminations")
    total: Counter[str] = Counter()
    for sid in plan.scenarios:
        counts = by_scenario.get(sid, Counter())
        total.update(counts)
        table.add_row(sid, *_cells(counts, planned=sum(1 for u in plan.units if u.scenario_id == sid)))
    table.add_section()
    table.add_row("all", *_cells(total, planned=len(plan.units)))
    console.print(table)
    console.print(f"transcripts: {store.trials_path}")


def _cells(counts: Counter[str], planned: int) -> tuple[str, str, str]:
    n = sum(counts.values())
    done = f"{n}/{planned}" if n != planned else str(n)
    rate = f"{counts['goal_reached'] / n:.0%} ({counts['goal_reached']}/{n})" if n else "–"
    reasons = ", ".join(f"{k} {v}" for k, v in counts.most_common())
    return done, rate, reasons
