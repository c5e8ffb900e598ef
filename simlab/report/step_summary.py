"""``$GITHUB_STEP_SUMMARY``: the markdown a CI job page shows, written wherever simlab decides
gates (``run --suite``, ``gate``) and by ``report``: first what the run lacks when it is not whole
(``report/completeness.py``), then the gates, then the run's figures."""

from __future__ import annotations

import os

from simlab.report.formats import md_code, md_escape, render, state_markdown
from simlab.report.gates import GateReport
from simlab.results.figures import RunSummary

GATE_ICON = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}


def gates_markdown(report: GateReport, suite_id: str) -> str:
    """``GateReport.lines`` as markdown: the result with its exit code, a table of the gates, then
    why the run is inconclusive and how noisy each gate is, every text escaped."""
    lines = [
        f"### simlab gates {md_code(suite_id)}: {report.verdict} (exit {report.exit_code})",
        "",
        "| gate | status | why |",
        "|---|---|---|",
    ]
    notes = []
    for line in report.lines():
        if line.status == "note":
            notes.append(f"- {md_escape(line.text)}")
        elif not line.label:
            notes.append(f"- ⚠️ {md_escape(line.why)}")
        else:
            lines.append(f"| {md_escape(line.label)} | {GATE_ICON[line.status]} | {md_escape(line.why)} |")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def write_step_summary(summary: RunSummary, gates: GateReport | None = None, suite_id: str = "") -> bool:
    """Append the gates (when decided) and the run's markdown report to ``$GITHUB_STEP_SUMMARY``;
    False when that variable is not set (not in GitHub Actions)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    gated = gates_markdown(gates, suite_id) + "\n" if gates is not None else ""
    text = (
        "".join(f"{line}\n" for line in state_markdown(summary))
        + gated
        + render(summary, "markdown", state_line=False)
    )
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return True
