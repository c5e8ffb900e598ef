"""simlab inside pytest: ``evaluate`` for a test function (like ADK's ``AgentEvaluator.evaluate``),
and the checks the pytest plugin (``simlab/pytest_plugin.py``) applies to each scenario.

A scenario passes when its figures hold every gate (default ``pass^1 >= 1.0``: every trial
passes); a failure names the gates that failed, the checks that failed in which trials, with
their reasons, and the run's transcripts file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_GATES", "ScenarioResult", "evaluate", "scenario_result"]

DEFAULT_GATES = ("pass^1 >= 1.0",)
SHOWN = 5  # failed trials shown per scenario


@dataclass
class ScenarioResult:
    """One scenario of a run against its gates."""

    scenario: str
    passed: bool
    lines: list[str] = field(default_factory=list)  # why, when it did not pass

    def message(self) -> str:
        return "\n".join([f"scenario {self.scenario}: {'passed' if self.passed else 'failed'}", *self.lines])


def per_scenario(gate: str) -> bool:
    """Whether ``gate`` can be decided on one scenario's figures (not a run-wide dataset figure, a
    summary function's key or the attack success rate, which only a whole run has)."""
    from simlab.specs.gates import DATASET_METRICS, known_metric, parse_gate

    metric = parse_gate(gate, custom=True)[0]
    return known_metric(metric) and metric not in (*DATASET_METRICS, "attack_success")


def scenario_result(run: Any, scenario: str, gates: Sequence[str]) -> ScenarioResult:
    """``scenario``'s figures in ``run`` (a ``simlab.Run``) against ``gates`` ('METRIC OP NUMBER',
    each read per scenario). Inconclusive (n < k, unknown cost) counts as not passed."""
    from simlab.inert import one_line
    from simlab.report.gates import OPS, metric_value
    from simlab.results.summary import extend_curves
    from simlab.specs.gates import parse_gate

    summary = run.summary
    figures = summary.scenarios.get(scenario)
    if figures is None:
        return ScenarioResult(scenario, False, [f"no graded trial of {scenario} in {run.folder}"])
    lines: list[str] = []
    for text in gates:
        try:
            metric, op, bound = parse_gate(text)
            if metric.startswith(("pass^", "pass@")) and metric[5:].isdigit():
                extend_curves(summary, int(metric[5:]))
            value = metric_value(figures, metric, "valid")
        except ValueError as exc:  # a run-wide figure or a summary function's key: not a scenario's
            lines.append(f"gate {text}: cannot be decided for one scenario ({exc}); gate it in a suite")
            continue
        if value is None:
            lines.append(f"gate {text}: inconclusive ({metric} is undefined: {figures.n} trials)")
        elif not OPS[op](value, bound):
            lines.append(f"gate {text}: {metric} = {value:.4g} ({figures.passes} of {figures.n} trials passed)")
    if lines:
        lines.extend(_failed_trials(run, scenario))
        lines.append(f"transcripts: {Path(run.folder) / 'trials.jsonl'}  (simlab view {one_line(run.id)})")
    return ScenarioResult(scenario, not lines, lines)


def _failed_trials(run: Any, scenario: str) -> list[str]:
    from simlab.inert import one_line
    from simlab.transcript.verdicts import passes, verdict_label

    out: list[str] = []
    shown = 0
    allowed = run.summary.unjudged.allowed_kinds  # the one rule of what passed, as the figures apply it
    for record in run.transcripts():
        not_run = [c.kind for c in record.checks if c.hard and c.status == "not_run"]
        if record.transcript.scenario_id != scenario or passes(record.verdict, not_run, allowed):
            continue
        shown += 1
        if shown > SHOWN:
            continue
        failing = [c for c in record.checks if c.hard and c.status in ("fail", "error", "not_run")]
        out.append(f"  {one_line(record.unit_id)} {verdict_label(record.verdict)} "
                   f"({record.transcript.termination.reason.value})")
        out.extend(f"    {c.status} {one_line(c.name)}: {one_line(c.reason)}" for c in failing[:6])
    if shown > SHOWN:
        out.append(f"  … and {shown - SHOWN} more trials that did not pass")
    return out


def evaluate(scenarios: str | Path | Sequence[str | Path], *, agent: Any, trials: int | None = None,
             gates: Sequence[str] = DEFAULT_GATES, project: str | Path = ".", run_id: str | None = None,
             **run_options: Any) -> Any:
    """Run ``scenarios`` against ``agent`` (as ``simlab.run``) and assert that every scenario holds
    ``gates``; the AssertionError names the failing gates, checks and trials. Returns the ``Run``."""
    import simlab

    paths = [scenarios] if isinstance(scenarios, (str, Path)) else list(scenarios)
    run = simlab.run(paths, agent=agent, trials=trials, project=project, run_id=run_id, **run_options)
    results = [scenario_result(run, sid, gates) for sid in run.summary.scenarios]
    failed = [r for r in results if not r.passed]
    if failed:
        raise AssertionError("\n".join(r.message() for r in failed))
    return run
