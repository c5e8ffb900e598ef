"""Where a value can come from in a conversation, for ``simlab lint`` (``graders/lint.py``).

A value an expected action needs is obtainable when the simulated user can say it, the agent was
told it (``agent_context``, the policy, the history), or a READ tool shows it. What a READ tool
shows is found by calling the domain's READ tools, no model involved: first with every value the
user and the agent hold, then with every value those calls answered, until nothing new turns up
(``explore``). What the user can say depends on who plays it: a scripted user says its lines, the
rule-based user its opening (or its goal's first sentence) and its known facts, a model anything
in its prompt.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from simlab.env.domain import Domain, Environment
from simlab.specs.persona import Persona
from simlab.specs.scenario import Scenario

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
TOLERANCE = 0.005  # money: a cent either way
MAX_ROUNDS = 4  # READ tools called with what the previous round answered, this many times at most
MAX_CALLS = 3000  # READ calls per start state, all rounds together
MAX_COMBOS = 400  # argument combinations per tool and round
SHORT = 80  # longer strings are searched in, never passed to a tool


@dataclass
class Pool:
    """Values one source holds: exact values, numbers, and texts a value may appear in."""

    values: set[str] = field(default_factory=set)
    numbers: set[float] = field(default_factory=set)
    texts: dict[str, None] = field(default_factory=dict)  # an ordered set

    names: set[str] = field(default_factory=set)  # keys of mappings that are no data (field names)

    def add(self, data: Any) -> None:
        for leaf, key in leaves(data):
            if isinstance(leaf, bool) or leaf is None:
                continue
            if isinstance(leaf, (int, float)):
                self.numbers.add(float(leaf))
                continue
            text = str(leaf)
            if key and not any(c.isdigit() for c in text):
                self.names.add(text)
            if text in self.texts:
                continue
            self.values.add(_norm(text))
            self.texts[text] = None
            self.numbers.update(float(n) for n in _NUMBER.findall(text))

    def arguments(self) -> list[str]:
        """Its texts worth passing to a tool: short ones, field names left out."""
        return [t for t in self.texts if len(t) <= SHORT and "\n" not in t and t not in self.names]

    def has(self, value: Any) -> bool:
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, (int, float)):
            return any(abs(float(value) - n) <= TOLERANCE for n in self.numbers)
        text = _norm(str(value))
        if not text or text in self.values:
            return True
        number = _as_number(text)
        if number is not None and self.has(number):
            return True
        inside = re.compile(rf"(?<![\w]){re.escape(text)}(?![\w])", re.IGNORECASE)
        return any(inside.search(t) for t in self.texts)


def leaves(data: Any) -> Iterator[tuple[Any, bool]]:
    """Every scalar of ``data`` and whether it is a key of a mapping (keys are included: a
    mapping may be keyed by ids)."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    if isinstance(data, dict):
        for key, value in data.items():
            yield key, True
            yield from leaves(value)
    elif isinstance(data, (list, tuple, set)):
        for value in data:
            yield from leaves(value)
    else:
        yield data, False


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _as_number(text: str) -> float | None:
    try:
        return float(text) if _NUMBER.fullmatch(text) else None
    except ValueError:
        return None


def user_pool(scenario: Scenario, persona: Persona | None, kind: str) -> Pool:
    """What the simulated user can say, by the kind of simulator that plays it."""
    from simlab.sim.simulators.rules import request_from_goal
    from simlab.sim.simulators.scripted import script_of

    user, pool = scenario.user, Pool()
    pool.add([item.user for item in scenario.history if item.user is not None])
    if kind == "scripted":
        pool.add(script_of(scenario))
        return pool
    told = {k: v for k, v in user.known_facts.items() if k not in user.never_reveal}
    pool.add(list(told.values()))
    if kind == "rules":
        pool.add(user.opening or request_from_goal(user.goal, 0))
        return pool
    pool.add([user.goal, user.opening or "", *user.script])
    if persona is not None:
        pool.add([persona.description, *persona.behaviours])
    return pool


def agent_pool(domain: Domain, scenario: Scenario) -> Pool:
    """What the agent is told without asking: its context, the policy, the history."""
    pool = Pool()
    pool.add(scenario.agent_context)
    pool.add(domain.policy)
    for item in scenario.history:
        pool.add([item.agent, item.args, item.result] if item.tool or item.agent else [])
    return pool


def secret_pool(scenario: Scenario) -> Pool:
    pool = Pool()
    pool.add(list(scenario.user.never_reveal.values()))
    return pool


