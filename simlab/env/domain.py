"""Domains (state model + tools + policy) and the per-trial environment that runs them."""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from simlab.env.tools import (
    Tool,
    ToolError,
    ToolOutcome,
    describe_validation_error,
    parse_arguments,
)
from simlab.errors import SpecError

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

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"domain {self.name}: duplicate tool names {sorted(duplicates)}")
        self._by_name = {t.name: t for t in self.tools}

    def tool(self, name: str) -> Tool | None:
        return self._by_name.get(name)

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
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
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


class Environment:
    """One trial's world: a private deep copy of the initial state and the tools acting on it."""

    def __init__(self, domain: Domain, state: BaseModel, *, validate_writes: bool = True):
        self.domain = domain
        self.state = state.model_copy(deep=True)
        self._validate_writes = validate_writes

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.json_schema() for t in self.domain.tools]

    def execute(self, name: str, raw_arguments: str | dict[str, Any] | None) -> ToolOutcome:
        """Run a tool. Never raises: unknown tools, bad arguments and tool failures become outcomes."""
        arguments, raw, problem = parse_arguments(raw_arguments)
        spec = self.domain.tool(name)
        if spec is None:
            return ToolOutcome(
                name, arguments, raw, None,
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
        before = self.state.model_copy(deep=True)
        try:
            result = spec.func(self.state, **validated)
        except ToolError as exc:
            self.state = before  # a refused call leaves no half-done change behind
            return ToolOutcome(name, arguments, raw, spec.access, error=str(exc) or type(exc).__name__)
        except Exception as exc:  # a bug in the domain is the tool's error, not the run's crash
            self.state = before
            return ToolOutcome(
                name, arguments, raw, spec.access,
                error=f"tool crashed: {type(exc).__name__}: {exc}", extra={"crash": True},
            )
        if self._validate_writes:
            try:
                self.state = self.state_model_validate()
            except ValidationError as exc:
                self.state = before
                return ToolOutcome(
                    name, arguments, raw, spec.access,
                    error=f"tool left an invalid state: {describe_validation_error(exc)}", extra={"crash": True},
                )
        return ToolOutcome(name, arguments, raw, spec.access, ok=True, result=to_jsonable(result))

    def state_model_validate(self) -> BaseModel:
        return type(self.state).model_validate(self.state.model_dump())

    def snapshot(self) -> dict[str, Any]:
        return self.state.model_dump(mode="json")


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


