"""Text search across trials: what was said, called, returned and checked — not JSON keys."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["count_hits", "search_rows", "searchable_texts"]


def searchable_texts(record: dict[str, Any]) -> Iterator[str]:
    """The human-visible strings of one stored trial (a raw ``trials.jsonl`` record)."""
    transcript = record.get("transcript") or {}
    for e in transcript.get("events") or []:
        kind = e.get("type")
        if kind in ("user", "agent"):
            yield str(e.get("text", ""))
        elif kind == "tool_call":
            yield str(e.get("name", ""))
            args = e.get("arguments")
            yield (
                json.dumps(args, ensure_ascii=False) if args is not None else str(e.get("raw_arguments", ""))
            )
        elif kind == "tool_result":
            yield (
                json.dumps(e.get("result"), ensure_ascii=False, default=str)
                if e.get("ok")
                else str(e.get("error"))
            )
        elif kind == "invalid_call":
            yield f"{e.get('name', '')} {e.get('reason', '')}"
        elif kind == "error":
            yield str(e.get("message", ""))
    yield str((transcript.get("termination") or {}).get("detail", ""))
    for check in record.get("checks") or []:
        if isinstance(check, dict):
            yield f"{check.get('name', '')} {check.get('reason', '')}"


def count_hits(line: bytes, query: str) -> int:
    """Occurrences of ``query`` (any case) in one trial line's visible text."""
    needle = query.lower()
    if not needle:
        return 0
    text = line.decode("utf-8", errors="replace")
    plain_needle = json.dumps(needle, ensure_ascii=False)[1:-1] == needle
    if plain_needle and needle not in text.lower():
        return 0  # the needle needs no JSON escaping, so it must appear in the raw line
    try:
        record = json.loads(text)
    except ValueError:
        return 0
    return sum(t.lower().count(needle) for t in searchable_texts(record))


def search_rows(
    rows: Iterable[Any],
    read: Callable[[Any], bytes],
    query: str,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict[str, int]:
    """unit id → hits, for the rows whose text contains ``query``."""
    found: dict[str, int] = {}
    for row in rows:
        if cancelled():
            break
        hits = count_hits(read(row), query)
        if hits:
            found[row.unit_id] = hits
    return found
