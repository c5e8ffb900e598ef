"""Turn pydantic validation errors into lines that name file, line and field."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from simlab.specs.typewalk import child_type, fields_of, members, pick_member
from simlab.specs.yamlio import LineMap, line_for


def format_validation_error(
    exc: ValidationError,
    source: str,
    lines: LineMap | None = None,
    prefix: tuple[Any, ...] = (),
    model: Any = None,
) -> list[str]:
    """One ``file:line: field.path: problem`` per error.

    ``model`` (the validated type) lets union-member names be told from real keys exactly and
    lets unknown fields be answered with the allowed ones; without it a name heuristic is used.
    """
    lines = lines or {}
    found = _prune_unions([_locate(err, prefix, lines, model) for err in exc.errors()])
    problems = []
    for item in found:
        line = line_for(lines, item.path) if lines else None
        where = f"{source}:{line}" if line else source
        path = ".".join(str(p) for p in item.path) or "(top level)"
        problems.append((line or 0, f"{where}: {path}: {item.message or _message(item.err, item.parent)}"))
    return list(dict.fromkeys(text for _, text in sorted(problems, key=lambda p: p[0])))


@dataclass
class _Located:
    err: Mapping[str, Any]
    path: tuple[Any, ...]
    parent: Any = None  # the type holding the last path part (for unknown-field hints)
    sites: set[tuple[tuple[Any, ...], str]] = field(default_factory=set)  # (union path, member)
    end_site: tuple[Any, ...] | None = None  # set when the error is about a member as a whole
    message: str | None = None


_TYPE_NAME = re.compile(
    r"^(str|int|float|bool|none|(list|dict|tuple|set)\[.*\]|[a-z]+(-[a-z]+)+(\[.*\])?|literal\[.*\]|[A-Z]\w+)$"
)


def _locate(err: Mapping[str, Any], prefix: tuple[Any, ...], lines: LineMap, model: Any) -> _Located:
    """Drop the union-member names pydantic puts into ``loc`` and note where they were."""
    item = _Located(err, ())
    kept, tp = list(prefix), model
    for part in err["loc"]:
        options = members(tp) if tp is not None else None
        item.end_site = None
        if options is not None and len(options) > 1:  # pydantic names the member tried here
            item.sites.add((tuple(kept), str(part)))
            item.end_site, tp = tuple(kept), pick_member(options, str(part))
            continue
        if tp is None and isinstance(part, str) and _TYPE_NAME.match(part) and (*kept, part) not in lines:
            item.sites.add((tuple(kept), part))
            item.end_site = tuple(kept)
            continue
        item.parent = options[0] if options else None
        kept.append(part)
        tp = child_type(options[0], part) if options else None
    item.path = tuple(kept)
    return item


def _is_type_error(item: _Located) -> bool:
    kind = str(item.err.get("type", ""))
    return kind.endswith("_type") or kind in ("literal_error", "enum", "is_instance_of")


def _prune_unions(items: list[_Located]) -> list[_Located]:
    """Keep the member the value was meant for; merge "fits none" into one line.

    ``persona: {id: x}`` should not also say "Input should be a valid string".
    """

    def wrong_type_at(item: _Located, site: tuple[Any, ...]) -> bool:
        return item.end_site == site and _is_type_error(item)

    fitting = {site for item in items for site, _ in item.sites if not wrong_type_at(item, site)}
    kept: list[_Located] = []
    merged: dict[tuple[Any, ...], _Located] = {}
    for item in items:
        site = item.end_site
        if site is None or not _is_type_error(item):
            kept.append(item)
        elif site not in fitting:
            first = merged.get(site)
            if first is None:
                merged[site] = item
                item.message = _expected(item.err)
                kept.append(item)
            else:
                first.message = _join_expected(first.message or "", _expected(item.err))
    for item in merged.values():
        item.message = f"Input should be {item.message}{_got(item.err.get('input'))}"
    return kept


_EXPECTED = {
    "string_type": "a string",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "list_type": "a list",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
}


def _expected(err: Mapping[str, Any]) -> str:
    kind = str(err.get("type", ""))
    return _EXPECTED.get(kind) or str(err.get("msg", "")).removeprefix("Input should be ")


def _join_expected(first: str, more: str) -> str:
    return first if more in first.split(" or ") else f"{first} or {more}"


def _message(err: Mapping[str, Any], parent: Any) -> str:
    kind = err.get("type")
    if kind == "extra_forbidden":
        return _unknown_field(str(err["loc"][-1]) if err["loc"] else "", fields_of(parent))
    if kind == "missing":
        return "required field is missing"
    if kind in ("model_type", "model_attributes_type"):
        return f"Input should be a mapping of fields{_got(err.get('input'))}"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    value = err.get("input")
    structured = isinstance(value, (dict, list)) and not str(kind).endswith("_type")
    if kind in ("value_error", "assertion_error") or structured:
        return msg
    return msg + _got(value)


def _unknown_field(name: str, allowed: list[str] | None) -> str:
    if not allowed:
        return "unknown field; check the spelling"
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown field; {hint}allowed here: {', '.join(allowed)}"


def _got(value: Any) -> str:
    if value is None:
        return " (got nothing)"
    if isinstance(value, dict):
        return " (got a mapping)"
    if isinstance(value, (list, tuple)):
        return " (got a list)"
    text = repr(value)
    return f" (got {text[:60]}…)" if len(text) > 60 else f" (got {text})"
