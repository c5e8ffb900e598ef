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
    python bench/bench_overhead.py --quick    # one round of 100 trials, a smoke test

The machine is shared, so the paths run in alternating rounds and each keeps its least disturbed
round; the floors likewise.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
from typing import Any

import fakes
from _common import enter, peak_rss_mb, rss_mb, save, scratch_project, table, timed, verdict


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
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the least disturbed counts")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="10 trials per scenario, one round, no memory run")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.litellm_trials, args.memory_trials, args.rounds = 10, 10, 0, 1
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
    best: dict[str, dict[str, Any]] = {}
    floors: dict[str, list[float]] = {"double": [], "litellm": [], "litellm_cost": []}
    for round_ in range(args.rounds):
        for name, models, write, trials in paths:
            plan = plan_for(root, trials, args.concurrency, f"{name.replace(', ', '-').replace(' ', '_')}-{round_}")
            row = {"path": name, **play(plan, *models, _appender(plan) if write else NullAppender())}
            if name not in best or row["cpu_ms_per_call"] < best[name]["cpu_ms_per_call"]:
                best[name] = row
        floors["double"].append(double_floor(requests, repeat))
        floors["litellm"].append(litellm_floor(requests, repeat, with_cost=False))
        floors["litellm_cost"].append(litellm_floor(requests, repeat, with_cost=True))
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {r['cpu_ms_per_call']:.3f}" for n, r in best.items()), flush=True)
    results["double_floor_ms_per_call"] = min(floors["double"])
    results["litellm_floor_ms_per_call"] = min(floors["litellm"])
    results["litellm_floor_with_cost_ms_per_call"] = min(floors["litellm_cost"])
    rows = [best[name] for name, *_ in paths]
    if args.memory_trials:
        plan = plan_for(root, args.memory_trials, args.concurrency, "memory")
        rows.append({"path": "double, memory run", **play(plan, *double, _appender(plan))})

    by = {r["path"]: r for r in rows}
    written, bare = by["double, transcripts written"], by["double, no transcripts"]
    lite_row = by["litellm, transcripts written"]
    simlab_share = written["cpu_ms_per_call"] - results["double_floor_ms_per_call"]
    writing = written["cpu_ms_per_call"] - bare["cpu_ms_per_call"]
    over_floor = lite_row["cpu_ms_per_call"] - results["litellm_floor_ms_per_call"]
    memory = by.get("double, memory run", written)
    results.update({
        "runs": rows,
        "simlab_share_ms_per_call": simlab_share,
        "writing_ms_per_call": writing,
        "litellm_end_to_end_over_floor_ms_per_call": over_floor,
        "peak_rss_mb": peak_rss_mb(),
        "targets": {
            "simlab_share_le_1ms": verdict(simlab_share, 1.0),
            "litellm_over_floor_le_1ms": verdict(over_floor, 1.0),
            "writing_le_0_5ms": verdict(writing, 0.5),
            "memory_flat": verdict(abs(memory["rss_growth_mb_per_1000_trials"] or 0.0), 5.0),
        },
    })
    print()
    table(rows, ["path", "trials", "model_calls", "wall_s", "cpu_s", "trials_per_s", "calls_per_s",
                 "cpu_ms_per_call", "rss_growth_mb_per_1000_trials"])
    print(f"\nmodel calls per trial: {results['calls_per_trial']:.1f}; best of {args.rounds} alternating rounds")
    print(f"test double alone: {results['double_floor_ms_per_call']:.3f} ms CPU/call; simlab's share: "
          f"{simlab_share:.3f} ms/call (target ≤ 1) {results['targets']['simlab_share_le_1ms']}")
    print(f"writing transcripts: {writing:.3f} ms/call (target ≤ 0.5) {results['targets']['writing_le_0_5ms']}")
    print(f"LiteLLM floor: {results['litellm_floor_ms_per_call']:.3f} ms/call "
          f"({results['litellm_floor_with_cost_ms_per_call']:.3f} with completion_cost); end to end "
          f"{lite_row['cpu_ms_per_call']:.3f} ms/call: floor + {over_floor:.3f} (target ≤ 1) "
          f"{results['targets']['litellm_over_floor_le_1ms']}")
    print(f"memory: {memory['rss_samples_mb'][:1]} … {memory['rss_samples_mb'][-1:]} (trials, MB); growth "
          f"{memory['rss_growth_mb_per_1000_trials']} MB per 1,000 trials; peak {results['peak_rss_mb']:.0f} MB")
    save("overhead", results)


def _appender(plan: Any) -> Any:
    from simlab.runner.store import RunStore

    return RunStore(plan.folder).open_appender()


if __name__ == "__main__":
    main()
