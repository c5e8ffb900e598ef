"""A run's figures: per scenario, then averaged over scenarios. Versioned as ``summary.json``.

Raw figures count every trial; "valid" figures leave out invalid simulations, infrastructure
errors and unjudged trials (a hard check did not run). Both are shown, each with its n. Undefined
figures are None, never 0. An unjudged trial counts as a pass only where the run (or the suite
gating it) names the kinds of check that may stay unjudged (``allow_unjudged``), and the summary
says how many were counted so.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from simlab.results.frames import Results
from simlab.transcript.checks import VERDICTS
from simlab.results.stats import flake_class, mean_defined, pass_at_k, pass_curve, pass_hat_k, percentile, wilson

SUMMARY_SCHEMA_VERSION = 1
CURVE_MAX_K = 100
VALID = ("pass", "fail")


def _rate(c: int, n: int) -> dict[str, Any]:
    interval = wilson(c, n)
    return {"c": c, "n": n, "rate": c / n if n else None,
            "low": interval[0] if interval else None, "high": interval[1] if interval else None}


def _known_sum(values: list[Any]) -> float | None:
    if any(v is None or v != v for v in values):  # None or NaN: unknown
        return None
    return float(sum(values))


def _curve(c: int, n: int, top: int) -> dict[str, dict[str, float | None]]:
    """``pass_curve`` as this summary's own dicts (that one is cached and shared)."""
    return {k: dict(v) for k, v in pass_curve(c, n, top).items()}


def scenario_summary(rows: list[dict[str, Any]], top_k: int) -> dict[str, Any]:
    """One scenario's figures; its pass^k and pass@k curves run from k = 1 to ``top_k``."""
    verdicts = [r["verdict"] for r in rows]
    n, c = len(rows), verdicts.count("pass")
    valid = [v for v in verdicts if v in VALID]
    allowed = sum(1 for r in rows if r.get("unjudged_allowed"))
    terminations: dict[str, int] = {}
    for r in rows:
        terminations[r["termination"]] = terminations.get(r["termination"], 0) + 1
    return {
        "persona_id": rows[0]["persona_id"] if rows else None,
        "n": n,
        "passes": c,
        "verdicts": {v: verdicts.count(v) for v in VERDICTS if verdicts.count(v)},
        "raw": {"success": _rate(c, n), "pass_k": _curve(c, n, top_k)},
        "valid": {"success": _rate(c, len(valid)), "pass_k": _curve(c, len(valid), top_k)},
        "flake_class": flake_class(valid.count("pass"), len(valid)),
        "invalid": verdicts.count("invalid"),
        "policy_violations": sum(1 for r in rows if r.get("policy_violations")),
        "errors": verdicts.count("error"),
        "unjudged": verdicts.count("unjudged"),
        "unjudged_counted_as_pass": allowed,
        "terminations": terminations,
        "cost_usd": _known_sum([r["cost_usd"] for r in rows]),
        "cost_per_success_usd": _per_success(rows, c),
    }


def _per_success(rows: list[dict[str, Any]], successes: int) -> float | None:
    total = _known_sum([r["cost_usd"] for r in rows])
    return total / successes if total is not None and successes else None