class Secrets:
    """A scenario's ``never_reveal`` values, which lint names and never prints: ``name`` says which
    field holds a value, ``hide`` puts that name in place of every value a text holds (any case,
    any spacing), so no finding, whatever check wrote it, shows a secret."""

    def __init__(self, scenario: Scenario) -> None:
        self.fields: list[tuple[str, Any]] = []
        found: list[tuple[str, str]] = []
        for i, (key, value) in enumerate(scenario.user.never_reveal.items()):
            # a value given in the list form is its own key: the name must not say it either
            name = f"user.never_reveal.{key}" if key != str(value) else f"user.never_reveal item {i + 1}"
            self.fields.append((name, value))
            found += [(str(leaf), name) for leaf, is_key in leaves(value) if not is_key and _shown(leaf)]
        found.sort(key=lambda item: len(item[0]), reverse=True)  # a longer value before one inside it
        self._names = {_norm(text): name for text, name in reversed(found)}
        self._pattern = (
            re.compile("|".join(_literal(text) for text, _ in found), re.IGNORECASE) if found else None
        )

    def name(self, leaf: Any) -> str:
        """The field that holds ``leaf`` (a value of it, or inside it)."""
        for name, value in self.fields:
            pool = Pool()
            pool.add(value)
            if pool.has(leaf):
                return name
        return "user.never_reveal"

    def hide(self, text: str) -> str:
        if self._pattern is None:
            return text
        names = self._names
        return self._pattern.sub(lambda m: f"<{names.get(_norm(m.group()), 'user.never_reveal')}>", text)


def _shown(leaf: Any) -> bool:
    return not isinstance(leaf, bool) and leaf is not None and str(leaf).strip() != ""


def _literal(text: str) -> str:
    """``text`` as a pattern: any run of spaces for its spaces, no word cut at its ends."""
    words = text.split()
    body = r"\s+".join(re.escape(part) for part in words)
    start = r"(?<!\w)" if re.match(r"\w", words[0]) else ""
    end = r"(?!\w)" if re.search(r"\w$", words[-1]) else ""
    return start + body + end


def explore(
    domain: Domain,
    state: BaseModel,
    seeds: Iterable[Pool],
    queries: list[str],
    memo: dict[str, Any] | None = None,
) -> Pool:
    """What the domain's READ tools show from ``state``, starting from the values of ``seeds``
    (and ``queries``, free text a user's words give, for text arguments). ``memo`` keeps each
    call's answer (None: it failed) for the next scenario that starts from the same state."""
    memo = {} if memo is None else memo
    env: Environment | None = None  # made on the first call the memo does not answer
    shown = Pool()
    strings: list[str] = []
    numbers: list[float] = []
    for seed in seeds:
        strings += seed.arguments()
        numbers += sorted(seed.numbers)
    strings = list(dict.fromkeys(strings + [q for q in queries if q]))
    numbers = list(dict.fromkeys(numbers))
    called: set[str] = set()
    fresh: set[Any] | None = None
    schemas = {s["function"]["name"]: s for s in domain.tool_schemas()}
    for _ in range(MAX_ROUNDS):
        answers: list[Any] = []
        for spec in domain.tools:
            if spec.access.value != "read":
                continue
            for args in _combos(schemas[spec.name], strings, numbers, fresh):
                key = json.dumps([spec.name, args], sort_keys=True, default=str)
                if key in called or len(called) >= MAX_CALLS:
                    continue
                called.add(key)
                if key not in memo:
                    env = env or Environment(domain, state)
                    outcome = env.execute(spec.name, args)
                    memo[key] = outcome.result if outcome.ok else None
                if memo[key] is not None:
                    answers.append(memo[key])
        found = Pool()
        found.add(answers)
        shown.add(answers)
        held = {*strings, *numbers}
        new_strings = [t for t in found.arguments() if t not in held]
        new_numbers = [n for n in sorted(found.numbers) if n not in held]
        if not new_strings and not new_numbers:
            break
        strings += new_strings
        numbers += new_numbers
        fresh = {*new_strings, *new_numbers}
    return shown


def _combos(
    schema: dict[str, Any], strings: list[str], numbers: list[float], fresh: set[Any] | None
) -> Iterator[dict[str, Any]]:
    """Arguments for a READ tool's required parameters from the values held; after the first
    round (``fresh`` None), only combinations with a value new this round (the others were tried)."""
    params = schema["function"]["parameters"]
    names = list(params.get("required", []))
    options: list[list[Any]] = []
    for name in names:
        prop = params.get("properties", {}).get(name, {})
        choices = choices_of(prop)
        kinds = _types(prop)
        if choices:
            options.append(choices)
        elif "string" in kinds:
            options.append(strings)
        elif kinds & {"number", "integer"}:
            options.append([n for n in numbers if "number" in kinds or n == int(n)])
        elif "boolean" in kinds:
            options.append([True, False])
        else:
            return  # an object or a list: not guessed
    if not names:
        yield {}
        return
    count = 0
    for values in itertools.product(*options):
        if fresh is not None and not any(v in fresh for v in values if not isinstance(v, bool)):
            continue
        yield {
            n: (int(v) if isinstance(v, float) and "integer" in _types(params["properties"][n]) else v)
            for n, v in zip(names, values)
        }
        count += 1
        if count >= MAX_COMBOS:
            return


def _types(prop: dict[str, Any]) -> set[str]:
    found = {prop["type"]} if isinstance(prop.get("type"), str) else set(prop.get("type") or [])
    for option in prop.get("anyOf", []) + prop.get("oneOf", []):
        found |= _types(option)
    return found


def choices_of(prop: dict[str, Any]) -> list[Any]:
    """The values a parameter's schema enumerates (an enum, a Literal), or none."""
    found = list(prop.get("enum", []))
    if "const" in prop:
        found.append(prop["const"])
    for option in prop.get("anyOf", []) + prop.get("oneOf", []):
        found += choices_of(option)
    return found
