"""The OTLP JSON mapping's values read strictly (``traces/otlp.py``, ``traces/otlp_logs.py``): an
``AnyValue`` as plain data, an int64 field, a repeated field, a message field. A value the mapping
does not allow (an intValue that is no integer, a list where an object belongs) is a ``ShapeError``
naming what it is; the reader adds the document's place and makes it a clear error, never a crash.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simlab.inert import one_line


class ShapeError(ValueError):
    """A part of the file that the OTLP JSON mapping does not allow (what ``read_otlp`` says, with
    the document's place)."""


def value_of(value: Any) -> Any:
    """An OTLP ``AnyValue`` as plain data (intValue comes as a string in JSON: int64); a value the
    mapping does not allow (an intValue that is no integer, an arrayValue that is no list) is a
    ``ShapeError``."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return whole(value["intValue"], "intValue")
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, bool) or not isinstance(number, (int, float, str)):
            raise ShapeError(f"doubleValue {shown(number)} is not a number")
        try:
            return float(number)
        except ValueError:
            raise ShapeError(f"doubleValue {shown(number)} is not a number") from None
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [value_of(v) for v in _listed(value["arrayValue"], "arrayValue")]
    if "kvlistValue" in value:
        return attributes_of(_listed(value["kvlistValue"], "kvlistValue"))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def whole(value: Any, name: str) -> int:
    """An int64 field of the mapping: a JSON integer or a decimal string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,100}", value.strip()):
        return int(value)
    raise ShapeError(f"{name} {shown(value)} is not an integer")


def _listed(value: Any, name: str) -> list[Any]:
    """The ``values`` of an arrayValue or a kvlistValue (absent: none)."""
    if value is None:
        return []
    items = value.get("values") if isinstance(value, dict) else value
    if items is None:
        return []
    if not isinstance(items, list):
        raise ShapeError(f"{name} holds {shown(items)}, not a list of values")
    return items


def shown(value: Any) -> str:
    return one_line(json.dumps(value, default=str)[:40])


def attributes_of(items: Any) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise ShapeError(f"attributes hold {shown(items)}, not a list of key-value objects")
    out: dict[str, Any] = {}
    for a in items:
        if isinstance(a, dict) and "key" in a:
            try:
                out[str(a["key"])] = value_of(a.get("value"))
            except ShapeError as exc:
                raise ShapeError(f"attribute {shown(str(a['key']))}: {exc}") from None
    return out


def each(value: Any, name: str) -> list[Any]:
    """A repeated field of the mapping: a list (absent: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(f"{name} holds {shown(value)}, not a list")
    return value


def object_of(value: Any, name: str) -> dict[str, Any]:
    """A message field of the mapping: an object (absent: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ShapeError(f"{name} holds {shown(value)}, not an object")
    return value
