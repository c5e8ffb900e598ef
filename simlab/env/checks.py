"""Check scenarios against their domains: the domain imports, the state fits, the tools exist."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from simlab.env.domain import Domain, load_domain
from simlab.errors import SpecError
from simlab.specs.errors import format_validation_error
from simlab.specs.loader import Loaded, LoadedScenario
from simlab.specs.statepath import PathError, parse_path
from simlab.specs.typewalk import members, unknown_keys
from simlab.specs.yamlio import line_for

HANDOFF_PREFIX = (
    "handoff:"  # policy rules name a handoff (OpenAI Agents SDK) as the pseudo-tool handoff:<agent>
)
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


def check_against_domain(entry: Loaded) -> tuple[Domain | None, list[str]]:
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
    problems.extend(
        tool_name_problems(
            entry, domain, [(("expect", *loc), name) for loc, name in scenario.expect.tool_references()]
        )
    )
    for loc, call in scenario.expect.call_specs():
        problems.extend(_call_problems(entry, domain, ("expect", *loc), call, at))
    problems.extend(_history_problems(entry, domain, at, state_ok=not problems))
    problems.extend(_fault_problems(scenario.faults, domain, at))
    return domain, problems


def tool_name_problems(
    entry: Loaded, domain: Domain, refs: list[tuple[tuple[Any, ...], str]], what: str = "unknown tool"
) -> list[str]:
    """``file:line: field: unknown tool 'x' in domain 'd'; did you mean 'y'?`` for each tool name in
    ``refs`` (field path in the spec, name) that the domain does not have."""
    problems = []
    for loc, name in refs:
        if name.startswith(HANDOFF_PREFIX) and name[len(HANDOFF_PREFIX) :].strip():
            continue  # a handoff to an agent: agents are known only when the run builds them
        if domain.tool(name) is None:
            where = f"{entry.path}:{line_for(entry.lines, loc) or 1}: {'.'.join(map(str, loc))}"
            problems.append(
                f"{where}: {what} {name!r} in domain {domain.name!r}{suggest(name, domain.tool_names)} "
                f"(tools: {', '.join(domain.tool_names)})"
            )
    return problems


def _history_problems(entry: Loaded, domain: Domain, at: Callable[..., str], *, state_ok: bool) -> list[str]:
    """Each ``history:`` tool call must be a valid call of the domain, and (when everything else is
    sound) the calls must succeed when run in order on the initial state, as a trial runs them."""
    from simlab.env.history import HistoryError, start_state

    scenario, problems = entry.spec, []
    for i, item in enumerate(scenario.history):
        if item.tool is None:
            continue
        spec = domain.tool(item.tool)
        if spec is None:
            problems.append(
                f"{at('history', i, 'tool')}: unknown tool {item.tool!r} in domain {domain.name!r}"
                f"{suggest(item.tool, domain.tool_names)} (tools: {', '.join(domain.tool_names)})"
            )
            continue
        allowed = list(spec.args_model.model_fields)
        wrong = [name for name in item.args if name not in allowed]
        problems.extend(
            f"{at('history', i, 'args', name)}: tool {item.tool!r} has no argument {name!r}"
            f"{suggest(name, allowed)} (arguments: {', '.join(allowed) or 'none'})"
            for name in wrong
        )
        if not wrong:
            try:
                spec.validate(item.args)
            except ValidationError as exc:
                problems.extend(
                    format_validation_error(
                        exc,
                        str(entry.path),
                        entry.lines,
                        prefix=("history", i, "args"),
                        model=spec.args_model,
                    )
                )
    if problems or not state_ok or not scenario.history:
        return problems
    try:
        start_state(domain, scenario)
    except HistoryError as exc:
        problems.append(f"{at('history', exc.index)}: {exc.problem} (fix the call or the initial_state)")
    except ValidationError:
        pass  # reported with initial_state
    return problems


def _fault_problems(faults: list[Any], domain: Domain, at: Callable[..., str]) -> list[str]:
    """Each fault names a tool of the domain; a stale answer is a read's (a write has no old answer)."""
    problems = []
    for i, fault in enumerate(faults):
        tool = domain.tool(fault.tool)
        if tool is None:
            problems.append(
                f"{at('faults', i, 'tool')}: unknown tool {fault.tool!r} in domain {domain.name!r}"
                f"{suggest(fault.tool, domain.tool_names)} (tools: {', '.join(domain.tool_names)})"
            )
        elif fault.kind == "stale" and tool.access.value != "read":
            problems.append(
                f"{at('faults', i, 'kind')}: a stale answer needs a READ tool, and {fault.tool!r} is a "
                "WRITE tool; use kind error, timeout or override for it"
            )
    return problems


