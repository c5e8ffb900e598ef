"""``simlab lint``: is a scenario solvable and sound, before any money is spent? No model is asked.

For one scenario already valid against its domain (``env/checks.py``), under the simulator kind
that will play its user:

- every value an expected action needs is obtainable in the conversation: the simulated user can
  say it, the agent was told it, or a READ tool shows it (``lint_values.py``); a value only the
  user's ``never_reveal`` holds is an error of its own;
- the expected actions, replayed on the domain from the initial state (the oracle run of the
  expected-state check, ``state.replay_actions``), succeed and reach every ``expect.state``
  assertion;
- success and give-up phrases can be matched by the simulator kind that plays the user, and a
  success phrase asks for nothing the agent cannot know (``lint_phrases.py``);
- expectations do not contradict each other (``lint_rules.py``): a required tool a rule forbids, a
  budget below the expected actions' count, ``max_turns`` below the script's length;
- a fixed line of the user states no identifier it was never given (a warning, as in validate).

Each finding names file, line and field, says what is wrong and how to fix it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from simlab.env.domain import Domain
from simlab.env.history import HistoryError, start_state
from simlab.graders.comparators import as_number
from simlab.graders.lint_phrases import example, matches_anything, required_text
from simlab.graders.lint_values import Pool, Secrets, agent_pool, choices_of, explore, secret_pool, user_pool
from simlab.graders.paths import MISSING, PathError
from simlab.graders.state import Replay, assertion_label, check_assertion, replay_actions
from simlab.specs.loader import LoadedScenario
from simlab.specs.yamlio import line_for

__all__ = ["KINDS", "Finding", "lint_scenario", "script_identifier_warnings"]

KINDS = ("rules", "scripted", "llm", "replay")


@dataclass(frozen=True)
class Finding:
    """One thing lint found: ``error`` (exit 2) or ``warning``; where (``file:line: field``)."""

    severity: str
    where: str
    message: str
    fix: str
    check: str = ""  # values, oracle, phrases, contradictions, script

    def text(self) -> str:
        return f"{self.where}: {self.message}; fix: {self.fix}"


@dataclass
class Lint:
    """One scenario under one simulator kind, and what is worked out once for it."""

    entry: LoadedScenario
    domain: Domain
    kind: str
    # READ answers by start state, shared by the scenarios of one lint
    memo: dict[str, Any] = field(default_factory=dict)
    found: list[Finding] = field(default_factory=list)

    @property
    def scenario(self) -> Any:
        return self.entry.spec

    def at(self, *loc: Any) -> str:
        return f"{self.entry.path}:{line_for(self.entry.lines, loc) or 1}: {'.'.join(map(str, loc))}"

    def error(self, loc: tuple[Any, ...], message: str, fix: str) -> None:
        self.found.append(Finding("error", self.at(*loc), *self._shown(message, fix)))

    def warn(self, loc: tuple[Any, ...], message: str, fix: str) -> None:
        self.found.append(Finding("warning", self.at(*loc), *self._shown(message, fix)))

    def _shown(self, message: str, fix: str) -> tuple[str, str]:
        return self.secrets.hide(message), self.secrets.hide(fix)

    @cached_property
    def secrets(self) -> Secrets:
        """The user's never_reveal values: no finding prints one (each is named by its field)."""
        return Secrets(self.scenario)

    @cached_property
    def replay(self) -> Replay:
        return replay_actions(self.domain, self.scenario, self.scenario.expect.expected_actions)

    @cached_property
    def user(self) -> Pool:
        return user_pool(self.scenario, self.entry.persona, self.kind)

    @cached_property
    def agent(self) -> Pool:
        return agent_pool(self.domain, self.scenario)

    @cached_property
    def shown(self) -> Pool:
        """What the READ tools show from the start state, given what user and agent hold."""
        scenario = self.scenario
        try:
            state = start_state(self.domain, scenario)
        except (ValueError, HistoryError):
            return Pool()  # validate reports it
        key = json.dumps(
            [
                self.domain.name,
                scenario.initial_state,
                [h.model_dump(mode="json") for h in scenario.history],
            ],
            sort_keys=True,
            default=str,
        )
        user = scenario.user
        queries = [t for t in (user.opening, *user.script, *user.known_facts.values()) if isinstance(t, str)]
        if self.kind not in ("rules", "scripted"):
            queries.append(user.goal)
        return explore(self.domain, state, [self.user, self.agent], queries, self.memo.setdefault(key, {}))

    def known(self, value: Any, before: int | None = None) -> str | None:
        """Who makes ``value`` known in the conversation ("the user", …), or None: nobody."""
        if self.user.has(value):
            return "the user"
        if self.agent.has(value):
            return "the agent's context"
        results = Pool()
        results.add(self.replay.results[:before])
        if results.has(value):
            return "an earlier expected action's result"
        if self.shown.has(value):
            return "a READ tool"
        return None


