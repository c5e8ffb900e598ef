"""Domains (state model + tools + policy) and the per-trial environment that runs them."""

from __future__ import annotations

import contextvars
import copy
import datetime
import decimal
import enum
import importlib
import marshal
import os
import queue
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from simlab.env.faults import FaultHit, FaultPlan
from simlab.env.tools import (
    Access,
    Tool,
    ToolError,
    ToolOutcome,
    describe_validation_error,
    nesting_problem,
    parse_arguments,
)
from simlab.errors import SpecError
from simlab.imports import offline_price_map
from simlab.specs.faults import DEFAULT_ERROR, ToolFault

BUILTIN_DOMAINS = {"retail": "simlab.domains.retail"}


@dataclass
class Domain:
    """The world an agent acts on.

    ``seed_state`` is the domain's default data (a plain dict); a scenario's ``initial_state``
    is deep-merged over it and the result validated against ``state_model``.
    """

    name: str
    state_model: type[BaseModel]
    tools: list[Tool]
    policy: str
    seed_state: dict[str, Any] = field(default_factory=dict)
    policy_version: str | None = None
    transfer_tools: tuple[str, ...] = ("transfer_to_human",)  # a successful call hands the user to a human
    tool_timeout_s: float | None = 30.0  # a tool call that takes longer is cut off (None: no limit)

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"domain {self.name}: duplicate tool names {sorted(duplicates)}")
        self._by_name = {t.name: t for t in self.tools}

    def tool(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools in the OpenAI function format; a fresh copy each time (``marshal`` copies plain
        JSON data fastest), derived once."""
        cached = self.__dict__.get("_schemas")
        if cached is None:
            schemas = [t.json_schema() for t in self.tools]
            try:
                cached = marshal.dumps(schemas)
            except ValueError:  # a default that is not plain data: derive them every time
                return schemas
            self.__dict__["_schemas"] = cached
        return marshal.loads(cached)

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def build_state(self, overrides: dict[str, Any] | None = None) -> BaseModel:
        """Seed data with overrides merged in, validated; raises ``ValidationError``."""
        data = deep_merge(copy.deepcopy(self.seed_state), copy.deepcopy(overrides or {}))
        return self.state_model.model_validate(data)


def deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Merge ``overrides`` into ``base``: nested mappings merge, everything else replaces."""
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value
    return base


def load_domain(ref: str, *, source: str = "") -> Domain:
    """A built-in name (``retail``), an importable module exposing ``DOMAIN``, or ``module:attr``.

    ``attr`` may be a ``Domain`` or a function returning one.
    """
    module_name, _, attr = (BUILTIN_DOMAINS.get(ref, ref)).partition(":")
    where = f"{source}: " if source else ""
    offline_price_map()  # a domain's module may import LiteLLM before simlab does
    try:
        module = importlib.import_module(module_name)
    except (ImportError, TypeError, ValueError) as exc:  # TypeError: a path such as ../x is no module name
        raise SpecError(
            f"{where}domain: cannot import {module_name!r} ({exc}). Use a built-in domain "
            f"({', '.join(BUILTIN_DOMAINS)}) or an importable module that defines DOMAIN."
        ) from None
    obj: Any = getattr(module, attr or "DOMAIN", None)
    if callable(obj) and not isinstance(obj, Domain):
        obj = obj()
    if not isinstance(obj, Domain):
        raise SpecError(f"{where}domain: {ref!r} does not define a simlab Domain as {attr or 'DOMAIN'}")
    return obj


class ToolTimeout(Exception):
    """A tool did not return within the domain's ``tool_timeout_s``."""


class Environment:
    """One trial's world: a private deep copy of the initial state and the tools acting on it.

    A tool runs on a copy of the state that replaces the state only when the call succeeds, so a
    refused, crashed or timed-out call leaves nothing half-done. (That per-call copy re-validates
    the state's dump, which shares any field of an arbitrary Python type with the original; the
    copy of the initial state made here never does, so nothing leaks between the trials of a
    scenario, which share one initial state.) Misbehaving tools are recorded,
    never raised: a crash, a state the model rejects, a READ tool that changed the state (the
    change is dropped) or a call over ``tool_timeout_s`` each become an error result with
    ``extra["fault"]`` naming what happened. A timed-out tool keeps running in its thread (Python
    cannot kill a thread) but only on its own discarded copy of the state.
    """

    def __init__(
        self,
        domain: Domain,
        state: BaseModel,
        *,
        validate_writes: bool = True,
        faults: Sequence[ToolFault] = (),
        seed: int = 0,
    ):
        self.domain = domain
        self.state = _copy_state(state, shares_nothing=True)
        self._validate_writes = validate_writes
        self.tool_timeout_s = domain.tool_timeout_s
        self._faults = FaultPlan(faults, seed)
        # what a stale read answers from: the trial's initial state, kept only when a fault needs it
        self._initial = (
            _copy_state(state, shares_nothing=True) if any(f.kind == "stale" for f in faults) else None
        )
        self._commit = threading.Lock()  # a write's new state replaces the state under it
        self._frozen = False  # the trial is over (``freeze``): no call changes the state any more

    def freeze(self) -> None:
        """The trial is over and its final state is read: a call still running (a sync agent's
        thread abandoned at its bound) changes nothing now, even one that was past its checks."""
        with self._commit:
            self._frozen = True

    def tool_schemas(self) -> list[dict[str, Any]]:
        """A fresh copy of the domain's tool schemas (derived once per domain: pydantic's schema
        builder costs about 0.5 ms per tool, and an LLM agent asks on every step)."""
        return self.domain.tool_schemas()

    def execute(self, name: str, raw_arguments: str | dict[str, Any] | None) -> ToolOutcome:
        """Run a tool. Never raises: unknown tools, bad arguments and tool failures become outcomes."""
        arguments, raw, problem = parse_arguments(raw_arguments)
        spec = self.domain.tool(name)
        if spec is None:
            return ToolOutcome(
                name,
                arguments,
                raw,
                None,
                error=f"unknown tool {name!r}; available: {', '.join(self.domain.tool_names)}",
                invalid_reason=f"unknown tool {name!r}",
            )
        if problem is not None:
            return ToolOutcome(name, None, raw, spec.access, error=problem, invalid_reason=problem)
        try:
            validated = spec.validate(arguments or {})
        except ValidationError as exc:
            reason = f"arguments do not match the schema: {describe_validation_error(exc)}"
            return ToolOutcome(name, arguments, raw, spec.access, error=reason, invalid_reason=reason)
        hit = self._faults.next_call(name) if self._faults else None
        if hit is not None:
            return self._inject(hit, spec, arguments, raw, validated)

        def failed(error: str, fault: str | None = None) -> ToolOutcome:
            extra = {"crash": True, "fault": fault} if fault else {}
            return ToolOutcome(name, arguments, raw, spec.access, error=error, extra=extra)

        working = _copy_state(self.state)
        data, error, fault = self._run(spec, working, validated)
        if error is not None:
            return failed(error, fault)
        if spec.access is Access.READ:
            if working != self.state:
                return failed(f"read tool {name} changed the state; the change was discarded", "read_wrote")
            return ToolOutcome(name, arguments, raw, spec.access, ok=True, result=data)
        if self._validate_writes:
            try:
                working = type(working).model_validate(working.model_dump())
            except ValidationError as exc:
                return failed(
                    f"tool left an invalid state: {describe_validation_error(exc)}", "invalid_state"
                )
        with self._commit:
            if self._frozen:
                return failed("the trial is over: this call changed nothing", None)
            self.state = working
        return ToolOutcome(name, arguments, raw, spec.access, ok=True, result=data)

    def _inject(
        self, hit: FaultHit, spec: Tool, arguments: dict[str, Any] | None, raw: str, validated: dict[str, Any]
    ) -> ToolOutcome:
        """The outcome of a call that a scenario fault hit; the trial's state is never changed.
        ``extra["injected"]`` says which fault, so the transcript records it apart."""
        fault = hit.fault
        outcome = ToolOutcome(
            spec.name,
            arguments,
            raw,
            spec.access,
            extra={"injected": {"kind": fault.kind, "fault": hit.index, "call": hit.call_number}},
        )
        if fault.kind == "error":
            outcome.error = fault.message or DEFAULT_ERROR
        elif fault.kind == "timeout":
            limit = f" within {self.tool_timeout_s:g} s" if self.tool_timeout_s is not None else ""
            outcome.error = f"tool {spec.name} did not return{limit}; it was cut off"
        elif fault.kind == "override":
            outcome.ok, outcome.result = True, recordable(fault.result)
        else:  # stale: the tool's answer on the trial's initial state (checks allow it on READ tools only)
            assert self._initial is not None
            data, error, crash = self._run(spec, _copy_state(self._initial), validated)
            if error is None:
                outcome.ok, outcome.result = True, data
            else:  # the domain's own failure, said as it is on a normal call
                outcome.error = error
                if crash:
                    outcome.extra.update(crash=True, fault=crash)
        return outcome

    def _run(
        self, spec: Tool, working: BaseModel, validated: dict[str, Any]
    ) -> tuple[Any, str | None, str | None]:
        """Call the tool on ``working``: (its recordable result, None, None), or (None, the error the
        agent reads, and the domain's fault when it misbehaved: timeout, crash, bad_result). One
        mapping for normal calls and stale reads."""
        try:
            result = call_bounded(lambda: spec.func(working, **validated), self.tool_timeout_s)
        except ToolError as exc:
            return None, str(exc) or type(exc).__name__, None
        except ToolTimeout:
            return (
                None,
                f"tool {spec.name} did not return within {self.tool_timeout_s:g} s; it was cut off",
                "timeout",
            )
        except Exception as exc:  # a bug in the domain is the tool's error, not the run's crash
            return None, f"tool crashed: {type(exc).__name__}: {exc}", "crash"
        try:
            return recordable(result), None, None
        except ValueError as exc:  # a result the transcript cannot hold is the tool's error, as a crash is
            return None, f"tool {spec.name} returned a result that cannot be recorded: {exc}", "bad_result"

    def snapshot(self) -> dict[str, Any]:
        return self.state.model_dump(mode="json")


def call_bounded(func: Callable[[], Any], timeout_s: float | None) -> Any:
    """``func()`` on a tool thread, waiting at most ``timeout_s`` (``ToolTimeout`` after that).

    Without a timeout it runs inline. Tool threads are daemons (a hung one never blocks the exit),
    reused while they behave (starting a thread per call costs ~0.3 ms) and abandoned when they
    hang. The call sees the caller's context variables.
    """
    if timeout_s is None:
        return func()
    try:
        worker = _IDLE.get_nowait()
    except queue.Empty:
        worker = _ToolThread()
    box: dict[str, Any] = {}
    done = threading.Lock()  # released by the tool thread when the call returns (cheaper than an Event)
    done.acquire()
    worker.jobs.put((contextvars.copy_context(), func, box, done))
    if not wait_for_tool(done, timeout_s):
        raise ToolTimeout
    if "error" in box:
        raise box["error"]
    return box["value"]


def wait_for_tool(done: threading.Lock, timeout_s: float) -> bool:
    """Whether the tool thread released ``done`` within ``timeout_s``. A module function so that
    tests can decide a call hangs without a wall clock (a slow machine must not time out a tool
    that merely ran slowly)."""
    return done.acquire(timeout=timeout_s)


class _ToolThread(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="simlab-tool", daemon=True)
        self.jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.start()

    def run(self) -> None:
        while True:
            context, func, box, done = self.jobs.get()
            try:
                box["value"] = context.run(func)
            except BaseException as exc:  # handed to the caller
                box["error"] = exc
            finally:
                done.release()
            _IDLE.put(self)  # back in service only once it has returned


_IDLE: queue.SimpleQueue[_ToolThread] = queue.SimpleQueue()


def _forget_threads() -> None:
    """A forked child (``--workers``) has none of its parent's threads: start its own."""
    global _IDLE
    _IDLE = queue.SimpleQueue()


os.register_at_fork(after_in_child=_forget_threads)


def _copy_state(state: BaseModel, *, shares_nothing: bool = False) -> BaseModel:
    """A private copy. Re-validating the dump is about 3× faster than ``model_copy(deep=True)``;
    a model that does not round-trip falls back to the deep copy. A dump holding objects other
    than plain data (a field of an arbitrary Python type) would share them with the original:
    with ``shares_nothing`` such a state is deep-copied instead (the copy of a trial's initial
    state, which the trials of a scenario share)."""
    dump = state.model_dump()
    if shares_nothing and not _plain(dump):
        return state.model_copy(deep=True)
    try:
        return type(state).model_validate(dump)
    except ValidationError:
        return state.model_copy(deep=True)


_ATOMS = (
    str,
    int,
    float,
    bool,
    type(None),
    bytes,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    decimal.Decimal,
    uuid.UUID,
    enum.Enum,
)


def _plain(value: Any) -> bool:
    """Only dicts, lists and immutable values, all the way down."""
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, _ATOMS)


def recordable(value: Any) -> Any:
    """``to_jsonable(value)``, or ``ValueError`` when it is nested deeper than a transcript can hold
    (``MAX_NESTING``) or contains itself: checked before converting, so no depth overflows Python's
    recursion limit."""
    deep = nesting_problem(value)
    if deep is not None:
        raise ValueError(f"it is {deep}")
    try:
        data = to_jsonable(value)
    except RecursionError:  # a pydantic model nested beyond the recursion limit
        raise ValueError("it is nested deeper than Python's recursion limit") from None
    deep = nesting_problem(data)  # a pydantic model's dump, checked again
    if deep is not None:
        raise ValueError(f"it is {deep}")
    return data


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
