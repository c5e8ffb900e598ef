"""``$GITHUB_STEP_SUMMARY``: the markdown a CI job page shows, written wherever simlab decides
gates (``run --suite``, ``gate``) and by ``report``; the gates come first, then the run's figures."""

from __future__ import annotations

import os

from simlab.report.formats import md_escape, render
from simlab.report.gates import GateReport
from simlab.results.figures import RunSummary

GATE_ICON = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}
VERDICT = {0: "all gates held", 1: "a gate failed", 3: "inconclusive"}


def gates_markdown(report: GateReport, suite_id: str) -> str:
    """The gates as a markdown table: the result with its exit code, then one row per gate (per
    failing scenario for ``scope: each``, with one row for the scenarios that all passed), then
    why the run is inconclusive."""
    code = report.exit_code
    lines = [f"### simlab gates `{md_escape(suite_id)}`: {VERDICT[code]} (exit {code})", "",
             "| gate | status | why |", "|---|---|---|"]
    each: dict[str, list[str]] = {}
    for result in report.results:
        if result.scenario:
            each.setdefault(result.label, []).append(result.status)
            if result.status == "pass":
                continue
        lines.append(f"| {md_escape(result.label)} | {GATE_ICON[result.status]} | {md_escape(result.reason)} |")
    for label, statuses in each.items():
        if all(status == "pass" for status in statuses):
            lines.append(f"| {md_escape(label)} | {GATE_ICON['pass']} | all {len(statuses)} scenarios |")
    if report.problems:
        lines += ["", *[f"- ⚠️ {md_escape(problem)}" for problem in report.problems]]
    return "\n".join(lines) + "\n"


def write_step_summary(summary: RunSummary, gates: GateReport | None = None, suite_id: str = "") -> bool:
    """Append the gates (when decided) and the run's markdown report to ``$GITHUB_STEP_SUMMARY``;
    False when that variable is not set (not in GitHub Actions)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    text = (gates_markdown(gates, suite_id) + "\n" if gates is not None else "") + render(summary, "markdown")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return True
