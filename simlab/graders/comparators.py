"""Value and argument comparators shared by the state, trajectory and policy graders.

Agents write ``49.9`` or ``"49.90"``, ``"A123"`` or ``"a123 "``, ``"2026-07-01"`` or
``"July 1, 2026"``; a scenario says per argument how strictly to compare. Decisions:

- exact: JSON-normalised deep equality; numbers compare with a tolerance (49.9 == 49.90) and a
  numeric string equals a number when both parse (``"49.90"`` == 49.9); bools never equal numbers.
- casefold: strings trimmed, inner whitespace collapsed, case folded (applied deep in lists/maps).
- date: ISO dates/datetimes (``2026-07-01``, ``2026-07-01T10:00Z``), ``2026/07/01`` and named-month
  forms (``July 1, 2026``, ``1 Jul 2026``, ``July 1st 2026``). Day/month-only numeric forms such as
  ``01/07/2026`` are ambiguous and refused, never guessed. Only the calendar date is compared.
- regex: ``re.search`` (anchor with ``^…$`` for a whole-value match); non-strings are matched on
  their JSON text.
- A problem of the scenario itself (unknown comparator, unimportable or crashing custom
  comparator, an unparseable expected date) raises ``ComparatorError`` so a grader can report an
  error instead of a silent mismatch.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from simlab import imports
from simlab.specs.expect import CallSpec
from simlab.transcript import ToolCall

__all__ = [
    "ComparatorError",
    "as_number",
    "call_matches",
    "call_mismatch",
    "compare_value",
    "describe_spec",
    "load_callable",
    "same_value",
]

NAMES = ("exact", "ignore", "casefold", "number", "date", "regex", "one_of")
DEFAULT_TOLERANCE = 1e-9


class ComparatorError(ValueError):
    """The comparison itself is misconfigured: a scenario bug, not an agent failure."""


def load_callable(ref: str) -> Callable[..., Any]:
    """Import ``module:function`` (the module may be a dotted name or a path to a .py file)."""
    try:
        return imports.load_callable(ref)
    except imports.RefError as exc:
        raise ComparatorError(str(exc)) from None


def as_number(value: Any) -> float | None:
    """A finite float for ints, floats and numeric strings; None otherwise (bools are not numbers)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _json(value: Any) -> Any:
    """JSON normal form: tuples become lists, keys become strings, odd objects their text."""
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return value


def _maybe_parse(value: Any) -> Any:
    """A JSON object or array given as a string is parsed; anything else is returned as is."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def same_value(expected: Any, actual: Any, tolerance: float = DEFAULT_TOLERANCE) -> bool:
    """Deep equality with numeric normalisation: 49.9 == 49.90 == "49.90" (within ``tolerance``)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            same_value(v, actual[k], tolerance) for k, v in expected.items()
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            same_value(e, a, tolerance) for e, a in zip(expected, actual)
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return expected == actual
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    x, y = as_number(expected), as_number(actual)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=tolerance)
    return bool(expected == actual)


