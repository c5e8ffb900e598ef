"""Target 5: reporting: the results table and the summary of 100,000 trials (< 5 s, < 1 GB).

A synthetic run (demo records replicated under new unit ids, ``synth.py``; about 20 KB a trial, so
2 GB of JSON for 100,000, with ``heads.jsonl`` beside it as a run leaves it) is reported the way
``simlab report`` does it: ``build`` (results table, summary, ``results.parquet`` and
``summary.json`` written) and the terminal report, each measurement in its own process for a true
peak memory, repeated (``--repeats``; the figures are ``_common.spread`` over the repeats). Two
ways at each size (10,000 and 100,000 trials by default):

* ``index``: the heads read from the run's index of heads (``runner/heads_index.py``), each entry
  checked against ``trials.jsonl``: what a report of a run costs;
* ``index missing``: the first report of a run without one (an older run, a copied folder), which
  reads every line's head from ``trials.jsonl`` and writes the index.

Two more at the smaller size, for comparison:

* ``no heads``: the same run written without heads (as simlab wrote it before record schema 2),
  so every line is parsed whole (no index when it starts);
* ``checks table``: ``simlab report --checks-table``, which also writes ``checks.parquet`` (one
  row per check, so it parses every line).

All must give the same ``summary.json`` and ``results.parquet``, and the index a report builds
must be the one the run wrote, byte for byte.

    python bench/bench_report.py                      # 100,000 trials, and 10,000
    python bench/bench_report.py --trials 1000 --small-trials 100 --repeats 1
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import REPO, save, spread, table, timed, verdict

from simlab.runner.heads_index import HEADS

CHILD = r'''
import io, json, sys, time
sys.path[:0] = [{repo!r}, {bench!r}]
import _common
from pathlib import Path
folder = Path({folder!r})
from rich.console import Console
from simlab.report.build import build
from simlab.report.terminal import print_report
import simlab.results.summary as _summary
modes = [0.0]  # the failure modes' share (results/modes.py): grouping, and the rows it groups

def _timed(f):
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            modes[0] += time.perf_counter() - t
    return timed

_summary.failure_modes = _timed(_summary.failure_modes)
if hasattr(_summary, "_Graded"):  # the rows of the trials that did not pass (earlier: kept per trial)
    _summary._Graded.faults = _timed(_summary._Graded.faults)
wall, cpu = time.perf_counter(), time.process_time()
summary = build(folder, checks_table={checks!r})
print_report(summary, Console(file=io.StringIO(), width=120))
out = {{"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
        "peak_rss_mb": _common.peak_rss_mb(), "trials": summary.trials + summary.ungraded,
        "modes_s": modes[0]}}
print(json.dumps(out))
'''


def report(folder: Path, way: str, repeats: int) -> dict[str, Any]:
    """``way`` measured ``repeats`` times, each in a fresh process (the index removed first where
    the way is to start without one)."""
    code = CHILD.format(repo=str(REPO), bench=str(REPO / "bench"), folder=str(folder), checks=way == "checks table")
    runs = []
    for _ in range(repeats):
        if way in ("index missing", "no heads"):
            (folder / HEADS).unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=folder.parents[1])
        if done.returncode != 0:
            raise SystemExit(f"report failed: {done.stderr[-2000:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    row: dict[str, Any] = {"way": way, "trials": runs[0]["trials"]}
    for key in ("wall_s", "cpu_s", "peak_rss_mb"):
        row[key] = statistics.median(r[key] for r in runs)
        row[f"{key}_spread"] = spread([r[key] for r in runs])
    return row


def derived(folder: Path) -> dict[str, Any]:
    import pandas as pd

    return {"summary": json.loads((folder / "summary.json").read_text()),
            "results": pd.read_parquet(folder / "results.parquet")}


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    from pandas.testing import assert_frame_equal

    assert_frame_equal(a["results"], b["results"])
    return bool(_unnamed(a["summary"]) == _unnamed(b["summary"]))


def _unnamed(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without the warning that a copied folder (``without_heads``) is another run's."""
    return {**summary, "warnings": [w for w in summary.get("warnings", []) if "the folder is named" not in w]}


