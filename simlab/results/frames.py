"""A run's trials as flat tables: one row per trial (``results.parquet``), one row per check
(``checks.parquet``, on request).

The trials table is built from each stored line's typed head (``transcript/head.TrialHead``),
never from the transcripts, so a report of 100,000 trials stays fast. Nested detail stays in the
JSON transcripts; the tables hold flat columns only. Unknown numbers stay missing (NaN/None),
never 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

from simlab.transcript.head import TrialFigures, TrialHead
from simlab.transcript.row import ROLES, USAGE_FIELDS

RESULTS_FILE = "results.parquet"
CHECKS_FILE = "checks.parquet"


@dataclass
class CheckTally:
    """What the summary needs from the checks, counted from the trials' heads: failures per
    ``(name, kind)`` (all, and hard ones only), checks not run per name, and per attack category
    ``[trials attacked, attacks that succeeded]``. Small whatever the run's size, unlike a table
    of every check (24 rows per demo trial)."""

    failures: dict[tuple[str, str], int] = field(default_factory=dict)
    hard_failures: dict[tuple[str, str], int] = field(default_factory=dict)
    infra_failures: dict[tuple[str, str], int] = field(
        default_factory=dict
    )  # hard ones in trials that errored
    not_run: dict[str, int] = field(default_factory=dict)
    unjudged: dict[tuple[str, str], int] = field(default_factory=dict)  # hard checks not run: (name, kind)
    errored: dict[tuple[str, str], list[Any]] = field(
        default_factory=dict
    )  # (name, kind) → [count, hard, reason]
    attacks: dict[str, list[int]] = field(default_factory=dict)

    def add(self, head: TrialHead) -> None:
        infra = head.failed if head.row.verdict == "error" else []
        self.count(head.failed, infra, head.not_run, head.unjudged)
        self.add_rare(head)

    def count(
        self,
        failed: list[tuple[str, str, bool]],
        infra: list[tuple[str, str, bool]],
        not_run: list[str],
        unjudged: list[tuple[str, str]],
    ) -> None:
        """Count many trials' failed checks (``infra``: those of trials that errored, the check
        failed because the trial could not be played), checks not run and hard checks not run, at
        once by ``Counter``, in the order first seen: as one ``add`` after another would."""
        for (name, kind, hard), count in Counter(failed).items():
            _bump(self.failures, (name, kind), count)
            if hard:
                _bump(self.hard_failures, (name, kind), count)
        for (name, kind, hard), count in Counter(infra).items():
            if hard:
                _bump(self.infra_failures, (name, kind), count)
        for name, count in Counter(not_run).items():
            _bump(self.not_run, name, count)
        for key, count in Counter(unjudged).items():
            _bump(self.unjudged, key, count)

    def add_rare(self, head: TrialHead) -> None:
        """A trial's checks whose grader could not decide, and its attacks (the rest: ``count``)."""
        for name, kind, hard, reason in head.errored:
            entry = self.errored.setdefault((name, kind), [0, False, reason])
            entry[0] += 1
            entry[1] = entry[1] or hard
        for category, succeeded in head.attacks.items():
            counts = self.attacks.setdefault(category, [0, 0])
            counts[0] += 1
            counts[1] += bool(succeeded)


def _bump(counts: dict[Any, int], key: Any, by: int) -> None:
    counts[key] = counts.get(key, 0) + by


CHECK_COLUMNS = [
    "run_id",
    "unit_id",
    "scenario_id",
    "trial",
    "simulator",
    "verdict",
    "name",
    "kind",
    "status",
    "hard",
    "score",
    "reason",
    "event",
    "turn",
    "call_id",
    "category",
]
_CHECK_KEYS = CHECK_COLUMNS[6:]  # taken from the check itself; the first six from its trial


