"""Turn pydantic validation errors into lines that name file, line and field."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from simlab.specs.yamlio import LineMap, line_for


def format_validation_error(
    exc: ValidationError, source: str, lines: LineMap | None = None, prefix: tuple[Any, ...] = ()
) -> list[str]:
    problems = []
    for err in exc.errors():
        full = _clean_loc(prefix, err["loc"], lines or {})
        line = line_for(lines, full) if lines else None
        where = f"{source}:{line}" if line else source
        field = ".".join(str(p) for p in full) or "(top level)"
        problems.append(f"{where}: {field}: {_message(err)}")
    return problems


_TYPE_NAME = re.compile(r"^(str|int|float|bool|none|list\[.*\]|dict\[.*\]|tuple\[.*\]|function-\w+\[.*\]|[A-Z]\w+)$")


def _clean_loc(prefix: tuple[Any, ...], loc: tuple[Any, ...], lines: LineMap) -> tuple[Any, ...]:
    """Drop the union-member names pydantic puts into ``loc`` (e.g. 'str', 'Persona').

    A part that names a real key in the file (it has a line) is kept even if it looks like a type.
    """
    kept = list(prefix)
    for part in loc:
        if isinstance(part, str) and _TYPE_NAME.match(part) and (*kept, part) not in lines:
            continue
        kept.append(part)
    return tuple(kept)


def _message(err: dict[str, Any]) -> str:
    kind = err.get("type")
    if kind == "extra_forbidden":
        return "unknown field; check the spelling (see `simlab schema` for the allowed fields)"
    if kind == "missing":
        return "required field is missing"
    msg = str(err.get("msg", "invalid"))
    value = err.get("input")
    if kind and kind.endswith("_type") and not isinstance(value, (dict, list)):
        msg += f" (got {value!r})"
    return msg
