"""simlab inside pytest: ``evaluate`` for a test function (like ADK's ``AgentEvaluator.evaluate``),
and the checks the pytest plugin (``simlab/pytest_plugin.py``) applies to each scenario.

A scenario passes when its figures hold every gate (default ``pass^1 >= 1.0``: every trial
passes); a failure names the gates that failed, the checks that failed in which trials, with
their reasons, and the run's transcripts file. A scenario that cannot be judged is INCONCLUSIVE,
whatever its figures, never a failure: its run is not whole (``report/completeness.py``: cut
short, mixed), it has no graded trial, some of its trials ended in an infrastructure error or are
unjudged, or a gate is undefined (pass^k with n < k). The pytest plugin reports that as a pytest
*error* (JUnit ``<error>``), a failure as a *failure* (``<failure>``); ``evaluate`` raises
``InconclusiveError`` (an ``InfraError``: exit 3) or ``AssertionError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simlab.errors import InfraError

__all__ = ["DEFAULT_GATES", "InconclusiveError", "ScenarioResult", "evaluate", "scenario_result"]

DEFAULT_GATES = ("pass^1 >= 1.0",)
SHOWN = 5  # failed trials shown per scenario


class InconclusiveError(InfraError):
    """``evaluate``: a scenario could not be judged (infrastructure, an incomplete run, n < k)."""


@dataclass
class ScenarioResult:
    """One scenario of a run against its gates: passed, failed, or (``inconclusive``) not judged."""

    scenario: str
    passed: bool
    lines: list[str] = field(default_factory=list)  # why, when it did not pass
    inconclusive: bool = False  # could not be judged, whatever the figures: an error, not a failure

    @property
    def status(self) -> str:
        return "inconclusive" if self.inconclusive else "passed" if self.passed else "failed"

    def message(self) -> str:
        return "\n".join([f"scenario {self.scenario}: {self.status}", *self.lines])


def per_scenario(gate: str) -> bool:
    """Whether ``gate`` can be decided on one scenario's figures (not a run-wide dataset figure, a
    summary function's key or the attack success rate, which only a whole run has)."""
    from simlab.specs.gates import DATASET_METRICS, known_metric, parse_gate

    metric = parse_gate(gate, custom=True)[0]
    return known_metric(metric) and metric not in (*DATASET_METRICS, "attack_success")


def scenario_result(run: Any, scenario: str, gates: Sequence[str]) -> ScenarioResult:
    """``scenario``'s figures in ``run`` (a ``simlab.Run``) against ``gates`` ('METRIC OP NUMBER',
    each read per scenario). Not passed when a gate fails; inconclusive (not judged, whatever the
    figures) when ``unjudgeable`` says why or a gated figure is undefined (n < k, unknown cost)."""
    from simlab.inert import one_line
    from simlab.report.gates import counts_nothing, judged, metric_value
    from simlab.results.summary import extend_curves
    from simlab.specs.base import COMPARISONS
    from simlab.specs.gates import parse_gate

    summary = run.summary
    figures = summary.scenarios.get(scenario)
    why = unjudgeable(summary, figures)
    if figures is None:
        return ScenarioResult(scenario, False, [*why, f"no graded trial of {scenario} in {run.folder}"], True)
    lines: list[str] = []
    undefined = False
    for text in gates:
        try:
            metric, op, bound = parse_gate(text)
            if metric.startswith(("pass^", "pass@")) and metric[5:].isdigit():
                extend_curves(summary, int(metric[5:]))
            value = metric_value(figures, metric, "valid")
        except ValueError as exc:  # a run-wide figure or a summary function's key: not a scenario's
            lines.append(f"gate {text}: cannot be decided for one scenario ({exc}); gate it in a suite")
            continue
        if value is None or counts_nothing(metric, figures):
            undefined = True
            why_not = "is undefined" if value is None else "counts no valid trial"
            lines.append(f"gate {text}: inconclusive ({metric} {why_not}: {judged(figures)})")
        elif not COMPARISONS[op](value, bound):
            valid = figures.valid.success  # the trials the figure is over
            lines.append(f"gate {text}: {metric} = {value:.4g} ({valid.c} of {valid.n} valid trials passed)")
    lines = [*why, *lines]
    if lines:
        lines.extend(_failed_trials(run, scenario))
        lines.append(f"transcripts: {Path(run.folder) / 'trials.jsonl'}  (simlab view {one_line(run.id)})")
    return ScenarioResult(scenario, not lines, lines, inconclusive=bool(why) or undefined)