def _state_problems(entry: Loaded, domain: Domain, at: Callable[..., str]) -> list[str]:
    """``initial_state`` must fit the state model, with no key dropped silently."""
    scenario, fields = entry.spec, list(domain.state_model.model_fields)
    problems = [
        f"{at('initial_state', *loc)}: not in the state of domain {domain.name!r}{suggest(loc[-1], allowed)} "
        f"(allowed here: {', '.join(allowed)})"
        for loc, allowed in unknown_keys(domain.state_model, scenario.initial_state)
    ]
    try:
        domain.build_state(scenario.initial_state)
    except ValidationError as exc:
        problems.extend(
            format_validation_error(
                exc, str(entry.path), entry.lines, prefix=("initial_state",), model=domain.state_model
            )
        )
    for i, assertion in enumerate(scenario.expect.state):
        problem = state_path_problem(domain, assertion.path)
        if problem:
            problems.append(f"{at('expect', 'state', i, 'path')}: {problem}")
    for i, rule in enumerate(scenario.expect.rules):
        for key, owner_path in (rule.owner or {}).items():
            if key not in ("principal", "principal_from") and not _ARG_ONLY.match(owner_path.strip()):
                problem = state_path_problem(domain, _PLACEHOLDER.sub("*", owner_path))
                if problem:
                    problems.append(f"{at('expect', 'rules', i, 'owner', key)}: {problem}")
    for i, ignored in enumerate(scenario.expect.ignore_paths):
        head = _PATH_HEAD.match(ignored)
        if head and head.group(1) not in fields:
            problems.append(
                f"{at('expect', 'ignore_paths', i)}: {head.group(1)!r} is not in the state of domain "
                f"{domain.name!r}{suggest(head.group(1), fields)} (fields: {', '.join(fields)})"
            )
    return problems


_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}")
_ARG_ONLY = re.compile(r"^\{[A-Za-z_]\w*\}$")


def state_path_notes(domain: Domain, paths: list[tuple[str, str]]) -> list[str]:
    """``where: note`` for each path that goes into a free-form mapping, where simlab cannot say
    whether a key exists (it accepts the path)."""
    notes = []
    for where, path in paths:
        stop = _walk(domain.state_model, path, domain.name)[1]
        if stop:
            notes.append(f"{where}: {path!r} {stop}; accepted unchecked")
    return notes


def state_path_problem(domain: Domain, path: str) -> str | None:
    """Why ``path`` cannot exist in the domain's state model, or None (also when a part of it is
    a free-form mapping, whose keys cannot be known: ``state_path_notes`` says so)."""
    return _walk(domain.state_model, path, domain.name)[0]


def _walk(model: Any, path: str, name: str) -> tuple[str | None, str | None]:
    """(problem, note) of ``path`` against ``model``; ``*`` stands for any key."""
    try:
        steps = parse_path(path)
    except PathError as exc:
        return str(exc), None
    tp: Any = model
    walked = ""
    for step in steps:
        options = members(tp)
        if (
            len(options) != 1
            or options[0] in (Any, object)
            or options[0] is dict
            and not get_args(options[0])
        ):
            return None, f"goes into {walked or 'the state'}, a free-form value ({_type_name(tp)})"
        tp, end = _step(options[0], step, walked, name)
        if end is not None:
            return end
        if isinstance(step, str):
            walked += f".{step}" if walked else step
        else:
            walked += f"[{step if isinstance(step, int) else step[0] + '=…'}]"
    return None, None


