"""Check scenarios against their domains: the domain imports, the state fits, the tools exist."""

from __future__ import annotations

from pydantic import ValidationError

from simlab.env.domain import Domain, load_domain
from simlab.errors import SpecError
from simlab.specs.errors import format_validation_error
from simlab.specs.loader import LoadedScenario
from simlab.specs.yamlio import line_for


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
    line = lambda *loc: line_for(entry.lines, loc) or 1  # noqa: E731
    try:
        domain = load_domain(scenario.domain, source=f"{path}:{line('domain')}")
    except SpecError as exc:
        return None, exc.problems
    problems = []
    try:
        domain.build_state(scenario.initial_state)
    except ValidationError as exc:
        problems.extend(format_validation_error(exc, str(path), entry.lines, prefix=("initial_state",)))
    for loc, name in scenario.expect.tool_references():
        if domain.tool(name) is None:
            problems.append(
                f"{path}:{line('expect', *loc)}: expect.{'.'.join(map(str, loc))}: unknown tool {name!r} "
                f"in domain {domain.name!r} (tools: {', '.join(domain.tool_names)})"
            )
    return domain, problems
