"""Deterministic sample runs for the viewer's tests, snapshots and benchmark.

Nothing random and no clock: the same arguments write byte-identical files, so snapshots of the
screens stay stable. Trials vary by position (every third trial of a scenario fails, one is
invalid, one ends in an infrastructure error) so every screen has something to show.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simlab.runner.plan import derive_seed
from simlab.runner.store import encode_record
from simlab.transcript import (
    AgentMessage,
    Check,
    ErrorEvent,
    ModelCall,
    Pin,
    Signal,
    Termination,
    TerminationReason,
    ToolCall,
    ToolResult,
    Transcript,
    TrialRecord,
    Usage,
    UserMessage,
)

__all__ = ["MARKUP_TEXT", "sample_manifest", "sample_record", "write_sample_run"]

CREATED = "2026-01-02T03:04:05+00:00"
AGENT = Pin(kind="llm", ref="openai/gpt-4o-2024-08-06", settings={"temperature": 0.0})
SIMULATOR = Pin(kind="llm", ref="anthropic/claude-3-5-haiku-20241022", settings={"temperature": 0.7})
MARKUP_TEXT = "I typed [bold]not bold[/bold] and [link=https://evil.example]click me[/link] and \x1b[31mred\x1b[0m"


def _usage(role: str, turn: int, n: int) -> ModelCall:
    model = AGENT.ref if role == "agent" else SIMULATOR.ref
    return ModelCall(turn=turn, role=role, model=model,  # type: ignore[arg-type]
                     usage=Usage(input_tokens=900 + 37 * n, output_tokens=60 + n, cost_usd=0.0021 + n / 10000,
                                 latency_s=0.5 + n / 100, retries=1 if n % 5 == 4 else 0,
                                 retry_wait_s=1.0 if n % 5 == 4 else 0.0))


def _order(i: int) -> dict[str, Any]:
    return {"id": f"A{100 + i}", "customer": "C-17", "status": "delivered", "total": 49.9 + i,
            "items": [{"sku": f"SKU-{i}", "name": f"Item number {i}", "quantity": 1, "price": 49.9 + i}],
            "damaged": i % 2 == 0, "delivered_on": "2026-07-09"}


def _state(orders: int, refund_method: str) -> dict[str, Any]:
    return {"today": "2026-07-14", "orders": {f"A{100 + i}": _order(i) for i in range(orders)},
            "refunds": [{"id": "R-1", "order_id": "A100", "amount": 49.9, "method": refund_method}],
            "store_credit": {}}


def sample_record(run_id: str, scenario: str, trial: int, *, orders: int = 3, text: str | None = None) -> TrialRecord:
    """One trial; ``trial % 3 == 0`` fails (store credit instead of a card refund, a forbidden call)."""
    failing = trial % 3 == 0
    tool = "issue_store_credit" if failing else "issue_refund"
    method = "store_credit" if failing else "original_card"
    user_text = text if text is not None else f"My order A100 arrived broken. Refund it to my card please ({scenario})."
    events: list[Any] = [
        UserMessage(turn=1, text=user_text),
        _usage("agent", 1, trial),
        ToolCall(turn=1, call_id="c1", name="lookup_order", arguments={"order_id": "A100"}, access="read"),
        ToolResult(turn=1, call_id="c1", name="lookup_order", ok=True, result=_state(orders, "none")["orders"]),
        ToolCall(turn=1, call_id="c2", name=tool, arguments={"order_id": "A100", "amount": 49.9}, access="write"),
        ToolResult(turn=1, call_id="c2", name=tool, ok=True, result={"refund_id": "R-1", "method": method}),
        AgentMessage(turn=1, text=f"Done: 49.90 refunded as {method.replace('_', ' ')} (R-1)."),
        _usage("simulator", 2, trial),
        UserMessage(turn=2, text="Thanks, that works."),
        Signal(turn=2, role="user", signal="stop"),
    ]
    termination = Termination(reason=TerminationReason.GOAL_REACHED, detail="user signalled stop", turn=2)
    transcript = Transcript(
        run_id=run_id, unit_id=f"{scenario}#{trial}", scenario_id=scenario, persona_id="impatient-terse",
        domain="retail", trial=trial, seed=derive_seed(0, scenario, trial), agent=AGENT, simulator=SIMULATOR,
        events=events, termination=termination, final_state=_state(orders, method),
        started_at=CREATED, duration_s=1.25,
    )
    diff = [{"path": "refunds[0].method", "change": "changed", "expected": "original_card", "actual": method}]
    checks = [
        Check(name="refunds[0].method equals 'original_card'", kind="state", status="fail" if failing else "pass",
              reason=f"refunds[0].method: expected 'original_card', got '{method}'"),
        Check(name="expected_state", kind="state", status="fail" if failing else "pass",
              reason="1 difference(s) from the expected state" if failing else "final state as expected",
              details={"diff": ["refunds[0].method: 'original_card' → '" + method + "'"], "diff_entries": diff}
              if failing else {}),
        Check(name="forbidden(issue_store_credit)", kind="policy", status="fail" if failing else "pass",
              reason="issue_store_credit at turn 1 (call c2) is forbidden" if failing else "no issue_store_credit call",
              event=4 if failing else None, turn=1 if failing else None, call_id="c2" if failing else None),
        Check(name="tool_precision", kind="trajectory", status="pass", hard=False, score=1.0,
              reason="2 of 2 calls matched"),
        Check(name="rubric:polite", kind="rubric", status="not_run", reason="no judge model configured"),
    ]
    return TrialRecord(unit_id=transcript.unit_id, transcript=transcript, checks=checks,
                       verdict="fail" if failing else "pass")


def _invalid(record: TrialRecord) -> TrialRecord:
    record.checks.append(Check(name="drift:invented_identifier", kind="drift", status="fail", event=0, turn=1,
                               reason="the user named order Z999, which it was never told"))
    record.verdict = "invalid"
    return record


def _errored(record: TrialRecord) -> TrialRecord:
    t = record.transcript
    t.events = t.events[:2] + [ErrorEvent(turn=1, source="agent", kind="transient", message="503 from provider")]
    t.termination = Termination(reason=TerminationReason.ERROR, detail="retries exhausted", turn=1)
    record.checks = []
    record.verdict = "error"
    return record


def sample_manifest(run_id: str, scenarios: dict[str, int], created_at: str = CREATED) -> dict[str, Any]:
    return {"schema_version": 1, "run_id": run_id, "created_at": created_at,
            "pins": {"agent": {"model": AGENT.ref, "temperature": 0.0},
                     "simulator": {"kind": "llm", "model": SIMULATOR.ref, "temperature": 0.7},
                     "judge": None, "seed": 0,
                     "scenarios": {sid: {"sha256": "0" * 64, "persona": "impatient-terse", "trials": n}
                                   for sid, n in scenarios.items()}},
            "units": sum(scenarios.values())}


def write_sample_run(folder: Path, run_id: str = "fixture", scenarios: dict[str, int] | None = None, *,
                     orders: int = 3, graded: bool = True, created_at: str = CREATED, special: bool = True) -> Path:
    """Write ``run.json`` and ``trials.jsonl`` under ``folder``; returns ``folder``.

    ``special`` adds the odd cases: an invalid trial, an infrastructure error, and a message full of
    markup and escape sequences that must be shown literally."""
    scenarios = scenarios or {"refund-damaged": 3, "final-sale": 2}
    folder.mkdir(parents=True, exist_ok=True)
    plan = dict(scenarios)
    if special:
        plan["literal-markup"] = 1
    (folder / "run.json").write_text(json.dumps(sample_manifest(run_id, plan, created_at), indent=2) + "\n")
    with open(folder / "trials.jsonl", "w", encoding="utf-8") as fh:
        for sid, n in scenarios.items():
            for trial in range(1, n + 1):
                record = sample_record(run_id, sid, trial, orders=orders)
                if special and sid == "final-sale":
                    record = _invalid(record) if trial == 1 else _errored(record)
                fh.write(_line(record, graded))
        if special:
            fh.write(_line(sample_record(run_id, "literal-markup", 1, orders=orders, text=MARKUP_TEXT), graded))
    return folder


def _line(record: TrialRecord, graded: bool) -> str:
    if not graded:
        record.checks, record.verdict = [], None
    return encode_record(record).decode("utf-8")  # as the runner writes it, head first
