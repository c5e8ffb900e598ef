"""The report's lines for dataset-level figures (``RunSummary.dataset``): pooled tool-call
precision, recall and F1, and a suite's summary functions. Plain text; callers make it inert
(terminal) or escape it (markdown)."""

from __future__ import annotations

from simlab.report.fmt import pct
from simlab.results.dataset import BUILT_IN_KEYS
from simlab.results.figures import DatasetScore, RunSummary


def _score(entry: DatasetScore) -> str:
    if entry.error:
        return f"error: {entry.error}"
    return "undefined" if entry.score is None else f"{entry.score:.2f}"


def dataset_lines(summary: RunSummary) -> list[str]:
    """One line for simlab's pooled tool figures, one per summary function's key; [] when none."""
    data = summary.dataset
    lines = []
    if all(key in data for key in BUILT_IN_KEYS):
        first = data[BUILT_IN_KEYS[0]]
        lines.append(
            "tool calls (pooled over the run): "
            + "  ".join(f"{key.removeprefix('tool_')} {_score(data[key])}" for key in BUILT_IN_KEYS)
            + f"   ({first.detail})"
        )
    for entry in data.values():
        if entry.source != "simlab":
            lines.append(f"summary {entry.key} = {_score(entry)}   ({entry.source}, {entry.trials} trials)")
    return lines


def adk_lines(summary: RunSummary) -> list[str]:
    """ADK's criteria per scenario beside simlab's repeated-trial figures: ADK scores one run per
    case, so 'met in c of n trials' is the chance that one ADK run passes, with its interval."""
    lines = []
    for sid, criteria in summary.adk_criteria.items():
        figures = summary.scenarios.get(sid)
        if figures is None:
            continue
        met = "; ".join(
            f"{name} met in {r.c}/{r.n} trials ({pct(r.rate)} [{pct(r.low)}–{pct(r.high)}])"
            for name, r in criteria.items()
        )
        top = max((k for k, v in figures.raw.pass_hat_k.items() if v is not None), default=1)
        lines.append(
            f"ADK {sid}: {met} · simlab pass^1 {pct(figures.raw.success.rate)} "
            f"[{pct(figures.raw.success.low)}–{pct(figures.raw.success.high)}]"
            + (f", pass^{top} {pct(figures.raw.pass_hat_k[top])}" if top > 1 else "")
        )
    return lines
