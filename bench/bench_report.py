"""Target 5: reporting: the results table and the summary of 100,000 trials (< 5 s, < 1 GB).

A synthetic run (demo records replicated under new unit ids, ``synth.py``; about 16.5 KB a trial,
so 1.65 GB of JSON for 100,000) is reported the way ``simlab report`` does it: ``build`` (frames,
summary, Parquet and summary.json written) and the terminal report. Each measurement runs in its
own process, for a true peak memory:

* ``as is``: ``simlab.report.build.build`` as it stands (reads the file through
  ``RunStore.iter_raw``: every line in memory, then ``json.loads`` each);
* ``streamed``: the same ``build`` with its frames read by ``frames.read_frames`` (line by line,
  pydantic-core's JSON parser), the one-line change proposed for ``report/build.py``.

Both must give identical derived files; the first is run at a size that fits in memory.

    python bench/bench_report.py                        # 100,000 trials streamed, 10,000 as is
    python bench/bench_report.py --trials 1000 --as-is-trials 1000
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import REPO, save, table, timed, verdict

CHILD = r'''
import io, json, sys, time
sys.path[:0] = [{repo!r}, {bench!r}]
import _common
from pathlib import Path
folder = Path({folder!r})
import simlab.report.build as build_module
from simlab.results.frames import read_frames
if {streamed!r}:
    build_module.build_frames = lambda raws: read_frames(folder / "trials.jsonl")  # raws is never started
from rich.console import Console
from simlab.report.terminal import print_report
wall, cpu = time.perf_counter(), time.process_time()
summary, trials, checks = build_module.build(folder)
print_report(summary, Console(file=io.StringIO(), width=120))
out = {{"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
        "peak_rss_mb": _common.peak_rss_mb(),
        "trials": len(trials), "check_rows": len(checks)}}
print(json.dumps(out))
'''


def report(folder: Path, streamed: bool) -> dict[str, Any]:
    code = CHILD.format(repo=str(REPO), bench=str(REPO / "bench"), folder=str(folder), streamed=streamed)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=folder.parents[1])
    if done.returncode != 0:
        raise SystemExit(f"report failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def derived(folder: Path) -> dict[str, Any]:
    """The derived files, in a comparable form."""
    import pandas as pd

    return {"summary": json.loads((folder / "summary.json").read_text()),
            "results": pd.read_parquet(folder / "results.parquet"), "checks": pd.read_parquet(folder / "checks.parquet")}


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    from pandas.testing import assert_frame_equal

    assert_frame_equal(a["results"], b["results"])
    assert_frame_equal(a["checks"], b["checks"])
    return bool(a["summary"] == b["summary"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10000, help="trials per scenario (10 scenarios)")
    parser.add_argument("--as-is-trials", type=int, default=1000, help="trials per scenario for `as is`")
    args = parser.parse_args()
    import synth

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        root, small = synth.make(args.as_is_trials, "report")
    rows = []
    as_is = {"way": "as is", **report(small, streamed=False)}
    before = derived(small)
    streamed_small = {"way": "streamed", **report(small, streamed=True)}
    identical = same(before, derived(small))
    rows += [as_is, streamed_small]
    big = small
    if args.trials != args.as_is_trials:
        big = root / "transcripts" / f"report-{args.trials}"
        seed = root / "transcripts" / "seed"
        with timed() as made:
            synth.synth_run(seed, big, args.trials)
        print(f"synthetic run of {args.trials * 10} trials written in {made.wall_s:.1f} s "
              f"({(big / 'trials.jsonl').stat().st_size / 1e9:.2f} GB)", flush=True)
        rows.append({"way": "streamed", **report(big, streamed=True)})
    for row in rows:
        row["trials_per_s"] = row["trials"] / row["wall_s"]
    table(rows, ["way", "trials", "check_rows", "wall_s", "cpu_s", "trials_per_s", "peak_rss_mb"])
    top = rows[-1]
    size_gb = (big / "trials.jsonl").stat().st_size / 1e9
    result = {"rows": rows, "identical_outputs": identical, "file_gb": size_gb,
              "targets": {"time_lt_5s": verdict(top["wall_s"], 5.0), "memory_lt_1gb": verdict(top["peak_rss_mb"], 1024)}}
    print(f"\nidentical derived files (as is vs streamed): {identical}")
    print(f"{top['trials']} trials ({size_gb:.2f} GB of JSON): {top['wall_s']:.1f} s (target < 5) "
          f"{result['targets']['time_lt_5s']}, peak {top['peak_rss_mb']:.0f} MB (target < 1,024) "
          f"{result['targets']['memory_lt_1gb']}")
    save("report", result)


if __name__ == "__main__":
    main()
