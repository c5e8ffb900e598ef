"""Verdicts and classes: what each one means, defined once and rendered from here on every surface.

A trial's **verdict** (``graders/base.verdict_of`` decides it) is one of five, never collapsed into
another. A scenario's **class** sums up its trials across k tries. Terminal, markdown, HTML, JUnit,
the step summary, the viewer and the pytest plugin take names, symbols, meanings and the "counts as
a pass" rule from here; the docs' Verdicts page (docs/concepts/verdicts.md) holds
``readme_section()`` (tests/test_verdicts_doc.py keeps the two equal: ``python -m
simlab.transcript.verdicts`` prints it). No imports from simlab: every layer may use this module.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

__all__ = [
    "CLASSES",
    "PRECEDENCE",
    "VERDICTS",
    "VERDICT_INFO",
    "ClassInfo",
    "VerdictInfo",
    "class_label",
    "counts_as_pass",
    "legend",
    "passes",
    "readme_section",
    "trial_class",
    "unjudged_text",
    "verdict_label",
]


@dataclass(frozen=True)
class VerdictInfo:
    name: str
    symbol: str
    meaning: str
    counts_as_pass: str  # "yes", "no", or when (unjudged)
    style: str  # a colour for terminals and the viewer (the eight ANSI names)

    @property
    def label(self) -> str:
        return f"{self.symbol} {self.name}"


VERDICT_INFO: dict[str, VerdictInfo] = {
    v.name: v
    for v in (
        VerdictInfo("pass", "✓", "every hard check ran and held", "yes", "bold green"),
        VerdictInfo(
            "fail",
            "✗",
            "the agent failed a hard check (outcome, actions, policy, budget, hard rubric)",
            "no",
            "bold red",
        ),
        VerdictInfo(
            "invalid",
            "!",
            "the simulated user broke its script in a way that could have caused the outcome",
            "no; left out of the valid figures",
            "bold magenta",
        ),
        VerdictInfo(
            "error",
            "⚠",
            "the trial could not be judged: infrastructure, a domain tool that crashed, or a "
            "check nobody could decide",
            "no; left out of the valid figures",
            "bold yellow",
        ),
        VerdictInfo(
            "unjudged",
            "?",
            "no hard check failed, but one did not run (no judge model, an unknown cost)",
            "only where `allow_unjudged` names the kind of every hard check that did not run",
            "bold cyan",
        ),
    )
}
VERDICTS: tuple[str, ...] = tuple(VERDICT_INFO)  # the order of summary.json's verdict counts


@dataclass(frozen=True)
class ClassInfo:
    value: str  # as stored in summary.json (``flake_class``)
    label: str
    meaning: str
    style: str


CLASSES: dict[str, ClassInfo] = {
    c.value: c
    for c in (
        ClassInfo("stable_pass", "all pass", "every valid trial passed", "green"),
        ClassInfo("flaky", "flaky", "some valid trials passed and some failed", "yellow"),
        ClassInfo("stable_fail", "all fail", "every valid trial failed", "red"),
    )
}
CLASS_NOTE = (
    "Valid trials are those that passed or failed (an unjudged trial that counts as a pass among them); "
    "invalid, error and other unjudged trials are left out. No valid trial: no class (—)."
)

PRECEDENCE: tuple[tuple[str, str, str], ...] = (
    (
        "error",
        "the trial ended in an infrastructure error (provider, simulator model, lab)",
        "nothing after it was played, and a resume plays it again",
    ),
    (
        "fail",
        "a hard check of the agent's conduct (a policy rule, a rubric item whose judge cited the agent's "
        "offending step, the groundedness of its reply) failed at an agent event before the user drifted "
        "and before a domain tool crashed",
        "what the agent did before anything else went wrong is its own, and no drift or crash hides it",
    ),
    (
        "error",
        "a domain tool crashed (an exception in the domain's own code; the check `tool_crash:TOOL` names the "
        "tool and the exception)",
        "the tool is to blame, not the agent or the user (fix the domain)",
    ),
    (
        "fail",
        "the agent crashed, hung past its turn limit or looped (termination `agent_error`, `agent_loop`, "
        "or `budget_exceeded` by `limits.max_turn_seconds`), whatever the simulated user did before",
        "no user input excuses a crash, a hang or a loop: a drift never hides the agent's own failure",
    ),
    (
        "invalid",
        "a hard drift check failed (one that came after the outcome, the user accepting what the agent had "
        "already reported done, only when no other hard check failed)",
        "the simulated user's drift could have caused the outcome",
    ),
    ("fail", "a hard check failed", "the agent's failure"),
    (
        "error",
        "a hard check could not be decided (a judge that kept answering nonsense, a predicate that raised)",
        "nobody knows whether it passed",
    ),
    ("unjudged", "a hard check did not run", "it counts as a pass only where `allow_unjudged` allows"),
    ("pass", "every hard check ran and held", ""),
)
DRIFT_NOTES: tuple[str, ...] = (
    "A simulated user that played its script through did not drift: a scripted user that stops on its last "
    "line, or whose lines run out (termination `script_ended`), is never a premature stop; nor is a "
    "replayed user (`run --replay`) that stops where its recording stopped.",
    "A user that stops right after the agent claimed the work was done (any tense, in English, Spanish, "
    "French or German: `graders/claims.py`) or refused it did not stop early: the agent ended the "
    "conversation, and the state check judges the outcome.",
    "A user that stops, gives up or asks for a human before the agent has answered once drifted, whatever "
    "the scenario expects (unless it played its script through): the agent never had a turn, so the trial is "
    "neither its pass nor its fail. A user that gives up on an agent that did answer, or quotes its words "
    "back, reacts to the agent: not drift.",
    "A drift judge's failing answer (`drift_llm:*`) is placed at the earliest user message its reason cites "
    "by `#index`, so that an agent's policy breach before it is still the agent's fail; a reason that cites "
    "no user message places the drift at the start.",
)


def counts_as_pass(
    verdict: str | None, unjudged_kinds: Collection[str] | None, allowed: Collection[str]
) -> bool:
    """Whether an unjudged trial counts as a pass: every kind of hard check that did not run is one
    the run allows to stay unjudged (``allow_unjudged``)."""
    if verdict != "unjudged" or not allowed or not unjudged_kinds:
        return False
    return set(unjudged_kinds) <= set(allowed)


def passes(
    verdict: str | None, unjudged_kinds: Collection[str] | None = (), allowed: Collection[str] = ()
) -> bool:
    """Whether a trial counts as a pass on every surface: a pass, or an unjudged trial that
    ``counts_as_pass``. Everything else (fail, invalid, error, other unjudged, not graded) did not pass."""
    return verdict == "pass" or counts_as_pass(verdict, unjudged_kinds, allowed)


def verdict_label(verdict: str | None) -> str:
    """``✓ pass``; ``· not graded`` for None; an unknown name as it is."""
    if verdict is None:
        return "· not graded"
    info = VERDICT_INFO.get(verdict)
    return info.label if info else verdict


def trial_class(passed: int, valid: int) -> str | None:
    """A scenario's class from its valid trials: all passed, all failed, or some of each; None without any."""
    if valid == 0:
        return None
    if passed == valid:
        return "stable_pass"
    return "stable_fail" if passed == 0 else "flaky"


