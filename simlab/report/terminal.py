"""The terminal report: suite headline, per-scenario pass^k with intervals, what fails and why."""

from __future__ import annotations

import os
import sys
from typing import IO, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from simlab.inert import one_line
from simlab.report import why
from simlab.report.completeness import summary_state
from simlab.report.dataset_lines import adk_lines, dataset_lines
from simlab.report.fmt import (
    CURVE_WIDTH,
    DASH,
    IN_ERROR_TRIALS,
    count,
    curve,
    interval,
    money,
    pct,
    per_success,
    seconds,
    shown_ks,
    upper_bound,
)
from simlab.report.trouble import trouble_lines
from simlab.report.why import mode_lines, more_modes
from simlab.report.wrap import phrase_lines
from simlab.results.figures import RunSummary, SuiteFigures
from simlab.transcript.verdicts import class_label, unjudged_text

PIPED_WIDTH = 160  # columns when not printing to a terminal (a CI log): nothing wraps mid-phrase


class ReportConsole(Console):
    """A console whose reader may go away (``simlab run … | tee log``: a Ctrl-C typed in the
    terminal ends ``tee`` too): what it can no longer write is dropped, and the command goes on to
    its own end and exit code. Rich's own console would exit 1 on the spot (``SystemExit(1)``)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # nothing more is written
        silence(self.file)


def silence(stream: IO[str]) -> None:
    """Point ``stream``'s file descriptor at /dev/null: its reader is gone, and what is still
    buffered must not fail again when Python flushes it at exit (exit code 120)."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file descriptor (a test's StringIO)
        pass


def report_console(stderr: bool = False) -> Console:
    """A console for reports (``ReportConsole``): a terminal's real width; when piped (a CI log, a
    file), ``COLUMNS`` if set, else ``PIPED_WIDTH`` instead of rich's 80."""
    stream: TextIO = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if terminal or os.environ.get("COLUMNS"):
        return ReportConsole(stderr=stderr)
    return ReportConsole(stderr=stderr, width=PIPED_WIDTH)


def say(console: Console, text: str, style: str = "", *, indent: int = 2) -> None:
    """One line of a report, broken between phrases where it is wider than the console (the lines
    after the first indented by ``indent``): never mid-phrase (``report/wrap.py``)."""
    for line in phrase_lines(text, console.width, indent=indent):
        console.print(Text(line, style=style), no_wrap=True, overflow="ignore", crop=False)


WIDE = 150  # columns from which the failure modes are a table


def print_warnings(summary: RunSummary, console: Console) -> None:
    """What the run's report warns of (a copied folder, a unit stored twice, a torn last line)."""
    for warning in summary.warnings:
        say(console, f"warning: {one_line(warning)}", "yellow")


def print_report(summary: RunSummary, console: Console, *, view: str = "raw", top: int = 8) -> None:
    suite = summary.suite
    max_k = max(suite.raw.pass_k, default=1)
    state = summary_state(summary)
    if state.line:  # first: what the figures below do not stand for
        say(console, one_line(state.line), "bold yellow")
    console.print(
        Text(
            f"run {one_line(summary.run_id)} · {summary.trials} graded trials · "
            f"{summary.scenarios_count} scenarios",
            style="bold",
        )
    )
    print_warnings(summary, console)
    if summary.ungraded:  # the command of its origin: an imported run's is grade-traces (report/redo)
        from simlab.report.redo import grade_advice

        how = grade_advice(one_line(summary.run_id or "RUN"), summary.pins)
        say(console, f"{summary.ungraded} trials are not graded: run `{how}`", "yellow")
    for line in _headline(suite, max_k):
        say(console, line)
    console.print(_scenario_table(summary, max_k, view, console.width))
    _why(summary, console, top)
    failing = summary.top_failing_checks
    if failing:
        infra = any(row.in_error_trials for row in failing[:top])
        table = Table(title="checks that fail most", title_justify="left", show_edge=False)
        table.add_column("check")
        table.add_column("kind")
        table.add_column("failures", justify="right")
        if infra:
            table.add_column("in error trials", justify="right")
        for row in failing[:top]:
            cells: list[Text | str] = [Text(one_line(row.name)), Text(one_line(row.kind)), str(row.failures)]
            if infra:
                cells.append(str(row.in_error_trials) if row.in_error_trials else "")
            table.add_row(*cells)
        console.print(table)
        if infra:
            say(console, IN_ERROR_TRIALS, "dim")
    terms = suite.terminations
    say(
        console,
        "terminations (how each trial ended): " + ", ".join(f"{one_line(k)} {v}" for k, v in terms.items()),
    )
    for sid, d in summary.divergence.items():  # a replay run (run --replay): where agents left the recording
        turn = f", mean turn {d.mean_turn:.3g}" if d.mean_turn is not None else ""
        say(console, f"replay {one_line(sid)}: diverged in {d.diverged} of {d.replayed} trials{turn}")
    for line in trouble_lines(summary):
        say(console, line, "yellow")
    for category, rate in summary.attacks.items():
        say(console, f"attack success · {one_line(category)}: {upper_bound(rate)}")
    for line in [*adk_lines(summary), *dataset_lines(summary)]:  # ADK criteria; dataset-level evaluators
        say(console, one_line(line))
    not_run = summary.not_run_checks
    if not_run:
        names = ", ".join(f"{one_line(k)} ×{v}" for k, v in list(not_run.items())[:6])
        more = f" and {len(not_run) - 6} more" if len(not_run) > 6 else ""
        say(console, f"checks not run: {names}{more}", "dim")


