"""``simlab grade``: re-grade a stored run without simulating again. Imported to parse its
arguments, ``--help`` too (``cli/main.COMMANDS``): what re-grading needs is imported in ``run``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simlab.cli.argtypes import add_json, add_run
from simlab.inert import one_line

if TYPE_CHECKING:
    from simlab.runner.store import RunStore
    from simlab.specs import JudgeSpec


def configure(parser: argparse.ArgumentParser) -> None:
    add_run(parser)
    parser.add_argument("--rejudge", action="store_true", help="also re-run the LLM judges (model calls)")
    parser.add_argument(
        "--judge",
        help="judge model for --rejudge (default: the run's); a bare model keeps the endpoint "
        "simlab.yaml gives the judge, as simlab run --judge does",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="with --rejudge: answer the judges from the response cache where they were asked "
        "the same before (without it, --rejudge asks the judge model again)",
    )
    parser.add_argument("--show", type=int, default=20, help="how many check changes to list")
    add_json(parser, "print the changes as JSON on stdout")


def run(args: argparse.Namespace) -> int:
    from simlab.report.build import build, project_run
    from simlab.report.terminal import print_report, report_console
    from simlab.runner.factory import build_judge
    from simlab.runner.regrade import regrade
    from simlab.runner.store import RunStore
    from simlab.specs import load_config

    folder = project_run(args.run)
    store = RunStore(folder)
    manifest = store.read_manifest() or {}
    config = load_config(Path("simlab.yaml"))
    judge_ref = _judge_ref(args.judge, config.judge) or manifest.get("pins", {}).get("judge")
    cache = None
    if args.rejudge and getattr(args, "cache", False):  # a re-judge asks again unless told to use the cache
        from simlab.llm.cache import ResponseCache
        from simlab.runner.prepare import cache_folder, cache_max_mb

        cache = ResponseCache(cache_folder(config), max_mb=cache_max_mb(config.cache))
    judge = build_judge(judge_ref, cache=cache) if args.rejudge else None
    store.lock()
    try:
        store.repair_torn_tail()
        report = regrade(store, Path(config.personas), judge=judge, rejudge=args.rejudge)
        if args.rejudge and args.judge:  # judged again by the judge named: the run's judge now
            _pin_judge(store, judge_ref)
    finally:
        store.unlock()
    err = sys.stderr
    if report.changed_scenario_files:
        print(
            "note: scenario files changed since the run: "
            f"{', '.join(map(one_line, report.changed_scenario_files))}",
            file=err,
        )
    changes = ", ".join(f"{k}: {v}" for k, v in report.verdict_changes.items()) or "no verdict changed"
    print(f"re-graded {report.trials} trials of {one_line(folder.name)}: {changes}", file=err)
    for line in report.check_changes[: args.show]:
        print(f"  {one_line(line)}", file=err)
    if len(report.check_changes) > args.show:
        print(f"  … and {len(report.check_changes) - args.show} more check changes", file=err)
    summary = build(folder)
    if args.json:
        print(
            json.dumps(
                {
                    "trials": report.trials,
                    "verdict_changes": report.verdict_changes,
                    "check_changes": report.check_changes,
                },
                indent=2,
            )
        )
    else:
        print_report(summary, report_console())
    return 0


def _judge_ref(flag: str | None, configured: JudgeSpec | None) -> JudgeSpec | None:
    """The judge ``--judge`` names, read as ``simlab run --judge`` reads it (``prepare.judge_flag``):
    a bare model keeps the endpoint simlab.yaml gives the judge (api_base, api_key_env, params,
    price), and a note on stderr says what was kept."""
    if not flag:
        return None
    from simlab.runner.prepare import judge_flag

    spec, notes = judge_flag(flag, configured)
    for note in notes:
        print(f"note: {one_line(note)}", file=sys.stderr)
    return spec


def _pin_judge(store: RunStore, judge_ref: Any) -> None:
    """After ``--rejudge --judge``: every judge check is the judge's that ``judge_ref`` names, so run.json
    pins it (``pins.judge``, as ``simlab run --judge`` would have): a gate of a suite that names
    another judge, and a comparison with a run of another, see that its verdicts are not theirs."""
    from simlab.runner.prepare import judge_pin_of

    manifest = store.read_manifest()
    if manifest is None or not isinstance(manifest.get("pins"), dict):
        return
    pin = judge_pin_of(judge_ref)
    if manifest["pins"].get("judge") != pin:
        manifest["pins"]["judge"] = pin
        store.write_manifest(manifest)