def class_label(value: str | None, none: str = "—") -> str:
    info = CLASSES.get(value or "")
    return info.label if info else (value or none)


def unjudged_text(left: int, counted_as_pass: int) -> str:
    """An unjudged count as every surface shows it: all unjudged trials, and how many of them count
    as passes (``26 (26 as pass)``); ``0`` when none."""
    total = left + counted_as_pass
    return f"{total} ({counted_as_pass} as pass)" if counted_as_pass else str(total)


def legend() -> str:
    """One line naming every verdict with its symbol."""
    return "  ".join(v.label for v in VERDICT_INFO.values()) + "  · not graded"


def readme_section() -> str:
    """The Verdicts section of the docs (docs/concepts/verdicts.md), without its heading."""
    lines = ["| verdict | symbol | meaning | counts as a pass |", "|---|---|---|---|"]
    lines += [f"| {v.name} | {v.symbol} | {v.meaning} | {v.counts_as_pass} |" for v in VERDICT_INFO.values()]
    lines += ["", "A scenario's class, over its trials (k tries):", "", "| class | meaning |", "|---|---|"]
    lines += [f"| {c.label} | {c.meaning} |" for c in CLASSES.values()]
    lines += [
        "",
        CLASS_NOTE,
        "",
        "When more than one thing went wrong, the first rule that applies decides "
        "(`graders/base.verdict_of`):",
        "",
    ]
    lines += [
        f"{n}. **{verdict}** when {when}" + (f": {why}." if why else ".")
        for n, (verdict, when, why) in enumerate(PRECEDENCE, 1)
    ]
    lines += ["", *[f"- {note}" for note in DRIFT_NOTES]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - prints that section
    print(readme_section(), end="")
