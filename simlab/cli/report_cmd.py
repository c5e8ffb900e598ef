"""``simlab report`` and ``simlab grade``: summarise a stored run; re-grade it without simulating."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simlab.errors import EXIT_INFRA, EXIT_OK, UsageError
from simlab.inert import one_line
from simlab.report.build import build, project_run
from simlab.report.completeness import summary_state
from simlab.report.formats import render
from simlab.report.step_summary import write_step_summary
from simlab.report.terminal import print_report, report_console
from simlab.results.figures import RunSummary
from simlab.runner.store import RunStore, write_atomic
from simlab.specs import load_config


def report_command(args: argparse.Namespace) -> int:
    folder = project_run(args.run)
    summary = build(folder, checks_table=args.checks_table)
    fmt = "json" if args.json else args.format
    if fmt == "terminal":
        print_report(summary, report_console(), view=args.view)
    else:
        text = render(summary, fmt)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
            print(f"wrote {args.out}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    if getattr(args, "html", None):
        write_html(folder, summary, Path(args.html))
    write_step_summary(summary)
    if fmt != "json":
        print(f"summary: {folder / 'summary.json'}", file=sys.stderr)
    return report_exit(folder, summary)


def report_exit(folder: Path, summary: RunSummary) -> int:
    """0, or 3 (INCONCLUSIVE) for a run that is not whole, whatever its figures: the report is
    written and says so on its first line, and the exit code says that it could not judge the run
    (``report/completeness.py``); stderr says why, and how to finish the run."""
    state = summary_state(summary)
    if state.judged:
        return EXIT_OK
    done = summary.completeness
    what = (f"no trial of run {one_line(summary.run_id)} finished: there is nothing to judge" if not summary.trials
            else f"the figures stand for the {summary.trials} trials played, not for run {one_line(summary.run_id)}")
    print(f"inconclusive (exit 3): {one_line(state.line)}; {what}", file=sys.stderr)
    command = (RunStore(folder).read_manifest() or {}).get("command")
    if done is not None and done.planned is not None and done.finished < done.planned and command:
        from simlab.cli.run_cmd import resume_command

        print(f"finish it with: {resume_command(command, folder.name)}", file=sys.stderr)
    return EXIT_INFRA


def write_html(folder: Path, summary: RunSummary, path: Path) -> None:
    """The HTML report of the run in ``folder`` (``report/html.py``), written atomically."""
    from simlab.report.digest import digest
    from simlab.report.html import html_report

    if not path.parent.is_dir():
        raise UsageError(f"--html {path}: the folder {path.parent} does not exist; create it or name a file in a "
                         "folder that does")
    trials = digest(folder, allow_unjudged=summary.unjudged.allowed_kinds, records=True, heads=True)
    write_atomic(path, html_report(summary, trials))
    print(f"html: {one_line(path)}", file=sys.stderr)


def grade_command(args: argparse.Namespace) -> int:
    from simlab.runner.factory import build_judge
    from simlab.runner.regrade import regrade

    folder = project_run(args.run)
    store = RunStore(folder)
    manifest = store.read_manifest() or {}
    judge_ref = args.judge or manifest.get("pins", {}).get("judge")
    config = load_config(Path("simlab.yaml"))
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
    finally:
        store.unlock()
    err = sys.stderr
    if report.changed_scenario_files:
        print(f"note: scenario files changed since the run: {', '.join(map(one_line, report.changed_scenario_files))}",
              file=err)
    changes = ", ".join(f"{k}: {v}" for k, v in report.verdict_changes.items()) or "no verdict changed"
    print(f"re-graded {report.trials} trials of {one_line(folder.name)}: {changes}", file=err)
    for line in report.check_changes[: args.show]:
        print(f"  {one_line(line)}", file=err)
    if len(report.check_changes) > args.show:
        print(f"  … and {len(report.check_changes) - args.show} more check changes", file=err)
    summary = build(folder)
    if args.json:
        print(json.dumps({"trials": report.trials, "verdict_changes": report.verdict_changes,
                          "check_changes": report.check_changes}, indent=2))
    else:
        print_report(summary, report_console())
    return 0
