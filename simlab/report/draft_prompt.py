"""What ``simlab generate`` asks the model for one draft: the domain (its tools with their JSON
schemas, its policy, its seed data), the personas it may reuse, the scenarios that exist already
(to stay away from), the gaps coverage reports (``--target uncovered``) and the seed scenarios'
files. Everything read from the project is fenced as data (``judge_prompt.delimit``: text inside
cannot close its fence, its tags defused and the nonce masked); the instructions and the answer's
shape live in the system message. Each listed piece (a persona's id, description and traits, a
scenario's line, a gap) is one inert line (``inert.one_line``) of bounded length, so no text can
add lines of its own; the policy and each example are bounded, and an example's ``never_reveal``
values (the persona's secrets) are sent as ``HIDDEN``, their names kept.

A repair round (``Repair``) adds the model's previous answer (its own turn) and what simlab found
wrong with it, fenced as data too and bounded: at most ``MAX_PROBLEMS`` problems of at most
``PROBLEM_CHARS`` characters each, one line each, and an answer of at most ``ANSWER_CHARS``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from simlab.env.domain import Domain
from simlab.graders.judge_prompt import data_rules, delimit
from simlab.inert import one_line
from simlab.llm.types import Message

__all__ = [
    "ANSWER_CHARS",
    "EXAMPLE_CHARS",
    "FIELD_CHARS",
    "HIDDEN",
    "LINE_CHARS",
    "MAX_PROBLEMS",
    "PROBLEM_CHARS",
    "DraftContext",
    "Repair",
    "draft_messages",
    "example_text",
]

MAX_PROBLEMS = 8
PROBLEM_CHARS = 400
ANSWER_CHARS = 12_000
FIELD_CHARS = 300  # a persona's id, description or trait
LINE_CHARS = 600  # a listed line: a persona, a scenario, a gap
MAX_TRAITS = 12
POLICY_CHARS = 20_000
EXAMPLE_CHARS = 8_000
HIDDEN = "(hidden)"  # what an example's never_reveal value is sent as

ANSWER_SHAPE = """{
  "id": "short-kebab-case-id",
  "title": "one line",
  "description": "what the scenario tests, in two sentences",
  "tags": ["refund"],
  "persona": "an existing persona id, or a new one: {\\"id\\": …, \\"description\\": …, \\"traits\\": […], \
\\"speaking_style\\": …, \\"behaviours\\": […]}",
  "goal": "the customer's hidden goal, in their words",
  "opening": "the customer's first message",
  "known_facts": {"order_id": "…"},
  "never_reveal": {"card_number": "…"},
  "success_phrases": ["a regular expression the agent's reply matches once the goal is met"],
  "give_up_phrases": [],
  "agent_context": {"signed_in_customer": "…"},
  "initial_state": {},
  "expected_actions": [{"tool": "a tool name", "args": {"argument": "value"}}],
  "forbidden": ["a WRITE tool the agent must not call here"],
  "rules": [{"before": ["a READ tool", "a WRITE tool"]}],
  "max_turns": 10
}"""

SYSTEM = """You write test scenarios for a customer-support agent that acts only through tools. In a \
scenario, a simulated customer with a hidden goal talks to the agent; the scenario says which tool \
calls the agent should make (expected_actions) and what it must not do.

{rules}

The domain, its personas, the scenarios that exist already, what the suite leaves untested and example \
scenarios are given as data. Write ONE new scenario that tests something the existing ones do not.

A scenario must be solvable, or it is thrown away:
- every argument value of an expected action is known to the customer (known_facts or opening), \
given in agent_context, or readable through a READ tool from the data;
- never_reveal holds what the customer must never say: no expected action may need it;
- the expected actions, run in order on the seed data (with initial_state merged over it), succeed;
- do not write the expected end state: simlab computes it by replaying the expected actions;
- success_phrases are regular expressions matched against the agent's reply; use only words and \
values the agent can know;
- forbidden names WRITE tools (or {{"tool": …, "args": {{…}}}}) the right outcome never calls; rules \
are simlab policy rules: before, after_confirmation, max_calls, limit, forbid_args, owner.

Reply with only a JSON object of this shape, no other text:
{shape}"""


@dataclass
class DraftContext:
    """What every draft's prompt shows: the same for the N drafts of one ``simlab generate``."""

    domain: Domain
    personas: dict[str, Any]  # id → Persona
    existing: list[str]  # one line per scenario: id, goal, expected actions
    gaps: list[str] = field(default_factory=list)  # --target uncovered: what coverage reports missing
    seeds: list[tuple[str, str]] = field(default_factory=list)  # (file, example_text)

    def nonce(self) -> str:
        key = json.dumps([self.domain.name, sorted(self.personas), self.existing, self.seeds])
        return hashlib.sha256(f"simlab-generate/{key}".encode()).hexdigest()[:16]


def _line(text: Any, limit: int = LINE_CHARS) -> str:
    """``text`` as one inert line of at most ``limit`` characters."""
    return _bounded(one_line(text), limit)


