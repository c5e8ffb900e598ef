"""Shared base for spec models: strict about unknown fields, carries a schema version."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

SPEC_SCHEMA_VERSION = 1


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return value


def _python_ref(value: str) -> str:
    module, sep, attr = value.rpartition(":")
    if not (sep and module.strip() and attr.strip()):
        raise ValueError(f"expected module:function (e.g. mypkg.checks:refund_ok), got {value!r}")
    return value


SPEC_ID = r"^[a-z0-9][a-z0-9_.-]*$"
"""The shape of a scenario's or persona's id (also ``simlab import --scenario-id``): lowercase
letters, digits, '.', '_' and '-', starting with a letter or digit; one path component in a
unit id and a file name."""


def is_spec_id(value: str) -> bool:
    """Whether ``value`` is a valid scenario or persona id (``SPEC_ID``)."""
    return re.match(SPEC_ID, value) is not None


Regex = Annotated[str, AfterValidator(_regex)]
"""A regular expression, checked when the spec loads rather than when a trial runs."""

PythonRef = Annotated[str, AfterValidator(_python_ref)]
"""``module:attr`` of a Python object (the module may be a dotted name or a .py path)."""


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# The kinds of check the graders produce (``transcript.checks.Check.kind``); named here because
# specs refer to them too (``allow_unjudged``). ``custom``: a user grader's, unless it picks another.
CheckKind = Literal[
    "state", "trajectory", "policy", "efficiency", "budget", "rubric", "groundedness", "drift", "custom"
]


COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
    "==": operator.eq,
    "!=": operator.ne,
}
"""The comparison operators a spec may write (a gate, a policy ``limit``), by their symbol."""
