"""The per-trial tool server (``simlab.serve``): CPU per tool call at 200 concurrent trials, and isolation.

The server runs in this process, as a run starts it: one ``ToolServer`` with 200 retail trials, each
with its own environment and ``ToolHandle``, their turns open. The agents run in a child process
(so their CPU is not counted): 200 at once, each an ``mcp.Client`` (the official SDK, stateless
2026-07-28 protocol) on its trial's URL, making the same 20 calls (lookup_order,
check_refund_policy, issue_refund, find_customer_orders, in turn). The server process's CPU is
split three ways:

- simlab's own work per call: ``Sessions.call``, timed inside the server (the token lookup, the
  trial's ``ToolHandle``: recording, loop detection, and the domain tool run by ``Environment.execute``,
  the same work an in-process Python agent's call costs; the latter is timed too);
- the MCP SDK and HTTP: the rest of the server's CPU;
- the transport floor: a bare Starlette JSON endpoint on the same uvicorn, posted to by the same
  number of clients and requests (httpx), for scale.

Isolation: every trial must see exactly its own 20 calls, and its first refund of A123 must succeed
(the 200 trials refund the same order, each in a state of its own). Target: simlab's CPU per call
on top of the transport ≤ 1 ms: what serving adds (``Sessions.call`` less the tool's own run, which
every agent's call pays, in process too; both figures are printed). The served round, the bare
HTTP round and the in-process calls are interleaved over ``--rounds`` rounds; each figure is recorded
as its spread (n, min, median, max), and the target is judged on the median.

    python bench/bench_serve.py                 # 200 trials x 20 calls, 3 rounds
    python bench/bench_serve.py --trials 50 --calls 10 --rounds 1
    python bench/bench_serve.py --quick         # 50 trials x 10 calls, 2 rounds
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from _common import REPO, Figures, add_rounds, interleaved, save, table, verdict

CALLS = [("lookup_order", {"order_id": "A123"}),
         ("check_refund_policy", {"order_id": "A123", "method": "original_card"}),
         ("issue_refund", {"order_id": "A123", "amount": 49.9, "method": "original_card"}),
         ("find_customer_orders", {"customer_id": "C-17"})]

CLIENT = r'''
import asyncio, json, sys
mode, base, trials, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
CALLS = json.loads(sys.argv[5])
connected = []

async def mcp_trial(token, all_in, start):
    from mcp import Client
    async with Client(f"{base}/t/{token}/mcp") as client:
        connected.append(token)
        if len(connected) == trials:
            all_in.set()
        await start.wait()
        out = []
        for i in range(calls):
            name, args = CALLS[i % len(CALLS)]
            out.append((await client.call_tool(name, args)).is_error)
        return out

async def http_trial(client, token, start):
    await start.wait()
    for i in range(calls):
        name, args = CALLS[i % len(CALLS)]
        r = await client.post(f"{base}/echo/{token}", json={"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                                              "params": {"name": name, "arguments": args}})
        r.raise_for_status()
    return []

async def main():
    tokens = json.loads(sys.stdin.read())
    all_in, start = asyncio.Event(), asyncio.Event()
    if mode == "mcp":  # every client connected (MCP discovery) before the timed calls
        tasks = [asyncio.ensure_future(mcp_trial(t, all_in, start)) for t in tokens]
        await all_in.wait()
    else:
        import httpx
        client = httpx.AsyncClient(limits=httpx.Limits(max_connections=None), timeout=120)
        tasks = [asyncio.ensure_future(http_trial(client, t, start)) for t in tokens]
    print("ready", flush=True)
    start.set()
    print(json.dumps(await asyncio.gather(*tasks)), flush=True)

asyncio.run(main())
'''


def expected_errors(calls: int) -> list[bool]:
    """Which calls of a trial fail: every issue_refund after its first (A123 is refunded by then)."""
    names = [CALLS[i % len(CALLS)][0] for i in range(calls)]
    return [name == "issue_refund" and "issue_refund" in names[:i] for i, name in enumerate(names)]


async def serve_round(trials: int, calls: int) -> dict[str, Any]:
    from simlab.domains.retail import DOMAIN
    from simlab.env import Environment
    from simlab.serve.server import ToolServer
    from simlab.serve.sessions import Sessions
    from simlab.sim.tool_handle import ToolHandle
    from simlab.transcript import ToolCall, ToolResult

    timing = {"sessions_call": 0.0, "execute": 0.0, "calls": 0}
    sessions = Sessions()
    execute = Environment.execute

    def timed(func: Any, key: str) -> Any:
        def run(*args: Any) -> Any:
            t0 = time.process_time()
            try:
                return func(*args)
            finally:
                timing[key] += time.process_time() - t0
                timing["calls"] += key == "sessions_call"
        return run

    sessions.call = timed(sessions.call, "sessions_call")  # type: ignore[method-assign]
    Environment.execute = timed(execute, "execute")  # type: ignore[method-assign]
    state = DOMAIN.build_state()
    try:
        async with ToolServer(sessions) as server:
            handles, events = [], []
            for _ in range(trials):
                log: list[Any] = []
                handles.append(ToolHandle(Environment(DOMAIN, state), log.append, max_calls_per_turn=calls + 1))
                events.append(log)
            tokens = [sessions.new_token() for _ in range(trials)]
            turns = [sessions.turn(t, h) for t, h in zip(tokens, handles)]
            for turn in turns:
                turn.__enter__()
            cpu, wall, child = await _drive("mcp", server.base_url, tokens, calls)
            for turn in turns:
                turn.__exit__(None, None, None)
    finally:
        Environment.execute = execute  # type: ignore[method-assign]
    isolated = all(
        [e.name for e in log if isinstance(e, ToolCall)] == [CALLS[i % len(CALLS)][0] for i in range(calls)]
        and next(e for e in log if isinstance(e, ToolResult) and e.name == "issue_refund").ok
        and sum(1 for r in h._env.state.refunds if r.order_id == "A123") == 1
        for log, h in zip(events, handles))
    n = timing["calls"]
    return {"trials": trials, "calls": n, "wall_s": round(wall, 2), "calls_per_s": n / wall,
            "server_cpu_ms": 1000 * cpu / n, "simlab_ms": 1000 * timing["sessions_call"] / n,
            "execute_ms": 1000 * timing["execute"] / n,
            "sdk_http_ms": 1000 * (cpu - timing["sessions_call"]) / n, "isolated": isolated,
            "agents_saw_what_they_should": child == [expected_errors(calls)] * trials}

async def transport_round(trials: int, calls: int) -> dict[str, Any]:
    """A bare Starlette JSON endpoint on the same uvicorn: the HTTP floor under the MCP SDK."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from simlab.serve.server import _listen, _Uvicorn

    async def echo(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {"content": [
            {"type": "text", "text": json.dumps(body["params"]["arguments"])}], "isError": False}})

    sock = _listen("127.0.0.1", 0)
    server = _Uvicorn(uvicorn.Config(Starlette(routes=[Route("/echo/{token}", echo, methods=["POST"])]),
                                     log_config=None, access_log=False, lifespan="off", ws="none"))
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    await server.ready.wait()
    port = sock.getsockname()[1]
    cpu, wall, _ = await _drive("http", f"http://127.0.0.1:{port}", [f"t{i}" for i in range(trials)], calls)
    server.should_exit = True
    await task
    n = trials * calls
    return {"trials": trials, "calls": n, "wall_s": round(wall, 2), "calls_per_s": n / wall,
            "server_cpu_ms": 1000 * cpu / n}


