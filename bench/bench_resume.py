"""Target 7: resume: planning a resumed run of 100,000 units of which 99,000 are done (< 2 s).

A synthetic run folder holds 99,000 finished trials (9,900 of each of the 10 demo scenarios,
about 1.6 GB) under a manifest planning 10,000 each. The measurement is exactly what
``simlab run --run-id … --trials 10000`` does before it plays anything: load and check the
specs, plan 100,000 units with their seeds, take the run's lock, check the pins against
``run.json``, repair a torn tail, read which units are done, and list the 1,000 left. For
comparison, ``RunStore.finished_units`` (every line parsed as JSON) is timed on the same file. Each
is a fresh process; the two are interleaved over ``--rounds`` rounds (3), after one warm-up, and
recorded as their spread; the median counts.

    python bench/bench_resume.py                       # 100,000 units, 99,000 done
    python bench/bench_resume.py --trials 1000 --done 990
    python bench/bench_resume.py --quick
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import REPO, Figures, add_rounds, interleaved, save, table, timed, verdict

CHILD = r'''
import json, sys, time
sys.path[:0] = [{repo!r}, {bench!r}]
import _common
from pathlib import Path
import os
os.chdir({root!r}); sys.path.insert(0, {root!r})
wall, cpu = time.perf_counter(), time.process_time()
if {old!r}:
    from simlab.runner.store import RunStore
    done = RunStore(Path({folder!r})).finished_units()
    out = {{"done": len(done)}}
else:
    from simlab.runner.batch import write_or_check_manifest as _write_or_check_manifest
    from simlab.runner.plan import remaining
    from simlab.runner.store import finished_unit_ids
    from simlab.runner.prepare import RunRequest, prepare
    from simlab.runner.store import RunStore
    plan = prepare(RunRequest(root=Path("."), trials={trials}, run_id={run_id!r}, command=["bench_resume"]))
    store = RunStore(plan.folder)
    store.lock()
    try:
        _write_or_check_manifest(store, plan, force=False)
        store.repair_torn_tail()
        todo = remaining(plan.units, finished_unit_ids(store.trials_path))
    finally:
        store.unlock()
    out = {{"units": len(plan.units), "todo": len(todo)}}
out.update(wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu,
           peak_rss_mb=_common.peak_rss_mb())
print(json.dumps(out))
'''


def child(root: Path, folder: Path, trials: int, old: bool, timeout: float) -> dict[str, Any]:
    code = CHILD.format(repo=str(REPO), bench=str(REPO / "bench"), root=str(root), folder=str(folder), trials=trials, run_id=folder.name, old=old)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timed_out_after_s": timeout}
    if done.returncode != 0:
        raise SystemExit(f"failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10000, help="planned trials per scenario (10 scenarios)")
    parser.add_argument("--done", type=int, default=9900, help="finished trials per scenario")
    parser.add_argument("--old-timeout", type=float, default=120.0, help="give up on finished_units after this")
    parser.add_argument("--quick", action="store_true", help="1,000 units with 990 done, 2 rounds: a smoke test")
    add_rounds(parser, 3)
    args = parser.parse_args()
    if args.quick:
        args.trials, args.done, args.rounds = 100, 99, 2
    import synth
    from _common import scratch_project

    root = scratch_project("resume")
    seed = synth.seed_run(root)
    folder = root / "transcripts" / "resume"
    with timed() as made:
        written = synth.synth_run(seed, folder, args.done, planned=args.trials)
    size_gb = (folder / "trials.jsonl").stat().st_size / 1e9
    print(f"{written} finished trials written in {made.wall_s:.1f} s ({size_gb:.2f} GB)", flush=True)
    child(root, folder, args.trials, False, 600)  # warm the page cache and imports once
    found = interleaved(args.rounds, [("plan", lambda: child(root, folder, args.trials, False, 600)),
                                      ("old", lambda: child(root, folder, args.trials, True, args.old_timeout))])
    for plan in found["plan"]:
        assert plan["todo"] == (args.trials - args.done) * 10, plan
    figures = Figures()
    wall = figures.add("resume planning (prepare, lock, pins, scan, remaining)", [r["wall_s"] for r in found["plan"]],
                       "s", digits=2)
    peak = figures.add("resume planning: peak memory", [r["peak_rss_mb"] for r in found["plan"]], "MB", digits=0)
    old_done = [r for r in found["old"] if "wall_s" in r]
    if old_done:
        figures.add("for comparison: RunStore.finished_units()", [r["wall_s"] for r in old_done], "s", digits=2)
    if len(old_done) < len(found["old"]):
        print(f"RunStore.finished_units(): {len(found['old']) - len(old_done)} of {len(found['old'])} rounds gave up "
              f"after {args.old_timeout:.0f} s")
    rows = [{"step": f"resume planning, round {i + 1}", **r} for i, r in enumerate(found["plan"])]
    rows += [{"step": f"RunStore.finished_units(), round {i + 1}", **r} for i, r in enumerate(found["old"])]
    print()
    table(rows, ["step", "units", "todo", "done", "wall_s", "cpu_s", "peak_rss_mb", "timed_out_after_s"])
    result = {"units": found["plan"][0]["units"], "done": written, "file_gb": size_gb, "rounds": args.rounds,
              "figures": figures.as_dict(), "rows": rows, "targets": {"resume_lt_2s": verdict(wall["median"], 2.0)}}
    print(f"\nplanning the resume of {result['units']} units ({written} done): {wall['median']:.2f} s, median of "
          f"{args.rounds} (target < 2) {result['targets']['resume_lt_2s']}; peak {peak['median']:.0f} MB")
    save("resume", result)


if __name__ == "__main__":
    main()
