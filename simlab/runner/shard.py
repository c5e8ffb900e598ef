"""Deterministic shares of a run's work units, for ``--shard i/N``.

A unit's share depends only on its id (sha256, never Python's salted ``hash()``), so every
machine of a CI matrix computes the same split from the same suite without talking to the
others, and a resumed shard plays exactly the units it would have played the first time. The
workers of one machine (``--workers``) take its units one at a time instead (``workers.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

from simlab.errors import UsageError

U = TypeVar("U")

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def unit_number(unit_id: str) -> int:
    """A stable 64-bit number for a unit id."""
    return int.from_bytes(hashlib.sha256(unit_id.encode("utf-8")).digest()[:8], "big")


def shard_of(unit_id: str, count: int) -> int:
    """1-based share of ``unit_id`` among ``count`` (what ``--shard i/N`` selects)."""
    return unit_number(unit_id) % count + 1


def _is_share(index: int, count: int) -> bool:
    """Whether ``index`` (1-based) is one of ``count`` shares."""
    return count >= 1 and 1 <= index <= count


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` (1-based I) as ``(I, N)``; a clear usage error otherwise."""
    match = _SHARD.match(text or "")
    if not match:
        raise UsageError(f"--shard {text!r}: write it as I/N, e.g. 2/4 for the second of four shares")
    index, count = int(match.group(1)), int(match.group(2))
    if not _is_share(index, count):
        raise UsageError(f"--shard {text!r}: I must be between 1 and N (N at least 1)")
    return index, count


# Where ``--shard auto`` finds this machine's share: (engine, index variable, count variable, first index).
# Kubernetes sets only the index; an Indexed Job's manifest passes its completions as SIMLAB_SHARD_COUNT
# (examples/k8s/). GitHub Actions exposes a matrix job's index only as `strategy.job-index`: the workflow
# copies it into SIMLAB_SHARD_INDEX (examples/ci/github-nightly.yml).
AUTO_SOURCES: tuple[tuple[str, str, str, int], ...] = (
    ("simlab", "SIMLAB_SHARD_INDEX", "SIMLAB_SHARD_COUNT", 0),
    ("a Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", "SIMLAB_SHARD_COUNT", 0),
    ("GitLab CI parallel", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1),
    ("CircleCI parallelism", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0),
    ("Buildkite parallelism", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0),
)


def resolve_shard(text: str | None, environ: Mapping[str, str]) -> tuple[int, int]:
    """``--shard`` as ``(I, N)``: ``I/N`` as written, ``auto`` from the environment (``AUTO_SOURCES``,
    the first whose index variable is set), ``(1, 1)`` when not given."""
    if not text:
        return 1, 1
    if text.strip().lower() != "auto":
        return parse_shard(text)
    for engine, index_var, count_var, first in AUTO_SOURCES:
        if index_var not in environ:
            continue
        index, count = environ[index_var].strip(), environ.get(count_var, "").strip()
        if not count:
            raise UsageError(
                f"--shard auto: {index_var} is set ({engine}) but {count_var} is not; "
                f"set {count_var} to the number of shares (the job's completions or matrix size)"
            )
        if not (index.isdigit() and count.isdigit()):
            raise UsageError(
                f"--shard auto: {index_var}={index!r} and {count_var}={count!r} ({engine}) "
                "must be whole numbers"
            )
        share, total = int(index) - first + 1, int(count)
        if not _is_share(share, total):
            last = total - 1 + first
            raise UsageError(
                f"--shard auto: {index_var}={index} is not one of {total} shares ({engine} counts them "
                f"from {first}, so it runs from {first} to {last}; {count_var}={count})"
            )
        return share, total
    names = ", ".join(index_var for _, index_var, _, _ in AUTO_SOURCES)
    raise UsageError(
        f"--shard auto: none of {names} is set, so this machine's share is unknown; "
        "write --shard I/N, or set SIMLAB_SHARD_INDEX (from 0) and SIMLAB_SHARD_COUNT"
    )


def shard_units(units: Sequence[U], index: int, count: int) -> list[U]:
    """The units of share ``index`` (1-based) of ``count``, in plan order."""
    if count == 1:
        return list(units)
    return [u for u in units if shard_of(u.unit_id, count) == index]  # type: ignore[attr-defined]


__all__ = ["AUTO_SOURCES", "parse_shard", "resolve_shard", "shard_of", "shard_units", "unit_number"]