Walk = tuple[str | None, str | None]


def _step(tp: Any, step: Any, walked: str, name: str) -> tuple[Any, Walk | None]:
    """One step of a path into type ``tp``: (the type it reaches, None), or (tp, (problem, note))
    where the walk ends (a problem, or a part whose shape the rest depends on)."""
    origin, args = get_origin(tp), get_args(tp)
    label = walked or "the state"
    if isinstance(step, str) and step != "*":
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            fields = list(tp.model_fields)
            if step not in fields:
                where = f"{label} ({tp.__name__})" if walked else "the state"
                return tp, (
                    f"{step!r} is not in {where} of domain {name!r}{suggest(step, fields)} "
                    f"(fields: {', '.join(fields)})",
                    None,
                )
            return tp.model_fields[step].annotation, None
        if origin is dict or tp is dict:
            return (args[1] if len(args) == 2 else Any), None
        if origin in (list, tuple) or tp in (list, tuple):
            return tp, (f"{label} is a list: use [index] or [field=value], not .{step}", None)
        return tp, (f"{label} is {_type_name(tp)}: it has no part {step!r}", None)
    if step == "*":
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp, (None, None)  # any field: the rest depends on which
        if origin is dict or tp is dict:
            return (args[1] if len(args) == 2 else Any), None
        return tp, (f"{label} is {_type_name(tp)}: '*' needs a mapping", None)
    if isinstance(step, int):
        if origin not in (list, tuple) and tp not in (list, tuple):
            return tp, (f"{label} is {_type_name(tp)}, not a list: [{step}] cannot index it", None)
        return (args[0] if args else Any), None
    return _filter_step(tp, step, label)


def _filter_step(tp: Any, step: tuple[str, Any], label: str) -> tuple[Any, Walk | None]:
    """A ``[field=value]`` step: into a list's (or a mapping's) items, whose field must exist."""
    origin, args = get_origin(tp), get_args(tp)
    if not (origin in (list, tuple, dict) or tp in (list, tuple, dict)):
        return tp, (f"{label} is {_type_name(tp)}: [{step[0]}=…] needs a list or a mapping", None)
    tp = (args[-1] if origin is dict else args[0]) if args else Any
    item = members(tp)
    if len(item) == 1 and isinstance(item[0], type) and issubclass(item[0], BaseModel):
        fields = list(item[0].model_fields)
        if step[0] not in fields:
            return tp, (
                f"[{step[0]}=…]: {step[0]!r} is not a field of the items of {label}"
                f"{suggest(step[0], fields)} (fields: {', '.join(fields)})",
                None,
            )
    return tp, None


def _type_name(tp: Any) -> str:
    if tp is Any:
        return "Any"
    if isinstance(tp, type) and not get_args(tp):
        return "a " + tp.__name__ if not issubclass(tp, BaseModel) else tp.__name__
    return str(tp).replace("typing.", "")


def _call_problems(
    entry: Loaded, domain: Domain, loc: tuple[Any, ...], call: Any, at: Callable[..., str]
) -> list[str]:
    """Argument names must exist; a reference action (replayed by graders) must be complete."""
    spec = domain.tool(call.tool)
    if spec is None:
        return []  # already reported as an unknown tool
    allowed = list(spec.args_model.model_fields)
    problems = [
        f"{at(*loc, 'args', name)}: tool {call.tool!r} has no argument {name!r}{suggest(name, allowed)} "
        f"(arguments: {', '.join(allowed) or 'none'})"
        for name in call.args
        if name not in allowed
    ]
    if loc[1] == "expected_actions" and not problems:
        try:
            spec.validate(call.args)
        except ValidationError as exc:
            problems.extend(
                format_validation_error(
                    exc, str(entry.path), entry.lines, prefix=(*loc, "args"), model=spec.args_model
                )
            )
    return problems


def suggest(name: Any, options: list[str]) -> str:
    """``; did you mean 'x'?`` for the closest of ``options``, or nothing."""
    close = difflib.get_close_matches(str(name), options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
