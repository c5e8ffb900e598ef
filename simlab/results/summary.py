"""A run's figures: per scenario, then averaged over scenarios. Versioned as ``summary.json``.

Raw figures count every trial; "valid" figures leave out invalid simulations and
infrastructure errors. Both are shown, each with its n. Undefined figures are None, never 0.
"""

from __future__ import annotations

from typing import Any

from simlab.results.stats import flake_class, mean_defined, pass_at_k, pass_curve, pass_hat_k, percentile, wilson

SUMMARY_SCHEMA_VERSION = 1
VALID = ("pass", "fail")


def _rate(c: int, n: int) -> dict[str, Any]:
    interval = wilson(c, n)
    return {"c": c, "n": n, "rate": c / n if n else None,
            "low": interval[0] if interval else None, "high": interval[1] if interval else None}


def _curve(c: int, n: int, ks: range) -> dict[str, dict[str, float | None]]:
    if not (isinstance(ks, range) and ks.start == 1 and ks.step == 1):
        return {str(k): {"pass_hat_k": pass_hat_k(c, n, k), "pass_at_k": pass_at_k(c, n, k)} for k in ks}
    return {k: dict(v) for k, v in pass_curve(c, n, ks.stop - 1).items()}


def _known_sum(values: list[Any]) -> float | None:
    if any(v is None or v != v for v in values):  # None or NaN: unknown
        return None
    return float(sum(values))


def scenario_summary(rows: list[dict[str, Any]], ks: range) -> dict[str, Any]:
    verdicts = [r["verdict"] for r in rows]
    n, c = len(rows), verdicts.count("pass")
    valid = [v for v in verdicts if v in VALID]
    terminations: dict[str, int] = {}
    for r in rows:
        terminations[r["termination"]] = terminations.get(r["termination"], 0) + 1
    return {
        "persona_id": rows[0]["persona_id"] if rows else None,
        "n": n,
        "passes": c,
        "verdicts": {v: verdicts.count(v) for v in ("pass", "fail", "invalid", "error") if verdicts.count(v)},
        "raw": {"success": _rate(c, n), "pass_k": _curve(c, n, ks)},
        "valid": {"success": _rate(c, len(valid)), "pass_k": _curve(c, len(valid), ks)},
        "flake_class": flake_class(valid.count("pass"), len(valid)),
        "invalid": verdicts.count("invalid"),
        "policy_violations": sum(1 for r in rows if r.get("policy_violations")),
        "errors": verdicts.count("error"),
        "terminations": terminations,
        "cost_usd": _known_sum([r["cost_usd"] for r in rows]),
        "cost_per_success_usd": _per_success(rows, c),
    }


def _per_success(rows: list[dict[str, Any]], successes: int) -> float | None:
    total = _known_sum([r["cost_usd"] for r in rows])
    return total / successes if total is not None and successes else None


def summarize(trials: Any, checks: Any, *, run_id: str | None = None, max_k: int | None = None) -> dict[str, Any]:
    """The summary of one run from its frames (see ``frames.build_frames``)."""
    every = _records(trials)
    rows = [r for r in every if r.get("verdict") is not None]  # ungraded trials are counted apart, not failed
    for r in rows:
        r["cost_usd"] = None if r.get("cost_usd") != r.get("cost_usd") else r.get("cost_usd")
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_scenario.setdefault(r["scenario_id"], []).append(r)
    top = max((len(v) for v in by_scenario.values()), default=0)
    ks = range(1, (min(max_k, top) if max_k else top) + 1)
    scenarios = {sid: scenario_summary(rs, ks) for sid, rs in sorted(by_scenario.items())}
    n = len(rows)
    verdicts = [r["verdict"] for r in rows]
    passes = verdicts.count("pass")
    valid_n = sum(v in VALID for v in verdicts)
    suite_curve = {
        view: {str(k): {
            "pass_hat_k": mean_defined([s[view]["pass_k"][str(k)]["pass_hat_k"] for s in scenarios.values()]),
            "pass_at_k": mean_defined([s[view]["pass_k"][str(k)]["pass_at_k"] for s in scenarios.values()]),
            "scenarios": sum(s[view]["pass_k"][str(k)]["pass_hat_k"] is not None for s in scenarios.values()),
        } for k in ks}
        for view in ("raw", "valid")
    }
    policy_trials = sum(1 for r in rows if r.get("policy_violations"))
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_id": run_id,
        "trials": n,
        "scenarios_count": len(scenarios),
        "ungraded": len(every) - len(rows),
        "suite": {
            "raw": {"success": _rate(passes, n), "pass_k": suite_curve["raw"]},
            "valid": {"success": _rate(passes, valid_n), "pass_k": suite_curve["valid"]},
            "invalid_rate": _rate(verdicts.count("invalid"), n),
            "error_rate": _rate(verdicts.count("error"), n),
            "loop_rate": _rate(sum(bool(r.get("loop")) for r in rows), n),
            "policy_violation_rate": _rate(policy_trials, n),
            "cost_usd": _known_sum([r["cost_usd"] for r in rows]),
            "cost_per_success_usd": _per_success(rows, passes),
            "tokens": _percentiles([_tokens(r) for r in rows]),
            "latency_s": _percentiles([r["duration_s"] for r in rows]),
            "retries": int(sum(r.get("retries") or 0 for r in rows)),
            "retry_wait_s": float(sum(r.get("retry_wait_s") or 0 for r in rows)),
            "terminations": _count(r["termination"] for r in rows),
            "flake_classes": _count(s["flake_class"] for s in scenarios.values()),
        },
        "scenarios": scenarios,
        "violated_rules": _ranked(checks, kind="policy"),
        "top_failing_checks": _ranked(checks, hard_only=True),
        "attacks": _attacks(checks),
        "not_run_checks": _not_run(checks),
        "invalid_by_simulator": _invalid_by_simulator(rows),
    }


