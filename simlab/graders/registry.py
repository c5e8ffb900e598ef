"""Graders by name: simlab's own and a user's, registered the same way.

A grader is a *factory* decorated with ``@grader("name")``, in the manner of inspect_ai's scorers:
called with its parameters, it returns the function that grades one trial. The decorator records
the name, and each call records the parameters, so every ``Check`` a grader returns carries both
(``Check.grader``, ``Check.grader_params``) and a re-grade knows what produced what::

    @grader("no_pii")
    def no_pii(fields: list[str]):
        def grade(ctx: GradeContext) -> list[Check]:
            ...
        return grade

The grade function takes the trial's ``GradeContext`` and returns a ``Check``, a list of them or,
for a judge, an object with ``checks`` and ``calls`` (``JudgeOutcome``); it may be async.
Deterministic graders should stay synchronous and cheap: every trial runs them
(``bench/bench_grading.py``). A grader registered with ``judge=True`` asks the judge model
(``ctx.judge``, None when none is configured: its checks are then ``not_run``). A re-grade without
``--rejudge`` keeps its stored checks instead of running it, and it is not asked about a trial
that ended in an infrastructure error. A grader that raises gives one ``error`` check that names
it, except for a permanent provider error, which stops the run as a judge's always has.

Scenarios (``expect.graders``) and suites (``graders``) add graders by ``module:function`` with
``params`` (``graders_for``); naming a built-in (``rubric``) runs it with other parameters.
Built-ins are registered by their own modules, which are imported when first asked for
(``BUILTINS``): ``simlab validate`` imports no judge unless a scenario names one.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from simlab.graders.base import GradeContext
from simlab.imports import RefError, load_callable
from simlab.specs.base import CheckKind
from simlab.specs.expect import GRADER_NAME, GraderUse
from simlab.specs.loader import Loaded
from simlab.specs.scenario import Scenario
from simlab.specs.yamlio import line_for
from simlab.transcript.checks import Check

__all__ = [
    "BUILTINS",
    "Check",
    "GradeContext",
    "Grader",
    "GraderError",
    "GraderInfo",
    "GraderSet",
    "grader",
    "graders_for",
    "registered",
    "resolve",
    "use_problems",
]

# name → the module whose @grader registers it; the order in which they run
BUILTINS: dict[str, str] = {
    "state": "simlab.graders.state",
    "trajectory": "simlab.graders.trajectory",
    "policy": "simlab.graders.policy",
    "agent_says_not": "simlab.graders.says",
    "efficiency": "simlab.graders.efficiency",
    "drift": "simlab.graders.drift",
    "first_tool_call": "simlab.graders.single_step",
    "graph": "simlab.graders.graph",
    "rubric": "simlab.graders.judge",
    "groundedness": "simlab.graders.groundedness",
    "drift_llm": "simlab.graders.drift_judge",
    "response_match": "simlab.graders.rouge",
}
_REGISTRY: dict[str, GraderInfo] = {}
ToolRefs = Callable[[dict[str, Any]], list[tuple[tuple[Any, ...], str]]]


class GraderError(ValueError):
    """A grader cannot be used as named: one line to show. ``field`` is the part of the entry at
    fault: ``use`` (it does not import, or is no grader) or ``params`` (they do not fit)."""

    def __init__(self, message: str, field: str = "use"):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class GraderInfo:
    """What ``@grader`` records of a factory."""

    name: str
    factory: Callable[..., Grader]  # the decorated factory: called with the parameters, it binds them
    judge: bool
    kind: CheckKind  # of the error check it gives when it raises
    ref: str  # module:qualname of the factory
    tools: ToolRefs | None = None  # params -> [(where in params, tool name)]: checked against the domain

    @property
    def builtin(self) -> bool:
        return BUILTINS.get(self.name) == self.factory.__module__


def grader(
    name: str | Callable[..., Any] | None = None,
    *,
    judge: bool = False,
    kind: CheckKind = "custom",
    tools: ToolRefs | None = None,
) -> Any:
    """Register a grader factory under ``name`` (default: the function's name); ``@grader`` alone works
    too. ``judge=True``: it asks the judge model (see the module's docstring). ``kind``: the kind of the
    error check it gives when it raises (its own checks say their kind). ``tools(params)``: the tool
    names its parameters expect the agent to call, as ``[(path in params, name)]``; ``simlab
    validate`` checks them against the scenario's domain."""
    if callable(name):
        return grader()(name)

    def register(factory: Callable[..., Any]) -> Callable[..., Grader]:
        key = name or factory.__name__
        ref = f"{factory.__module__}:{factory.__qualname__}"
        if not GRADER_NAME.match(key):
            raise GraderError(f"{ref}: grader name {key!r}: use letters, digits, '_', '.' or '-'")
        if key in BUILTINS and BUILTINS[key] != factory.__module__:
            raise GraderError(
                f"{ref}: {key!r} is the name of a built-in grader; give yours another, "
                f'e.g. @grader("my_{key}")'
            )
        signature = _signature(factory)

        @functools.wraps(factory)
        def make(*args: Any, **kwargs: Any) -> Grader:
            try:
                unknown = [k for k in kwargs if k not in signature.parameters]
                if unknown and not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
                    raise TypeError(f"no parameter {', '.join(map(repr, unknown))}")
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise GraderError(f"grader {key!r} takes {signature}: {exc}", "params") from None
            fn = factory(*args, **kwargs)
            if not callable(fn):
                raise GraderError(
                    f"grader {key!r}: {ref} returned {type(fn).__name__}; a grader factory returns "
                    "the function that grades a trial (see @grader)"
                )
            return Grader(info, _json_safe(bound.arguments), fn)

        info = GraderInfo(key, make, judge, kind, ref, tools)
        make.grader_info = info  # type: ignore[attr-defined]
        _REGISTRY[key] = info  # a module loaded again registers again: the newest wins
        return make

    return register


def _signature(factory: Callable[..., Any]) -> inspect.Signature:
    """The factory's parameters, shown as written (``list[str]``, not ``'list[str]'``)."""
    try:
        signature = inspect.signature(factory, eval_str=True)
    except Exception:  # an annotation that does not evaluate: shown as text
        signature = inspect.signature(factory)
    return signature.replace(return_annotation=inspect.Signature.empty)


def registered(name: str) -> GraderInfo | None:
    """The grader registered under ``name``; a built-in's module is imported to register it."""
    if name in BUILTINS and name not in _REGISTRY:
        importlib.import_module(BUILTINS[name])
    return _REGISTRY.get(name)


def _json_safe(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters as stored with each check: JSON data (anything else as its repr)."""
    return json.loads(json.dumps(dict(params), default=repr)) if params else {}


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _stops_the_run(exc: Exception) -> bool:
    """A permanent provider error (bad key, unknown model) is no trial's fault: it stops the run.
    ``simlab.llm`` is looked up, not imported: an error of it can only come from a loaded module."""
    types = sys.modules.get("simlab.llm.types")
    return types is not None and isinstance(exc, types.ModelError) and exc.kind.permanent


class Grader:
    """A grader bound to its parameters: runs its grade function and stamps what it returns."""

    __slots__ = ("fn", "info", "is_async", "judge", "name", "params")

    def __init__(self, info: GraderInfo, params: dict[str, Any], fn: Callable[..., Any]):
        self.info, self.name, self.params, self.fn, self.judge = info, info.name, params, fn, info.judge
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)

    def __repr__(self) -> str:
        return f"Grader({self.name!r}, {self.params!r})"

    def run(self, ctx: GradeContext) -> list[Check]:
        """The checks of a synchronous grader."""
        try:
            result = self.fn(ctx)
        except Exception as exc:  # user code, or a bug in ours: an error check names it
            if _stops_the_run(exc):
                raise
            return [self._error(f"raised {type(exc).__name__}: {exc}")]
        return self._stamp(result)

    async def arun(self, ctx: GradeContext) -> tuple[list[Check], list[Any]]:
        """The checks of any grader, with the model calls it made (``ModelCall`` events)."""
        try:
            result = self.fn(ctx)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # as in run
            if _stops_the_run(exc):
                raise
            return [self._error(f"raised {type(exc).__name__}: {exc}")], []
        calls: list[Any] = []
        if not isinstance(result, (Check, list, tuple)) and hasattr(result, "checks"):
            calls, result = list(getattr(result, "calls", None) or []), result.checks
        return self._stamp(result), calls

    def _stamp(self, result: Any) -> list[Check]:
        checks: list[Any]
        if type(result) is list:
            checks = result
        elif isinstance(result, Check):
            checks = [result]
        elif result is None:
            checks = []
        elif isinstance(result, Iterable) and not isinstance(result, (str, bytes, dict)):
            checks = list(result)
        else:
            checks = [result]
        name, params = self.name, self.params
        for check in checks:
            if not isinstance(check, Check):
                return [
                    self._error(
                        f"returned {type(check).__name__}; return a Check, a list of Checks, or an "
                        "object with checks and calls"
                    )
                ]
            # what pydantic's __setattr__ does for a plain field, without its dispatch: every check of
            # every trial passes here, and two setattr calls a check cost 2 % of grading's CPU
            fields = check.__dict__
            fields["grader"], fields["grader_params"] = name, params
            given = check.__pydantic_fields_set__
            given.add("grader")
            given.add("grader_params")
        return checks

    def _error(self, why: str) -> Check:
        return Check(
            name=f"grader:{self.name}",
            kind=self.info.kind,
            status="error",
            hard=True,
            reason=_one_line(f"grader {self.name} ({self.info.ref}) {why}"),
            grader=self.name,
            grader_params=self.params,
        )


def resolve(use: GraderUse) -> Grader:
    """The grader an entry names, bound to its parameters; ``GraderError`` if it cannot be."""
    if ":" not in use.use:
        info = registered(use.use) if use.use in BUILTINS else None
        if info is None:
            raise GraderError(
                f"unknown grader {use.use!r}: name a built-in ({', '.join(BUILTINS)}) or a @grader "
                "factory as module:function (e.g. mypkg.checks:no_pii)"
            )
        factory: Any = info.factory
    else:
        try:
            factory = load_callable(use.use, example="mypkg.checks:no_pii")
        except RefError as exc:
            raise GraderError(str(exc)) from None
        if not isinstance(getattr(factory, "grader_info", None), GraderInfo):
            raise GraderError(
                f"{use.use} is not a grader: decorate its factory with @grader (from simlab import "
                "grader), a function that takes the parameters and returns the function that grades"
            )
    try:
        return factory(**use.params)
    except GraderError:
        raise
    except Exception as exc:  # the user's factory refused its parameters: one line
        raise GraderError(
            f"grader {use.use}: its factory raised {type(exc).__name__}: {_one_line(str(exc))}", "params"
        ) from None


@dataclass
class GraderSet:
    """The graders one scenario runs, bound to their parameters, in the order they run."""

    graders: list[Grader]
    now: list[Grader] = field(default_factory=list)  # synchronous, no judge: the cheap part
    later: list[Grader] = field(default_factory=list)  # async, no judge
    judges: list[Grader] = field(default_factory=list)

    def __post_init__(self) -> None:
        for g in self.graders:
            (self.judges if g.judge else self.later if g.is_async else self.now).append(g)

    @property
    def judge_names(self) -> frozenset[str]:
        return frozenset(g.name for g in self.judges)

    @property
    def may_wait(self) -> bool:
        """Whether grading may wait on something other than a judge: a user's async grader might.
        (simlab's own judges never wait without a judge model.)"""
        return any(g.is_async and not g.info.builtin for g in self.graders)


def graders_for(scenario: Scenario, extra: Sequence[GraderUse] = ()) -> GraderSet:
    """The built-in graders, then those a suite adds (``extra``), then the scenario's own. An entry
    for a built-in replaces its defaults; a scenario's entry for a grader the suite names wins."""
    chosen: dict[str, Grader] = {}
    for name, module in BUILTINS.items():
        info = registered(name)
        if info is None:
            raise RuntimeError(f"{module} registers no grader {name!r}")
        chosen[name] = info.factory()
    for uses in (extra, scenario.expect.graders):
        named: set[str] = set()
        for use in uses:
            g = resolve(use)
            if g.name in named:
                raise GraderError(
                    f"grader {g.name!r} is named twice; a grader runs once per trial: give one entry "
                    "all its parameters"
                )
            held = chosen.get(g.name)
            if held is not None and held.info.ref != g.info.ref:
                raise GraderError(
                    f"two graders are named {g.name!r}: {held.info.ref} and {g.info.ref}; register "
                    "one under another name"
                )
            named.add(g.name)
            chosen[g.name] = g
    return GraderSet(list(chosen.values()))


def use_problems(entry: Loaded, prefix: tuple[str, ...]) -> list[str]:
    """``file:line: field: problem`` for each grader entry of a loaded scenario (``expect.graders``)
    or suite (``graders``) that does not import, is no grader, or does not take its ``params``."""
    spec: Any = entry.spec
    for part in prefix:
        spec = getattr(spec, part, None)
    problems: list[str] = []
    seen: dict[str, int] = {}
    for i, use in enumerate(spec or []):
        try:
            g = resolve(use)
        except GraderError as exc:
            loc = (*prefix, i, exc.field)
            problems.append(
                f"{entry.path}:{line_for(entry.lines, loc) or 1}: {'.'.join(map(str, loc))}: {exc}"
            )
            continue
        if g.name in seen:
            loc = (*prefix, i, "use")
            problems.append(
                f"{entry.path}:{line_for(entry.lines, loc) or 1}: {'.'.join(map(str, loc))}: grader "
                f"{g.name!r} is named twice (also entry {seen[g.name]}); a grader runs once per trial: "
                "give one entry all its parameters"
            )
        seen.setdefault(g.name, i)
    return problems
