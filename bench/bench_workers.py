"""Target 3: every core. ``simlab run --workers N`` through LiteLLM when CPU-bound.

The CLI itself (``simlab.cli.main``, in this process so that the fake LiteLLM provider is
registered and the forked workers inherit it) plays the retail demo with an LLM agent and an LLM
user on instant fakes through the real ``litellm.acompletion``: pure CPU. Each worker count runs
twice, alternating, and the better run counts (the machine is shared). The fixed part of a
command (planning, the report at the end) is timed by re-running a finished run (nothing left to
play) and subtracted, so the figure is the playing throughput. Target: 2 workers ≥ 1.8× one.

    python bench/bench_workers.py                   # 30 trials per scenario (300), workers 1 and 2
    python bench/bench_workers.py --trials 10 --workers 1 2 3
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from typing import Any

import fakes
from _common import enter, save, scratch_project, table, timed, verdict


def simlab_run(run_id: str, trials: int, workers: int, concurrency: int, agent: str, user: str) -> Any:
    from simlab.cli.main import main

    argv = ["run", "--run-id", run_id, "--agent", agent, "--simulator", user, "--trials", str(trials),
            "--concurrency", str(concurrency), "--workers", str(workers), "--no-progress"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err, timed() as t:
        code = main(argv)
    if code != 0:
        raise SystemExit(f"simlab run exited {code}: {err.getvalue()[-2000:]}")
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=30, help="trials per scenario (10 scenarios)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=16, help="total trials in flight")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    root = scratch_project("workers")
    enter(root)
    agent, user = fakes.register_litellm_fakes()
    from simlab.llm.lazy import load_litellm

    load_litellm()  # imported once here, as `simlab run` would on its first model call
    simlab_run("warm-up", 1, 1, 4, agent, user)
    total = args.trials * 10
    best: dict[int, dict[str, Any]] = {}
    for attempt in range(args.repeat):
        for workers in args.workers:
            run_id = f"w{workers}-{attempt}"
            t = simlab_run(run_id, args.trials, workers, args.concurrency, agent, user)
            fixed = simlab_run(run_id, args.trials, workers, args.concurrency, agent, user)  # nothing left
            play_s = max(1e-6, t.wall_s - fixed.wall_s)
            row = {"workers": workers, "trials": total, "wall_s": round(t.wall_s, 2), "fixed_s": round(fixed.wall_s, 2),
                   "play_s": round(play_s, 2), "trials_per_s": total / play_s,
                   "model_calls_per_s": total * fakes.CALLS_PER_TRIAL / play_s,
                   "cpu_s": round(t.cpu_s - fixed.cpu_s, 2), "load_avg_1m": round(os.getloadavg()[0], 2)}
            print(f"workers {workers} (run {attempt + 1}): {row['trials_per_s']:.1f} trials/s, "
                  f"{row['model_calls_per_s']:.0f} model calls/s", flush=True)
            if workers not in best or row["trials_per_s"] > best[workers]["trials_per_s"]:
                best[workers] = row
    rows = [best[w] for w in args.workers]
    one = best[args.workers[0]]["trials_per_s"]
    for row in rows:
        row["speed_up"] = row["trials_per_s"] / one
    print()
    table(rows, ["workers", "trials", "wall_s", "fixed_s", "play_s", "trials_per_s", "model_calls_per_s", "cpu_s",
                 "speed_up", "load_avg_1m"])
    result: dict[str, Any] = {"trials_per_scenario": args.trials, "concurrency": args.concurrency, "runs": rows,
                              "targets": {}}
    if 2 in best and 1 in best:
        result["targets"]["two_workers_ge_1_8x"] = verdict(best[2]["speed_up"], 1.8, below=False)
        print(f"\n2 workers: {best[2]['speed_up']:.2f}× one process (target ≥ 1.8×) "
              f"{result['targets']['two_workers_ge_1_8x']}")
    save("workers", result)


if __name__ == "__main__":
    main()
