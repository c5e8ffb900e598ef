"""A run's trials as flat tables: one row per trial, one row per check.

Built from the raw JSON lines (no pydantic per record: reports must stay fast on 100,000 trials).
Nested detail stays in the JSON transcripts; the tables hold flat columns only. Unknown numbers
stay missing (NaN/None), never 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from simlab.transcript.model import spends_nothing_unseen

ROLES = ("agent", "simulator", "judge")
USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
RESULTS_FILE = "results.parquet"
CHECKS_FILE = "checks.parquet"


def _usage_by_role(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    sums: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.get("type") == "model_call":
            _add_usage(sums, event)
    return sums


def _add_usage(sums: dict[str, dict[str, Any]], event: dict[str, Any]) -> None:
    role = event.get("role", "agent")
    usage = event.get("usage") or {}
    acc = sums.get(role)
    if acc is None:
        acc = sums[role] = {f: 0 for f in USAGE_FIELDS} | {"calls": 0, "latency_s": 0.0, "retries": 0,
                                                           "retry_wait_s": 0.0}
    acc["calls"] += 1
    for f in USAGE_FIELDS:
        acc[f] = None if acc[f] is None or usage.get(f) is None else acc[f] + usage[f]
    acc["latency_s"] += usage.get("latency_s") or 0.0
    acc["retries"] += usage.get("retries") or 0
    acc["retry_wait_s"] += usage.get("retry_wait_s") or 0.0


def _known_zero(pin: dict[str, Any]) -> bool:
    """A role that made no model call spent nothing if it is a model or a deterministic simulator;
    a Python agent may call models we cannot see, so its spend is unknown unless it declares
    ``uses_models = False``."""
    return spends_nothing_unseen(pin.get("kind"), pin.get("settings") or {})


def trial_row(raw: dict[str, Any]) -> dict[str, Any]:
    t = raw["transcript"]
    events = t.get("events") or []
    counts: dict[str, int] = {}
    usage: dict[str, dict[str, Any]] = {}
    tool_errors = 0
    for event in events:  # one pass: counts, usage per role, failed tool results
        kind = event.get("type", "?")
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "model_call":
            _add_usage(usage, event)
        elif kind == "tool_result" and not event.get("ok"):
            tool_errors += 1
    checks = raw.get("checks") or []
    termination = (t.get("termination") or {}).get("reason")
    row: dict[str, Any] = {
        "run_id": t.get("run_id"),
        "unit_id": raw.get("unit_id"),
        "scenario_id": t.get("scenario_id"),
        "persona_id": t.get("persona_id"),
        "trial": t.get("trial"),
        "seed": t.get("seed"),
        "agent": (t.get("agent") or {}).get("ref"),
        "simulator": (t.get("simulator") or {}).get("ref"),
        "verdict": raw.get("verdict"),
        "termination": termination,
        "user_turns": counts.get("user", 0),
        "agent_turns": counts.get("agent", 0),
        "tool_calls": counts.get("tool_call", 0),
        "invalid_calls": counts.get("invalid_call", 0),
        "tool_errors": tool_errors,
        "model_calls": counts.get("model_call", 0),
        "duration_s": t.get("duration_s"),
    }
    for role in ROLES:
        acc = usage.get(role)
        if acc:
            for f in USAGE_FIELDS:
                row[f"{role}_{f}"] = acc[f]
        else:
            zero = 0 if role != "judge" and _known_zero(t.get(role) or {}) else None
            for f in USAGE_FIELDS:
                row[f"{role}_{f}"] = zero
    parts = [row["agent_cost_usd"], row["simulator_cost_usd"]]
    row["cost_usd"] = None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]
    row["retries"] = sum(a["retries"] for a in usage.values())
    row["retry_wait_s"] = sum(a["retry_wait_s"] for a in usage.values())
    row["model_latency_s"] = sum(a["latency_s"] for a in usage.values())
    failed, violations, not_run, efficiency = [], 0, 0, None
    for c in checks:  # one pass over the checks
        status = c.get("status")
        if status == "fail":
            if c.get("hard", True):
                failed.append(c["name"])
            if c.get("kind") == "policy":
                violations += 1
        elif status == "not_run":
            not_run += 1
        if efficiency is None and c.get("name") == "efficiency":
            efficiency = c
    details = (efficiency or {}).get("details") or {}
    row["redundant_calls"] = details.get("redundant_calls")
    row["loop"] = details.get("loop", termination in ("agent_loop", "max_turns"))
    row["failed_checks"] = "; ".join(failed)
    row["policy_violations"] = violations
    row["not_run_checks"] = not_run
    for c in checks:
        row[f"check:{c['name']}"] = c.get("status")
    return row


def check_rows(raw: dict[str, Any]) -> Iterable[dict[str, Any]]:
    t = raw["transcript"]
    for c in raw.get("checks") or []:
        yield {
            "run_id": t.get("run_id"), "unit_id": raw.get("unit_id"), "scenario_id": t.get("scenario_id"),
            "trial": t.get("trial"), "simulator": (t.get("simulator") or {}).get("ref"),
            "verdict": raw.get("verdict"), "name": c.get("name"), "kind": c.get("kind"), "status": c.get("status"),
            "hard": c.get("hard", True), "score": c.get("score"), "reason": c.get("reason"),
            "event": c.get("event"), "turn": c.get("turn"), "call_id": c.get("call_id"),
            "category": c.get("category"),
        }


CHECK_COLUMNS = ["run_id", "unit_id", "scenario_id", "trial", "simulator", "verdict", "name", "kind", "status",
                 "hard", "score", "reason", "event", "turn", "call_id", "category"]
_CHECK_KEYS = CHECK_COLUMNS[6:]  # taken from the check itself; the first six from its trial


def build_frames(raws: Iterable[dict[str, Any]]) -> tuple[Any, Any]:
    """(trials, checks) pandas frames from raw trial records.

    Built column by column (no row dicts for pandas to take apart), with pandas' own inference
    for rows of records, so the frames are exactly those of ``pd.DataFrame(list_of_row_dicts)``.
    A column a trial lacks (another scenario's check) is NaN there, as pandas fills it.
    """
    import numpy as np
    import pandas as pd

    base: dict[str, list[Any]] = {}
    optional: dict[str, dict[int, Any]] = {}  # check:<name> → {row: status}
    check_cols: dict[str, list[Any]] = {name: [] for name in CHECK_COLUMNS}
    n = 0
    for raw in raws:
        row = trial_row(raw)
        if not base:
            base = {key: [] for key in row if not key.startswith("check:")}
        for key, value in row.items():
            column = base.get(key)
            if column is not None:
                column.append(value)
            else:
                optional.setdefault(key, {})[n] = value
        n += 1
        _add_check_rows(check_cols, raw)
    columns = dict(base)
    for key, values in optional.items():  # first seen first, as pandas orders the keys of many dicts
        filled = [np.nan] * n
        for i, value in values.items():
            filled[i] = value
        columns[key] = filled
    trials_frame = _frame(pd, np, columns, n)
    numeric = [c for c in trials_frame.columns if c.endswith(USAGE_FIELDS) or c in ("cost_usd", "redundant_calls")]
    for column in numeric:  # None → NaN, so unknown stays unknown in sums and Parquet
        trials_frame[column] = pd.to_numeric(trials_frame[column], errors="coerce").astype("float64")
    checks_frame = _frame(pd, np, check_cols, len(check_cols["name"])) if check_cols["name"] else \
        pd.DataFrame([], columns=CHECK_COLUMNS)
    return trials_frame, checks_frame


def _add_check_rows(columns: dict[str, list[Any]], raw: dict[str, Any]) -> None:
    checks = raw.get("checks") or []
    if not checks:
        return
    t = raw["transcript"]
    count = len(checks)
    for key, value in (("run_id", t.get("run_id")), ("unit_id", raw.get("unit_id")),
                       ("scenario_id", t.get("scenario_id")), ("trial", t.get("trial")),
                       ("simulator", (t.get("simulator") or {}).get("ref")), ("verdict", raw.get("verdict"))):
        columns[key].extend([value] * count)
    for key in _CHECK_KEYS:
        if key == "hard":
            columns[key].extend([c.get("hard", True) for c in checks])
        else:
            columns[key].extend([c.get(key) for c in checks])


def _frame(pd: Any, np: Any, columns: dict[str, list[Any]], n: int) -> Any:
    """A frame from equal-length value lists, inferred like rows of records (``DataFrame(list_of_dicts)``)."""
    if not columns or n == 0:
        return pd.DataFrame(columns=list(columns))
    try:
        from pandas.core.internals.construction import convert_object_array
    except ImportError:  # another pandas: the plain (slower) way, same result
        return pd.DataFrame([dict(zip(columns, values)) for values in zip(*columns.values())], columns=list(columns))
    arrays = []
    for values in columns.values():
        array = np.empty(n, dtype=object)
        array[:] = values
        arrays.append(array)
    converted = convert_object_array(arrays, dtype=None)
    return pd.DataFrame(dict(zip(columns, converted)), copy=False)


def read_frames(path: Path) -> tuple[Any, Any]:
    """``build_frames`` straight from a trials file, line by line (flat memory)."""
    from simlab.runner.store import RunStore

    return build_frames(RunStore(path.parent).iter_raw())


def write_frames(folder: Path, trials: Any, checks: Any) -> list[Path]:
    """Write both tables as Parquet beside the trials (derived files, always rebuildable)."""
    paths = [folder / RESULTS_FILE, folder / CHECKS_FILE]
    for frame, path in zip((trials, checks), paths):
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            frame.to_parquet(tmp, index=False)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)  # a full disk leaves no half-written table behind
    return paths
