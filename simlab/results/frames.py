"""A run's trials as flat tables: one row per trial (``results.parquet``), one row per check
(``checks.parquet``, on request).

The trials table is built from each stored line's typed head (``transcript/head.TrialHead``),
never from the transcripts, so a report of 100,000 trials stays fast. Nested detail stays in the
JSON transcripts; the tables hold flat columns only. Unknown numbers stay missing (NaN/None),
never 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

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
    infra_failures: dict[tuple[str, str], int] = field(default_factory=dict)  # hard ones in trials that errored
    not_run: dict[str, int] = field(default_factory=dict)
    unjudged: dict[tuple[str, str], int] = field(default_factory=dict)  # hard checks not run: (name, kind)
    errored: dict[tuple[str, str], list[Any]] = field(default_factory=dict)  # (name, kind) → [count, hard, reason]
    attacks: dict[str, list[int]] = field(default_factory=dict)

    def add(self, head: TrialHead) -> None:
        errored = head.row.verdict == "error"
        for name, kind, hard in head.failed:
            key = (name, kind)
            self.failures[key] = self.failures.get(key, 0) + 1
            if hard:
                self.hard_failures[key] = self.hard_failures.get(key, 0) + 1
                if errored:  # the check failed because the trial could not be played
                    self.infra_failures[key] = self.infra_failures.get(key, 0) + 1
        for name in head.not_run:
            self.not_run[name] = self.not_run.get(name, 0) + 1
        for name, kind in head.unjudged:
            self.unjudged[(name, kind)] = self.unjudged.get((name, kind), 0) + 1
        for name, kind, hard, reason in head.errored:
            entry = self.errored.setdefault((name, kind), [0, False, reason])
            entry[0] += 1
            entry[1] = entry[1] or hard
        for category, succeeded in head.attacks.items():
            counts = self.attacks.setdefault(category, [0, 0])
            counts[0] += 1
            counts[1] += bool(succeeded)


CHECK_COLUMNS = ["run_id", "unit_id", "scenario_id", "trial", "simulator", "verdict", "name", "kind", "status",
                 "hard", "score", "reason", "event", "turn", "call_id", "category"]
_CHECK_KEYS = CHECK_COLUMNS[6:]  # taken from the check itself; the first six from its trial


SUMMARY_FIELDS = ("verdict", "scenario_id", "persona_id", "termination", "termination_detail", "cost_usd",
                  "policy_violations", "loop", "duration_s", "retries", "retry_wait_s", "simulator",
                  "agent_input_tokens", "agent_output_tokens", "simulator_input_tokens", "simulator_output_tokens",
                  "judge_calls", "judge_cost_usd", "replayed", "diverged_turn")
FIGURES = tuple(TrialFigures.model_fields)  # the row's own columns, in order, before its checks
_figures, _summary_fields = attrgetter(*FIGURES), attrgetter(*SUMMARY_FIELDS)
ADK_CHECK = "check:adk:"  # the columns of ADK's criteria (simlab/adk/grader.py)
TOOL_CHECK = "check:tool_precision"  # the trajectory grader's soft check that carries the call counts
FLOAT_COLUMNS = tuple(f"{role}_{f}" for role in ROLES for f in USAGE_FIELDS) + ("cost_usd", "redundant_calls")


@dataclass
class Results:
    """A run's trials: the results table, the few fields of each row the summary reads, and the
    check tally."""

    table: Any  # pyarrow.Table, one row per trial: results.parquet
    rows: list[dict[str, Any]]  # SUMMARY_FIELDS of each trial, in file order
    tally: CheckTally

    def __len__(self) -> int:
        return len(self.rows)


def collect(heads: Iterable[TrialHead]) -> Results:
    """``Results`` from the trials' heads, in one pass with flat memory per trial.

    Rows are grouped by their check columns (a scenario's checks make its own ``check:<name>``
    columns, after the row's own fields) and each column is assembled in one piece; a column a
    trial lacks (another scenario's check) is empty (null) there. Columns come in the order they
    are first seen.
    """
    groups: dict[tuple[str, ...], tuple[list[int], list[tuple[Any, ...]], tuple[str, ...]]] = {}
    rows: list[dict[str, Any]] = []
    tally = CheckTally()
    plain = True
    for n, head in enumerate(heads):
        row = head.row
        checks = row.model_extra or {}
        group = groups.get(key := tuple(checks))
        if group is None:  # ADK's criteria, per trial: shown beside pass^k (simlab/adk/grader.py)
            group = groups[key] = ([], [], tuple(name for name in key if name.startswith(ADK_CHECK)))
            plain = tuple(vars(row)) == FIGURES  # a validated row's __dict__: its fields, in order
        group[0].append(n)
        group[1].append((*(vars(row).values() if plain else _figures(row)), *checks.values()))
        summary_row = dict(zip(SUMMARY_FIELDS, _summary_fields(row)))
        if head.unjudged:  # which kinds of hard check did not run: an allow list may accept them
            summary_row["unjudged_kinds"] = frozenset(kind for _, kind in head.unjudged)
        if group[2]:
            summary_row["adk"] = {name[len(ADK_CHECK):]: checks[name] for name in group[2]}
        if "tool_counts" in head.model_fields_set:  # tp, fp, fn; None: no trajectory check counted
            summary_row["tool_counts"] = head.tool_counts
        elif checks.get(TOOL_CHECK) is not None:  # a head written before the counts were kept
            summary_row["tool_counts_unknown"] = True
        if row.failure_mode is not None:  # why it did not pass (transcript/blame.py): results/modes.py
            summary_row["fault"] = (row.failure_mode, row.blame, row.unit_id, row.first_fault_turn,
                                    row.first_fault_event)
        if head.errored:  # the first hard check its grader could not decide: an error's cause
            summary_row["errored_check"] = next((f"{n}: {r}" for n, _, hard, r in head.errored if hard), None)
        rows.append(summary_row)
        tally.add(head)
    return Results(_table({FIGURES + key: (index, values) for key, (index, values, _) in groups.items()}, len(rows)),
                   rows, tally)


def _table(groups: dict[tuple[str, ...], tuple[list[int], list[tuple[Any, ...]]]], n: int) -> Any:
    import numpy as np
    import pyarrow as pa

    columns: dict[str, Any] = {}
    for key, (index, values) in groups.items():
        at = None if len(groups) == 1 else np.asarray(index)
        for name, column in zip(key, zip(*values)):
            if at is None:
                columns[name] = column
                continue
            if name not in columns:
                columns[name] = np.full(n, None, dtype=object)
            target = np.empty(len(column), dtype=object)
            target[:] = column
            columns[name][at] = target
    return pa.table({name: _array(pa, name, values) for name, values in columns.items()})


def _array(pa: Any, name: str, values: Any) -> Any:
    """One column, its type inferred by pyarrow; usage and cost are floats (unknown is null, a NaN
    too), and a column of mixed kinds (a user check's odd status) is kept as text rather than lost.
    Not ``from_pandas=True``: it imports pandas (0.4 s of a report) only to read NaN as null."""
    if name in FLOAT_COLUMNS:
        return _nan_as_null(pa, pa.array(values, type=pa.float64()))
    try:
        return _nan_as_null(pa, pa.array(values))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


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
    for key, value in (("run_id", t.get("run_id")), ("unit_id", raw.get("unit_id")),
                       ("scenario_id", t.get("scenario_id")), ("trial", t.get("trial")),
                       ("simulator", (t.get("simulator") or {}).get("ref")), ("verdict", raw.get("verdict"))):
        columns[key].extend([value] * count)
    for key in _CHECK_KEYS:
        if key == "hard":
            columns[key].extend([c.get("hard", True) for c in checks])
        else:
            columns[key].extend([c.get(key) for c in checks])


def read_results(path: Path, notes: Any = None) -> Results:
    """``collect`` straight from a trials file, from the heads of its lines (``notes``: a
    ``runner.lines.ReadNotes``, with the plan to count in and collecting what was skipped)."""
    from simlab.runner.heads_tail import gc_paused
    from simlab.runner.store import RunStore

    with gc_paused():
        return collect(RunStore(path.parent).iter_heads(notes))


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
