"""Tools: typed Python functions marked READ or WRITE.

A tool's first parameter receives the domain state (a pydantic model, mutated in place by WRITE
tools); the remaining parameters are what the agent supplies. Their JSON schema is derived from
the signature and the docstring (Google style ``Args:`` section); arguments are validated against
it before the tool runs.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo


class Access(str, Enum):
    READ = "read"
    WRITE = "write"


READ = Access.READ
WRITE = Access.WRITE


class ToolError(Exception):
    """Raised by a tool to refuse or fail in the domain's own terms; the agent sees the message."""


@dataclass(frozen=True)
class Tool:
    name: str
    access: Access
    func: Callable[..., Any]
    description: str
    args_model: type[BaseModel]

    def json_schema(self) -> dict[str, Any]:
        """The tool in the OpenAI function-calling format that LiteLLM passes to every provider."""
        params = self.args_model.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Arguments coerced to their declared types; raises ``ValidationError``."""
        return dict(self.args_model.model_validate(arguments))


def tool(access: Access | str, *, name: str | None = None) -> Callable[[Callable[..., Any]], Tool]:
    """Mark a function as a domain tool: ``@tool(READ)`` or ``@tool(WRITE)``."""

    def wrap(func: Callable[..., Any]) -> Tool:
        return make_tool(func, Access(access), name=name)

    return wrap


def make_tool(func: Callable[..., Any], access: Access, *, name: str | None = None) -> Tool:
    summary, arg_docs = _parse_docstring(inspect.getdoc(func) or "")
    hints = get_type_hints(func)
    params = list(inspect.signature(func).parameters.values())
    if not params:
        raise TypeError(f"tool {func.__name__}: the first parameter must receive the domain state")
    fields: dict[str, Any] = {}
    for param in params[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {func.__name__}: *args and **kwargs cannot be described to an agent")
        if param.name not in hints:
            raise TypeError(f"tool {func.__name__}: parameter {param.name!r} needs a type annotation")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            hints[param.name],
            FieldInfo(default=default, description=arg_docs.get(param.name)),
        )
    model = create_model(f"{func.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return Tool(name=name or func.__name__, access=access, func=func, description=summary, args_model=model)


_ARG_LINE = re.compile(r"^(\s*)(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (text before the first section) and one description per argument."""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    arg_indent: int | None = None
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        heading = _SECTION.match(stripped)
        if heading:
            section = "args" if heading.group(1) in ("Args", "Arguments", "Parameters") else "other"
            arg_indent, current = None, None
            continue
        if section == "summary":
            summary_lines.append(stripped)
        elif section == "args" and stripped:
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent, current = indent, match.group(2)
                args[current] = match.group(3).strip()
            elif current:
                args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(" ".join(summary_lines).split()), args


@dataclass
class ToolOutcome:
    """What happened when the agent asked for a tool."""

    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    access: Access | None
    ok: bool = False
    result: Any = None
    error: str | None = None
    invalid_reason: str | None = None  # set when the call never ran
    extra: dict[str, Any] = field(default_factory=dict)


MAX_NESTING = 100
"""Levels of lists and mappings a tool's arguments or result may have. A transcript is read back
with a JSON parser that stops at about 200 levels (the record itself takes a few), so anything
deeper could be written but never read again: it is refused when the call happens instead."""


class TooDeep(ValueError):
    """A value nested deeper than ``MAX_NESTING`` levels (or one that contains itself)."""


def nesting_problem(value: Any) -> str | None:
    """Why ``value`` cannot be recorded (too deep, or it contains itself), or None.

    Iterative (a depth past the recursion limit is what it looks for); a part shared by several
    containers is measured once."""
    height: dict[int, int] = {}  # container id -> levels of containers in it, itself included
    open_: set[int] = set()  # containers being measured: meeting one again is a cycle
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, done = stack.pop()
        children = _children(item)
        if children is None:
            continue
        key = id(item)
        if done:
            open_.discard(key)
            height[key] = 1 + max(
                (height.get(id(c), 0) for c in children if _children(c) is not None), default=0
            )
            if height[key] > MAX_NESTING:
                return f"nested more than {MAX_NESTING} levels deep"
            continue
        if key in open_:
            return "a value that contains itself"
        if key in height:
            continue
        if len(open_) >= MAX_NESTING:
            return f"nested more than {MAX_NESTING} levels deep"
        open_.add(key)
        stack.append((item, True))
        stack.extend((child, False) for child in children)
    return None


def _children(value: Any) -> list[Any] | None:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any] | None, str, str | None]:
    """(arguments, raw text, problem). Arguments are None when the text is not a JSON object, or
    when it is nested too deeply to be recorded."""
    if raw is None or raw == "":
        return {}, "", None
    if isinstance(raw, dict):
        deep = nesting_problem(raw)
        if deep is not None:
            return None, "", f"arguments are {deep}"
        return raw, json.dumps(raw, ensure_ascii=False, default=str), None
    try:
        value = json.loads(raw)
    except RecursionError:
        return None, str(raw), f"arguments are nested more than {MAX_NESTING} levels deep"
    except (json.JSONDecodeError, TypeError, ValueError) as exc:
        return None, str(raw), f"arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, raw, f"arguments must be a JSON object, got {type(value).__name__}"
    deep = nesting_problem(value)
    if deep is not None:
        return None, raw, f"arguments are {deep}"
    return value, raw, None


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)
