"""simlab and τ²-bench measured the same way, side by side: CPU per model call, with and without
results saved, and reporting 10,000 stored results.

τ²-bench is not a dependency of simlab: it lives in its own virtual environment (it wants Python
3.12 and an older LiteLLM; ``bench/README.md`` says how it was installed for these figures), and
this script runs it in a child process with that environment's python (``--tau2-python`` or
``SIMLAB_TAU2_PYTHON``). Where that python cannot import ``tau2``, nothing is measured: the script
says so and writes that into ``bench/results/tau2.json``.

Both run their own runner against the same model server, ``fake_server.py`` on 127.0.0.1 at
latency 0, through LiteLLM over HTTP: simlab plays its retail demo (``execute``, as
``bench_latency.py --http-only`` does), τ²-bench its retail domain (``tau2.runner.run_tasks``, its
batch runner, with its ``llm_agent`` and user simulator, tasks 33 and 34: the two whose reward is
the database alone, so no LLM judge is called), and its ``mock`` domain (a database of a few
hundred bytes, where retail's is 2.8 MB: what τ² costs per call when its domain costs nothing). The
fake agent calls one tool and answers on each turn, the fake user stops on its third reply: 8 to 9
model calls a simlab trial, 10 a τ² simulation (τ²'s agent greets with a fixed line, so its user
speaks first). Each measurement is a child process that imports everything and plays one warm-up
conversation first; the figure is that process's CPU time around the run alone (all threads),
divided by the completions the server answered in that time. Rounds alternate τ² and simlab, and
each figure keeps its spread over rounds (the machine is shared: the load average is recorded with
each round).

Reporting: a synthetic run of 10,000 results for each (10 scenarios or tasks × 1,000 trials, copies
of records the run above produced), loaded and summarised by each framework's own path in a fresh
process: simlab's ``build`` and terminal report (as ``bench_report.py``), τ²'s ``Results.load``,
``compute_metrics`` and ``display_metrics`` (what ``tau2 run`` shows at its end). Wall time and
peak resident memory.

    python bench/bench_tau2.py --tau2-python /work/tau2venv/bin/python
    python bench/bench_tau2.py --rounds 1 --sims 10 --report-trials 100     # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from _common import REPO, RESULTS, save, spread, table

BENCH = REPO / "bench"
# τ²'s tasks played, per domain: none has an LLM-judged (NL_ASSERTION) reward, so no judge is called
TAU2_TASKS = {"retail": ["33", "34"], "mock": ["create_task_1", "impossible_task_1"]}
MARK = "BENCH-RESULT "
NOT_INSTALLED = "τ²-bench not installed: not measured"

TAU2_PLAY = r'''
import io, json, sys, time
from pathlib import Path
args = json.loads(sys.argv[1])
sys.path.insert(0, args["bench"])
from fake_server import answered  # imports only the stdlib and fakes.py, not simlab
from tau2.data_model.simulation import TextRunConfig
from tau2.runner import get_tasks, run_tasks

def config(trials):
    llm = {"temperature": 0.0, "api_base": args["url"], "api_key": "bench"}
    return TextRunConfig(domain=args["domain"], agent="llm_agent", llm_agent="openai/bench-agent", llm_args_agent=llm,
                         user="user_simulator", llm_user="openai/bench-user", llm_args_user=dict(llm, temperature=0.7),
                         num_trials=trials, max_concurrency=args["concurrency"], log_level="ERROR")

tasks = get_tasks(args["domain"], task_ids=args["task_ids"])
quiet = io.StringIO()
stdout, sys.stdout = sys.stdout, quiet
try:
    run_tasks(config(1), tasks[:1], console_display=False)  # warm-up: imports, the HTTP client, the first connection
    save_path = Path(args["save"]) if args["save"] else None
    calls = answered(args["url"])
    wall, cpu = time.perf_counter(), time.process_time()
    results = run_tasks(config(args["trials"]), tasks, save_path=save_path, console_display=False)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    calls = answered(args["url"]) - calls
finally:
    sys.stdout = stdout
print("BENCH-RESULT " + json.dumps({"cpu_s": cpu, "wall_s": wall, "calls": calls, "units": len(results.simulations),
      "saved_bytes": save_path.stat().st_size if save_path else None}))
'''

SIMLAB_PLAY = r'''
import asyncio, gc, json, sys, time
args = json.loads(sys.argv[1])
sys.path[:0] = [args["repo"], args["bench"]]
import fakes
from _common import enter, scratch_project
from bench_overhead import NullAppender, _appender, plan_for
from fake_server import answered
from simlab.runner.execute import execute

root = scratch_project("tau2-simlab")
enter(root)

def play(trials, run_id, saved):
    agent, simulator = fakes.http_models(args["url"])
    plan = plan_for(root, -(-trials // 10), args["concurrency"], run_id)
    units = plan.units[:trials]
    appender = _appender(plan) if saved else NullAppender()
    gc.freeze()  # as `simlab run` does before playing
    try:
        calls = answered(args["url"])
        wall, cpu = time.perf_counter(), time.process_time()
        asyncio.run(execute(plan, units, agent, simulator, appender))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        calls = answered(args["url"]) - calls
    finally:
        gc.unfreeze()
    size = (plan.folder / "trials.jsonl").stat().st_size if saved else None
    return {"cpu_s": cpu, "wall_s": wall, "calls": calls, "units": len(units), "saved_bytes": size}

play(1, "warm-up", False)
print("BENCH-RESULT " + json.dumps(play(args["trials"], "measured", args["saved"])))
'''

FLOOR = r'''
import asyncio, json, sys, time
args = json.loads(sys.argv[1])
sys.path.insert(0, args["bench"])
from fake_server import answered
import litellm

TOOL = {"type": "function", "function": {"name": "list_all_product_types", "description": "List product types",
        "parameters": {"type": "object", "properties": {}}}}
MESSAGES = [{"role": "system", "content": "You are a customer service agent. " * 20},
            {"role": "assistant", "content": "Hi! How can I help you today?"},
            {"role": "user", "content": "ok. and what about my refund for order A123, when do I get the money back?"}]
request = dict(model="openai/bench-agent", messages=MESSAGES, tools=[TOOL], api_base=args["url"], api_key="bench",
               temperature=0.0)

async def asynchronous(n):
    for _ in range(n):
        await litellm.acompletion(**request)

def play(n):
    if args["sync"]:
        for _ in range(n):
            litellm.completion(**request)
    else:
        asyncio.run(asynchronous(n))

play(5)  # warm-up: imports, the HTTP client, the first connection
calls = answered(args["url"])
wall, cpu = time.perf_counter(), time.process_time()
play(args["calls"])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print("BENCH-RESULT " + json.dumps({"cpu_s": cpu, "wall_s": wall, "calls": answered(args["url"]) - calls, "units": args["calls"],
      "saved_bytes": None}))
'''

TAU2_REPORT = r'''
import io, json, sys, time
args = json.loads(sys.argv[1])
started = time.perf_counter()
from tau2.data_model.simulation import Results
from tau2.metrics.agent_metrics import compute_metrics, display_metrics
wall, cpu = time.perf_counter(), time.process_time()  # after the imports, as bench_report.py's child
stdout, sys.stdout = sys.stdout, io.StringIO()
try:
    results = Results.load(args["path"])
    loaded = time.perf_counter()
    metrics = compute_metrics(results)
    display_metrics(metrics)
finally:
    sys.stdout = stdout
done = time.perf_counter()
with open("/proc/self/status") as fh:
    peak = next(int(l.split()[1]) / 1024 for l in fh if l.startswith("VmHWM:"))
print("BENCH-RESULT " + json.dumps({"wall_s": done - wall, "cpu_s": time.process_time() - cpu, "peak_rss_mb": peak,
      "import_s": wall - started, "load_s": loaded - wall, "metrics_s": done - loaded,
      "trials": metrics.total_simulations, "pass_hat_1": metrics.pass_hat_ks.get(1)}))
'''


def child(python: str, code: str, args: dict[str, Any], *, cwd: Path | None = None) -> dict[str, Any]:
    """Run ``code`` in a fresh process of ``python``; its figures (the line marked ``MARK``)."""
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONUNBUFFERED="1")
    done = subprocess.run([python, "-c", code, json.dumps(args)], capture_output=True, text=True, env=env,
                          cwd=cwd or REPO)
    found = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode != 0 or not found:
        raise SystemExit(f"a measuring process failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return {**json.loads(found[-1][len(MARK):]), "load_avg_1m": round(os.getloadavg()[0], 2)}


def tau2_version(python: str) -> tuple[str | None, str]:
    """(τ²-bench's version as ``python`` sees it, or None where it cannot import ``tau2``; why not)."""
    try:
        done = subprocess.run([python, "-c", "import importlib.metadata as m, tau2.runner; print(m.version('tau2'))"],
                              capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True"))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{python}: {type(exc).__name__}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python} cannot import tau2: {last[:200]}"
    return done.stdout.strip().splitlines()[-1], ""


def per_call(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """CPU ms per model call over rounds (spread), and what each round played."""
    values = [r["cpu_s"] / r["calls"] * 1e3 for r in rows]
    return {"cpu_ms_per_call": spread(values), "calls_per_unit": rows[0]["calls"] / rows[0]["units"],
            "rounds": rows}


def _said(r: int, name: str, row: dict[str, Any]) -> None:
    print(f"round {r + 1} {name}: {row['cpu_s'] / row['calls'] * 1e3:.2f} ms CPU per call ({row['calls']} calls, "
          f"{row['units']} conversations, load {row['load_avg_1m']})", flush=True)


def tau2_synthetic(source: Path, into: Path, tasks: int, trials: int, tau2_tasks: Path) -> int:
    """A τ² results file of ``tasks`` × ``trials`` simulations: copies of the simulations in
    ``source`` under new ids, spread over the first ``tasks`` retail tasks (their real definitions).
    Returns its size in bytes."""
    run = json.loads(source.read_text())
    seeds = run["simulations"]
    run["tasks"] = json.loads(tau2_tasks.read_text())[:tasks]
    run["info"]["num_trials"] = trials
    simulations = []
    for t, task in enumerate(run["tasks"]):
        for trial in range(trials):
            sim = dict(seeds[(t * trials + trial) % len(seeds)], id=str(uuid.uuid4()), task_id=task["id"], trial=trial)
            simulations.append(sim)
    run["simulations"] = simulations
    into.parent.mkdir(parents=True, exist_ok=True)
    into.write_text(json.dumps(run, indent=2))
    return into.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tau2-python", default=os.environ.get("SIMLAB_TAU2_PYTHON", ""),
                        help="python of a virtual environment where tau2 is installed (env SIMLAB_TAU2_PYTHON)")
    parser.add_argument("--tau2-commit", default=os.environ.get("SIMLAB_TAU2_COMMIT", ""),
                        help="the τ²-bench commit installed, recorded with the figures (env SIMLAB_TAU2_COMMIT)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of τ² and simlab (default 3)")
    parser.add_argument("--sims", type=int, default=16, help="simulations (τ²) and trials (simlab) per run (default 16)")
    parser.add_argument("--concurrency", type=int, default=4, help="conversations in flight, both (default 4)")
    parser.add_argument("--report-trials", type=int, default=1000,
                        help="trials per scenario/task of the synthetic runs reported, 10 of each (default 1,000)")
    parser.add_argument("--report-rounds", type=int, default=2, help="alternating rounds of reporting (default 2)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where tau2.json goes (default bench/results)")
    args = parser.parse_args()
    version, why = tau2_version(args.tau2_python) if args.tau2_python else (None, "no --tau2-python or SIMLAB_TAU2_PYTHON given")
    if version is None:
        print(f"{NOT_INSTALLED} ({why})")
        save("tau2", {"measured": False, "reason": f"{NOT_INSTALLED} ({why})"}, args.results_dir)
        return
    from fake_server import start_server

    load_at_start = [round(v, 2) for v in os.getloadavg()]
    scratch = Path(tempfile.mkdtemp(prefix="simlab-bench-tau2-"))
    proc, url = start_server(0.0)
    common = {"url": url, "concurrency": args.concurrency, "trials": args.sims, "repo": str(REPO), "bench": str(BENCH)}
    runs: dict[str, list[dict[str, Any]]] = {}
    tau2_saved = scratch / "tau2-results.json"
    try:
        for r in range(args.rounds):
            for saved in (False, True):
                suffix = ", saved" if saved else ""
                for domain, task_ids in TAU2_TASKS.items():
                    path = scratch / f"tau2-{domain}-{r}-{int(saved)}" / "results.json"
                    name = f"tau2 {domain}{suffix}"
                    runs.setdefault(name, []).append(child(args.tau2_python, TAU2_PLAY, {
                        **common, "domain": domain, "task_ids": task_ids, "trials": args.sims // len(task_ids),
                        "save": str(path) if saved else None}))
                    _said(r, name, runs[name][-1])
                    if saved and domain == "retail":
                        tau2_saved = path
                name = f"simlab{suffix}"
                runs.setdefault(name, []).append(child(sys.executable, SIMLAB_PLAY, {**common, "saved": saved}))
                _said(r, name, runs[name][-1])
            # LiteLLM's own floor, the same request over and over: as τ² calls it (``completion``, its venv)
            # and as simlab does (``acompletion``, simlab's venv); the same LiteLLM version in both
            for name, python, sync in (("LiteLLM floor, completion (τ²'s venv)", args.tau2_python, True),
                                       ("LiteLLM floor, acompletion (simlab's venv)", sys.executable, False)):
                runs.setdefault(name, []).append(child(python, FLOOR, {**common, "sync": sync, "calls": 100}))
                _said(r, name, runs[name][-1])
    finally:
        proc.terminate()
        proc.wait()
    play = {name: per_call(rows) for name, rows in runs.items()}
    print()
    table([{"who": name, "calls/conversation": p["calls_per_unit"], "min": p["cpu_ms_per_call"]["min"],
            "median": p["cpu_ms_per_call"]["median"], "max": p["cpu_ms_per_call"]["max"]}
           for name, p in play.items()], ["who", "calls/conversation", "min", "median", "max"])

    reporting = report_both(args, scratch, tau2_saved)
    result = {"measured": True, "tau2_version": version, "tau2_commit": args.tau2_commit or None,
              "tau2_python": args.tau2_python, "tau2_tasks": TAU2_TASKS, "concurrency": args.concurrency,
              "conversations_per_run": args.sims, "model_server": "bench/fake_server.py, latency 0, LiteLLM over HTTP",
              "play": play, "reporting": reporting, "load_avg_at_start": load_at_start}
    save("tau2", result, args.results_dir)


def report_both(args: argparse.Namespace, scratch: Path, tau2_seed: Path) -> dict[str, Any]:
    """Reporting 10 × ``--report-trials`` stored results, τ² and simlab alternately."""
    import contextlib
    import io

    import synth
    from bench_report import report

    trials = args.report_trials
    tau2_file = scratch / "tau2-synthetic" / "results.json"
    tau2_tasks = Path(subprocess.run(
        [args.tau2_python, "-c", "from tau2.domains.retail.utils import RETAIL_DATA_DIR as d; print(d)"],
        capture_output=True, text=True, check=True, env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True"),
    ).stdout.strip().splitlines()[-1]) / "tasks.json"
    tau2_bytes = tau2_synthetic(tau2_seed, tau2_file, 10, trials, tau2_tasks)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        _, simlab_folder = synth.make(trials, "tau2-report")
    simlab_bytes = (simlab_folder / "trials.jsonl").stat().st_size
    rows: dict[str, list[dict[str, Any]]] = {"tau2": [], "simlab": []}
    for r in range(args.report_rounds):
        rows["tau2"].append(child(args.tau2_python, TAU2_REPORT, {"path": str(tau2_file)}))
        rows["simlab"].append({**report(simlab_folder, "index", 1), "load_avg_1m": round(os.getloadavg()[0], 2)})
        for name in ("tau2", "simlab"):
            row = rows[name][-1]
            print(f"report round {r + 1} {name}: {row['trials']} results in {row['wall_s']:.2f} s, "
                  f"peak {row['peak_rss_mb']:.0f} MB (load {row['load_avg_1m']})", flush=True)
    out: dict[str, Any] = {}
    for name, found in rows.items():
        size = tau2_bytes if name == "tau2" else simlab_bytes
        out[name] = {"results": found[0]["trials"], "file_mb": round(size / 2**20, 1),
                     "kb_per_result": round(size / found[0]["trials"] / 1024, 1),
                     "wall_s": spread([r["wall_s"] for r in found]),
                     "peak_rss_mb": spread([r["peak_rss_mb"] for r in found]), "rounds": found}
    print()
    table([{"who": n, "results": o["results"], "file_mb": o["file_mb"], "wall_s": o["wall_s"]["median"],
            "peak_rss_mb": o["peak_rss_mb"]["median"]} for n, o in out.items()],
          ["who", "results", "file_mb", "wall_s", "peak_rss_mb"])
    return out


if __name__ == "__main__":
    main()
