"""One scenario draft of ``simlab generate``: the model's answer (``DraftAnswer``), the scenario and
persona files it becomes, and the shape two scenarios are compared by (near-duplicates).

Why these rules:
- The model writes the conversation's side (goal, facts, phrases, persona) and the expected
  actions; it never writes an expected state. ``expect.state`` is not a field of the answer (a
  model that writes one is ignored): the state grader replays ``expect.expected_actions`` on the
  initial state, so the expected end state is the oracle run's, never the model's.
- Two scenarios are near-duplicates when their expected actions are the same sequence of tools
  with the same argument *keys* (values aside: the same flow on another order is no new test) and
  their goals share most words: the goals' content words (identifiers and numbers read as one
  word ``#``, common words left out) overlap by ``GOAL_OVERLAP`` or more (Jaccard).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "GOAL_OVERLAP",
    "ActionDraft",
    "DraftAnswer",
    "PersonaDraft",
    "Shape",
    "draft_yaml",
    "near_duplicate",
    "persona_data",
    "scenario_data",
    "shape_of",
    "slug",
]

GOAL_OVERLAP = 0.5
GENERATED_TAG = "generated"
_STOP = frozenset(
    "a an and are as at be by for from get got have i if in is it its me my of on or so that the "
    "their them then they this to was we with you your".split()
)


def slug(text: str) -> str:
    """``text`` as a spec id (``specs/base.SPEC_ID``): lower case, other characters as ``-``."""
    return re.sub(r"[^a-z0-9_.]+", "-", text.strip().casefold()).strip("-._") or "draft"


class PersonaDraft(BaseModel):
    """A new persona the model proposes (``specs/persona.Persona``'s fields)."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    description: str = Field(min_length=1)
    traits: list[str] = Field(default_factory=list)
    speaking_style: str = ""
    behaviours: list[str] = Field(default_factory=list)


class ActionDraft(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class DraftAnswer(BaseModel):
    """The model's answer for one draft. Unknown keys (an expected state included) are ignored."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    persona: str | PersonaDraft
    goal: str = Field(min_length=1)
    opening: str | None = None
    known_facts: dict[str, Any] = Field(default_factory=dict)
    never_reveal: dict[str, Any] = Field(default_factory=dict)
    success_phrases: list[str] = Field(default_factory=list)
    give_up_phrases: list[str] = Field(default_factory=list)
    agent_context: dict[str, Any] = Field(default_factory=dict)
    initial_state: dict[str, Any] = Field(default_factory=dict)
    expected_actions: list[ActionDraft] = Field(min_length=1)
    forbidden: list[str | dict[str, Any]] = Field(default_factory=list)
    rules: list[dict[str, Any]] = Field(default_factory=list)
    max_turns: int = Field(10, ge=2, le=50)

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        return slug(value)


def persona_id(answer: DraftAnswer) -> str:
    return answer.persona if isinstance(answer.persona, str) else slug(answer.persona.id)


def persona_data(answer: DraftAnswer) -> dict[str, Any] | None:
    """The persona file's mapping of a new persona; None when the draft reuses one by id."""
    if isinstance(answer.persona, str):
        return None
    data = answer.persona.model_dump()
    data["id"] = slug(data["id"])
    return {k: v for k, v in data.items() if v not in ("", [])}


def scenario_data(answer: DraftAnswer, domain: str) -> dict[str, Any]:
    """The scenario file's mapping: no ``expect.state`` (the oracle replay is the expected state)."""
    user: dict[str, Any] = {
        "goal": answer.goal,
        "opening": answer.opening,
        "known_facts": answer.known_facts,
        "never_reveal": answer.never_reveal,
        "success_phrases": answer.success_phrases,
        "give_up_phrases": answer.give_up_phrases,
    }
    expect: dict[str, Any] = {
        "expected_actions": [a.model_dump() for a in answer.expected_actions],
        "forbidden": answer.forbidden,
        "rules": answer.rules,
    }
    data: dict[str, Any] = {
        "id": answer.id,
        "title": answer.title,
        "description": answer.description,
        "tags": list(dict.fromkeys([*answer.tags, GENERATED_TAG])),
        "domain": domain,
        "persona": persona_id(answer),
        "user": _filled(user),
        "agent_context": answer.agent_context,
        "initial_state": answer.initial_state,
        "max_turns": answer.max_turns,
        "expect": _filled(expect),
    }
    return _filled(data)


def _filled(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v not in (None, "", [], {})}


def draft_yaml(data: dict[str, Any], header: str) -> str:
    """A spec mapping as YAML, in the order given, under a comment ``header``."""
    import yaml  # PyYAML: only when a draft is written

    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None)
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return comment + body


@dataclass(frozen=True)
class Shape:
    """What a scenario is compared by: its expected actions (tools with argument keys) and goal."""

    actions: tuple[tuple[str, tuple[str, ...]], ...]
    goal: frozenset[str]


def goal_words(goal: str) -> frozenset[str]:
    words = re.findall(r"[a-z0-9@]+(?:[-.][a-z0-9@]+)*", goal.casefold())
    return frozenset("#" if any(c.isdigit() for c in w) else w for w in words if w not in _STOP)


def shape_of(actions: list[Any], goal: str) -> Shape:
    """``actions`` (anything with ``tool`` and ``args``) and ``goal`` as a ``Shape``."""
    return Shape(tuple((a.tool, tuple(sorted(a.args))) for a in actions), goal_words(goal))


def near_duplicate(a: Shape, b: Shape) -> bool:
    """The same action sequence and goals that share ``GOAL_OVERLAP`` of their words or more."""
    if a.actions != b.actions:
        return False
    union = a.goal | b.goal
    return not union or len(a.goal & b.goal) / len(union) >= GOAL_OVERLAP
