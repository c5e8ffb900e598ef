"""Dataset-level (summary) evaluators: figures of a whole run, not of one trial.

Some figures exist only over many trials: a pooled tool-call F1 is not the mean of per-trial F1s
(a trial with one call would weigh as much as one with twenty). simlab pools the trajectory
grader's counts from every trial's head (``TrialHead.tool_counts``) into ``tool_precision``,
``tool_recall`` and ``tool_f1``; a suite may add its own functions (``summary_evaluators:
[module:function]``, LangSmith's summary evaluators), each given every trial of the run and
returning ``{"key": ..., "score": ...}`` (or a list of them). Both land in ``RunSummary.dataset``,
are printed by the report and can be gated (``tool_f1 >= 0.9``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from simlab.results.figures import DatasetScore
from simlab.specs.gates import DATASET_METRICS

__all__ = ["BUILT_IN_KEYS", "KEY", "prf", "run_summary_functions", "tool_scores"]

BUILT_IN_KEYS = DATASET_METRICS  # the figures simlab pools itself, as gates name them
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LEFT_OUT = (
    "error",
    "invalid",
)  # infrastructure errors and broken simulations say nothing of the agent's calls


def prf(tp: int, fp: int, fn: int) -> tuple[float | None, float | None, float | None]:
    """Precision tp/(tp+fp), recall tp/(tp+fn) and their harmonic mean F1; each None when its
    denominator is 0 (undefined, not 0). F1 is 0 when both are defined and tp is 0."""
    if min(tp, fp, fn) < 0:
        raise ValueError(f"counts are never negative: tp={tp}, fp={fp}, fn={fn}")
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    if precision is None or recall is None:
        return precision, recall, None
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def tool_scores(rows: Iterable[dict[str, Any]]) -> dict[str, DatasetScore]:
    """Pooled tool-call precision, recall and F1 over the run's trials that had a trajectory
    check (rows as ``frames.Results.rows`` gives them): ``pooled_tool_scores``."""

    def counts(row: dict[str, Any]) -> Any:
        unknown = row.get("tool_counts") is None and row.get("tool_counts_unknown")
        return "unknown" if unknown else row.get("tool_counts")

    return pooled_tool_scores((row.get("verdict"), counts(row)) for row in rows)


def pooled_tool_scores(trials: Iterable[tuple[str | None, Any]]) -> dict[str, DatasetScore]:
    """Pooled tool-call precision, recall and F1 over the run's trials that had a trajectory
    check, from each trial's ``(verdict, counts)``: counts ``(tp, fp, fn)``, None without a
    trajectory check, or a string (``frames.TOOL_COUNTS_UNKNOWN``) for a head written before the
    counts were kept; {} when no trial had one. Trials that ended in an infrastructure error or an
    invalid simulation are left out, and trials whose heads predate the counts are counted as
    unknown (a gate on the figure is then inconclusive)."""
    tp = fp = fn = trials_n = left_out = unknown = 0
    for verdict, counts in trials:
        if counts is None:
            continue
        if verdict in LEFT_OUT:
            left_out += 1
            continue
        if isinstance(counts, str):
            unknown += 1
            continue
        tp, fp, fn, trials_n = tp + counts[0], fp + counts[1], fn + counts[2], trials_n + 1
    if not (trials_n or unknown or left_out):
        return {}
    detail = f"tp={tp} fp={fp} fn={fn} over {trials_n} trials"
    if left_out:
        detail += f"; {left_out} error or invalid trials left out"
    if unknown:
        detail += (
            f"; {unknown} trials recorded before simlab kept the counts are unknown (`simlab grade` "
            "the run to count them)"
        )
    figures = dict(zip(BUILT_IN_KEYS, prf(tp, fp, fn)))
    return {
        key: DatasetScore(
            key=key, score=value, source="simlab", detail=detail, trials=trials_n, unknown_trials=unknown
        )
        for key, value in figures.items()
    }


def run_summary_functions(refs: Sequence[str], trials: Sequence[Any]) -> dict[str, DatasetScore]:
    """Each ``module:function`` of ``refs`` called with every trial (``TrialRecord``s, in file
    order), its result checked. A function that does not import, raises, or returns something
    other than ``{key, score}`` gives one entry keyed by its reference, with ``error`` set and no
    score: the report shows it, and a gate on its key is inconclusive, never passed."""
    from simlab.imports import RefError, load_callable

    out: dict[str, DatasetScore] = {}
    for ref in refs:
        try:
            func = load_callable(ref)
            returned = func(list(trials))
            entries = _entries(returned)
        except RefError as exc:
            out[ref] = DatasetScore(key=ref, source=ref, error=str(exc), trials=len(trials))
            continue
        except Exception as exc:  # user code: reported, never a crash of the report
            out[ref] = DatasetScore(
                key=ref, source=ref, error=f"{type(exc).__name__}: {exc}", trials=len(trials)
            )
            continue
        for key, score in entries:
            if key in out or key in BUILT_IN_KEYS:
                out[f"{ref}#{key}"] = DatasetScore(
                    key=key,
                    source=ref,
                    trials=len(trials),
                    error=f"key {key!r} is returned twice (or is simlab's own)",
                )
                continue
            out[key] = DatasetScore(key=key, score=score, source=ref, trials=len(trials))
    return out


def _entries(returned: Any) -> list[tuple[str, float | None]]:
    """[(key, score)] from what a summary function returned: {key, score}, a list of such, or
    LangSmith's {"results": [...]}. Raises ValueError naming what is wrong."""
    if isinstance(returned, dict) and set(returned) == {"results"}:
        returned = returned["results"]
    items = returned if isinstance(returned, list) else [returned]
    if not items:
        raise ValueError("returned no score: return {'key': NAME, 'score': NUMBER}")
    entries = []
    for item in items:
        if not isinstance(item, dict) or "key" not in item or "score" not in item:
            raise ValueError(
                f"returned {_short(item)}; return {{'key': NAME, 'score': NUMBER}} (or a list of them)"
            )
        key, score = item["key"], item["score"]
        if not isinstance(key, str) or not KEY.match(key):
            raise ValueError(
                f"key {_short(key)} is not a name (letters, digits, _), as a gate would write it"
            )
        if isinstance(score, bool):
            score = float(score)
        if score is not None and (not isinstance(score, (int, float)) or not math.isfinite(score)):
            raise ValueError(
                f"score of {key!r} is {_short(score)}; give a finite number, or None for unknown"
            )
        entries.append((key, None if score is None else float(score)))
    return entries


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
