"""A trial's head (``head.py``), computed from the record's models.

``record_head`` is the one computation of a trial's flat figures: the runner calls it when a line
is written (``runner/store.encode_record``) and ``simlab grade`` when it rewrites one; a reader
that meets a line without a head (record schema 1, a hand edit) validates the record and calls it
too (``runner/lines.py``), so every head is the same whoever computed it. It walks the events
once and reads only what it needs: about as cheap as the dict-based computation it replaced.
Unknown numbers stay ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simlab.transcript.blame import diagnose
from simlab.transcript.checks import Check
from simlab.transcript.counts import tool_counts
from simlab.transcript.head import CHECK_COLUMN, REASON_CHARS, TrialFigures, TrialHead
from simlab.transcript.model import (
    Pin,
    Transcript,
    TrialRecord,
    Usage,
    cost_usd,
    spends_nothing_unseen,
    token_count,
)

ROLES = ("agent", "simulator", "judge")
USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")


def _plus(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a + b


class _RoleUsage:
    """Sums of one role's model calls; a sum with an unknown part is unknown."""

    __slots__ = (
        "calls",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "cost_usd",
        "latency_s",
        "retries",
        "retry_wait_s",
    )

    def __init__(self) -> None:
        self.calls, self.retries = 0, 0
        self.input_tokens: int | None = 0
        self.output_tokens: int | None = 0
        self.cached_tokens: int | None = 0
        self.cost_usd: float | None = 0.0
        self.latency_s = self.retry_wait_s = 0.0

    def add(self, usage: Usage) -> None:  # a sum of tokens beyond a count's bound is unknown
        self.calls += 1
        self.input_tokens = token_count(_plus(self.input_tokens, usage.input_tokens))
        self.output_tokens = token_count(_plus(self.output_tokens, usage.output_tokens))
        self.cached_tokens = token_count(_plus(self.cached_tokens, usage.cached_tokens))
        self.cost_usd = cost_usd(_plus(self.cost_usd, usage.cost_usd))
        self.latency_s += usage.latency_s or 0.0
        self.retries += usage.retries or 0
        self.retry_wait_s += usage.retry_wait_s or 0.0


def _known_zero(pin: Pin) -> bool:
    """A role that made no model call spent nothing if it is a model or a deterministic simulator;
    a Python agent may call models we cannot see, so its spend is unknown unless it declares
    ``uses_models = False``."""
    return spends_nothing_unseen(pin.kind, pin.settings)


def record_head(record: TrialRecord) -> TrialHead:
    """The head of one trial record: its row of ``results.parquet``, the checks that did not pass
    (``[name, kind, hard]`` for failures, names for checks not run, ``[name, kind]`` for hard checks
    not run, which leave the trial unjudged, and ``[name, kind, hard, reason]`` for checks whose
    grader could not decide) and, per attack category, whether the attack succeeded."""
    t = record.transcript
    counts: dict[str, int] = {}
    usage: dict[str, _RoleUsage] = {}
    for event in t.events:  # one pass: counts and usage per role
        counts[event.type] = counts.get(event.type, 0) + 1
        if event.type == "model_call":
            role = usage.get(event.role)
            if role is None:
                role = usage[event.role] = _RoleUsage()
            role.add(event.usage)
    row: dict[str, Any] = {
        "run_id": t.run_id,
        "unit_id": record.unit_id,
        "scenario_id": t.scenario_id,
        "persona_id": t.persona_id,
        "trial": t.trial,
        "seed": t.seed,
        "agent": t.agent.ref,
        "simulator": t.simulator.ref,
        "verdict": record.verdict,
        "termination": t.termination.reason.value,
        "termination_detail": t.termination.detail,
        "user_turns": counts.get("user", 0),
        "agent_turns": counts.get("agent", 0),
        **tool_counts(t.events),  # the one count of calls, invalid calls and tool errors
        "error_events": counts.get("error", 0),
        "model_calls": counts.get("model_call", 0),
        "duration_s": t.duration_s,
    }
    row.update(_usage_columns(t, usage))
    checks = _Checks.of(record.checks)
    details = checks.efficiency or {}
    redundant = details.get("redundant_calls")
    loop = details.get("loop")
    row["redundant_calls"] = (
        redundant if isinstance(redundant, int) and not isinstance(redundant, bool) else None
    )
    row["loop"] = loop if isinstance(loop, bool) else t.termination.reason.value == "agent_loop"
    row["failed_checks"] = "; ".join(checks.hard_failed)
    row["policy_violations"] = checks.violations
    row["not_run_checks"] = len(checks.not_run)
    row["check_count"] = len(record.checks)
    row["replayed"] = t.replay is not None
    row["diverged_turn"] = t.replay.diverged_turn if t.replay is not None else None
    fault = diagnose(t, record.checks, record.verdict)
    if fault is not None:
        row.update(
            blame=fault.blame,
            first_fault_turn=fault.turn,
            first_fault_event=fault.event,
            failure_mode=fault.mode,
        )
    for c in record.checks:
        row[CHECK_COLUMN + c.name] = c.status
    return TrialHead(
        row=TrialFigures(**row),
        failed=checks.failed,
        not_run=checks.not_run,
        unjudged=checks.unjudged,
        errored=checks.errored,
        attacks=checks.attacks,
        tool_counts=_tool_counts(checks.tool_pr),
    )


