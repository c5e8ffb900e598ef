"""Persona: who the simulated user is."""

from __future__ import annotations

from pydantic import Field

from simlab.specs.base import SPEC_ID, SpecModel


class Persona(SpecModel):
    """A simulated user's character. The same persona serves many scenarios."""

    id: str = Field(pattern=SPEC_ID, description="Unique id, referenced by scenarios.")
    description: str = Field(description="Who this person is, in a sentence or two.")
    traits: list[str] = Field(default_factory=list, description="Adjectives: impatient, polite, confused…")
    speaking_style: str = Field(
        "", description="How they write: terse, formal, typos, long rambling messages…"
    )
    behaviours: list[str] = Field(
        default_factory=list,
        description="Concrete habits, e.g. 'never volunteers the order id unprompted'.",
    )
    give_up_after: int | None = Field(
        3,
        ge=1,
        description="Unhelpful agent replies in a row before this person gives up (rules simulator); null: "
        "never.",
    )
    volunteers_facts: bool = Field(
        False, description="Whether the person offers known facts before being asked (rules simulator)."
    )
