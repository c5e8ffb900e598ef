"""Before and after: the report (``bench_report.py``'s child) and the viewer's first screen
(``bench_view.py``'s child) of one tree against another, interleaved, on the same runs.

A change to a reading path (issue 27: the typed head everywhere above storage, one incremental
reader) must not make either slower. ``--base`` is a checkout of the earlier commit (without
its own venv: ``git archive <commit> | tar -x -C DIR``); this tree is the other. Each round
measures, in fresh processes and in turn: the report of ``--trials`` trials with the index of
heads (what a run leaves) and without it (the first report builds it), then the first screen of
``simlab view`` on ``--view-trials`` trials, each way with the base tree and then this one.
``--big`` adds the report of that many trials (with the index), ``--big-rounds`` times.

The runs are written once, by this tree (the file format is the same on both sides), and each
report must give the same ``summary.json`` and ``results.parquet`` from both trees.

    python bench/bench_report_ab.py --base /tmp/base --rounds 3 [--big 100000 --big-rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, Figures, add_rounds, save

from simlab.runner.heads_index import HEADS

HERE = Path(__file__).resolve().parent


def report(tree: Path, folder: Path, *, index: bool) -> dict[str, Any]:
    """``bench_report.py``'s child, run with ``tree``'s simlab."""
    from bench_report import CHILD

    if not index:
        (folder / HEADS).unlink(missing_ok=True)
    code = CHILD.format(repo=str(tree), bench=str(tree / "bench"), folder=str(folder), checks=False)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=folder.parents[1],
                          env={**os.environ, "PYTHONPATH": str(tree)})
    if done.returncode != 0:
        raise SystemExit(f"report failed ({tree}): {done.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["derived"] = {"summary": (folder / "summary.json").read_text(), "results": (folder / "results.parquet")
                      .read_bytes()}
    return out


VIEW = r"""
import time
import asyncio, json, sys
from simlab.specs import load_config          # what `simlab view` imports first
from simlab.tui import make_app

async def main(root, run_id, started):
    app = make_app(root, run_id, poll_interval=None)
    out = {"imports_s": time.perf_counter() - started}
    async with app.run_test(size=(100, 30)):
        while app.first_screen_at is None:
            await asyncio.sleep(0.05)  # coarse: a busy poll would steal the indexing thread's time
        out["first_screen_s"] = app.first_screen_at - started
        index = next(iter(app.indexes.values()))
        while app._busy is not None or app._queue:
            await app.workers.wait_for_complete()
            await asyncio.sleep(0.05)
        out["figures_complete_s"] = index.completed_at - started
        out["trials_indexed"] = len(index.rows)
    print(json.dumps(out))

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
"""


def view(tree: Path, root: Path) -> dict[str, Any]:
    """``bench_view.py``'s child up to every trial indexed (its key presses after that are left
    out), run with ``tree``'s simlab (its cwd, first on ``sys.path``)."""
    import time

    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", VIEW, str(root), "bench", repr(started)], cwd=tree,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(tree)})
    if done.returncode != 0:
        raise SystemExit(f"view failed ({tree}): {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


SAME_BYTES = [True]  # every pair of outputs byte for byte the same (one pyarrow writes both)


def same_outputs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same summary and results table from both trees, as data (and ``SAME_BYTES``)."""
    SAME_BYTES[0] = SAME_BYTES[0] and a["derived"] == b["derived"]
    import pandas as pd

    summaries = [json.loads(x["derived"]["summary"]) for x in (a, b)]
    frames = [pd.read_parquet(io.BytesIO(x["derived"]["results"])) for x in (a, b)]
    try:
        pd.testing.assert_frame_equal(*frames)
    except AssertionError:
        return False
    return bool(summaries[0] == summaries[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the earlier commit")
    parser.add_argument("--trials", type=int, default=1000, help="report: trials per scenario (10 scenarios)")
    parser.add_argument("--view-trials", type=int, default=10_000, help="viewer: trials (100 per scenario)")
    parser.add_argument("--big", type=int, default=0, help="also the report of this many trials (0: not)")
    parser.add_argument("--big-rounds", type=int, default=1)
    parser.add_argument("--name", default="report_ab", help="the results file: bench/results/NAME.json")
    add_rounds(parser, 3)
    args = parser.parse_args()
    base, here = args.base.resolve(), REPO
    trees = {"before": base, "after": here}
    import synth
    from bench_view import write_big_run

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        root, small = synth.make(args.trials, "report-ab")
    view_root = Path(tempfile.mkdtemp(prefix="simlab-bench-view-ab-"))
    write_big_run(view_root / "bench", args.view_trials)
    figures, identical = Figures(), True
    found: dict[str, list[float]] = {}

    def keep(name: str, value: float) -> None:
        found.setdefault(name, []).append(value)

    trials = small_n = 0
    for i in range(args.rounds):
        outputs = {}
        for way, index in (("index", True), ("index missing", False)):
            for side, tree in trees.items():
                got = report(tree, small, index=index)
                small_n = got["trials"]
                for key in ("wall_s", "cpu_s", "peak_rss_mb", "modes_s"):
                    keep(f"report {way} {side} {key}", got[key])
                outputs[(way, side)] = got
        identical = identical and all(same_outputs(outputs[(w, "before")], outputs[(w, "after")])
                                      for w in ("index", "index missing"))
        for side, tree in trees.items():
            got = view(tree, view_root)
            trials = got["trials_indexed"]
            for key in ("first_screen_s", "figures_complete_s", "imports_s"):
                keep(f"view {side} {key}", got[key])
        print(f"round {i + 1} of {args.rounds} done", flush=True)
    if args.big:
        big = root / "transcripts" / f"report-ab-{args.big}"
        synth.synth_run(root / "transcripts" / "seed", big, args.big // 10)
        for _ in range(args.big_rounds):
            outputs = {}
            for side, tree in trees.items():
                got = report(tree, big, index=True)
                for key in ("wall_s", "cpu_s", "peak_rss_mb", "modes_s"):
                    keep(f"report big {side} {key}", got[key])
                outputs[side] = got
            identical = identical and same_outputs(outputs["before"], outputs["after"])
            print("big round done", flush=True)
    for name, values in found.items():
        unit = "MB" if name.endswith("_mb") else "s"
        figures.add(name, values, unit)
    ratios = {}
    for name in found:
        if " after " in name:
            before = figures.median(name.replace(" after ", " before "))
            ratios[name.replace(" after ", " after/before ")] = round(figures.median(name) / before, 3)
    for name, ratio in ratios.items():
        print(f"{name}: {ratio}")
    print(f"same summary.json and results.parquet from both trees: {identical}; byte for byte: {SAME_BYTES[0]}")
    save(args.name, {"base": str(base), "rounds": args.rounds, "report_trials": small_n, "view_trials": trials,
                       "big_trials": args.big, "big_rounds": args.big_rounds if args.big else 0,
                       "identical_outputs": identical,
                       "byte_identical_outputs": SAME_BYTES[0], "figures": figures.as_dict(), "after_over_before": ratios})


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
