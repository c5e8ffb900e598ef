"""The report's lines for dataset-level figures (``RunSummary.dataset``): pooled tool-call
precision, recall and F1, and a suite's summary functions. Plain text; callers make it inert
(terminal) or escape it (markdown)."""

from __future__ import annotations

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
        lines.append("tool calls (pooled over the run): "
                     + "  ".join(f"{key.removeprefix('tool_')} {_score(data[key])}" for key in BUILT_IN_KEYS)
                     + f"   ({first.detail})")
    for entry in data.values():
        if entry.source != "simlab":
            lines.append(f"summary {entry.key} = {_score(entry)}   ({entry.source}, {entry.trials} trials)")
    return lines
