"""What simlab's retry engine costs per call, for one or more source trees side by side.

Two paths, each in a fresh process per tree, the trees interleaved over ``--rounds`` rounds:

- ``success``: a call that succeeds at once, through the real path (``bench_litellm.py``'s ``now``
  variant: ``LiteLLMModel.chat`` → LiteLLM → HTTP → ``fake_server.py``);
- ``one retry``: a call whose first attempt fails (a 503) and whose second succeeds, through the
  fake provider (``register_fake``), the back-off sleep replaced so that nothing waits.

Each figure: the least CPU ms per call over 5 blocks, and the exact count of Python function calls
per call (cProfile). ``--tree`` compares another checkout's ``simlab`` (a copy of an older commit:
``git archive <commit> simlab | tar -x -C /tmp/old``) with this one:

    python bench/bench_retry.py                          # this tree only
    python bench/bench_retry.py --tree /tmp/old --rounds 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

import bench_litellm
from _common import REPO, machine, save, spread, table

RETRIED = r'''
import asyncio, cProfile, gc, json, os, pstats, sys, time
sys.path[:0] = [{repo!r}]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from simlab.llm import LiteLLMModel, register_fake, retry
from simlab.llm.lazy import load_litellm
litellm = load_litellm()

async def no_wait(seconds):
    return None

retry.backoff_sleep = no_wait
attempts = {{"n": 0}}

def reply(messages, tools):
    attempts["n"] += 1
    if attempts["n"] % 2:
        raise litellm.ServiceUnavailableError("busy", model="m", llm_provider="simlab-fake")
    return "ok"

model = LiteLLMModel(register_fake("bench-retry", reply), role="agent")

async def calls(n):
    for _ in range(n):
        result = await model.chat([{{"role": "user", "content": "hi"}}])
        assert result.usage.retries == 1, result.usage

async def measure():
    await calls(20)
    gc.collect(); gc.freeze()
    best = float("inf")
    for _ in range(5):
        t = time.process_time(); await calls(max(1, {calls} // 5))
        best = min(best, (time.process_time() - t) / max(1, {calls} // 5) * 1e3)
    profile = cProfile.Profile(); profile.enable(); await calls(50); profile.disable()
    return {{"cpu_ms": best, "python_calls": pstats.Stats(profile).total_calls / 50}}

print(json.dumps(asyncio.run(measure())))
'''


def child(code: str, cwd: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(path: str, tree: str, calls: int) -> dict[str, Any]:
    if path == "success":
        code = bench_litellm.CHILD.format(repo=tree, bench=str(REPO / "bench"), setting="", calls=calls)
    else:
        code = RETRIED.format(repo=tree, calls=calls)
    return child(code, tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", default=[],
                        help="another folder holding simlab/ to measure beside this tree (repeatable)")
    parser.add_argument("--calls", type=int, default=300, help="calls per path, tree and round (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    args = parser.parse_args()
    trees = [*args.tree, str(REPO)]
    before = machine()
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        for path in ("success", "one retry"):
            for tree in trees if r % 2 == 0 else list(reversed(trees)):
                result = measure(path, tree, args.calls)
                runs.setdefault((path, tree), []).append(result)
                print(f"round {r + 1} {path} {tree}: {result}", flush=True)
    rows = []
    for (path, tree), results in runs.items():
        good = [x for x in results if "error" not in x]
        if not good:
            rows.append({"path": path, "tree": tree, "error": results[0]["error"]})
            continue
        cpu, calls = spread([x["cpu_ms"] for x in good]), spread([x["python_calls"] for x in good])
        rows.append({"path": path, "tree": tree, "cpu_ms": cpu, "cpu_ms_median": cpu["median"],
                     "cpu_ms_min": cpu["min"], "cpu_ms_max": cpu["max"], "python_calls": calls,
                     "python_calls_median": calls["median"]})
    table(rows, ["path", "tree", "cpu_ms_median", "cpu_ms_min", "cpu_ms_max", "python_calls_median", "error"])
    save("retry_engine", {"machine_before": before, "calls_per_round": args.calls, "rounds": args.rounds,
                          "rows": rows})


if __name__ == "__main__":
    main()
