"""Shared helpers of the bench scripts: a scratch copy of the demo project, clocks, memory, results.

Bench scripts are not tests: they measure, print their figures and write them as JSON under
``bench/results/`` (one file per script), with the machine they ran on.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(os.environ.get("SIMLAB_BENCH_RESULTS") or REPO / "bench" / "results")
"""Where ``save`` writes; ``SIMLAB_BENCH_RESULTS=/tmp/x`` keeps a trial run's figures out of the committed ones."""
T = TypeVar("T")
PROJECT_FILES = ("simlab.yaml", "scenarios", "personas", "examples")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def scratch_project(name: str) -> Path:
    """A throw-away copy of the demo project (scenarios, personas, agents); the caller chdirs."""
    root = Path(tempfile.mkdtemp(prefix=f"simlab-bench-{name}-"))
    for item in PROJECT_FILES:
        source = REPO / item
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / item)
    return root


def enter(root: Path) -> None:
    """Work inside ``root`` like the CLI does (its agents and domains import from there)."""
    os.chdir(root)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


@dataclass
class Timing:
    wall_s: float = 0.0
    cpu_s: float = 0.0


@contextmanager
def timed() -> Iterator[Timing]:
    """Wall and CPU seconds (this process and its reaped children) of the block."""
    timing = Timing()
    wall, cpu = time.perf_counter(), _cpu()
    try:
        yield timing
    finally:
        timing.wall_s = time.perf_counter() - wall
        timing.cpu_s = _cpu() - cpu


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far. ``VmHWM``, not ``ru_maxrss``: Linux carries
    ``ru_maxrss`` over ``exec``, so a child would report its parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """Resident memory now."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def machine() -> dict[str, Any]:
    """Where and on what a figure was measured: ``git describe --dirty`` says whether the tree had
    changes the commit does not hold (a figure from a dirty tree is not the commit's), and the load
    averages say how busy the shared machine was (other processes take the cores a bench measures).
    ``python_loop_s`` is the machine's speed at that moment: the VM's speed changes from day to day
    (a 3× change was seen), so figures from two passes compare only after dividing by it."""
    load = os.getloadavg()
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "python_loop_s": python_loop_s(),
            "load_avg_1m": round(load[0], 2), "load_avg_5m": round(load[1], 2), "load_avg_15m": round(load[2], 2),
            "commit": _git("rev-parse", "--short", "HEAD"),
            "describe": _git("describe", "--always", "--dirty", "--abbrev=8"),
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def python_loop_s() -> float:
    """CPU seconds for 3 million additions in a Python loop, best of 3: a speed index of the core."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        total = 0
        for i in range(3_000_000):
            total += i
        best = min(best, time.process_time() - start)
    return round(best, 3)


def spread(values: list[float]) -> dict[str, Any]:
    """A figure over repeats: n, min, median, max (a single run has no spread to show)."""
    ordered = sorted(values)
    return {"n": len(ordered), "min": ordered[0], "median": ordered[len(ordered) // 2] if len(ordered) % 2 else
            (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2, "max": ordered[-1]}


def save(name: str, figures: dict[str, Any], folder: Path | None = None) -> Path:
    """Write ``<folder>/<name>.json`` (``RESULTS``: ``bench/results/`` unless ``SIMLAB_BENCH_RESULTS``
    says otherwise) with the machine block, and say where."""
    path = (folder or RESULTS) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"bench": name, "machine": machine(), **figures}, indent=2, default=str) + "\n")
    print(f"\nwrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
    return path


def add_rounds(parser: Any, default: int) -> None:
    """The ``--rounds`` option every script shares: how many times each measurement is repeated."""
    parser.add_argument("--rounds", type=int, default=default,
                        help=f"repeats of each measurement, interleaved; the spread is recorded (default {default})")


def interleaved(rounds: int, ways: Sequence[tuple[str, Callable[[], T]]], *,
                after_round: Callable[[int, dict[str, list[T]]], None] | None = None) -> dict[str, list[T]]:
    """Each way once per round, in turn, ``rounds`` times: a change in the shared machine's load then
    hits every way alike, instead of whichever ran last. ``after_round(i, so_far)`` may print progress."""
    found: dict[str, list[T]] = {name: [] for name, _ in ways}
    for i in range(rounds):
        for name, measure in ways:
            found[name].append(measure())
        if after_round is not None:
            after_round(i, found)
    return found


class Figures:
    """A script's headline figures, each recorded as its spread over the rounds (``spread``) with its
    unit, and printed as one line: ``name: median (min … max over n)``. ``as_dict()`` goes in the JSON."""

    def __init__(self) -> None:
        self._spreads: dict[str, dict[str, Any]] = {}

    def add(self, name: str, values: Sequence[float], unit: str = "", *, digits: int = 3) -> dict[str, Any]:
        if not values:
            raise ValueError(f"figure {name!r}: no values (a measurement that did not run has no figure)")
        figure = {**spread(list(values)), "unit": unit}
        self._spreads[name] = figure
        print(summary_line(name, figure, digits=digits), flush=True)
        return figure

    def median(self, name: str) -> float:
        return float(self._spreads[name]["median"])

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return dict(self._spreads)


def summary_line(name: str, figure: dict[str, Any], *, digits: int = 3) -> str:
    """``name: median unit (min … max over n)``."""
    unit = f" {figure['unit']}" if figure.get("unit") else ""

    def num(value: float) -> str:
        return f"{value:,.{digits}f}"

    return (f"{name}: {num(figure['median'])}{unit} ({num(figure['min'])} … {num(figure['max'])} "
            f"over {figure['n']})")


def verdict(value: float, target: float, *, below: bool = True) -> str:
    ok = value <= target if below else value >= target
    return "OK" if ok else "MISSED"


def table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """A plain aligned table on stdout."""
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in cells:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths)))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return "" if value is None else str(value)
