"""Target 3: every core. ``simlab run --workers N`` through the real path, CPU-bound.

The CLI itself (``simlab.cli.main``) plays the retail demo with an LLM agent and an LLM user. The
real path: LiteLLM over HTTP to ``fake_server.py`` (a child process on 127.0.0.1 answering at once,
latency 0: pure CPU), configured as a user would point a run at a local server: the scratch
project's ``simlab.yaml`` names ``openai/bench-agent`` and ``openai/bench-user`` with ``api_base``
and ``api_key_env``. The second figure, the fake LiteLLM provider (``simlab-fake/…``: the real
``litellm.acompletion`` with no transport), is passed on the command line as whole mappings.

The CLI runs in this process, so that LiteLLM is imported once (as a long run pays it once) and the
forked workers inherit it and the fake provider. Rounds are interleaved (each way once per round, in
turn). The fixed part of a command (planning, the report at the end) is timed by re-running the
finished run (nothing left to play) and subtracted, so the figure is the playing throughput. The
speed-up is taken within a round (workers 2 over workers 1 of the same round), and its spread over
rounds is recorded. Target: 2 workers ≥ 1.8× one, through HTTP.

``--workers auto`` (``runner/workers.auto_workers``) is run beside them, at the same concurrency and
at ``2 × TRIALS_PER_PROCESS``: what it chose is read from the command's own note, and its throughput
recorded. The fake server's CPU over each run is read from ``/proc`` (it shares the cores).

    python bench/bench_workers.py                       # 30 trials per scenario (300), 3 rounds
    python bench/bench_workers.py --quick               # 3 per scenario, 2 rounds: a smoke test
    python bench/bench_workers.py --trials 10 --workers 1 2 3 --no-fake
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

import fakes
from _common import Figures, add_rounds, enter, interleaved, save, scratch_project, table, timed, verdict

HTTP_CONFIG = """\
# bench_workers: the demo project pointed at bench/fake_server.py, as a user points a run at a local server
agent: {{model: openai/bench-agent, api_base: "{url}", api_key_env: {key}, temperature: 0}}
simulator: {{model: openai/bench-user, api_base: "{url}", api_key_env: {key}, temperature: 0.7}}
scenarios: [scenarios]
personas: personas
allow_unjudged: [rubric]
"""
_AUTO_NOTE = re.compile(r"; (\d+) workers? \(auto\)")


def simlab_run(argv: list[str]) -> tuple[Any, str]:
    """``simlab <argv>`` in this process: (timing, its stderr)."""
    from simlab.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err, timed() as t:
        code = main(argv)
    if code != 0:
        raise SystemExit(f"simlab {' '.join(argv)} exited {code}: {err.getvalue()[-2000:]}")
    return t, err.getvalue()


def cpu_of(pid: int) -> float:
    """CPU seconds a process has used (``/proc/<pid>/stat``: utime + stime); 0 off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Way:
    """One way of running: a path (http or fake), a worker count (or auto) and a concurrency."""

    def __init__(self, path: str, workers: int | str, concurrency: int, trials: int, server_pid: int | None,
                 prefix: str = ""):
        self.path, self.workers, self.concurrency, self.trials = path, workers, concurrency, trials
        self.server_pid = server_pid if path == "http" else None
        self.name = (f"{prefix}{path}, workers {workers}"
                     + (f", concurrency {concurrency}" if workers == "auto" else ""))
        self.runs = 0

    def argv(self, run_id: str) -> list[str]:
        argv = ["run", "--run-id", run_id, "--trials", str(self.trials), "--concurrency", str(self.concurrency),
                "--workers", str(self.workers), "--no-progress"]
        if self.path == "fake":  # whole mappings: a model flag alone would keep simlab.yaml's api_base
            argv += ["--agent", "{model: simlab-fake/bench-agent, temperature: 0}",
                     "--simulator", "{model: simlab-fake/bench-user, temperature: 0.7}"]
        return [*argv, "--allow-same-family"]

    def __call__(self) -> dict[str, Any]:
        self.runs += 1
        run_id = re.sub(r"[^a-z0-9]+", "-", f"{self.name}-{self.runs}")
        server0 = cpu_of(self.server_pid) if self.server_pid else 0.0
        t, err = simlab_run(self.argv(run_id))
        server_cpu = cpu_of(self.server_pid) - server0 if self.server_pid else None
        fixed, _ = simlab_run(self.argv(run_id))  # nothing left to play: planning and the report
        chosen = _AUTO_NOTE.search(err)
        play_s = max(1e-6, t.wall_s - fixed.wall_s)
        total = self.trials * 10
        return {"way": self.name, "path": self.path, "workers": self.workers, "concurrency": self.concurrency,
                "processes": int(chosen.group(1)) if chosen else self.workers, "trials": total,
                "wall_s": round(t.wall_s, 2), "fixed_s": round(fixed.wall_s, 2), "play_s": round(play_s, 2),
                "trials_per_s": total / play_s, "model_calls_per_s": total * fakes.CALLS_PER_TRIAL / play_s,
                "cpu_s": round(t.cpu_s - fixed.cpu_s, 2),
                "server_cpu_share": None if server_cpu is None else round(server_cpu / t.wall_s, 2),
                "load_avg_1m": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=30, help="trials per scenario (10 scenarios)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=16, help="total trials in flight")
    parser.add_argument("--no-fake", action="store_true", help="only the HTTP path (no fake-provider figure)")
    parser.add_argument("--no-auto", action="store_true", help="leave out --workers auto")
    parser.add_argument("--quick", action="store_true", help="3 trials per scenario, 2 rounds: a smoke test")
    add_rounds(parser, 3)
    args = parser.parse_args()
    if args.quick:
        args.trials, args.rounds = 3, 2
    from fake_server import start_server

    from simlab.runner.workers import TRIALS_PER_PROCESS, auto_workers, usable_cpus

    root = scratch_project("workers")
    enter(root)
    fakes.register_litellm_fakes()
    os.environ.setdefault(fakes.HTTP_KEY_ENV, "bench")  # the fake server takes any key
    proc, url = start_server(0.0)
    try:
        (root / "simlab.yaml").write_text(HTTP_CONFIG.format(url=url, key=fakes.HTTP_KEY_ENV))
        from simlab.llm.lazy import load_litellm

        load_litellm()  # imported once here, as `simlab run` would on its first model call
        ways = [Way("http", w, args.concurrency, args.trials, proc.pid) for w in args.workers]
        if not args.no_auto:
            ways += [Way("http", "auto", c, args.trials, proc.pid)
                     for c in dict.fromkeys([args.concurrency, 2 * TRIALS_PER_PROCESS])]
        if not args.no_fake:
            ways += [Way("fake", w, args.concurrency, args.trials, None) for w in args.workers]
        for way in ways:  # warm-up, not counted: first calls connect, build LiteLLM's caches, fork once
            if way.workers in args.workers[:2]:
                Way(way.path, way.workers, way.concurrency, 1, proc.pid, prefix="warm-up ")()

        def progress(i: int, found: dict[str, list[dict[str, Any]]]) -> None:
            print(f"round {i + 1}: " + ", ".join(f"{n} {rows[-1]['trials_per_s']:.1f}" for n, rows in found.items())
                  + " trials/s", flush=True)

        found = interleaved(args.rounds, [(way.name, way) for way in ways], after_round=progress)
    finally:
        proc.terminate()
        proc.wait()
    figures = Figures()
    print()
    base = args.workers[0]
    for path in ("http", "fake"):
        for way in (w for w in ways if w.path == path):
            figures.add(f"{way.name}: trials/s", [r["trials_per_s"] for r in found[way.name]], "trials/s", digits=1)
            if way.workers == "auto":
                print(f"  auto chose {sorted({r['processes'] for r in found[way.name]})} process(es) "
                      f"(concurrency {way.concurrency}, {usable_cpus()} usable cores, {TRIALS_PER_PROCESS} trials in "
                      f"flight per process: auto_workers gives {auto_workers(way.concurrency, way.trials * 10)})")
        ones = found.get(f"{path}, workers {base}")
        for way in (w for w in ways if w.path == path and w.workers != base and ones):
            assert ones is not None
            figures.add(f"{way.name}: speed-up over {base}",
                        [r["trials_per_s"] / one["trials_per_s"] for r, one in zip(found[way.name], ones)], "×",
                        digits=2)
    rows = [r for way in ways for r in found[way.name]]
    print()
    table(rows, ["way", "processes", "trials", "wall_s", "fixed_s", "play_s", "trials_per_s", "model_calls_per_s",
                 "cpu_s", "server_cpu_share", "load_avg_1m"])
    result: dict[str, Any] = {"trials_per_scenario": args.trials, "concurrency": args.concurrency,
                              "rounds": args.rounds, "usable_cpus": usable_cpus(),
                              "trials_per_process_for_auto": TRIALS_PER_PROCESS, "figures": figures.as_dict(),
                              "runs": rows, "targets": {}}
    speed_up = f"http, workers 2: speed-up over {base}"
    if base == 1 and speed_up in result["figures"]:
        median = figures.median(speed_up)
        result["targets"]["http_two_workers_ge_1_8x"] = verdict(median, 1.8, below=False)
        print(f"\nthrough HTTP, 2 workers: {median:.2f}× one process, median of {args.rounds} rounds (target ≥ 1.8×) "
              f"{result['targets']['http_two_workers_ge_1_8x']}")
    save("workers", result)


if __name__ == "__main__":
    main()
