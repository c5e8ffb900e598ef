"""Reports as files: markdown (for PRs and GITHUB_STEP_SUMMARY), JSON, CSV.

Transcript-derived text (check names, reasons) is escaped for markdown so it cannot inject
formatting, links or HTML into a CI page.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from simlab.report import why
from simlab.report.completeness import summary_state
from simlab.report.dataset_lines import adk_lines, dataset_lines
from simlab.report.fmt import IN_ERROR_TRIALS, interval, pct, per_success, safe, shown_ks, upper_bound
from simlab.report.scenario_table import scenario_table
from simlab.report.trouble import trouble_lines
from simlab.report.why import mode_lines, more_modes
from simlab.results.figures import RunSummary

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~$])")


def md_code(text: Any) -> str:
    """Plain text as a markdown code span: no backslash escape (a code span shows it as written),
    a backtick run longer than any inside, so the text cannot close it."""
    body = safe(str(text).replace("\n", " ").replace("\r", " "))
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def md_escape(text: Any) -> str:
    """Plain text safe inside a markdown table cell (``$`` too: GitHub renders ``$…$`` as math)."""
    return _MD_SPECIAL.sub(r"\\\1", safe(str(text).replace("\n", " ").replace("\r", " ")))


def render(summary: RunSummary, fmt: str, *, state_line: bool = True) -> str:
    """The report in ``fmt`` (json, csv, markdown); ``state_line`` False leaves out markdown's
    completeness line (a document that already starts with it)."""
    if fmt == "json":
        return summary.to_json() + "\n"
    if fmt == "csv":
        return _csv(summary)
    if fmt == "markdown":
        return _markdown(summary, first=state_line)
    raise ValueError(f"unknown format {fmt!r}")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _csv(summary: RunSummary) -> str:
    out = io.StringIO()
    ks = list(summary.suite.raw.pass_k)
    writer = csv.writer(out)
    writer.writerow(
        [
            "scenario",
            "n",
            "passes",
            "invalid",
            "errors",
            "success",
            "low",
            "high",
            *[f"pass^{k}" for k in ks],
            "flake_class",
            "cost_usd",
            "cost_per_success_usd",
        ]
    )
    for sid, s in summary.scenarios.items():
        success = s.raw.success
        writer.writerow(
            [
                sid,
                s.n,
                s.passes,
                s.invalid,
                s.errors,
                success.rate,
                success.low,
                success.high,
                *[s.raw.pass_hat_k.get(k) for k in ks],
                s.flake_class,
                s.cost_usd,
                s.cost_per_success_usd,
            ]
        )
    return out.getvalue()


def state_markdown(summary: RunSummary) -> list[str]:
    """The first lines of a markdown report on a run that is not whole (``report/completeness.py``),
    or none."""
    line = summary_state(summary).line
    return [f"> **Warning:** {md_escape(line)}", ""] if line else []


def _why(summary: RunSummary, top: int = 3) -> list[str]:
    """The top failure modes (the step summary's "why trials failed")."""
    modes = mode_lines(summary, top)
    if not modes:
        return []
    columns = why.header(modes)
    lines = [
        "",
        f"**{why.TITLE}**",
        "",
        _row(list(columns)),
        _row(["---:", "---:"] + ["---"] * (len(columns) - 2)),
    ]
    lines += [_row([md_escape(cell) for cell in line.cells]) for line in modes]
    more = more_modes(summary, top)
    return lines + ["", f"_{md_escape(why.note(modes))}_" + (f" · {md_escape(more)}" if more else "")]


def _markdown(summary: RunSummary, first: bool = True) -> str:
    """The markdown report; ``first``: led by the completeness line (``state_markdown``), which the
    step summary puts above its gates instead."""
    suite = summary.suite
    ks = shown_ks(max(suite.raw.pass_k, default=1))
    lines = [*(state_markdown(summary) if first else []), f"### simlab run {md_code(summary.run_id)}", ""]
    for warning in summary.warnings:
        lines += [f"> **Warning:** {md_escape(warning)}", ""]
    lines.append(
        f"**{summary.trials} trials, {summary.scenarios_count} scenarios** · "
        f"success {interval(suite.raw.success)} · "
        + " · ".join(f"pass^{k} {pct(suite.raw.pass_k[k].pass_hat_k)}" for k in ks if k > 1)
        + f" · cost per success {per_success(suite.cost_per_success_usd, suite.raw.success.c)}"
    )
    lines.append("")
    if suite.unjudged_rate.c:
        lines.append(
            f"unjudged {upper_bound(suite.unjudged_rate)} (a hard check did not run: not counted as passed)"
        )
        lines.append("")
    lines.append(
        f"invalid {upper_bound(suite.invalid_rate)} · errors {upper_bound(suite.error_rate)} · "
        f"policy violations {upper_bound(suite.policy_violation_rate)}"
    )
    unjudged = any(s.unjudged or s.unjudged_counted_as_pass for s in summary.scenarios.values())
    table = scenario_table(summary, ks, unjudged=unjudged, costs=False)
    align = ["---:" if numeric else "---" for numeric in table.numeric]
    lines += ["", _row(table.header), _row(align)]
    lines += [_row([md_escape(row[0]), *row[1:]]) for row in table.rows]
    lines += _why(summary)
    failing = summary.top_failing_checks
    if failing:
        infra = any(
            r.in_error_trials for r in failing[:10]
        )  # the column only when a failure is infrastructure's
        lines += [
            "",
            "| failing check | kind | failures |" + (" in error trials |" if infra else ""),
            "|---|---|---:|" + ("---:|" if infra else ""),
        ]
        lines += [
            f"| {md_escape(r.name)} | {md_escape(r.kind)} | {r.failures} |"
            + (f" {r.in_error_trials or ''} |" if infra else "")
            for r in failing[:10]
        ]
        if infra:
            lines += ["", f"_{md_escape(IN_ERROR_TRIALS)}_"]
    dataset = [*adk_lines(summary), *dataset_lines(summary)]  # ADK criteria; dataset-level evaluators
    if dataset:
        lines += ["", *[f"- {md_escape(line)}" for line in dataset]]
    trouble = trouble_lines(summary)
    if trouble:
        lines += ["", *[f"- {md_escape(line)}" for line in trouble]]
    return "\n".join(lines) + "\n"
