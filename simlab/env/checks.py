"""Check scenarios against their domains: the domain imports, the state fits, the tools exist."""

from __future__ import annotations

import difflib
import re
from typing import Any, Callable

from pydantic import ValidationError

from simlab.env.domain import Domain, load_domain
from simlab.errors import SpecError
from simlab.specs.errors import format_validation_error
from simlab.specs.loader import LoadedScenario
from simlab.specs.typewalk import unknown_keys
from simlab.specs.yamlio import line_for

_PATH_HEAD = re.compile(r"^\s*([A-Za-z_][\w-]*)")


def check_scenarios(entries: list[LoadedScenario]) -> dict[str, Domain]:
    """Raise one ``SpecError`` listing every problem; return the domains by scenario id."""
    problems: list[str] = []
    domains: dict[str, Domain] = {}
    for entry in entries:
        found, errors = check_against_domain(entry)
        problems.extend(errors)
        if found is not None:
            domains[entry.spec.id] = found
    if problems:
        raise SpecError(problems)
    return domains


def check_against_domain(entry: LoadedScenario) -> tuple[Domain | None, list[str]]:
    """The domain imports, the initial state fits its model, and every tool named exists."""
    scenario, path = entry.spec, entry.path

    def at(*loc: Any) -> str:
        return f"{path}:{line_for(entry.lines, loc) or 1}: {'.'.join(map(str, loc))}"

    try:
        domain = load_domain(scenario.domain, source=f"{path}:{line_for(entry.lines, ('domain',)) or 1}")
    except SpecError as exc:
        return None, exc.problems
    except Exception as exc:  # the user's module failed while importing or building its Domain
        return None, [f"{at('domain')}: cannot load domain {scenario.domain!r}: {type(exc).__name__}: {exc}"]
    problems = _state_problems(entry, domain, at)
    for loc, name in scenario.expect.tool_references():
        if domain.tool(name) is None:
            problems.append(f"{at('expect', *loc)}: unknown tool {name!r} in domain {domain.name!r}"
                            f"{_suggest(name, domain.tool_names)} (tools: {', '.join(domain.tool_names)})")
    for loc, call in scenario.expect.call_specs():
        problems.extend(_call_problems(entry, domain, ("expect", *loc), call, at))
    return domain, problems


def _state_problems(entry: LoadedScenario, domain: Domain, at: Callable[..., str]) -> list[str]:
    """``initial_state`` must fit the state model, with no key dropped silently."""
    scenario, fields = entry.spec, list(domain.state_model.model_fields)
    problems = [
        f"{at('initial_state', *loc)}: not in the state of domain {domain.name!r}{_suggest(loc[-1], allowed)} "
        f"(allowed here: {', '.join(allowed)})"
        for loc, allowed in unknown_keys(domain.state_model, scenario.initial_state)
    ]
    try:
        domain.build_state(scenario.initial_state)
    except ValidationError as exc:
        problems.extend(format_validation_error(
            exc, str(entry.path), entry.lines, prefix=("initial_state",), model=domain.state_model
        ))
    named = [(("expect", "state", i, "path"), a.path) for i, a in enumerate(scenario.expect.state)]
    named += [(("expect", "ignore_paths", i), p) for i, p in enumerate(scenario.expect.ignore_paths)]
    for loc, state_path in named:
        head = _PATH_HEAD.match(state_path)
        if head and head.group(1) not in fields:
            problems.append(f"{at(*loc)}: {head.group(1)!r} is not in the state of domain {domain.name!r}"
                            f"{_suggest(head.group(1), fields)} (fields: {', '.join(fields)})")
    return problems


def _call_problems(
    entry: LoadedScenario, domain: Domain, loc: tuple[Any, ...], call: Any, at: Callable[..., str]
) -> list[str]:
    """Argument names must exist; a reference action (replayed by graders) must be complete."""
    spec = domain.tool(call.tool)
    if spec is None:
        return []  # already reported as an unknown tool
    allowed = list(spec.args_model.model_fields)
    problems = [
        f"{at(*loc, 'args', name)}: tool {call.tool!r} has no argument {name!r}{_suggest(name, allowed)} "
        f"(arguments: {', '.join(allowed) or 'none'})"
        for name in call.args if name not in allowed
    ]
    if loc[1] == "expected_actions" and not problems:
        try:
            spec.validate(call.args)
        except ValidationError as exc:
            problems.extend(format_validation_error(
                exc, str(entry.path), entry.lines, prefix=(*loc, "args"), model=spec.args_model
            ))
    return problems


def _suggest(name: Any, options: list[str]) -> str:
    close = difflib.get_close_matches(str(name), options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
