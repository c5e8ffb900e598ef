"""The rules file of ``simlab grade-traces``: reference-free checks for production traces, and how
to sample them.

Why an ``expect:`` block: the checks are the ones a scenario uses, so a rule written for the
offline suite is the same rule online. Checks that need a reference (``expected_actions``,
``trajectory``, ``first_tool_call``) or an environment (``state``, ``predicate``, ``owner``
rules) are accepted and reported ``not run``: an observed trial has neither.
"""

from __future__ import annotations

from pydantic import Field

from simlab.specs.base import SpecModel
from simlab.specs.expect import Expect


class Flags(SpecModel):
    """The cheap heuristics that send a trace to grading whatever the sample says."""

    error: bool = Field(True, description="The trace recorded an error, or a tool call failed.")
    loop: bool = Field(True, description="The same tool with the same arguments three times in a row.")
    long_user_turns: int | None = Field(
        20, ge=1, description="More user turns than this is a long run (null: off)."
    )
    long_tool_calls: int | None = Field(
        30, ge=1, description="More tool calls than this is a long run (null: off)."
    )
    negative_feedback: bool = Field(True, description="The user's feedback in the trace was negative.")


class Sampling(SpecModel):
    """Which traces are graded: a seeded random fraction, plus every flagged one."""

    rate: float = Field(1.0, ge=0, le=1, description="Fraction of the unflagged traces graded (0 to 1).")
    seed: int = Field(0, description="Seed of the random choice: the same seed picks the same traces.")
    flags: Flags = Field(default_factory=Flags)


class OnlineRules(SpecModel):
    """``online.yaml``: what to check on production traces and which ones."""

    domain: str | None = Field(
        None,
        description="A domain whose tools the traces call: its READ/WRITE kinds tell which calls write "
        "(no_write_after_refusal) and its policy text goes to the judges. Optional.",
    )
    expect: Expect = Field(
        default_factory=Expect, description="The checks, as in a scenario's expect: block."
    )
    sample: Sampling = Field(default_factory=Sampling)