def _usage_columns(t: Transcript, usage: dict[str, _RoleUsage]) -> dict[str, Any]:
    """Tokens and cost per role (a role with no call: 0 where it spends nothing unseen, else
    unknown), the run's cost, judge calls, retries and latency."""
    row: dict[str, Any] = {}
    for name in ROLES:
        acc = usage.get(name)
        if acc is not None:
            for f in USAGE_FIELDS:
                row[f"{name}_{f}"] = getattr(acc, f)
        else:
            pin = t.agent if name == "agent" else t.simulator if name == "simulator" else None
            zero = 0 if pin is not None and _known_zero(pin) else None
            for f in USAGE_FIELDS:
                row[f"{name}_{f}"] = zero
    row["cost_usd"] = cost_usd(_plus(row["agent_cost_usd"], row["simulator_cost_usd"]))
    row["judge_calls"] = usage["judge"].calls if "judge" in usage else 0
    row["retries"] = sum(a.retries for a in usage.values())
    row["retry_wait_s"] = sum(a.retry_wait_s for a in usage.values())
    row["model_latency_s"] = sum(a.latency_s for a in usage.values())
    return row


@dataclass
class _Checks:
    """What the head keeps of a trial's checks, gathered in one pass."""

    failed: list[tuple[str, str, bool]] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    unjudged: list[tuple[str, str]] = field(default_factory=list)
    errored: list[tuple[str, str, bool, str]] = field(default_factory=list)
    attacks: dict[str, bool] = field(default_factory=dict)
    hard_failed: list[str] = field(default_factory=list)
    violations: int = 0
    efficiency: dict[str, Any] | None = None
    tool_pr: dict[str, Any] | None = None

    @classmethod
    def of(cls, checks: list[Check]) -> _Checks:
        out = cls()
        for c in checks:
            if c.status == "fail":
                out.failed.append((c.name, c.kind, c.hard))
                if c.hard:
                    out.hard_failed.append(c.name)
                out.violations += c.kind == "policy"
            elif c.status == "not_run":
                out.not_run.append(c.name)
                if c.hard:
                    out.unjudged.append((c.name, c.kind))
            elif c.status == "error":
                out.errored.append((c.name, c.kind, c.hard, c.reason[:REASON_CHARS]))
            if out.efficiency is None and c.name == "efficiency":
                out.efficiency = c.details
            if out.tool_pr is None and c.name == "tool_precision" and c.kind == "trajectory":
                out.tool_pr = c.details
            if c.category is not None:
                out.attacks[c.category] = out.attacks.get(c.category, False) or c.status == "fail"
        return out


def _tool_counts(details: dict[str, Any] | None) -> tuple[int, int, int] | None:
    """(tp, fp, fn) from the trajectory grader's counts: matched calls, the agent's other calls, the
    reference calls left unmatched. None when the check did not count (it was not run)."""
    counts: list[int] = []
    for key in ("matched", "calls", "reference"):
        value = (details or {}).get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        counts.append(value)
    matched, calls, reference = counts
    return matched, calls - matched, reference - matched