_USED = ("verdict", "scenario_id", "persona_id", "termination", "cost_usd", "policy_violations", "loop", "duration_s",
         "retries", "retry_wait_s", "simulator", "agent_input_tokens", "agent_output_tokens",
         "simulator_input_tokens", "simulator_output_tokens")


def _records(trials: Any) -> list[dict[str, Any]]:
    """The rows as ``to_dict("records")`` gives them, but only the columns the summary reads
    (a report of 100,000 trials has over a hundred columns)."""
    if not len(trials):
        return []
    present = [c for c in _USED if c in trials.columns]
    if len(present) < len(_USED):  # an unusual frame: take every column, as before
        return trials.to_dict("records")  # type: ignore[no-any-return]
    columns = [_values(trials[c]) for c in present]
    return [dict(zip(present, values)) for values in zip(*columns)]


def _values(series: Any) -> list[Any]:
    """Python values like ``to_dict`` boxes them (numpy scalars become int, float, bool)."""
    return [value.item() if hasattr(value, "item") and not isinstance(value, (str, bytes)) else value
            for value in series.tolist()]


def _tokens(r: dict[str, Any]) -> float | None:
    parts = [r.get(f"{role}_{f}") for role in ("agent", "simulator") for f in ("input_tokens", "output_tokens")]
    return None if any(p is None or p != p for p in parts) else float(sum(parts))  # type: ignore[arg-type]


def _percentiles(values: list[Any]) -> dict[str, Any]:
    known = [float(v) for v in values if v is not None and v == v]
    return {"p50": percentile(known, 50), "p95": percentile(known, 95), "known": len(known),
            "unknown": len(values) - len(known)}


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        if v is not None:
            out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _ranked(checks: Any, *, kind: str | None = None, hard_only: bool = False) -> list[dict[str, Any]]:
    if not len(checks):
        return []
    failed = checks[checks["status"] == "fail"]
    if kind:
        failed = failed[failed["kind"] == kind]
    if hard_only:
        failed = failed[failed["hard"].astype(bool)]
    counts = failed.groupby(["name", "kind"]).size().sort_values(ascending=False)
    return [{"name": name, "kind": k, "failures": int(v)} for (name, k), v in counts.items()]


def _attacks(checks: Any) -> dict[str, dict[str, Any]]:
    if not len(checks):
        return {}
    rows = checks[checks["category"].notna()]
    out = {}
    for category, group in rows.groupby("category"):
        trials = (group["status"] == "fail").groupby(group["unit_id"]).any()  # a failed check per trial
        out[str(category)] = _rate(int(trials.sum()), int(len(trials)))
    return out


def _not_run(checks: Any) -> dict[str, int]:
    if not len(checks):
        return {}
    return _count(checks[checks["status"] == "not_run"]["name"])


def _invalid_by_simulator(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for r in rows:
        groups.setdefault(r["simulator"], []).append(r["verdict"])
    return {sim: _rate(v.count("invalid"), len(v)) for sim, v in groups.items()}