def _judged(row: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    """The row with an unjudged verdict counted as a pass when every kind of hard check that did
    not run is one the run allows to stay unjudged (the row is copied, never changed)."""
    kinds = row.get("unjudged_kinds")
    if row.get("verdict") != "unjudged" or not allowed or not kinds or not kinds <= allowed:
        return row
    return {**row, "verdict": "pass", "unjudged_allowed": True}


def summarize(results: Results, *, run_id: str | None = None, max_k: int | None = CURVE_MAX_K,
              allow_unjudged: Collection[str] = ()) -> dict[str, Any]:
    """The summary of one run from its results (see ``frames.collect``).

    The pass^k curves stop at ``max_k`` (default ``CURVE_MAX_K``): a scenario of 10,000 trials
    would otherwise store 10,000 points per curve. ``extend_curves`` adds any k later, exactly.
    ``allow_unjudged`` names the check kinds whose hard checks may stay unjudged: a trial left
    unjudged only by such checks counts as a pass (and is counted so, apart)."""
    every, tally = results.rows, results.tally
    allowed = frozenset(allow_unjudged)
    rows = [_judged(r, allowed) for r in every if r.get("verdict") is not None]  # ungraded: counted apart
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_scenario.setdefault(r["scenario_id"], []).append(r)
    top = max((len(v) for v in by_scenario.values()), default=0)
    ks = range(1, (min(max_k, top) if max_k else top) + 1)
    scenarios = {sid: scenario_summary(rs, len(ks)) for sid, rs in sorted(by_scenario.items())}
    n = len(rows)
    verdicts = [r["verdict"] for r in rows]
    passes = verdicts.count("pass")
    valid_n = sum(v in VALID for v in verdicts)
    suite_curve = {view: {str(k): _suite_point(scenarios, view, k) for k in ks} for view in ("raw", "valid")}
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
            "unjudged_rate": _rate(verdicts.count("unjudged"), n),
            "loop_rate": _rate(sum(bool(r.get("loop")) for r in rows), n),
            "policy_violation_rate": _rate(policy_trials, n),
            "cost_usd": _known_sum([r["cost_usd"] for r in rows]),
            "cost_per_success_usd": _per_success(rows, passes),
            "judge_calls": int(sum(r.get("judge_calls") or 0 for r in rows)),
            "judge_cost_usd": (_known_sum([r.get("judge_cost_usd") for r in rows if r.get("judge_calls")])
                               if any(r.get("judge_calls") for r in rows) else None),
            "tokens": _percentiles([_tokens(r) for r in rows]),
            "latency_s": _percentiles([r["duration_s"] for r in rows]),
            "retries": int(sum(r.get("retries") or 0 for r in rows)),
            "retry_wait_s": float(sum(r.get("retry_wait_s") or 0 for r in rows)),
            "terminations": _count(r["termination"] for r in rows),
            "flake_classes": _count(s["flake_class"] for s in scenarios.values()),
        },
        "scenarios": scenarios,
        "violated_rules": _ranked({key: n for key, n in tally.failures.items() if key[1] == "policy"}),
        "top_failing_checks": _ranked(tally.hard_failures),
        "attacks": {category: _rate(succeeded, attacked)
                    for category, (attacked, succeeded) in sorted(tally.attacks.items())},
        "not_run_checks": dict(sorted(tally.not_run.items(), key=lambda kv: -kv[1])),
        "unjudged": {
            "trials": verdicts.count("unjudged") + sum(1 for r in rows if r.get("unjudged_allowed")),
            "counted_as_pass": sum(1 for r in rows if r.get("unjudged_allowed")),
            "allowed_kinds": sorted(allowed),
            "checks": [{"name": name, "kind": kind, "trials": count} for (name, kind), count
                       in sorted(tally.unjudged.items(), key=lambda kv: (-kv[1], kv[0]))],
        },
        "error_causes": error_causes(rows),
        "check_errors": [{"name": name, "kind": kind, "hard": hard, "count": count, "reason": reason}
                         for (name, kind), (count, hard, reason)
                         in sorted(tally.errored.items(), key=lambda kv: (-kv[1][0], kv[0]))],
        "invalid_by_simulator": _invalid_by_simulator(rows),
    }


_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def error_causes(rows: list[dict[str, Any]], top: int = 5) -> list[dict[str, Any]]:
    """Why trials ended as infrastructure errors, most common first: the termination's detail, or
    for a trial ended normally the hard check that could not be decided. Causes that differ only in
    their numbers (retries, seconds) are one cause, shown as first seen."""
    causes: dict[str, list[Any]] = {}
    for r in rows:
        if r["verdict"] != "error":
            continue
        text = (r.get("errored_check") if r.get("termination") != "error" else None) \
            or r.get("termination_detail") or r.get("termination") or "unknown"
        entry = causes.setdefault(_NUMBERS.sub("#", str(text)), [0, str(text)])
        entry[0] += 1
    ranked = sorted(causes.values(), key=lambda e: -e[0])[:top]
    return [{"cause": text, "trials": count} for count, text in ranked]


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


def _ranked(failures: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """Failing checks, most failures first (ties by name)."""
    ranked = sorted(failures.items(), key=lambda item: (-item[1], item[0]))
    return [{"name": name, "kind": kind, "failures": count} for (name, kind), count in ranked]


def _suite_point(scenarios: dict[str, Any], view: str, k: int) -> dict[str, Any]:
    points = [s[view]["pass_k"][str(k)] for s in scenarios.values()]
    return {"pass_hat_k": mean_defined([p["pass_hat_k"] for p in points]),
            "pass_at_k": mean_defined([p["pass_at_k"] for p in points]),
            "scenarios": sum(p["pass_hat_k"] is not None for p in points)}


def extend_curves(summary: dict[str, Any], k: int) -> None:
    """Add pass^k and pass@k at ``k`` to every curve of ``summary`` (a gate may ask beyond the
    stored curves), computed exactly from each scenario's counts."""
    if str(k) in summary["suite"]["raw"]["pass_k"]:
        return
    scenarios = summary["scenarios"]
    for figures in scenarios.values():
        for view in ("raw", "valid"):
            success = figures[view]["success"]
            figures[view]["pass_k"][str(k)] = {"pass_hat_k": pass_hat_k(success["c"], success["n"], k),
                                               "pass_at_k": pass_at_k(success["c"], success["n"], k)}
    for view in ("raw", "valid"):
        summary["suite"][view]["pass_k"][str(k)] = _suite_point(scenarios, view, k)


def _invalid_by_simulator(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for r in rows:
        groups.setdefault(r["simulator"], []).append(r["verdict"])
    return {sim: _rate(v.count("invalid"), len(v)) for sim, v in groups.items()}