def lint_scenario(
    entry: LoadedScenario, domain: Domain, kind: str = "rules", memo: dict[str, Any] | None = None
) -> list[Finding]:
    """Every finding on one scenario played by a ``kind`` simulator (errors first, in file order)."""
    from simlab.graders.lint_rules import contradictions

    lint = Lint(entry, domain, kind, memo if memo is not None else {})
    found: list[Finding] = []
    for check, run in (
        ("values", _values),
        ("oracle", _oracle),
        ("phrases", _phrases),
        ("contradictions", contradictions),
    ):
        run(lint)
        found += [Finding(f.severity, f.where, f.message, f.fix, check) for f in lint.found]
        lint.found.clear()
    return found + script_identifier_warnings(entry)


# --- every value an expected action needs ------------------------------------------------------


def _values(lint: Lint) -> None:
    expect = lint.scenario.expect
    calls: list[tuple[tuple[Any, ...], Any, int | None]] = [
        (("expect", "expected_actions", i), a, i) for i, a in enumerate(expect.expected_actions)
    ]
    if expect.trajectory is not None:
        calls += [
            (("expect", "trajectory", "calls", i), c, None)
            for i, c in enumerate(expect.trajectory.calls)
            if not isinstance(c, str)
        ]
    secrets = secret_pool(lint.scenario)  # a value only they hold is named, never shown
    for loc, call, index in calls:
        tool = lint.domain.tool(call.tool)
        if tool is None:
            continue  # validate reports it
        props = tool.json_schema()["function"]["parameters"].get("properties", {})
        for name, value in call.args.items():
            if call.compare.get(name, "exact") != "exact":
                continue  # a loose comparison: the agent's own value passes
            prop = props.get(name, {})
            for leaf in _needed(value, prop):
                if lint.known(leaf, index) is not None:
                    continue
                where = (*loc, "args", name)
                if secrets.has(leaf):
                    lint.error(
                        where,
                        f"{call.tool} needs a value only {lint.secrets.name(leaf)} holds (not shown: "
                        "the scenario's secret): the user must never say it and no READ tool shows it",
                        "make it readable from the state (initial_state) or known to the agent "
                        "(agent_context), or move it to user.known_facts if the user may say it",
                    )
                else:
                    lint.error(
                        where,
                        f"{call.tool} needs {leaf!r}, which the agent cannot learn: {_nobody(lint)}",
                        _value_fix(lint, leaf),
                    )


SMALL = 12  # whole numbers up to this one are counts a user says in words ("two nights")


def _needed(value: Any, prop: dict[str, Any]) -> list[Any]:
    """The leaves of an argument that must come from somewhere: data, not a schema's choice, a
    default, a small count, or text the agent writes itself (words without digits: several of
    them, or one in lower case)."""
    out = []
    choices = choices_of(prop)
    for leaf in _scalars(value):
        if isinstance(leaf, bool) or leaf is None or leaf in choices or leaf == prop.get("default", MISSING):
            continue
        if isinstance(leaf, int) and 0 <= leaf <= SMALL:
            continue
        if (
            isinstance(leaf, str)
            and not any(c.isdigit() or c == "@" for c in leaf)
            and (len(leaf.split()) > 1 or (leaf.isalpha() and leaf.islower()))
        ):
            continue
        out.append(leaf)
    return out


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _scalars(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _scalars(v)]
    return [value]