def _domain_text(domain: Domain) -> str:
    tools = [{"name": t.name, "access": t.access.value, **t.json_schema()["function"]} for t in domain.tools]
    state = domain.build_state({}).model_dump(mode="json")
    return (
        f"domain: {_line(domain.name, FIELD_CHARS)}\n\ntools (JSON schemas):\n{json.dumps(tools, indent=1)}"
        f"\n\npolicy:\n{_bounded(str(domain.policy), POLICY_CHARS)}\n\n"
        f"seed data:\n{json.dumps(state, indent=1, ensure_ascii=False)}"
    )


def _persona_line(pid: str, persona: Any) -> str:
    traits = [_line(t, FIELD_CHARS) for t in persona.traits[:MAX_TRAITS]]
    if len(persona.traits) > MAX_TRAITS:
        traits.append(f"and {len(persona.traits) - MAX_TRAITS} more")
    description = _line(persona.description, FIELD_CHARS)
    return _line(f"- {_line(pid, FIELD_CHARS)}: {description} (traits: {', '.join(traits) or 'none'})")


def _personas_text(personas: dict[str, Any]) -> str:
    lines = [_persona_line(pid, p) for pid, p in personas.items()]
    return "\n".join(lines) or "(none: propose a new persona)"


def _hidden(value: Any) -> Any:
    """An example's data with every ``never_reveal`` value replaced by ``HIDDEN``: its names kept
    (the mapping's keys), a value listed alone (the name is the value) replaced whole."""
    if isinstance(value, list):
        return [_hidden(v) for v in value]
    if not isinstance(value, Mapping):
        return value
    shown: dict[Any, Any] = {}
    for key, item in value.items():
        if key != "never_reveal":
            shown[key] = _hidden(item)
        elif isinstance(item, Mapping):
            shown[key] = dict.fromkeys(item, HIDDEN)
        elif isinstance(item, list):
            shown[key] = [dict.fromkeys(v, HIDDEN) if isinstance(v, Mapping) else HIDDEN for v in item]
        else:
            shown[key] = HIDDEN
    return shown


def example_text(data: Any) -> str:
    """An example scenario (its parsed YAML) as the model reads it: ``never_reveal`` values hidden,
    comments gone (read only from the data), at most ``EXAMPLE_CHARS`` characters."""
    text = yaml.safe_dump(_hidden(data), sort_keys=False, allow_unicode=True, width=100)
    return _bounded(text.rstrip("\n"), EXAMPLE_CHARS)


@dataclass
class Repair:
    """What the next round of a draft is told: its previous answer and why it failed."""

    answer: str  # the previous answer, as JSON
    stage: str  # the step it failed (report/draft_summary.STAGES)
    problems: list[str]  # what that step found, each one line
    round: int  # the round asked for (2…)
    rounds: int  # rounds at most


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def problems_text(problems: list[str]) -> str:
    """The problems as the model reads them: one line each, ``MAX_PROBLEMS`` at most, each cut."""
    shown = [f"- {_bounded(one_line(p), PROBLEM_CHARS)}" for p in problems[:MAX_PROBLEMS]]
    if len(problems) > MAX_PROBLEMS:
        shown.append(f"- (and {len(problems) - MAX_PROBLEMS} more)")
    return "\n".join(shown)


def _repair(repair: Repair, number: int, total: int, nonce: str) -> list[Message]:
    told = (
        f"simlab rejected that draft at its {repair.stage} step. What it found:\n"
        f"{delimit('data', problems_text(repair.problems), nonce)}\n\n"
        f"Write draft {number} of {total} again (round {repair.round} of {repair.rounds}): fix every "
        "problem above, keeping what was right, or write another scenario that has none of them. "
        "Reply with the JSON object only."
    )
    return [
        {"role": "assistant", "content": _bounded(repair.answer, ANSWER_CHARS)},
        {"role": "user", "content": told},
    ]


def draft_messages(
    context: DraftContext, number: int, total: int, earlier: list[str], repair: Repair | None = None
) -> list[Message]:
    """The messages that ask for draft ``number`` of ``total``; ``earlier``: the drafts kept so far;
    ``repair``: the previous round's answer and what failed (a repair round)."""
    nonce = context.nonce()
    system = SYSTEM.format(rules=data_rules(nonce, ("data",)), shape=ANSWER_SHAPE)
    parts = [
        f"The domain:\n{delimit('data', _domain_text(context.domain), nonce)}",
        f"Personas you may reuse by id:\n{delimit('data', _personas_text(context.personas), nonce)}",
    ]
    taken = [*context.existing, *earlier]
    if taken:
        listed = "\n".join(_line(t) for t in taken)
        parts.append(f"Scenarios that exist already (do not repeat them):\n{delimit('data', listed, nonce)}")
    if context.gaps:
        gaps = "\n".join(_line(g) for g in context.gaps)
        parts.append("What the suite leaves untested (cover one of these):\n" + delimit("data", gaps, nonce))
    for name, text in context.seeds:
        parts.append(f"An example scenario ({_line(name, FIELD_CHARS)}):\n{delimit('data', text, nonce)}")
    parts.append(f"Write draft {number} of {total}. Reply with the JSON object only.")
    asked: list[Message] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    return asked + (_repair(repair, number, total, nonce) if repair is not None else [])