SUMMARY_FIELDS = (
    "verdict",
    "scenario_id",
    "persona_id",
    "termination",
    "termination_detail",
    "cost_usd",
    "policy_violations",
    "loop",
    "duration_s",
    "retries",
    "retry_wait_s",
    "simulator",
    "agent_input_tokens",
    "agent_output_tokens",
    "simulator_input_tokens",
    "simulator_output_tokens",
    "judge_calls",
    "judge_cost_usd",
    "replayed",
    "diverged_turn",
)
FIGURES = tuple(TrialFigures.model_fields)  # the row's own columns, in order, before its checks
_figures = attrgetter(*FIGURES)
ADK_CHECK = "check:adk:"  # the columns of ADK's criteria (simlab/adk/grader.py)
TOOL_CHECK = "check:tool_precision"  # the trajectory grader's soft check that carries the call counts
FLOAT_COLUMNS = tuple(f"{role}_{f}" for role in ROLES for f in USAGE_FIELDS) + ("cost_usd", "redundant_calls")


TOOL_COUNTS_UNKNOWN = "unknown"  # Results.tools: a head written before the counts were kept


@dataclass
class Results:
    """A run's trials, column by column in file order: the results table, the row's own fields
    as columns (those the table is built from, never copied per trial), what else the summary
    needs of a few trials (keyed by their position), and the check tally. Columns, not a dict per
    trial: a report of 100,000 trials reads each figure from one list (bench/README.md)."""

    table: Any  # pyarrow.Table, one row per trial: results.parquet
    columns: dict[str, Sequence[Any]]  # each field of the row (FIGURES), a column of every trial
    tally: CheckTally
    # by position: the kinds of hard check not run, ADK's criteria (→ status), an error's
    # undecided hard check; per trial: (tp, fp, fn), TOOL_COUNTS_UNKNOWN or None
    unjudged_kinds: dict[int, frozenset[str]] = field(default_factory=dict)
    adk: dict[int, dict[str, Any]] = field(default_factory=dict)
    errored_check: dict[int, str | None] = field(default_factory=dict)
    tools: list[Any] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tools)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One dict per trial (``SUMMARY_FIELDS`` and what is known of it besides), for a caller
        that reads row by row; the summary reads the columns."""
        out = []
        for n, values in enumerate(zip(*(self.columns[name] for name in SUMMARY_FIELDS))):
            row = dict(zip(SUMMARY_FIELDS, values))
            if n in self.unjudged_kinds:
                row["unjudged_kinds"] = self.unjudged_kinds[n]
            if n in self.adk:
                row["adk"] = self.adk[n]
            if self.tools[n] is TOOL_COUNTS_UNKNOWN:
                row["tool_counts_unknown"] = True
            elif self.tools[n] is not None:
                row["tool_counts"] = self.tools[n]
            if self.columns["failure_mode"][n] is not None:
                row["fault"] = self.fault(n)
            if n in self.errored_check:
                row["errored_check"] = self.errored_check[n]
            out.append(row)
        return out

    def fault(self, n: int) -> tuple[str, str | None, str, int | None, int | None]:
        """Why trial ``n`` did not pass (``transcript/blame.py``): its failure mode, blame, unit id,
        and the turn and event of its first faulty step (results/modes.py)."""
        c = self.columns
        return (
            c["failure_mode"][n],
            c["blame"][n],
            c["unit_id"][n],
            c["first_fault_turn"][n],
            c["first_fault_event"][n],
        )


def collect(heads: Iterable[TrialHead]) -> Results:
    """``Results`` from the trials' heads, in one pass with flat memory per trial.

    Each trial's own fields make one tuple (a validated row's ``__dict__``, in field order), and
    the table's columns are those tuples transposed. Rows are grouped by their check columns (a
    scenario's checks make its own ``check:<name>`` columns, after the row's own fields); a
    column a trial lacks (another scenario's check) is empty (null) there. Columns come in the
    order they are first seen.
    """
    groups: dict[tuple[str, ...], tuple[list[int], list[tuple[Any, ...]], tuple[str, ...]]] = {}
    figures: list[tuple[Any, ...]] = []
    tools: list[Any] = []
    out = Results(table=None, columns={}, tally=CheckTally(), tools=tools)
    unjudged_kinds, adk, errored = out.unjudged_kinds, out.adk, out.errored_check
    failed: list[tuple[str, str, bool]] = []  # the check tally's lists, counted at the end
    infra: list[tuple[str, str, bool]] = []
    not_run: list[str] = []
    unjudged: list[tuple[str, str]] = []
    plain = True
    for n, head in enumerate(heads):
        row = head.row
        checks = row.__pydantic_extra__ or {}  # model_extra, less its property's call
        group = groups.get(key := tuple(checks))
        if group is None:  # ADK's criteria, per trial: shown beside pass^k (simlab/adk/grader.py)
            group = groups[key] = ([], [], tuple(name for name in key if name.startswith(ADK_CHECK)))
            plain = tuple(vars(row)) == FIGURES  # a validated row's __dict__: its fields, in order
        group[0].append(n)
        group[1].append(tuple(checks.values()))
        figures.append(tuple(vars(row).values()) if plain else _figures(row))
        if head.failed:
            failed += head.failed
            if row.verdict == "error":
                infra += head.failed
        if head.not_run:
            not_run += head.not_run
        if head.unjudged:  # which kinds of hard check did not run: an allow list may accept them
            unjudged += head.unjudged
            unjudged_kinds[n] = frozenset(kind for _, kind in head.unjudged)
        if group[2]:
            adk[n] = {name[len(ADK_CHECK) :]: checks[name] for name in group[2]}
        if "tool_counts" in head.__pydantic_fields_set__:  # None: no trajectory check counted
            tools.append(head.tool_counts)
        else:  # a head written before the counts were kept
            tools.append(TOOL_COUNTS_UNKNOWN if checks.get(TOOL_CHECK) is not None else None)
        if head.errored:  # the first hard check its grader could not decide: an error's cause
            errored[n] = next((f"{name}: {r}" for name, _, hard, r in head.errored if hard), None)
            out.tally.add_rare(head)
        elif head.attacks:
            out.tally.add_rare(head)
    out.tally.count(failed, infra, not_run, unjudged)
    columns: dict[str, Sequence[Any]] = dict(zip(FIGURES, zip(*figures)))
    del figures
    out.columns = columns or dict.fromkeys(FIGURES, ())  # no trials: and a table without columns
    checked = {key: (index, values) for key, (index, values, _) in groups.items()}
    out.table = _table(columns, checked, len(tools))
    return out


def _table(
    figures: dict[str, Sequence[Any]],
    groups: dict[tuple[str, ...], tuple[list[int], list[tuple[Any, ...]]]],
    n: int,
) -> Any:
    """The results table: the row's own columns, then each check column, each group's values put
    in place (null where a trial lacks that check)."""
    import pyarrow as pa

    columns: dict[str, Any] = {
        name: _array(pa, name, values, _TYPES.get(name)) for name, values in figures.items()
    }
    parts: dict[str, list[tuple[Any, tuple[Any, ...]]]] = {}  # check → (rows, values) of each group
    for key, (index, values) in groups.items():
        rows = index if len(index) == n else _positions(index)  # all rows: one group, in order
        for name, column in zip(key, zip(*values)):
            parts.setdefault(name, []).append((rows, column))
    for name, found in parts.items():  # check:<name>, never a field's name
        columns[name] = _spread(pa, name, found, n)
    return pa.table(columns)


def _positions(index: list[int]) -> Any:
    import numpy as np

    return np.asarray(index, dtype=np.int64)


def _spread(pa: Any, name: str, parts: list[tuple[Any, tuple[Any, ...]]], n: int) -> Any:
    """A check's column of every trial from the groups that have it (``(rows, values)``): their
    values converted at once (the type inferred from all of them, as from the whole column),
    then each put in its row by Arrow (``take``), null where a trial lacks the check. No Python
    loop over the rows."""
    if len(parts) == 1 and len(parts[0][1]) == n:  # one group: every trial, in order
        return _array(pa, name, parts[0][1])
    import numpy as np
    import pyarrow.compute as pc

    where = np.full(n, -1, dtype=np.int64)  # each row's place among the values, -1: none
    values: list[Any] = []
    for rows, column in parts:
        where[rows] = np.arange(len(values), len(values) + len(column))
        values.extend(column)
    return pc.take(_array(pa, name, values), pa.array(where, mask=where < 0))


def _types() -> dict[str, str]:
    """Each field of the row whose column has one type whatever its values (a validated row holds
    that type or None): ``str``, ``int``, ``bool`` or ``float``."""
    out = {}
    for name, info in TrialFigures.model_fields.items():
        kinds = {_bare(a) for a in get_args(info.annotation) or (info.annotation,) if a is not type(None)}
        if len(kinds) == 1 and (kind := kinds.pop()) in (str, int, bool, float):
            out[name] = kind.__name__
    return out


def _bare(annotation: Any) -> Any:
    """``int`` of ``Annotated[int, …]`` (``head.Int64``), any other annotation as it is."""
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


_TYPES = _types()


def _array(pa: Any, name: str, values: Any, kind: str | None = None) -> Any:
    """One column, its type inferred by pyarrow; usage and cost are floats (unknown is null, a NaN
    too), and a column of mixed kinds (a user check's odd status) is kept as text rather than lost.
    Not ``from_pandas=True``: it imports pandas (0.4 s of a report) only to read NaN as null.
    ``kind`` (a field of the row: ``_TYPES``) names the type inference would find, which is
    cheaper to convert to than to infer; a column of nothing but None is left to inference (null)."""
    if name in FLOAT_COLUMNS:
        return _nan_as_null(pa, pa.array(values, type=pa.float64()))
    if kind is not None:
        try:
            typed = pa.array(values, type=_ARROW[kind](pa))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            typed = None  # a value out of that type's range: inferred below, as for any column
        if typed is not None and typed.null_count != len(typed):  # (None alone, not NaN, is null)
            return _nan_as_null(pa, typed)
    try:
        return _nan_as_null(pa, pa.array(values))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


_ARROW = {
    "str": lambda pa: pa.string(),
    "int": lambda pa: pa.int64(),
    "bool": lambda pa: pa.bool_(),
    "float": lambda pa: pa.float64(),
}


def _nan_as_null(pa: Any, array: Any) -> Any:
    if not pa.types.is_floating(array.type):
        return array
    import pyarrow.compute as pc

    nan = pc.is_nan(array)
    return pc.if_else(nan, pa.scalar(None, array.type), array) if pc.any(nan).as_py() else array


def build_checks_table(raws: Iterable[dict[str, Any]]) -> Any:
    """One row per check of every trial (``checks.parquet``), from whole raw records: it needs
    each check's reason, so it parses every line (written on request: ``--checks-table``)."""
    import pyarrow as pa

    columns: dict[str, list[Any]] = {name: [] for name in CHECK_COLUMNS}
    for raw in raws:
        _add_check_rows(columns, raw)
    return pa.table({name: _array(pa, name, values) for name, values in columns.items()})


def _add_check_rows(columns: dict[str, list[Any]], raw: dict[str, Any]) -> None:
    checks = raw.get("checks") or []
    if not checks:
        return
    t = raw["transcript"]
    count = len(checks)
    for key, value in (
        ("run_id", t.get("run_id")),
        ("unit_id", raw.get("unit_id")),
        ("scenario_id", t.get("scenario_id")),
        ("trial", t.get("trial")),
        ("simulator", (t.get("simulator") or {}).get("ref")),
        ("verdict", raw.get("verdict")),
    ):
        columns[key].extend([value] * count)
    for key in _CHECK_KEYS:
        if key == "hard":
            columns[key].extend([c.get("hard", True) for c in checks])
        else:
            columns[key].extend([c.get(key) for c in checks])


def read_results(path: Path, notes: Any = None) -> Results:
    """``collect`` straight from a trials file, from the heads of its lines (``notes``: a
    ``runner.lines.ReadNotes``, with the plan to count in and collecting what was skipped)."""
    from simlab.runner.heads_tail import gc_paused, scan_heads

    with gc_paused():
        return collect(map(_HEAD, scan_heads(path, notes)))  # RunStore.iter_heads, one layer less


_HEAD = itemgetter(2)  # of each trial scan_heads gives: (number, unit, head, offset, length)


def read_checks_table(path: Path, notes: Any = None) -> Any:
    """``build_checks_table`` from a trials file, line by line."""
    from simlab.runner.store import RunStore

    return build_checks_table(RunStore(path.parent).iter_raw(notes))


def write_table(path: Path, table: Any) -> Path:
    """Write one table as Parquet (a derived file, always rebuildable); a failure leaves none."""
    import pyarrow.parquet as pq

    from simlab.runner.store import temp_path

    tmp = temp_path(path)
    try:
        pq.write_table(table, tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written table behind
    return path
