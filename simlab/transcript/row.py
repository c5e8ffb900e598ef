"""A trial's flat figures (its row in ``results.parquet``) and the ``head`` stored with each record.

Everything here works on raw JSON dicts, not on the pydantic models: reports of 100,000 trials
cannot afford to validate each record. ``trial_head`` is computed when a record is written and
stored at the front of its line, so a reader (the report, the viewer) gets every figure it needs
without parsing the transcript. It is derived data: ``simlab grade`` rewrites it with the checks,
and a line without one (an older file, a hand edit) is read in full and gets it computed then.
Unknown numbers stay ``None``, never 0.
"""

from __future__ import annotations

from typing import Any

from simlab.transcript.counts import tool_counts
from simlab.transcript.model import spends_nothing_unseen

ROLES = ("agent", "simulator", "judge")
USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
HEAD_VERSION = 2  # 2: unjudged and errored checks; tool_errors no longer counts invalid calls (counts.py)


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
    """The flat figures of one raw record: one row of ``results.parquet``."""
    t = raw["transcript"]
    counts: dict[str, int] = {}
    usage: dict[str, dict[str, Any]] = {}
    events = t.get("events") or []
    for event in events:  # one pass: counts and usage per role
        kind = event.get("type", "?")
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "model_call":
            _add_usage(usage, event)
    tools = tool_counts(events)  # the one count of calls, invalid calls and tool errors
    checks = raw.get("checks") or []
    termination = t.get("termination") or {}
    reason = termination.get("reason")
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
        "termination": reason,
        "termination_detail": termination.get("detail"),
        "user_turns": counts.get("user", 0),
        "agent_turns": counts.get("agent", 0),
        "tool_calls": tools["tool_calls"],
        "invalid_calls": tools["invalid_calls"],
        "tool_errors": tools["tool_errors"],
        "error_events": counts.get("error", 0),
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
    row["judge_calls"] = (usage.get("judge") or {}).get("calls", 0)
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
    row["loop"] = details.get("loop", reason in ("agent_loop", "max_turns"))
    row["failed_checks"] = "; ".join(failed)
    row["policy_violations"] = violations
    row["not_run_checks"] = not_run
    row["check_count"] = len(checks)
    for c in checks:
        row[f"check:{c['name']}"] = c.get("status")
    return row


REASON_CHARS = 240  # of an errored check's reason kept in the head (the cause a report names)


def trial_head(raw: dict[str, Any]) -> dict[str, Any]:
    """What a report or the viewer reads of a trial: its row, plus the checks that did not pass
    (``[name, kind, hard]`` for failures, names for checks not run, ``[name, kind]`` for hard checks
    not run, which leave the trial unjudged, and ``[name, kind, hard, reason]`` for checks whose
    grader could not decide) and, per attack category, whether the attack succeeded (a check of
    that category failed)."""
    failed, not_run, unjudged, errored, attacks = [], [], [], [], {}
    for c in raw.get("checks") or []:
        status = c.get("status")
        if status == "fail":
            failed.append([c.get("name"), c.get("kind"), bool(c.get("hard", True))])
        elif status == "not_run":
            not_run.append(c.get("name"))
            if c.get("hard", True):
                unjudged.append([c.get("name"), c.get("kind")])
        elif status == "error":
            errored.append([c.get("name"), c.get("kind"), bool(c.get("hard", True)),
                            str(c.get("reason") or "")[:REASON_CHARS]])
        category = c.get("category")
        if category is not None:
            attacks[category] = attacks.get(category, False) or status == "fail"
    return {"v": HEAD_VERSION, "row": trial_row(raw), "failed": failed, "not_run": not_run, "unjudged": unjudged,
            "errored": errored, "attacks": attacks}


def record_head(record: Any) -> dict[str, Any]:
    """``trial_head`` of a ``TrialRecord`` model, for writing it: fed with just the parts of the
    record that ``trial_row`` reads, taken from the models (dumping the whole record costs as
    much again as writing it). A test holds it equal to ``trial_head`` of the full record."""
    t = record.transcript
    events: list[dict[str, Any]] = []
    for e in t.events:
        if e.type == "model_call":
            events.append({"type": e.type, "role": e.role, "usage": e.usage.model_dump(mode="json")})
        elif e.type == "tool_result":
            events.append({"type": e.type, "ok": e.ok, "call_id": e.call_id})
        elif e.type == "invalid_call":
            events.append({"type": e.type, "call_id": e.call_id})
        else:
            events.append({"type": e.type})
    checks = [{"name": c.name, "kind": c.kind, "status": c.status, "hard": c.hard, "category": c.category,
               "reason": c.reason if c.status == "error" else "",
               "details": c.details if c.name == "efficiency" else {}} for c in record.checks]
    transcript = {
        "run_id": t.run_id, "scenario_id": t.scenario_id, "persona_id": t.persona_id, "trial": t.trial,
        "seed": t.seed, "duration_s": t.duration_s, "events": events,
        "agent": t.agent.model_dump(mode="json"), "simulator": t.simulator.model_dump(mode="json"),
        "termination": {"reason": t.termination.reason.value, "detail": t.termination.detail},
    }
    return trial_head({"unit_id": record.unit_id, "verdict": record.verdict, "checks": checks,
                       "transcript": transcript})