def unjudgeable(summary: Any, figures: Any) -> list[str]:
    """Why a scenario of a run (``RunSummary``, its ``ScenarioFigures`` or None) cannot be judged,
    whatever its figures: one line each; empty when it can."""
    from simlab.inert import one_line
    from simlab.report.completeness import summary_state
    from simlab.report.trouble import common_causes

    state = summary_state(summary)
    out = [f"inconclusive: {one_line(state.line)}"] if not state.judged and state.line else []
    if figures is not None and figures.errors:
        causes = common_causes(summary)
        out.append(
            f"inconclusive: {figures.errors} of {figures.n} trials ended in an infrastructure error"
            + (f" (most common causes in the run: {causes})" if causes else "")
            + "; run it again (the same run id plays them again)"
        )
    if figures is not None and figures.unjudged:
        out.append(
            f"inconclusive: {figures.unjudged} of {figures.n} trials are unjudged (a hard check did not run)"
        )
    return out


def _failed_trials(run: Any, scenario: str) -> list[str]:
    """The scenario's trials that did not pass, the first ``SHOWN`` in plan order (as every report
    names them: not in the order they were stored), each with its failing hard checks."""
    from simlab.inert import one_line
    from simlab.results.modes import plan_order
    from simlab.transcript.verdicts import passes, verdict_label

    found: list[tuple[tuple[str, int, str], list[str]]] = []
    allowed = run.summary.unjudged.allowed_kinds  # the one rule of what passed, as the figures apply it
    for record in run.transcripts():
        not_run = [c.kind for c in record.checks if c.hard and c.status == "not_run"]
        t = record.transcript
        if t.scenario_id != scenario or passes(record.verdict, not_run, allowed):
            continue
        failing = [c for c in record.checks if c.hard and c.status in ("fail", "error", "not_run")]
        ending = t.termination.reason.value
        said = [f"  {one_line(record.unit_id)} {verdict_label(record.verdict)} ({ending})"]
        said += [f"    {c.status} {one_line(c.name)}: {one_line(c.reason)}" for c in failing[:6]]
        found.append((plan_order(t.scenario_id, t.trial, record.unit_id), said))
    found.sort(key=lambda item: item[0])
    out = [line for _, said in found[:SHOWN] for line in said]
    if len(found) > SHOWN:
        out.append(f"  … and {len(found) - SHOWN} more trials that did not pass")
    return out


def evaluate(
    scenarios: str | Path | Sequence[str | Path],
    *,
    agent: Any,
    trials: int | None = None,
    gates: Sequence[str] = DEFAULT_GATES,
    project: str | Path = ".",
    run_id: str | None = None,
    **run_options: Any,
) -> Any:
    """Run ``scenarios`` against ``agent`` (as ``simlab.run``) and assert that every scenario holds
    ``gates``; the AssertionError names the failing gates, checks and trials. Returns the ``Run``."""
    import simlab

    paths = [scenarios] if isinstance(scenarios, (str, Path)) else list(scenarios)
    run = simlab.run(paths, agent=agent, trials=trials, project=project, run_id=run_id, **run_options)
    results = [scenario_result(run, sid, gates) for sid in run.summary.scenarios]
    if not results:  # nothing graded: nothing to judge
        results = [
            ScenarioResult(
                ", ".join(map(str, paths)),
                False,
                unjudgeable(run.summary, None) + [f"no graded trial in {run.folder}"],
                True,
            )
        ]
    failed = [r for r in results if not r.passed]
    if any(r.inconclusive for r in failed):  # could not judge: whatever the figures
        raise InconclusiveError("\n".join(r.message() for r in failed))
    if failed:
        raise AssertionError("\n".join(r.message() for r in failed))
    return run
