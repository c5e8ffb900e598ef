"""A run's trials as flat tables: one row per trial, one row per check.

Built from the raw JSON lines (no pydantic per record: reports must stay fast on 100,000 trials).
Nested detail stays in the JSON transcripts; the tables hold flat columns only. Unknown numbers
stay missing (NaN/None), never 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from simlab.graders.efficiency import spends_nothing_unseen

ROLES = ("agent", "simulator", "judge")
USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
RESULTS_FILE = "results.parquet"
CHECKS_FILE = "checks.parquet"


def _usage_by_role(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    sums: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.get("type") != "model_call":
            continue
        role = event.get("role", "agent")
        usage = event.get("usage") or {}
        acc = sums.setdefault(role, {f: 0 for f in USAGE_FIELDS} | {"calls": 0, "latency_s": 0.0,
                                                                       "retries": 0, "retry_wait_s": 0.0})
        acc["calls"] += 1
        for f in USAGE_FIELDS:
            acc[f] = None if acc[f] is None or usage.get(f) is None else acc[f] + usage[f]
        acc["latency_s"] += usage.get("latency_s") or 0.0
        acc["retries"] += usage.get("retries") or 0
        acc["retry_wait_s"] += usage.get("retry_wait_s") or 0.0
    return sums


def _known_zero(pin: dict[str, Any]) -> bool:
    """A role that made no model call spent nothing if it is a model or a deterministic simulator;
    a Python agent may call models we cannot see, so its spend is unknown unless it declares
    ``uses_models = False``."""
    return spends_nothing_unseen(pin.get("kind"), pin.get("settings") or {})


def trial_row(raw: dict[str, Any]) -> dict[str, Any]:
    t = raw["transcript"]
    events = t.get("events") or []
    counts: dict[str, int] = {}
    for event in events:
        counts[event.get("type", "?")] = counts.get(event.get("type", "?"), 0) + 1
    usage = _usage_by_role(events)
    checks = raw.get("checks") or []
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
        "termination": (t.get("termination") or {}).get("reason"),
        "user_turns": counts.get("user", 0),
        "agent_turns": counts.get("agent", 0),
        "tool_calls": counts.get("tool_call", 0),
        "invalid_calls": counts.get("invalid_call", 0),
        "tool_errors": sum(1 for e in events if e.get("type") == "tool_result" and not e.get("ok")),
        "model_calls": counts.get("model_call", 0),
        "duration_s": t.get("duration_s"),
    }
    for role in ROLES:
        pin = t.get(role) or {}
        acc = usage.get(role)
        for f in USAGE_FIELDS:
            value = acc[f] if acc else (0 if role != "judge" and _known_zero(pin) else None)
            row[f"{role}_{f}"] = value
    parts = [row["agent_cost_usd"], row["simulator_cost_usd"]]
    row["cost_usd"] = None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]
    row["retries"] = sum(a["retries"] for a in usage.values())
    row["retry_wait_s"] = sum(a["retry_wait_s"] for a in usage.values())
    row["model_latency_s"] = sum(a["latency_s"] for a in usage.values())
    efficiency = next((c for c in checks if c.get("name") == "efficiency"), None)
    details = (efficiency or {}).get("details") or {}
    row["redundant_calls"] = details.get("redundant_calls")
    row["loop"] = details.get("loop", row["termination"] in ("agent_loop", "max_turns"))
    failed = [c["name"] for c in checks if c.get("status") == "fail" and c.get("hard", True)]
    row["failed_checks"] = "; ".join(failed)
    row["policy_violations"] = sum(1 for c in checks if c.get("kind") == "policy" and c.get("status") == "fail")
    row["not_run_checks"] = sum(1 for c in checks if c.get("status") == "not_run")
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


def build_frames(raws: Iterable[dict[str, Any]]) -> tuple[Any, Any]:
    """(trials, checks) pandas frames from raw trial records."""
    import pandas as pd

    trials, checks = [], []
    for raw in raws:
        trials.append(trial_row(raw))
        checks.extend(check_rows(raw))
    trials_frame = pd.DataFrame(trials)
    numeric = [c for c in trials_frame.columns if c.endswith(USAGE_FIELDS) or c in ("cost_usd", "redundant_calls")]
    for column in numeric:  # None → NaN, so unknown stays unknown in sums and Parquet
        trials_frame[column] = pd.to_numeric(trials_frame[column], errors="coerce").astype("float64")
    check_columns = ["run_id", "unit_id", "scenario_id", "trial", "simulator", "verdict", "name", "kind", "status",
                     "hard", "score", "reason", "event", "turn", "call_id", "category"]
    return trials_frame, pd.DataFrame(checks, columns=check_columns)


def write_frames(folder: Path, trials: Any, checks: Any) -> list[Path]:
    """Write both tables as Parquet beside the trials (derived files, always rebuildable)."""
    paths = [folder / RESULTS_FILE, folder / CHECKS_FILE]
    for frame, path in zip((trials, checks), paths):
        tmp = path.with_name(f".{path.name}.tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(path)
    return paths
