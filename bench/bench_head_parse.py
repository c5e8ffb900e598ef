"""Issue 29: could a report read its heads straight into columns, without a ``TrialHead`` each?

Per head of the demo's records (µs, interleaved rounds, each the best of a pass over ``--heads``
heads), the ways a head's bytes can become what ``results/frames.collect`` takes:

* ``validate``: what the report does, pydantic-core's ``validate_json`` into a ``TrialHead``,
  then the figures' tuple and check columns ``collect`` takes of it;
* ``parse``: ``pydantic_core.from_json`` alone (plain dicts, nothing checked): the floor of any
  path that builds Python values from the bytes;
* ``vouch``: ``from_json``, then the least a fast path must check to accept exactly the heads that
  ``TrialHead`` accepts, with the same values (``vouch`` below: the keys of head and row in field
  order, each value's exact type, cached per distinct key and type signature, every integer within
  64 bits, the lists' item types), giving the same tuples; anything else would go to pydantic.

And the Arrow way: pyarrow's JSON reader on the same heads, one per line (``arrow``, the whole
set, per head), with an explicit schema of the row's typed fields: it cannot read a head whole (its
``[name, kind, hard]`` lists mix strings and booleans), so only the rows are read, the rest ignored.

    python bench/bench_head_parse.py [--heads 5000 --rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from operator import itemgetter
from typing import Any, get_args

from _common import Figures, add_rounds, save

from simlab.runner.heads_index import HEADS
from simlab.runner.lines import parse_head
from simlab.transcript.head import INT64, TrialFigures, TrialHead

FIGURES = tuple(TrialFigures.model_fields)
_KEYS = frozenset(TrialHead.model_fields)
_good_keys: dict[tuple[str, ...], bool] = {}
_good_types: dict[tuple[type, ...], Any] = {}


def _kinds() -> list[frozenset[type]]:
    out = []
    for info in TrialFigures.model_fields.values():
        args = get_args(info.annotation) or (info.annotation,)
        out.append(frozenset(get_args(a)[0] if get_args(a) else a for a in args))
    return out


KINDS = _kinds()


def validate(text: bytes) -> Any:
    head = parse_head(text)
    assert head is not None
    extra = head.row.__pydantic_extra__ or {}
    return tuple(vars(head.row).values()), tuple(extra), tuple(extra.values()), [head.failed, head.unjudged,
                                                                                  head.errored]


def vouch(text: bytes) -> Any:
    """The fast path's least work (module docstring); None: pydantic decides."""
    from pydantic_core import from_json

    head = from_json(text)
    if head.__class__ is not dict or not head.keys() <= _KEYS or head.get("v", 3) != 3:
        return None
    row = head.get("row")
    if row.__class__ is not dict:
        return None
    keys = tuple(row)
    good = _good_keys.get(keys)
    if good is None:
        n = len(FIGURES)
        good = _good_keys[keys] = keys[:n] == FIGURES and all(k.startswith("check:") for k in keys[n:])
    if not good:
        return None
    values = tuple(row.values())
    types = tuple(map(type, values))
    ints = _good_types.get(types, False)
    if ints is False:
        fits = all(t in k for t, k in zip(types, KINDS)) and set(types[len(FIGURES):]) <= {str, type(None)}
        at = [i for i, t in enumerate(types[: len(FIGURES)]) if t is int]
        ints = _good_types[types] = itemgetter(*at) if fits and len(at) > 1 else None
    if ints is None:
        return None
    found = ints(values)
    if min(found) < INT64[0] or max(found) > INT64[1]:
        return None
    lists = []
    for key, kinds in (("failed", (str, str, bool)), ("unjudged", (str, str)), ("errored", (str, str, bool, str))):
        items = head.get(key, [])
        if items.__class__ is not list or any(tuple(map(type, item)) != kinds for item in items):
            return None
        lists.append(list(map(tuple, items)))
    if not all(name.__class__ is str for name in head.get("not_run", [])):
        return None
    if not all(hit.__class__ is bool for hit in head.get("attacks", {}).values()):
        return None
    n = len(FIGURES)
    return values[:n], keys[n:], values[n:], lists


def arrow(texts: list[bytes]) -> Any:
    import pyarrow as pa
    import pyarrow.json as pj

    kinds = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    fields = [pa.field(name, next(kinds[k] for k in kind if k in kinds)) for name, kind in zip(FIGURES, KINDS)]
    schema = pa.schema([pa.field("v", pa.int64()), pa.field("row", pa.struct(fields))])
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    return pj.read_json(pa.BufferReader(b"\n".join(texts) + b"\n"), parse_options=options)


def whole_heads_readable(texts: list[bytes]) -> str:
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        pj.read_json(pa.BufferReader(b"\n".join(texts) + b"\n"))
    except pa.ArrowInvalid as exc:
        return str(exc)
    return "read"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heads", type=int, default=5000)
    add_rounds(parser, 5)
    args = parser.parse_args()
    import synth
    from pydantic_core import from_json

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        _, folder = synth.make(max(1, args.heads // 10), "head-parse")
    lines = (folder / HEADS).read_bytes().splitlines()[1:]
    texts = [line[line.index(b'"h":') + 4 : -1] for line in lines][: args.heads]
    assert all(vouch(t) is not None for t in texts), "every head of a run is one the fast path vouches for"
    assert all(vouch(t) == validate(t) for t in texts), "the same tuples and lists either way"
    ways = {"validate": validate, "parse": from_json, "vouch": vouch}
    found: dict[str, list[float]] = {name: [] for name in [*ways, "arrow"]}
    for _ in range(args.rounds):
        for name, way in ways.items():
            started = time.perf_counter()
            kept = [way(t) for t in texts]
            found[name].append((time.perf_counter() - started) / len(texts) * 1e6)
            del kept
        started = time.perf_counter()
        arrow(texts)
        found["arrow"].append((time.perf_counter() - started) / len(texts) * 1e6)
    figures = Figures()
    for name, values in found.items():
        figures.add(f"{name} us/head", values, "µs", digits=2)
    refused = whole_heads_readable(texts)
    print(f"pyarrow's JSON reader on whole heads: {refused}")
    size = sum(map(len, texts)) / len(texts)
    save("head_parse", {"heads": len(texts), "head_bytes": round(size), "rounds": args.rounds,
                        "arrow_whole_heads": refused, "figures": figures.as_dict()})


if __name__ == "__main__":
    main()
