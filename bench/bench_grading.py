"""Target 4: grading throughput: the deterministic checks over 10,000 stored trials.

A synthetic run of 10,000 trials (demo records replicated under new unit ids, see ``synth.py``)
is graded three ways: the graders alone on records already in memory (what the target names:
``grade_deterministic``, ≥ 2,000 trials/s), reading and validating the records, and the whole
``simlab grade`` command (read, re-grade, rewrite the file, rebuild the report). The three are
interleaved over ``--rounds`` rounds (3); each figure is recorded as its spread, the median counts.

    python bench/bench_grading.py                 # 10,000 trials, 3 rounds
    python bench/bench_grading.py --trials 200    # per scenario: 2,000 trials
    python bench/bench_grading.py --quick         # 200 trials, 2 rounds: a smoke test
"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path
from typing import Any

import synth
from _common import Figures, add_rounds, interleaved, peak_rss_mb, save, table, timed, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="trials per scenario (10 scenarios)")
    parser.add_argument("--quick", action="store_true", help="20 trials per scenario, 2 rounds: a smoke test")
    add_rounds(parser, 3)
    args = parser.parse_args()
    if args.quick:
        args.trials, args.rounds = 20, 2
    root, folder = synth.make(args.trials, "grading")
    from simlab.env.checks import check_scenarios
    from simlab.runner.regrade import load_run_scenarios
    from simlab.runner.store import RunStore

    store = RunStore(folder)
    scenarios, _ = load_run_scenarios(store, Path("personas"))
    domains = check_scenarios(list(scenarios.values()))

    def command() -> dict[str, Any]:
        from simlab.cli.main import main as simlab

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), timed() as t:
            code = simlab(["grade", str(folder)])
        assert code == 0, f"simlab grade exited {code}"
        return {"wall_s": t.wall_s, "cpu_s": t.cpu_s}

    def report() -> dict[str, Any]:
        from simlab.report.build import build

        with timed() as t:
            build(folder)
        return {"wall_s": t.wall_s, "cpu_s": t.cpu_s}

    found = interleaved(args.rounds, [("graders", lambda: graders_pass(store, scenarios, domains)),
                                      ("command", command), ("report", report)])
    n = found["graders"][0]["trials"]
    print()
    figures = Figures()
    rate = figures.add("graders alone (grade_deterministic)", [n / r["grade_s"] for r in found["graders"]],
                       "trials/s", digits=0)
    figures.add("read + validate records", [n / r["read_s"] for r in found["graders"]], "trials/s", digits=0)
    figures.add("simlab grade (whole command)", [n / r["wall_s"] for r in found["command"]], "trials/s", digits=0)
    figures.add("  of which the report rebuild", [n / r["wall_s"] for r in found["report"]], "trials/s", digits=0)
    regrade = figures.add("simlab grade without its report", [
        n / max(1e-6, c["wall_s"] - r["wall_s"]) for c, r in zip(found["command"], found["report"])], "trials/s",
        digits=0)
    rows: list[dict[str, Any]] = [{"round": i + 1, "trials": n, **{f"{k}_{f}": r[f] for k, runs in found.items()
                                                                   for f in ("wall_s", "cpu_s", "grade_s", "read_s")
                                                                   if f in (r := runs[i])}}
                                  for i in range(args.rounds)]
    print()
    table(rows, list(rows[0]))
    result = {"trials": n, "rounds": args.rounds, "figures": figures.as_dict(), "each_round": rows,
              "regrade_without_report_trials_per_s": regrade["median"], "peak_rss_mb": peak_rss_mb(),
              "targets": {"grading_ge_2000_per_s": verdict(rate["median"], 2000, below=False)}}
    print(f"\ngraders: {rate['median']:.0f} trials/s, median of {args.rounds} rounds (target ≥ 2,000) "
          f"{result['targets']['grading_ge_2000_per_s']}; peak {result['peak_rss_mb']:.0f} MB")
    save("grading", result)


def graders_pass(store: Any, scenarios: Any, domains: Any) -> dict[str, Any]:
    """The graders over every stored record, streamed (one record in memory at a time), reading and
    grading timed apart."""
    from simlab.graders.base import GradeContext
    from simlab.graders.grade import grade_deterministic
    from simlab.transcript import TrialRecord

    n, read_s, read_cpu, grade_s, grade_cpu = 0, 0.0, 0.0, 0.0, 0.0
    memos: dict[str, dict] = {}  # as the runner does: one memo per scenario
    with open(store.trials_path, "rb") as fh:
        for line in fh:
            with timed() as read:
                record = TrialRecord.model_validate_json(line)
            loaded = scenarios[record.transcript.scenario_id]
            ctx = GradeContext(record.transcript, loaded.spec, domains[loaded.spec.id], persona=loaded.persona,
                               memo=memos.setdefault(loaded.spec.id, {}))
            with timed() as graded:
                grade_deterministic(ctx)
            n += 1
            read_s, read_cpu = read_s + read.wall_s, read_cpu + read.cpu_s
            grade_s, grade_cpu = grade_s + graded.wall_s, grade_cpu + graded.cpu_s
    return {"trials": n, "read_s": read_s, "read_cpu_s": read_cpu, "grade_s": grade_s, "grade_cpu_s": grade_cpu}


if __name__ == "__main__":
    main()