async def _drive(mode: str, base: str, tokens: list[str], calls: int) -> tuple[float, float, Any]:
    """Start the clients, wait until they are connected, then time the server's CPU over the calls."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, mode, base, str(len(tokens)), str(calls), json.dumps(CALLS),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    child.stdin.write(json.dumps(tokens).encode())
    child.stdin.close()
    line = await child.stdout.readline()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = await child.stdout.readline() if line.strip() == b"ready" else b""
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    err = await child.stderr.read()
    if await child.wait() != 0 or not out:
        raise SystemExit(f"the {mode} client process failed:\n{err.decode()[-3000:]}")
    return cpu, wall, json.loads(out)


def in_process(calls: int, repeat: int = 2000) -> float:
    """CPU ms of the same calls made by an in-process Python agent (``ToolHandle.call``)."""
    from simlab.domains.retail import DOMAIN
    from simlab.env import Environment
    from simlab.sim.tool_handle import ToolHandle

    state = DOMAIN.build_state()
    total, n = 0.0, 0
    for _ in range(repeat // calls):
        handle = ToolHandle(Environment(DOMAIN, state), lambda e: None, max_calls_per_turn=calls + 1)
        t0 = time.process_time()
        for i in range(calls):
            name, args = CALLS[i % len(CALLS)]
            handle.call(name, dict(args))
        total += time.process_time() - t0
        n += calls
    return 1000 * total / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="concurrent trials")
    parser.add_argument("--calls", type=int, default=20, help="tool calls per trial")
    parser.add_argument("--quick", action="store_true", help="50 trials x 10 calls, 2 rounds: a smoke test")
    add_rounds(parser, 3)
    args = parser.parse_args()
    if args.quick:
        args.trials, args.calls, args.rounds = 50, 10, 2

    def progress(i: int, found: dict[str, list[Any]]) -> None:
        served, floor = found["served"][-1], found["bare HTTP"][-1]
        print(f"round {i + 1}: served {served['server_cpu_ms']:.2f} ms/call (simlab {served['simlab_ms']:.3f}), "
              f"bare HTTP {floor['server_cpu_ms']:.2f} ms/request, isolated {served['isolated']}", flush=True)

    found = interleaved(args.rounds, [("served", lambda: asyncio.run(serve_round(args.trials, args.calls))),
                                      ("bare HTTP", lambda: asyncio.run(transport_round(args.trials, args.calls))),
                                      ("in process", lambda: in_process(args.calls))], after_round=progress)
    served, floor = found["served"], found["bare HTTP"]
    print()
    figures = Figures()
    whole = figures.add("served: the server process's CPU per call", [r["server_cpu_ms"] for r in served], "ms")
    own = figures.add("simlab's share on top of the transport (Sessions.call less the tool's run)",
                      [r["simlab_ms"] - r["execute_ms"] for r in served], "ms")
    simlab = figures.add("simlab: Sessions.call", [r["simlab_ms"] for r in served], "ms")
    tool = figures.add("the tool's own run (Environment.execute)", [r["execute_ms"] for r in served], "ms")
    sdk = figures.add("the MCP SDK and HTTP", [r["sdk_http_ms"] for r in served], "ms")
    bare = figures.add("bare HTTP floor: server CPU per request", [r["server_cpu_ms"] for r in floor], "ms")
    direct = figures.add("the same calls in process (ToolHandle.call)", found["in process"], "ms")
    figures.add("served calls/s", [r["calls_per_s"] for r in served], "calls/s", digits=0)
    print()
    table([dict(way=f"served (MCP), round {i + 1}", **r) for i, r in enumerate(served)]
          + [dict(way=f"bare HTTP, round {i + 1}", **r) for i, r in enumerate(floor)],
          ["way", "trials", "calls", "wall_s", "calls_per_s", "server_cpu_ms", "simlab_ms", "execute_ms", "sdk_http_ms"])
    target = verdict(own["median"], 1.0)
    print(f"\nsimlab's CPU per served call, on top of the transport: {own['median']:.3f} ms, median of {args.rounds} "
          f"rounds (target ≤ 1 ms) {target}: the token, the trial's ToolHandle (recording, loop detection), the answer")
    print(f"  plus the tool's own run in the trial's environment, which an in-process agent's call pays too: "
          f"{tool['median']:.3f} ms here (the same calls in process, a Python agent: {direct['median']:.3f} ms); "
          f"together {simlab['median']:.3f} ms; the whole server process: {whole['median']:.2f} ms")
    print(f"the MCP SDK and HTTP: {sdk['median']:.2f} ms per call, over a bare HTTP floor of "
          f"{bare['median']:.2f} ms per request (uvicorn, h11)")
    print(f"isolation: {'every' if all(r['isolated'] for r in served) else 'NOT every'} trial saw exactly its own "
          f"{args.calls} calls and refunded A123 once in its own state, in every round; the agents got the answers "
          f"they should: {all(r['agents_saw_what_they_should'] for r in served)}")
    save("serve", {"trials": args.trials, "calls_per_trial": args.calls, "rounds": args.rounds,
                   "figures": figures.as_dict(), "served_rounds": served, "transport_rounds": floor,
                   "in_process_call_ms": found["in process"], "serving_ms": own["median"],
                   "targets": {"serving_le_1ms": target}, "isolated": all(r["isolated"] for r in served),
                   "agents_saw_what_they_should": all(r["agents_saw_what_they_should"] for r in served)})


if __name__ == "__main__":
    main()