def _nobody(lint: Lint) -> str:
    says = {
        "scripted": "its script's lines",
        "rules": "its opening (or its goal's first sentence) and its known_facts",
        "llm": "its goal, opening and known_facts",
        "replay": "what it said in the run replayed",
    }
    return (
        f"the {lint.kind} user says only {says.get(lint.kind, 'what it is given')}, the agent_context, "
        "policy "
        "and history do not hold it, and no READ tool shows it from the initial state"
    )


def _value_fix(lint: Lint, leaf: Any) -> str:
    llm = user_pool(lint.scenario, lint.entry.persona, "llm")
    if lint.kind in ("rules", "scripted") and llm.has(leaf):
        return f"it is only in the user's goal, which a {lint.kind} user never says: add it to " + (
            "the script" if lint.kind == "scripted" else "user.known_facts or the opening"
        )
    return (
        "add it to user.known_facts (or the opening), to the agent_context, or to the initial_state where a "
        "READ tool shows it; or correct the value"
    )


# --- the oracle run ------------------------------------------------------------------------------


def _oracle(lint: Lint) -> None:
    expect = lint.scenario.expect
    if not expect.expected_actions:
        return
    replay = lint.replay
    if replay.failed is not None:
        if replay.failed >= 0:
            action = expect.expected_actions[replay.failed]
            lint.error(
                ("expect", "expected_actions", replay.failed),
                f"replayed on the initial state, {action.tool} fails: {replay.error}",
                "correct the action's arguments or order, or the initial_state it runs on",
            )
        return
    assert replay.state is not None
    for i, assertion in enumerate(expect.state):
        try:
            met, reason, _ = check_assertion(assertion, replay.state)
        except PathError:
            continue  # validate reports it
        if not met:
            wanted = assertion_label(assertion.model_copy(update={"name": None}))
            lint.error(
                ("expect", "state", i),
                f"the expected actions, replayed, do not reach {wanted}: {reason}",
                "correct the assertion or the expected_actions",
            )


# --- phrases -------------------------------------------------------------------------------


def _phrases(lint: Lint) -> None:
    user, kind = lint.scenario.user, lint.kind
    if kind == "replay":
        return  # a recording says what it said
    if kind == "scripted":
        _scripted(lint)
        return
    if lint.scenario.max_turns < 2 and (user.success_phrases or user.give_up_phrases):
        lint.error(
            ("max_turns",),
            "the user reads the agent's first reply on turn 2, so with max_turns "
            f"{lint.scenario.max_turns} no success or give-up phrase can ever be matched",
            "raise max_turns to 2 or more",
        )
    if kind == "rules" and not user.success_phrases:
        lint.warn(
            ("user",),
            "a rules user ends with the goal reached only on a success phrase, and this "
            "scenario has none: its trials end by giving up or at the turn cap",
            "add user.success_phrases: what the agent says once the goal is met",
        )
    for i, pattern in enumerate(user.success_phrases):
        loc = ("user", "success_phrases", i)
        if matches_anything(pattern):
            lint.warn(
                loc,
                f"{pattern!r} matches any reply, so the user stops at the agent's first answer",
                "make the phrase say what the agent says once the goal is met",
            )
            continue
        _phrase_data(lint, loc, pattern)
    if kind == "llm" and user.give_up_phrases:
        lint.warn(
            ("user", "give_up_phrases"),
            "an LLM user never matches give_up_phrases (it matches only "
            "success phrases, as a backstop): the model decides when to give up",
            "say in user.goal when the user gives up, or play the scenario with the rules simulator",
        )
        return
    for i, pattern in enumerate(user.give_up_phrases):
        loc = ("user", "give_up_phrases", i)
        if matches_anything(pattern):
            lint.warn(
                loc,
                f"{pattern!r} matches any reply, so the user gives up at the agent's first answer",
                "make the phrase say what the agent says when the goal is hopeless",
            )
            continue
        sample = example(pattern)
        shadow = _first_matching(user.success_phrases, sample) if sample else None
        if sample and shadow is not None:
            lint.warn(
                loc,
                f"a reply saying {sample!r} also matches user.success_phrases.{shadow} "
                f"({user.success_phrases[shadow]!r}), which the user checks first: it stops as if the goal "
                "were met instead of giving up",
                "make the success phrase more specific, so it does not match the give-up reply",
            )


