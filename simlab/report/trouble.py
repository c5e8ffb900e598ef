"""What kept a run's trials from a verdict, said in words: the terminal and markdown reports print
the same lines."""

from __future__ import annotations

from simlab.inert import one_line
from simlab.results.figures import RunSummary

_WHY_UNJUDGED = {
    "rubric": "needs a judge model (--judge)",
    "groundedness": "needs a judge model (--judge)",
    "drift": "needs a judge model (--judge)",
    "budget": "the amount was unknown (e.g. an unpriced model)",
    # issue 15: an agent service that used none of the tools simlab served it (graders/served.py)
    "state": "was not run: the agent service called none of the served tools",
    "trajectory": "was not run: the agent service called none of the served tools",
    "policy": "was not run: the agent service called none of the served tools",
}


def common_causes(summary: RunSummary, shown: int = 3) -> str:
    """The run's most common causes of infrastructure errors, each on one inert line ("2× …; 1× …";
    empty when none): the agent's or a provider's text, so never raw."""
    return "; ".join(f"{c.trials}× {one_line(c.cause)}" for c in summary.error_causes[:shown])


def trouble_lines(summary: RunSummary) -> list[str]:
    """What kept trials from a verdict, in words: infrastructure errors with their most common
    causes, checks whose grader could not decide (a judge that failed), and unjudged trials with
    what their hard checks need. The terminal and markdown reports print the same lines."""
    lines = []
    suite = summary.suite
    if suite.error_rate.c:
        causes = common_causes(summary)
        lines.append(
            f"errors: {suite.error_rate.c} trials could not be judged (infrastructure, a crashed domain "
            "tool, "
            "an undecidable check)" + (f": {causes}" if causes else "")
        )
    for c in summary.check_errors[:3]:
        hard = "hard" if c.hard else "soft"
        lines.append(
            f"check errors: {one_line(c.name)} ({c.kind}, {hard}) could not be decided in {c.count} "
            f"trials: {one_line(c.reason)}"
        )
    unjudged = summary.unjudged
    left = suite.unjudged_rate
    if unjudged.trials:
        kinds = sorted({c.kind for c in unjudged.checks})
        needs = "; ".join(f"{k} {_WHY_UNJUDGED[k]}" for k in kinds if k in _WHY_UNJUDGED)
        named = ", ".join(f"{one_line(c.name)} ×{c.trials}" for c in unjudged.checks[:4])
        if unjudged.counted_as_pass:
            allowed = ", ".join(unjudged.allowed_kinds)
            lines.append(
                f"unjudged: {unjudged.trials} trials had hard checks that did not run ({named}); "
                f"{unjudged.counted_as_pass} of them count as passes because allow_unjudged names "
                f"[{allowed}]" + (f" — {needs}" if needs else "")
            )
        if left.c:
            lines.append(
                f"unjudged: {left.c} trials have no verdict: hard checks did not run ({named})"
                + (f" — {needs}" if needs else "")
                + "; they are not counted as passes"
            )
    return lines