def _show(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _fold(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, list):
        return [_fold(v) for v in value]
    if isinstance(value, dict):
        return {k: _fold(v) for k, v in value.items()}
    return value


_ORDINAL = re.compile(r"(\d{1,2})(st|nd|rd|th)\b", re.IGNORECASE)
_NAMED = (
    "%B %d %Y",
    "%b %d %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%A %B %d %Y",
    "%a %b %d %Y",
    "%A %d %B %Y",
    "%a %d %b %Y",
)


def parse_date(value: Any) -> date | None:
    """The calendar date of ISO or named-month text (see module docstring); None if unrecognised."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    for parse in (date.fromisoformat, datetime.fromisoformat):
        try:
            parsed = parse(text)
        except ValueError:
            continue
        return parsed.date() if isinstance(parsed, datetime) else parsed
    text = " ".join(_ORDINAL.sub(r"\1", text).replace(",", " ").split())
    for fmt in _NAMED:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None


def _parse_how(how: str | dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """(comparator name, options). A mapping names one comparator and carries its options."""
    if how is None:
        return "exact", {}
    if isinstance(how, str):
        name = how.strip()
        if name in NAMES:
            return name, {}
        if ":" in name:
            return "custom", {"ref": name}
        raise ComparatorError(f"unknown comparator {how!r}; use one of {', '.join(NAMES)} or module:function")
    if len(how) != 1:
        raise ComparatorError(f"a comparator mapping names exactly one comparator, got {sorted(how)}")
    ((name, option),) = how.items()
    if name == "number":
        if isinstance(option, dict):
            return "number", {"tolerance": float(option.get("tolerance", DEFAULT_TOLERANCE))}
        return "number", {"tolerance": float(option) if option is not None else DEFAULT_TOLERANCE}
    if name == "regex":
        return "regex", {"pattern": option} if option is not None else {}
    if name == "one_of":
        return "one_of", {"choices": option} if option is not None else {}
    if name in ("custom", "python"):
        return "custom", {"ref": str(option)}
    if name in NAMES:
        return name, {}
    raise ComparatorError(f"unknown comparator {name!r}; use one of {', '.join(NAMES)} or module:function")


def carries_expected(how: str | dict[str, Any] | None) -> bool:
    """True for mapping forms that hold their own expected value ({regex: …}, {one_of: […]})."""
    return (
        isinstance(how, dict)
        and len(how) == 1
        and next(iter(how)) in ("regex", "one_of")
        and next(iter(how.values())) is not None
    )


def compare_value(expected: Any, actual: Any, how: str | dict[str, Any] | None = "exact") -> tuple[bool, str]:
    """(matches, reason). Raises ``ComparatorError`` when the comparator itself is unusable."""
    name, opts = _parse_how(how)
    if name == "ignore":
        return True, "ignored"
    if name == "exact":
        exp, act = _json(_maybe_parse(expected)), _json(_maybe_parse(actual))
        ok = same_value(exp, act)
        return ok, "equal" if ok else f"expected {_show(exp)}, got {_show(act)}"
    if name == "casefold":
        exp, act = _fold(_json(_maybe_parse(expected))), _fold(_json(_maybe_parse(actual)))
        ok = same_value(exp, act)
        return (
            ok,
            "equal ignoring case" if ok else f"expected {_show(expected)} (any case), got {_show(actual)}",
        )
    if name == "number":
        x, y = as_number(expected), as_number(actual)
        if x is None:
            raise ComparatorError(f"number comparator: expected value {_show(expected)} is not a number")
        if y is None:
            return False, f"expected a number near {x:g}, got {_show(actual)}"
        tol = opts.get("tolerance", DEFAULT_TOLERANCE)
        ok = math.isclose(x, y, rel_tol=1e-9, abs_tol=tol)
        return ok, f"{y:g} is within {tol:g} of {x:g}" if ok else f"expected {x:g} ± {tol:g}, got {y:g}"
    if name == "date":
        want = parse_date(expected)
        if want is None:
            raise ComparatorError(f"date comparator: cannot read the expected date {_show(expected)}")
        got = parse_date(actual)
        if got is None:
            return (
                False,
                f"expected the date {want.isoformat()}, got {_show(actual)} (not an ISO or named-month date)",
            )
        ok = got == want
        if ok:
            return True, f"same date {want.isoformat()}"
        return False, f"expected the date {want.isoformat()}, got {got.isoformat()}"
    if name == "regex":
        pattern = opts.get("pattern", expected)
        try:
            regex = re.compile(str(pattern))
        except re.error as exc:
            raise ComparatorError(f"regex comparator: bad pattern {pattern!r}: {exc}") from None
        text = actual if isinstance(actual, str) else json.dumps(actual, default=str)
        ok = regex.search(text) is not None
        return ok, f"matches /{pattern}/" if ok else f"{_show(actual)} does not match /{pattern}/"
    if name == "one_of":
        choices = opts.get("choices", expected)
        if not isinstance(choices, list):
            raise ComparatorError(f"one_of comparator: expected a list of choices, got {_show(choices)}")
        act = _json(_maybe_parse(actual))
        ok = any(same_value(_json(c), act) for c in choices)
        return ok, "one of the choices" if ok else f"{_show(actual)} is not one of {_show(choices)}"
    return _custom(opts["ref"], expected, actual)


def _custom(ref: str, expected: Any, actual: Any) -> tuple[bool, str]:
    func = load_callable(ref)
    try:
        result = func(expected, _maybe_parse(actual))
    except Exception as exc:  # user code
        raise ComparatorError(f"comparator {ref} raised {type(exc).__name__}: {exc}") from None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        return result[0], str(result[1])
    if not isinstance(result, bool):
        raise ComparatorError(f"comparator {ref} returned {type(result).__name__}; return a bool")
    return (
        result,
        f"{ref} accepted" if result else f"{ref} rejected {_show(actual)} (expected {_show(expected)})",
    )


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    if call.arguments is not None:
        return call.arguments
    parsed = _maybe_parse(call.raw_arguments)
    return parsed if isinstance(parsed, dict) else None


def call_mismatch(spec: CallSpec | str, call: ToolCall, tool_valid: bool = True) -> str | None:
    """None when ``call`` satisfies ``spec``; otherwise why not, in a few words.

    Only the arguments the spec names are compared: those in ``args`` plus those whose
    comparator mapping carries its own expected value (``{regex: …}``, ``{one_of: […]}``).
    """
    if not tool_valid:
        return "the call was invalid (unknown tool or arguments that fail the schema)"
    tool = spec if isinstance(spec, str) else spec.tool
    if call.name != tool:
        return f"tool {call.name!r} is not {tool!r}"
    if isinstance(spec, str):
        return None
    arguments = _arguments(call)
    if arguments is None:
        return "the arguments are not a JSON object"
    names = list(spec.args) + [
        k for k, how in spec.compare.items() if k not in spec.args and carries_expected(how)
    ]
    for arg in names:
        how = spec.compare.get(arg, "exact")
        if _parse_how(how)[0] == "ignore":
            continue
        if arg not in arguments:
            return f"argument {arg!r} is missing"
        ok, reason = compare_value(spec.args.get(arg), arguments[arg], how)
        if not ok:
            return f"argument {arg!r}: {reason}"
    return None


def call_matches(spec: CallSpec | str, call: ToolCall, tool_valid: bool) -> bool:
    """Does ``call`` satisfy the reference ``spec``? An invalid call never matches."""
    return call_mismatch(spec, call, tool_valid) is None


def describe_spec(spec: CallSpec | str) -> str:
    """``issue_refund(order_id="A123", amount=49.9)`` or just the tool name."""
    if isinstance(spec, str):
        return spec
    if not spec.args:
        return spec.tool
    return f"{spec.tool}(" + ", ".join(f"{k}={_show(v)}" for k, v in spec.args.items()) + ")"