def without_heads(folder: Path, into: Path) -> None:
    """A copy of the run whose lines have no head (the layout before record schema 2)."""
    into.mkdir(parents=True, exist_ok=True)
    (into / "run.json").write_text((folder / "run.json").read_text())
    with open(folder / "trials.jsonl", encoding="utf-8") as src, open(into / "trials.jsonl", "w") as dst:
        for line in src:
            record = json.loads(line)
            del record["head"]
            dst.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10000, help="trials per scenario (10 scenarios)")
    parser.add_argument("--small-trials", type=int, default=1000,
                        help="trials per scenario at the smaller size (and of the ways compared: no heads, checks table)")
    parser.add_argument("--repeats", type=int, default=3, help="measurements of each way (median and spread)")
    args = parser.parse_args()
    import synth

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        root, small = synth.make(args.small_trials, "report")
    written = (small / HEADS).read_bytes()
    headless = root / "transcripts" / f"headless-{args.small_trials}"
    without_heads(small, headless)
    rows = [report(small, "index", args.repeats)]
    reference = derived(small)
    rows.append(report(small, "index missing", args.repeats))
    identical = same(reference, derived(small))
    rebuilt_same = (small / HEADS).read_bytes() == written
    rows.append(report(headless, "no heads", args.repeats))
    identical = identical and same(reference, derived(headless))
    rows.append(report(small, "checks table", args.repeats))
    identical = identical and same(reference, derived(small))
    big = small
    if args.trials != args.small_trials:
        big = root / "transcripts" / f"report-{args.trials}"
        with timed() as made:
            synth.synth_run(root / "transcripts" / "seed", big, args.trials)
        print(f"synthetic run of {args.trials * 10} trials written in {made.wall_s:.1f} s "
              f"({(big / 'trials.jsonl').stat().st_size / 1e9:.2f} GB)", flush=True)
        written = (big / HEADS).read_bytes()
        rows.append(report(big, "index", args.repeats))
        big_reference = derived(big)
        rows.append(report(big, "index missing", args.repeats))
        identical = identical and same(big_reference, derived(big))
        rebuilt_same = rebuilt_same and (big / HEADS).read_bytes() == written
        del written
    for row in rows:
        row["trials_per_s"] = row["trials"] / row["wall_s"]
    table(rows, ["way", "trials", "wall_s", "cpu_s", "trials_per_s", "peak_rss_mb"])
    top = next(r for r in reversed(rows) if r["way"] == "index")
    size_gb = (big / "trials.jsonl").stat().st_size / 1e9
    result = {"rows": rows, "repeats": args.repeats, "identical_outputs": identical,
              "rebuilt_index_identical": rebuilt_same, "file_gb": size_gb,
              "index_gb": (big / HEADS).stat().st_size / 1e9,
              "targets": {"time_lt_5s": verdict(top["wall_s_spread"]["max"], 5.0),
                          "memory_lt_1gb": verdict(top["peak_rss_mb_spread"]["max"], 1024)}}
    print(f"\nsame summary.json and results.parquet whichever way: {identical}; "
          f"the index a report builds is the one the run wrote: {rebuilt_same}")
    print(f"{top['trials']} trials ({size_gb:.2f} GB of JSON), index present: {top['wall_s']:.1f} s median, "
          f"{top['wall_s_spread']['max']:.1f} s worst of {args.repeats} (target < 5) {result['targets']['time_lt_5s']}, "
          f"peak {top['peak_rss_mb_spread']['max']:.0f} MB (target < 1,024) {result['targets']['memory_lt_1gb']}")
    save("report", result)


if __name__ == "__main__":
    main()
