"""Follow a pydantic error location through the model's type annotations.

pydantic puts the name of the union member it tried into an error's ``loc`` (``'str'``,
``'CallSpec'``, ``'function-after[_one_kind(), AgentSpec]'``). Walking the annotations tells
those member names apart from real keys (an order id ``A123`` is a key, not a type) and tells
which fields a mapping allows, for "did you mean" hints.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel


def members(tp: Any) -> list[Any]:
    """The non-None members of a union (``Annotated`` stripped); ``[tp]`` for a plain type."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        found: list[Any] = []
        for arg in get_args(tp):
            if arg is not type(None):
                found.extend(members(arg))
        return found
    return [tp]


def pick_member(options: list[Any], tag: str) -> Any | None:
    """The member a pydantic union tag names, or None when it cannot be told."""
    for option in options:
        if isinstance(option, type) and issubclass(option, BaseModel):
            name = option.__name__
            if tag == name or tag.endswith(f", {name}]"):
                return option
        origin = get_origin(option)
        if origin in (list, dict) and tag.startswith(f"{origin.__name__}["):
            return option
    return None


def child_type(tp: Any, part: Any) -> Any | None:
    """The annotation one step down from a single (non-union) type, or None when unknown."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field is not None else None
    origin, args = get_origin(tp), get_args(tp)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin in (list, tuple, set, frozenset) and args and isinstance(part, int):
        return args[0]
    return None


def fields_of(tp: Any) -> list[str] | None:
    """Field names of a model type (None for anything else)."""
    options = members(tp)
    if len(options) == 1 and isinstance(options[0], type) and issubclass(options[0], BaseModel):
        return list(options[0].model_fields)
    return None


def ignores_extra(model: type[BaseModel]) -> bool:
    """Whether unknown keys vanish silently (pydantic's default ``extra='ignore'``)."""
    return model.model_config.get("extra") in (None, "ignore")


def unknown_keys(tp: Any, value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], list[str]]]:
    """Keys in ``value`` that a model would drop silently (``extra='ignore'``), with the allowed names.

    pydantic reports unknown keys only where a model forbids them; a typo in a domain's state
    override (``ordrs:``) would otherwise vanish without a word.
    """
    options = members(tp)
    if len(options) != 1:
        return []
    tp = options[0]
    found: list[tuple[tuple[Any, ...], list[str]]] = []
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(value, dict):
        names = {name: name for name in tp.model_fields}
        names.update({f.alias: name for name, f in tp.model_fields.items() if f.alias})
        for key, item in value.items():
            if key in names:
                found.extend(unknown_keys(child_type(tp, names[key]), item, (*path, key)))
            elif ignores_extra(tp):
                found.append(((*path, key), list(tp.model_fields)))
    elif get_origin(tp) is dict and isinstance(value, dict):
        for key, item in value.items():
            found.extend(unknown_keys(child_type(tp, key), item, (*path, key)))
    elif get_origin(tp) is list and isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(unknown_keys(child_type(tp, index), item, (*path, index)))
    return found