def _headline(suite: SuiteFigures, max_k: int) -> list[str]:
    raw, valid = suite.raw, suite.valid
    total = max((v.scenarios for v in raw.pass_k.values()), default=0)

    def k_figure(k: int) -> str:
        entry = raw.pass_k[k]
        partial = f" ({entry.scenarios}/{total} scenarios)" if entry.scenarios < total else ""
        return f"pass^{k} {pct(entry.pass_hat_k)}{partial}"

    k_text = "  ".join(k_figure(k) for k in shown_ks(max_k) if k > 1)
    unjudged = suite.unjudged_rate
    lines = [
        f"suite   success {interval(raw.success)} (n={raw.success.n})   {k_text}",
        f"valid   success {interval(valid.success)} (n={valid.success.n}, invalid simulations, "
        f"infrastructure errors and unjudged trials left out)",
        f"invalid {upper_bound(suite.invalid_rate)}   errors {upper_bound(suite.error_rate)}   "
        + (f"unjudged {upper_bound(unjudged)}   " if unjudged.c else "")
        + f"policy violations {upper_bound(suite.policy_violation_rate)}   "
        f"loops (one call repeated) {upper_bound(suite.loop_rate)}",
        f"cost {money(suite.cost_usd)}   per success "
        f"{per_success(suite.cost_per_success_usd, suite.raw.success.c)}   "
        + (f"judge {money(suite.judge_cost_usd)} ({suite.judge_calls} calls)   " if suite.judge_calls else "")
        + f"tokens p50 {count(suite.tokens.p50)} p95 {count(suite.tokens.p95)}   "
        f"latency p50 {seconds(suite.latency_s.p50)} p95 {seconds(suite.latency_s.p95)}   "
        + (f"(duration unknown for {suite.latency_s.unknown} trials)   " if suite.latency_s.unknown else "")
        + f"retries {suite.retries} ({suite.retry_wait_s:.1f}s waiting)",
    ]
    return lines


def _scenario_table(summary: RunSummary, max_k: int, view: str, width: int) -> Table:
    """Columns by priority: narrow terminals keep pass^1 with its interval and the largest k."""
    common = min((s.n for s in summary.scenarios.values()), default=1) or 1  # defined everywhere
    ks = shown_ks(max_k)
    if width < 120:
        ks = sorted({1, 2, common} if common > 1 else {1, max_k})
    if width < 100:
        ks = sorted({1, common if common > 1 else max_k})
    wide, medium = width >= 120, width >= 100
    table = Table(title=f"scenarios ({view})", title_justify="left", pad_edge=False)
    table.add_column("scenario", no_wrap=True, overflow="ellipsis", max_width=None if medium else 24)
    table.add_column("pass", justify="right", no_wrap=True)
    table.add_column("pass^1 [95% CI]", justify="right", no_wrap=True)
    for k in ks:
        if k > 1:
            table.add_column(f"^{k}", justify="right", no_wrap=True)
    longest = max((len(s.raw.pass_k) for s in summary.scenarios.values()), default=0)
    points = CURVE_WIDTH if medium else CURVE_WIDTH // 2  # a capped column: the others keep their room
    table.add_column("curve" if longest <= points else f"curve k=1…{longest}", no_wrap=True)
    table.add_column("class", no_wrap=True)
    unjudged = any(s.unjudged or s.unjudged_counted_as_pass for s in summary.scenarios.values())
    if medium:
        table.add_column("inv/err/unj" if unjudged else "inv/err", justify="right")
    if wide:
        table.add_column("$/success", justify="right")
    for sid, s in summary.scenarios.items():
        figures = s.view(view)
        cells: list[Text | str] = [Text(one_line(sid)), f"{s.passes}/{s.n}", interval(figures.success)]
        cells += [pct(figures.pass_hat_k.get(k)) for k in ks if k > 1]
        cells += [curve(list(figures.pass_hat_k.values()), points), class_label(s.flake_class, DASH)]
        if medium:
            cells.append(
                f"{s.invalid}/{s.errors}"
                + (f"/{unjudged_text(s.unjudged, s.unjudged_counted_as_pass)}" if unjudged else "")
            )
        if wide:
            cells.append(per_success(s.cost_per_success_usd, s.passes))
        table.add_row(*cells)
    return table


def _why(summary: RunSummary, console: Console, top: int) -> None:
    lines = mode_lines(summary, top)
    if not lines:
        return
    if console.width < WIDE:  # a table this wide would squeeze the modes to nothing: one line each
        console.print(Text(why.TITLE, style="italic"))
        for line in lines:
            trials, scenarios, blame, mode, first, weight = line.cells[:6]
            say(
                console,
                f"  {_plural(trials, 'trial')} · {_plural(scenarios, 'scenario')} · {blame}: {mode}",
                indent=4,
            )
            say(console, f"    read first {first} · if fixed: {weight}", "dim", indent=6)
            if len(line.cells) > 6:
                say(console, f"    {why.CAUSE}: {line.cells[6]}", indent=6)
    else:
        table = Table(title=why.TITLE, title_justify="left", show_edge=False)
        for name in why.HEADER:  # a cause is a sentence: it gets a line of its own below the table
            table.add_column(
                name,
                justify="right" if name in ("trials", "scenarios") else "left",
                no_wrap=name != "failure mode",
            )
        for line in lines:
            table.add_row(*(Text(cell) for cell in line.cells[: len(why.HEADER)]))
        console.print(table)
        for text in why.cause_lines(lines):
            say(console, f"  {text}", indent=4)
    say(console, why.note(lines), "dim")
    more = more_modes(summary, top)
    if more:
        say(console, more, "dim")


def _plural(count: str, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == "1" else "s")
