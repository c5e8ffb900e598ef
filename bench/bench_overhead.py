"""Target 1: orchestration overhead per model call, against instant fake models.

The retail demo suite (10 scenarios × N trials) with an LLM agent and an LLM simulated user,
played by simlab's runner (``execute``: loop, tools, grading, appending each trial), twice:
through simlab's own test double (``FunctionModel``, no LiteLLM) and through the real
``litellm.acompletion`` path (``register_fake`` provider). Against each, the floor the models
themselves cost per call is measured on the same requests, replayed without simlab:
``FunctionModel.chat`` alone, and ``litellm.acompletion`` alone (plus ``completion_cost``, which
the client adds for usage). A run with a null appender isolates what writing transcripts costs.
Resident memory is sampled every 100 trials to show it stays flat in the number of trials.

Targets: simlab's share ≤ 1 ms CPU per model call (double path, transcripts written); end to end
through LiteLLM ≤ LiteLLM's floor + 1 ms; writing transcripts ≤ 0.5 ms per call.

    python bench/bench_overhead.py            # 3 rounds of 500 (double) and 200 (LiteLLM) trials, 2,000 for memory
    python bench/bench_overhead.py --quick    # 2 rounds of 100 trials, no memory run: a smoke test

The machine is shared, so the paths, the floors and the memory run are interleaved over rounds; each
figure is recorded as its spread over the rounds (n, min, median, max), a difference (simlab's
share, writing, LiteLLM over its floor) taken within each round, and the targets are judged on the
medians.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
from typing import Any

import fakes
from _common import (
    Figures,
    add_rounds,
    enter,
    interleaved,
    peak_rss_mb,
    rss_mb,
    save,
    scratch_project,
    table,
    timed,
    verdict,
)


class NullAppender:
    """Drops records: the run without writing transcripts."""

    def append_lines(self, lines: list[bytes]) -> None:
        pass


def plan_for(root: Any, trials: int, concurrency: int, run_id: str) -> Any:
    from simlab.runner.prepare import RunRequest, prepare
    from simlab.runner.store import RunStore

    plan = prepare(RunRequest(root=root, trials=trials, concurrency=concurrency, run_id=run_id,
                              command=["bench_overhead"]))
    RunStore(plan.folder).folder.mkdir(parents=True, exist_ok=True)
    RunStore(plan.folder).write_manifest(plan.manifest)
    return plan


def play(plan: Any, agent: Any, simulator: Any, appender: Any) -> dict[str, Any]:
    """Run every unit of ``plan``; trials, model calls, wall/CPU and memory samples."""
    from simlab.runner.execute import execute
    from simlab.transcript import ModelCall

    seen = {"trials": 0, "calls": 0, "rss": []}

    def on_trial(record: Any) -> None:
        seen["trials"] += 1
        seen["calls"] += sum(1 for e in record.transcript.events if isinstance(e, ModelCall))
        if seen["trials"] % 100 == 0:
            seen["rss"].append((seen["trials"], round(rss_mb(), 1)))

    gc.freeze()  # as `simlab run` does before playing (see cli/run_cmd.py)
    try:
        with timed() as t:
            asyncio.run(execute(plan, plan.units, agent, simulator, appender, on_trial=on_trial))
    finally:
        gc.unfreeze()
    calls = seen["calls"]
    rss = seen["rss"]
    return {
        "trials": seen["trials"], "model_calls": calls, "wall_s": round(t.wall_s, 3), "cpu_s": round(t.cpu_s, 3),
        "trials_per_s": seen["trials"] / t.wall_s, "calls_per_s": calls / t.wall_s,
        "cpu_ms_per_call": t.cpu_s / calls * 1e3, "cpu_ms_per_trial": t.cpu_s / seen["trials"] * 1e3,
        "rss_samples_mb": rss,
        "rss_growth_mb_per_1000_trials": _slope(rss),
    }


def _slope(samples: list[tuple[int, float]]) -> float | None:
    """Least-squares MB per 1,000 trials over the second half of the samples (after warm-up)."""
    half = samples[len(samples) // 2:]
    if len(half) < 2:
        return None
    xs, ys = [s[0] for s in half], [s[1] for s in half]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 1000, 2) if den else None


def capture_requests(plan: Any, scenarios: int) -> list[tuple[str, list[Any], Any]]:
    """(role, messages, tools) of every model call of one trial per scenario."""
    from simlab.runner.execute import execute

    captured: list[tuple[str, list[Any], Any]] = []

    def recorder(role: str, reply: Any) -> Any:
        def fn(messages: Any, tools: Any = None, **_: Any) -> Any:
            captured.append((role, copy.deepcopy(messages), tools))
            return reply(messages, tools)
        return fn

    from simlab.llm.fakes import FunctionModel
    from simlab.sim.agents import LLMAgent
    from simlab.sim.simulators import LLMSimulator

    agent = LLMAgent(FunctionModel(recorder("agent", fakes.agent_reply), model="fake/bench-agent"))
    simulator = LLMSimulator(FunctionModel(recorder("user", fakes.user_reply), model="fake/bench-user",
                                           role="simulator"))
    units = [u for u in plan.units if u.trial == 1][:scenarios]
    asyncio.run(execute(plan, units, agent, simulator, NullAppender()))
    return captured


def double_floor(requests: list[Any], repeat: int) -> float:
    """CPU ms per call of ``FunctionModel.chat`` alone on the captured requests."""
    from simlab.llm.fakes import FunctionModel

    models = {"agent": FunctionModel(fakes.agent_reply), "user": FunctionModel(fakes.user_reply)}

    async def go() -> None:
        for _ in range(repeat):
            for role, messages, tools in requests:
                await models[role].chat(messages, tools=tools, seed=1)
                models[role].calls.clear()

    with timed() as t:
        asyncio.run(go())
    return t.cpu_s / (repeat * len(requests)) * 1e3


def litellm_floor(requests: list[Any], repeat: int, *, with_cost: bool) -> float:
    """CPU ms per call of bare ``litellm.acompletion`` (and ``completion_cost``) on the captured requests."""
    from simlab.llm.lazy import load_litellm

    litellm = load_litellm()
    agent, user = fakes.register_litellm_fakes()
    models = {"agent": agent, "user": user}

    async def go() -> None:
        for _ in range(repeat):
            for role, messages, tools in requests:
                kwargs = {"tools": tools} if tools else {}
                response = await litellm.acompletion(model=models[role], messages=messages, num_retries=0,
                                                     max_retries=0, timeout=60.0, seed=1, **kwargs)
                if with_cost:
                    try:
                        litellm.completion_cost(completion_response=response, model=models[role])
                    except Exception:
                        pass

    asyncio.run(go())  # warm-up: first calls build LiteLLM's caches
    with timed() as t:
        asyncio.run(go())
    return t.cpu_s / (repeat * len(requests)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50, help="trials per scenario (10 scenarios), double path")
    parser.add_argument("--litellm-trials", type=int, default=20, help="trials per scenario through LiteLLM")
    parser.add_argument("--memory-trials", type=int, default=200, help="trials per scenario of the memory run")
    add_rounds(parser, 3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="10 trials per scenario, 2 rounds, no memory run")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.litellm_trials, args.memory_trials, args.rounds = 10, 10, 0, 2
    root = scratch_project("overhead")
    enter(root)
    results: dict[str, Any] = {"trials_per_scenario": args.trials, "litellm_trials_per_scenario": args.litellm_trials,
                               "concurrency": args.concurrency, "rounds": args.rounds}

    plan = plan_for(root, 1, args.concurrency, "capture")
    requests = capture_requests(plan, 10)
    results["calls_per_trial"] = len(requests) / 10
    repeat = max(1, 900 // len(requests))

    double = fakes.double_models()
    lite = fakes.litellm_models()
    play(plan_for(root, 2, args.concurrency, "warm-double"), *double, NullAppender())  # imports, caches
    play(plan_for(root, 1, args.concurrency, "warm-litellm"), *lite, NullAppender())
    paths = [("double, transcripts written", double, True, args.trials),
             ("double, no transcripts", double, False, args.trials),
             ("litellm, transcripts written", lite, True, args.litellm_trials)]
    counter = {"round": 0}

    def path_way(name: str, models: Any, write: bool, trials: int) -> Any:
        def run() -> dict[str, Any]:
            plan = plan_for(root, trials, args.concurrency,
                            f"{name.replace(', ', '-').replace(' ', '_')}-{counter['round']}")
            return {"path": name, **play(plan, *models, _appender(plan) if write else NullAppender())}
        return run

    def memory_way() -> dict[str, Any]:
        plan = plan_for(root, args.memory_trials, args.concurrency, f"memory-{counter['round']}")
        return {"path": "double, memory run", **play(plan, *double, _appender(plan))}

    def next_round(i: int, found: dict[str, list[Any]]) -> None:
        counter["round"] += 1
        print(f"round {i + 1}: " + ", ".join(f"{n} {r[-1]['cpu_ms_per_call']:.3f}" for n, r in found.items()
                                             if isinstance(r[-1], dict)) + " ms/call", flush=True)

    ways: list[tuple[str, Any]] = [(name, path_way(name, models, write, trials))
                                   for name, models, write, trials in paths]
    ways += [("double floor", lambda: double_floor(requests, repeat)),
             ("litellm floor", lambda: litellm_floor(requests, repeat, with_cost=False)),
             ("litellm floor with cost", lambda: litellm_floor(requests, repeat, with_cost=True))]
    if args.memory_trials:
        ways.append(("double, memory run", memory_way))
    found = interleaved(args.rounds, ways, after_round=next_round)

    print()
    figures = Figures()
    written, bare = found["double, transcripts written"], found["double, no transcripts"]
    lite_rows = found["litellm, transcripts written"]
    for name, *_ in paths:
        figures.add(f"{name}: CPU per call", [r["cpu_ms_per_call"] for r in found[name]], "ms")
        figures.add(f"{name}: trials/s", [r["trials_per_s"] for r in found[name]], "trials/s", digits=1)
    figures.add("test double alone: CPU per call", found["double floor"], "ms")
    figures.add("LiteLLM floor (bare acompletion): CPU per call", found["litellm floor"], "ms")
    figures.add("LiteLLM floor with completion_cost: CPU per call", found["litellm floor with cost"], "ms")
    # each difference within its round, so that a change of the machine's speed between rounds cancels
    share = figures.add("simlab's share (double path, written)",
                        [w["cpu_ms_per_call"] - f for w, f in zip(written, found["double floor"])], "ms/call")
    writing = figures.add("writing transcripts", [w["cpu_ms_per_call"] - b["cpu_ms_per_call"]
                                                  for w, b in zip(written, bare)], "ms/call")
    over = figures.add("LiteLLM end to end over its floor", [r["cpu_ms_per_call"] - f for r, f in
                                                             zip(lite_rows, found["litellm floor"])], "ms/call")
    memory_rows = found.get("double, memory run", [])
    growth = [r["rss_growth_mb_per_1000_trials"] for r in memory_rows if r["rss_growth_mb_per_1000_trials"] is not None]
    memory = figures.add("memory growth", growth, "MB per 1,000 trials", digits=2) if growth else None
    rows = [r for rs in found.values() for r in rs if isinstance(r, dict)]
    results.update({
        "figures": figures.as_dict(),
        "runs": rows,
        "double_floor_ms_per_call": figures.median("test double alone: CPU per call"),
        "litellm_floor_ms_per_call": figures.median("LiteLLM floor (bare acompletion): CPU per call"),
        "litellm_floor_with_cost_ms_per_call": figures.median("LiteLLM floor with completion_cost: CPU per call"),
        "simlab_share_ms_per_call": share["median"],
        "writing_ms_per_call": writing["median"],
        "litellm_end_to_end_over_floor_ms_per_call": over["median"],
        "peak_rss_mb": peak_rss_mb(),
        "targets": {  # on the medians over the rounds
            "simlab_share_le_1ms": verdict(share["median"], 1.0),
            "litellm_over_floor_le_1ms": verdict(over["median"], 1.0),
            "writing_le_0_5ms": verdict(writing["median"], 0.5),
            "memory_flat": "not run" if memory is None else verdict(max(abs(g) for g in growth), 5.0),
        },
    })
    print()
    table(rows, ["path", "trials", "model_calls", "wall_s", "cpu_s", "trials_per_s", "calls_per_s",
                 "cpu_ms_per_call", "rss_growth_mb_per_1000_trials"])
    print(f"\nmodel calls per trial: {results['calls_per_trial']:.1f}; medians of {args.rounds} interleaved rounds")
    print(f"simlab's share: {share['median']:.3f} ms/call (target ≤ 1) {results['targets']['simlab_share_le_1ms']}")
    print(f"writing transcripts: {writing['median']:.3f} ms/call (target ≤ 0.5) {results['targets']['writing_le_0_5ms']}")
    print(f"LiteLLM end to end: floor {over['median']:+.3f} ms/call (target ≤ 1) "
          f"{results['targets']['litellm_over_floor_le_1ms']}")
    if memory_rows:
        last = memory_rows[-1]
        print(f"memory: {last['rss_samples_mb'][:1]} … {last['rss_samples_mb'][-1:]} (trials, MB), last round; "
              f"largest growth {max(abs(g) for g in growth) if growth else None} MB per 1,000 trials (target: flat, |growth| ≤ 5) "
              f"{results['targets']['memory_flat']}; peak {results['peak_rss_mb']:.0f} MB")
    else:
        print("memory: not run (--memory-trials 0)")
    save("overhead", results)


def _appender(plan: Any) -> Any:
    from simlab.runner.store import RunStore

    return RunStore(plan.folder).open_appender()


if __name__ == "__main__":
    main()