def _scripted(lint: Lint) -> None:
    from simlab.sim.simulators.scripted import script_of

    user = lint.scenario.user
    if not script_of(lint.scenario):
        lint.error(
            ("user",),
            "a scripted user has no line to say (no script, no opening): every trial ends "
            "before the agent speaks",
            "write user.script, one line per turn",
        )
    for name in ("success_phrases", "give_up_phrases"):
        if getattr(user, name):
            lint.warn(
                ("user", name),
                f"a scripted user never matches {name}: its trial ends when a script "
                "line carries a signal (###STOP###) or the script runs out",
                "end the script's last line with ###STOP### (or ###GIVE_UP###), or play the scenario with "
                "the rules or an LLM simulator",
            )


def _first_matching(patterns: list[str], text: str) -> int | None:
    from simlab.sim.simulators.phrases import first_match

    for i, pattern in enumerate(patterns):
        if first_match([pattern], text) is not None:
            return i
    return None


def _phrase_data(lint: Lint, loc: tuple[Any, ...], pattern: str) -> None:
    """A success phrase that asks the agent to say a number or an identifier it cannot know."""
    from simlab.graders.drift import identifiers

    for run in required_text(pattern):
        tokens = identifiers(run) + [t for t in run.replace(",", " ").split() if as_number(t) is not None]
        for token in dict.fromkeys(tokens):
            if lint.known(token) is None:
                sure = bool(lint.scenario.expect.expected_actions)
                (lint.error if sure else lint.warn)(
                    loc,
                    f"the phrase needs the agent to say {token!r}, which nobody in the conversation knows"
                    + (
                        ""
                        if sure
                        else " (no expected_actions to replay: a WRITE tool's answer may still say it)"
                    ),
                    "correct the phrase to what the agent can say (a value from the state, the user or the "
                    "expected actions' results)",
                )


# --- the scripted user's lines (also simlab validate's warning) ---------------------------------


def script_identifier_warnings(entry: Any) -> list[Finding]:
    """A fixed opening or script line that states an id the user was never given: the
    invented-identifier check flags it unless the agent says it first. ``entry`` may hold a
    partial scenario (``simlab validate`` checks files that do not validate yet)."""
    from simlab.graders.drift import unknown_identifiers
    from simlab.specs import UserSpec

    user = entry.spec.__dict__.get("user")
    if user is None:
        return []
    if "goal" not in user.__dict__:  # a partial spec: what the user was given is what validated
        user = UserSpec.model_construct(**{**user.__dict__, "goal": ""})
    scenario = entry.spec.model_copy(update={"user": user, "persona": entry.spec.__dict__.get("persona", "")})
    lines: list[tuple[tuple[Any, ...], str]] = [(("user", "opening"), user.opening)] if user.opening else []
    lines += [(("user", "script", i), text) for i, text in enumerate(user.script)]
    found = []
    for loc, text in lines:
        where = f"{entry.path}:{line_for(entry.lines, loc) or 1}: {'.'.join(map(str, loc))}"
        for token in unknown_identifiers(scenario, text):
            found.append(
                Finding(
                    "warning",
                    where,
                    f"states {token!r}, which is not in the user's goal, known_facts or never_reveal; "
                    "unless the agent says it first, the invented-identifier check will flag it",
                    "add it to known_facts",
                    "script",
                )
            )
    return found
