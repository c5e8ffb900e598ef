"""Target 4: grading throughput: the deterministic checks over 10,000 stored trials.

A synthetic run of 10,000 trials (demo records replicated under new unit ids, see ``synth.py``)
is graded three ways: the graders alone on records already in memory (what the target names:
``grade_deterministic``, ≥ 2,000 trials/s), reading and validating the records, and the whole
``simlab grade`` command (read, re-grade, rewrite the file, rebuild the report).

    python bench/bench_grading.py                 # 10,000 trials
    python bench/bench_grading.py --trials 200    # per scenario: 2,000 trials
"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path
from typing import Any

import synth
from _common import peak_rss_mb, save, table, timed, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="trials per scenario (10 scenarios)")
    args = parser.parse_args()
    root, folder = synth.make(args.trials, "grading")
    from simlab.env.checks import check_scenarios
    from simlab.graders.base import GradeContext
    from simlab.graders.grade import grade_deterministic
    from simlab.runner.regrade import load_run_scenarios
    from simlab.runner.store import RunStore
    from simlab.transcript import TrialRecord

    store = RunStore(folder)
    scenarios, _ = load_run_scenarios(store, Path("personas"))
    domains = check_scenarios(list(scenarios.values()))
    n, read_s, read_cpu, grade_s, grade_cpu = 0, 0.0, 0.0, 0.0, 0.0
    memos: dict[str, dict] = {}  # as the runner does: one memo per scenario
    with open(store.trials_path, "rb") as fh:  # streamed: one record in memory at a time
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
    from simlab.cli.main import main as simlab

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), timed() as command:
        code = simlab(["grade", str(folder)])
    assert code == 0, f"simlab grade exited {code}"
    from simlab.report.build import build

    with timed() as report:
        build(folder)
    rows: list[dict[str, Any]] = [
        {"step": "graders alone (grade_deterministic)", "trials": n, "cpu_s": grade_cpu, "wall_s": grade_s,
         "trials_per_s": n / grade_s},
        {"step": "read + validate records", "trials": n, "cpu_s": read_cpu, "wall_s": read_s,
         "trials_per_s": n / read_s},
        {"step": "simlab grade (whole command)", "trials": n, "cpu_s": command.cpu_s, "wall_s": command.wall_s,
         "trials_per_s": n / command.wall_s},
        {"step": "  of which the report rebuild", "trials": n, "cpu_s": report.cpu_s, "wall_s": report.wall_s,
         "trials_per_s": n / report.wall_s},
    ]
    table(rows, ["step", "trials", "wall_s", "cpu_s", "trials_per_s"])
    rate = rows[0]["trials_per_s"]
    regrade_rate = n / max(1e-6, command.wall_s - report.wall_s)
    result = {"trials": n, "steps": rows, "regrade_without_report_trials_per_s": regrade_rate,
              "peak_rss_mb": peak_rss_mb(), "targets": {"grading_ge_2000_per_s": verdict(rate, 2000, below=False)}}
    print(f"\ngraders: {rate:.0f} trials/s (target ≥ 2,000) {result['targets']['grading_ge_2000_per_s']}; "
          f"simlab grade without its report: {regrade_rate:.0f} trials/s; peak {result['peak_rss_mb']:.0f} MB")
    save("grading", result)


if __name__ == "__main__":
    main()
