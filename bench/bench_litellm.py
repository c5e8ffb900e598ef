"""What one model call costs in CPU through the real path, and what each of simlab's savings on
LiteLLM's per-call work is worth.

The path: ``LiteLLMModel.chat`` → ``litellm.acompletion`` → LiteLLM's OpenAI client → HTTP →
``fake_server.py`` (a child process, latency 0, so its CPU is not counted) with a representative
agent request (the retail policy as system prompt, three turns with tool calls, the ten retail
tools). Each variant runs in a fresh process; variants are interleaved over ``--rounds`` rounds,
because the machine is shared. A round's figure is the least CPU per call over 5 blocks of
calls (the least disturbed block). Two figures per variant:

- CPU ms per call (spread over rounds): what a run pays, but noisy on a shared VM;
- Python function calls per call (cProfile over 100 calls, exact): whether work was removed.

Variants: ``now`` (simlab as it is); ``now`` with one saving undone (``+logging``: LiteLLM's
success logging kept though nothing listens; ``+price search``: no per-token price behind an
``api_base``, so LiteLLM searches its price map for a name it does not know; ``+tools copy``: the
tools copied on every call; ``+retry object``: every call run through tenacity, not only those that failed once);
``before`` (all four undone: the client before this work); and the floors: ``bare acompletion``
with the same request (LiteLLM alone, as a user calling it would), and the same with LiteLLM's
logging skipped and a price given. Usage and cost are checked unchanged on a priced model
(``openai/gpt-4o-mini`` with ``mock_response``) with the logging skipped.

    python bench/bench_litellm.py                 # 3 rounds, 500 calls per variant and round
    python bench/bench_litellm.py --rounds 1 --calls 200
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from _common import REPO, machine, save, spread, table

VARIANTS = {
    "now": "",
    "+logging": "undo('logging')",
    "+price search": "undo('price')",
    "+tools copy": "undo('copy')",
    "+retry object": "undo('retry')",
    "before": "undo('logging', 'price', 'copy', 'retry')",
    "bare acompletion": "BARE = 'default'",
    "bare, unlogged and priced": "BARE = 'lean'",
}

CHILD = r'''
import asyncio, contextlib, json, marshal, os, sys, time
sys.path[:0] = [{repo!r}, {bench!r}]
import _common, fakes, fake_server
from simlab.llm.lazy import load_litellm, unlogged
import simlab.llm.client as client
from simlab.llm.client import LiteLLMModel
from simlab.domains.retail import DOMAIN
litellm = load_litellm()
BARE = None

def undo(*savings):
    if "logging" in savings:
        client.unlogged = lambda lib: contextlib.nullcontext()
    if "price" in savings or "copy" in savings:
        kwargs_now = LiteLLMModel._kwargs
        def kwargs_then(self, lib, messages, tools, seed, request=None):
            kw = kwargs_now(self, lib, messages, tools, seed, request)
            if "price" in savings:
                kw.pop("input_cost_per_token", None); kw.pop("output_cost_per_token", None)
            if "copy" in savings and "tools" in kw:
                kw["tools"] = marshal.loads(marshal.dumps(kw["tools"]))
            return kw
        LiteLLMModel._kwargs = kwargs_then
    if "retry" in savings:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt
        from simlab.llm.retry import is_retryable
        async def built_every_call(attempt, policy, stats, *, describe=str):
            return await AsyncRetrying(stop=stop_after_attempt(policy.max_retries + 1), wait=policy.wait,
                                       retry=retry_if_exception(is_retryable), sleep=asyncio.sleep,
                                       reraise=True)(attempt)
        client.call_with_retries = built_every_call

{setting}
proc, url = fake_server.start_server(0.0)
os.environ[fakes.HTTP_KEY_ENV] = "bench"
tools = DOMAIN.tool_schemas()
messages = [{{"role": "system", "content": DOMAIN.policy}}]
for turn in range(3):
    messages += [{{"role": "user", "content": fakes.USER_TEXT}},
                 {{"role": "assistant", "content": "", "tool_calls": [{{"id": f"c{{turn}}", "type": "function",
                   "function": {{"name": "search_help_center", "arguments": '{{"query": "refund"}}'}}}}]}},
                 {{"role": "tool", "tool_call_id": f"c{{turn}}", "content": '{{"articles": []}}'}},
                 {{"role": "assistant", "content": fakes.AGENT_TEXT}}]
messages.append({{"role": "user", "content": fakes.USER_TEXT}})
model = LiteLLMModel("openai/bench-agent", role="agent", temperature=0.0, api_base=url,
                     api_key_env=fakes.HTTP_KEY_ENV)
bare_kw = dict(model="openai/bench-agent", messages=messages, tools=tools, tool_choice="auto", temperature=0.0,
               seed=1, api_base=url, api_key="bench", num_retries=0, max_retries=0, timeout=60.0)
if BARE == "lean":
    bare_kw.update(input_cost_per_token=1e-9, output_cost_per_token=1e-9)

async def one():
    if BARE is None:
        return await model.chat(messages, tools=tools, seed=1)
    if BARE == "lean":
        with unlogged(litellm):
            return await litellm.acompletion(**bare_kw)
    return await litellm.acompletion(**bare_kw)

async def calls(n):
    for _ in range(n):
        await one()

async def measure():
    await calls(30)  # warm: the first calls import the OpenAI client and connect
    import gc; gc.collect(); gc.freeze()
    best = float("inf")
    for _ in range(5):
        t = time.process_time(); await calls(max(1, {calls} // 5))
        best = min(best, (time.process_time() - t) / max(1, {calls} // 5) * 1e3)
    import cProfile, pstats
    profile = cProfile.Profile(); profile.enable(); await calls(100); profile.disable()
    out = {{"cpu_ms": best, "python_calls": pstats.Stats(profile).total_calls / 100}}
    if BARE is None:  # usage and cost of a priced model, as simlab records them
        priced = await LiteLLMModel("openai/gpt-4o-mini", role="agent",
                                    params={{"mock_response": fakes.AGENT_TEXT}}).chat(messages, tools=tools)
        out["priced_usage"] = [priced.usage.input_tokens, priced.usage.output_tokens, priced.usage.cost_usd]
    return out

try:
    print(json.dumps(asyncio.run(measure())))
finally:
    proc.terminate(); proc.wait()
'''


def run(name: str, setting: str, calls: int) -> dict[str, Any]:
    code = CHILD.format(repo=str(REPO), bench=str(REPO / "bench"), setting=setting, calls=calls)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        return {"variant": name, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return {"variant": name, **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per variant and round (default 500)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    args = parser.parse_args()
    before = machine()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    for r in range(args.rounds):
        order = list(VARIANTS.items()) if r % 2 == 0 else list(reversed(VARIANTS.items()))
        for name, setting in order:
            result = run(name, setting, args.calls)
            runs[name].append(result)
            print(f"round {r + 1} {name}: {result.get('cpu_ms', result.get('error'))}", flush=True)
    rows = []
    for name, results in runs.items():
        good = [r for r in results if "error" not in r]
        if not good:
            rows.append({"variant": name, "error": results[0]["error"]})
            continue
        cpu = spread([r["cpu_ms"] for r in good])
        rows.append({"variant": name, "cpu_ms": cpu, "cpu_ms_median": cpu["median"], "cpu_ms_min": cpu["min"],
                     "cpu_ms_max": cpu["max"], "python_calls": good[0]["python_calls"],
                     "priced_usage": good[0].get("priced_usage")})
    by = {r["variant"]: r for r in rows}
    for row in rows:
        if "python_calls" in row and "python_calls" in by.get("now", {}):
            row["python_calls_over_now"] = row["python_calls"] - by["now"]["python_calls"]
    usages = {json.dumps(r["priced_usage"]) for r in rows if r.get("priced_usage")}
    table(rows, ["variant", "cpu_ms_median", "cpu_ms_min", "cpu_ms_max", "python_calls", "python_calls_over_now",
                 "error"])
    print(f"\nusage and cost of a priced model identical in every client variant: {len(usages) == 1} {sorted(usages)}")
    save("litellm", {"machine_before": before, "calls_per_round": args.calls, "rounds": args.rounds,
                     "usage_and_cost_kept": len(usages) == 1, "variants": rows})


if __name__ == "__main__":
    main()
