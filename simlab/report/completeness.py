"""Whether a run is whole, said once: the first line of every report on a run that is not one
(terminal, markdown, HTML, JSON's ``state``, JUnit, the step summary), and whether a report of it
may exit 0.

A run is whole when its plan is known (``run.json``), every planned trial finished, no stored
trial lies outside the plan, its trials do not mix configurations or code, and it played its
suite's whole plan. A part of a suite accepted by name (``--partial-ok``) is said ("partial: 1 of
10 scenarios") but may still exit 0. Anything else is INCONCLUSIVE: the report is written, its
first line says what is missing, and ``simlab report`` exits 3: the figures stand only for the
trials that were played, not for the run.

``run_state`` takes the facts (``Completeness``, the mixed pins) and nothing else, so a new fact
(a new way of not being whole) is one more phrase here and is then shown on every surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simlab.results.figures import Completeness, RunSummary

COMPLETE = "complete"  # RunSummary.state of a whole run
SHOWN_MIXED = 3  # pin differences named in the line


@dataclass(frozen=True)
class RunState:
    """``line``: what every report's first line says (None: the run is whole); ``judged``: whether
    the report may exit 0 (False: INCONCLUSIVE, exit 3)."""

    line: str | None
    judged: bool

    @property
    def state(self) -> str:
        """``RunSummary.state``: "complete", or the line."""
        return self.line or COMPLETE


def run_state(
    done: Completeness | None,
    mixed: Sequence[str] = (),
    *,
    partial: str | None = None,
    partial_ok: bool = False,
) -> RunState:
    """The run's state from its completeness facts (``None``: a summary not built from a run
    folder, whose completeness nobody counted: unknown, so not judged), the pin differences a
    resume or merge with ``--force`` went over (``RunSummary.mixed_pins``), and the part of its
    suite the run planned (``partial``, in the one wording of that fact: "partial: 1 of 10
    scenarios"; None: the whole suite, or no suite), accepted by name or not (``partial_ok``)."""
    phrases = state_phrases(done, mixed)
    judged = not phrases
    if done is not None and partial:
        phrases.append(partial_phrase(partial, partial_ok))
        judged = judged and partial_ok
    return RunState(" · ".join(phrases) or None, judged)


def partial_phrase(partial: str, partial_ok: bool) -> str:
    """The part of its suite a run played, in words: said as it is when accepted by name, else
    with why it leaves the run unjudged."""
    return partial if partial_ok else f"{partial}, not accepted with --partial-ok"


def unaccepted_part(done: Completeness | None) -> str | None:
    """The phrase of a run that played a part of its suite not accepted with ``--partial-ok``
    (its report is then inconclusive), or None."""
    if done is None or not done.partial or done.partial_ok:
        return None
    return partial_phrase(done.partial, False)


def state_phrases(done: Completeness | None, mixed: Sequence[str] = ()) -> list[str]:
    """Each way the run falls short of its plan, in words (empty: whole); a gate lists them as its
    problems, a report joins them into its first line."""
    phrases: list[str] = []
    if done is None:
        return ["completeness unknown: this summary holds no count of planned trials"]
    if not done.manifest:
        phrases.append("completeness unknown: no run.json, so the run's plan is unknown")
    elif done.planned is None:
        phrases.append("completeness unknown: run.json names no planned trials")
    elif done.finished < done.planned:
        phrases.append(f"incomplete: {done.finished:,} of {done.planned:,} planned trials")
    elif done.finished == 0:
        phrases.append("empty: the run plans no trials")
    if done.unplanned:
        phrases.append(f"{done.unplanned:,} stored trials are not in the run's plan (left out)")
    if mixed:
        more = f" and {len(mixed) - SHOWN_MIXED} more" if len(mixed) > SHOWN_MIXED else ""
        phrases.append(
            "mixed: this run mixes configurations or code: it was resumed or merged with --force over "
            f"other pins ({'; '.join(mixed[:SHOWN_MIXED])}{more})"
        )
    return phrases


def summary_state(summary: RunSummary) -> RunState:
    """``run_state`` of a summary's own facts: the one call every surface makes."""
    done = summary.completeness
    return run_state(
        done,
        summary.mixed_pins,
        partial=done.partial if done else None,
        partial_ok=bool(done and done.partial_ok),
    )
