"""``simlab run``: the command line of ``runner.batch.run_batch``: parse, play, print, exit code.
Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what playing needs is
imported in ``run``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from simlab.cli.argtypes import add_paths, positive, tags, workers
from simlab.errors import EXIT_INFRA as EXIT_INCOMPLETE
from simlab.errors import UsageError

if TYPE_CHECKING:
    from simlab.results.figures import RunSummary
    from simlab.runner.batch import BatchResult
    from simlab.runner.prepare import RunPlan

EXIT_INTERRUPTED = 130

DESCRIPTION = "Plan scenario × trial units and play them; re-running a run id resumes it."


def configure(parser: argparse.ArgumentParser) -> None:
    add_paths(parser, "scenario files or folders (default: simlab.yaml's scenarios)")
    parser.add_argument("--suite", help="a suite file naming scenarios and settings")
    parser.add_argument(
        "--agent", help="LiteLLM model string, python:module:attr, or an agent service's http:// URL"
    )
    parser.add_argument("--simulator", help="rules | scripted | a LiteLLM model string")
    parser.add_argument("--judge", help="judge model (LiteLLM string), for the graders")
    parser.add_argument("--trials", type=positive, help="trials per scenario")
    parser.add_argument("--concurrency", type=positive, help="trials played at once")
    parser.add_argument("--run-id", help="name of the run folder; an existing one is resumed")
    parser.add_argument("--seed", type=int, help="run seed; trial seeds are derived from it (default 0)")
    parser.add_argument("--force", action="store_true", help="resume even if the stored pins differ")
    parser.add_argument(
        "-k",
        dest="keywords",
        metavar="EXPR",
        help="only scenarios whose id, title or tags match: words joined by and/or/not, e.g. "
        "-k 'refund and not card'",
    )
    parser.add_argument(
        "--tags", type=tags, default=[], help="only scenarios carrying one of these tags (comma-separated)"
    )
    parser.add_argument(
        "--partial-ok",
        action="store_true",
        help="with --suite and -k, --tags or paths: gate the part of the suite played (every "
        "report says partial) instead of exiting 3",
    )
    parser.add_argument(
        "--list",
        "--dry-run",
        dest="list",
        action="store_true",
        help="show the planned scenarios and trials (and where each trial count comes from); play nothing",
    )
    parser.add_argument(
        "--keep-errors",
        action="store_true",
        help="on resume, keep trials that ended in an infrastructure error instead of playing them again",
    )
    parser.add_argument(
        "--allow-same-family",
        action="store_true",
        help="allow a simulator of the same model family as the agent",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--junit", help="with --suite: write a JUnit XML file of the gates")
    parser.add_argument(
        "--workers",
        type=workers,
        default=1,
        help="processes taking the units one at a time, to use every core (default 1), "
        "or auto: one per 16 trials in flight, at most one per core; --concurrency is the "
        "total across them",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        default=None,
        help="answer a model request from the response cache when the same request (same trial "
        "seed and role) was answered before; new answers are stored (transcripts/.cache)",
    )
    parser.add_argument(
        "--replay",
        metavar="RUN",
        help="replay the user turns of every trial of RUN against the agent (a frozen user); "
        "default scenarios and trials: RUN's",
    )
    parser.add_argument(
        "--divergence",
        choices=["tools", "never", "judge"],
        help="with --replay: when the agent's turn counts as diverging (default tools: its tool "
        "calls differ from the recording's; judge: the judge model (--judge) says the next "
        "recorded user turn no longer fits)",
    )
    parser.add_argument(
        "--on-divergence",
        metavar="THEN",
        help="with --replay: stop (default; termination diverged), or the simulator that takes "
        "over: rules, scripted or a LiteLLM model",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N|auto",
        help="play only share I of N (1-based), e.g. one job of a CI matrix; the same split on "
        "every machine, then `simlab merge` the shards. auto: from a Kubernetes Indexed "
        "Job, GitLab, CircleCI or Buildkite, or SIMLAB_SHARD_INDEX/COUNT",
    )


def replay_settings(args: argparse.Namespace) -> None:
    """``--replay RUN``: the replay simulator, and by default RUN's scenarios and trial counts (so
    every unit id meets its recording)."""
    import json

    from simlab.report.build import project_run
    from simlab.runner.store import RunStore

    replay = getattr(args, "replay", None)
    if not replay:
        if getattr(args, "divergence", None) or getattr(args, "on_divergence", None):
            raise UsageError("--divergence and --on-divergence go with --replay RUN")
        return
    if args.simulator:
        raise UsageError(
            "--replay RUN plays the recorded users: leave out --simulator (use --on-divergence for "
            "who takes over after a divergence)"
        )
    folder = project_run(replay)
    manifest = RunStore(folder).read_manifest() or {}
    if manifest.get("observed"):
        raise UsageError(
            f"{replay} is an imported run: its conversations have no scenario to play them in; "
            f"promote one first (simlab promote {replay} TRIAL)"
        )
    pinned = (manifest.get("pins") or {}).get("scenarios") or {}
    if not args.paths and not args.suite:
        args.paths = sorted({str(p["path"]) for p in pinned.values()})
    if args.trials is None:  # each scenario as many trials as RUN played of it
        args.scenario_trials = {str(sid): int(p.get("trials") or 1) for sid, p in pinned.items()}
    spec = {
        "kind": "replay",
        "run": str(folder),
        "divergence": args.divergence or "tools",
        "then": args.on_divergence or "stop",
    }
    args.simulator = json.dumps(spec)


def run(args: argparse.Namespace) -> int:
    from simlab.cli.progress import Progress
    from simlab.report.build import build
    from simlab.report.gates import over_budget
    from simlab.report.terminal import print_report, report_console
    from simlab.runner.batch import BatchOptions, run_batch
    from simlab.runner.prepare import RunRequest, prepare
    from simlab.runner.shard import resolve_shard

    shard = resolve_shard(getattr(args, "shard", None), os.environ)
    replay_settings(args)
    if not args.paths and not args.suite:
        check_project()
    req = RunRequest(
        root=Path("."),
        paths=args.paths,
        suite=args.suite,
        agent=args.agent,
        simulator=args.simulator,
        judge=args.judge,
        trials=args.trials,
        scenario_trials=getattr(args, "scenario_trials", None) or {},
        concurrency=args.concurrency,
        run_id=args.run_id,
        seed=args.seed,
        allow_same_family=args.allow_same_family,
        command=["simlab", *sys.argv[1:]],
        keywords=getattr(args, "keywords", None),
        tags=getattr(args, "tags", None) or [],
        cache=getattr(args, "cache", None),
        partial_ok=getattr(args, "partial_ok", False),
    )
    if getattr(args, "list", False):
        return list_plan(prepare(req), suite=args.suite)
    options = BatchOptions(
        force=args.force,
        keep_errors=getattr(args, "keep_errors", False),
        workers=getattr(args, "workers", None) or 1,
        shard=shard,
        note=lambda text: print(text, file=sys.stderr),
        progress=lambda total, done: Progress(total=total, done=done, enabled=not args.no_progress),
    )
    result = run_batch(req, options)
    if result.interrupted:  # one Ctrl-C came: further ones wait until the resume command is said
        from simlab.cli.main import _ignore_interrupts

        _ignore_interrupts()
    plan, outcome = result.plan, result.outcome
    summary = build(plan.folder)
    if result.interrupted:
        return interrupted(result, summary)
    print_report(summary, report_console())
    print(f"transcripts: {result.store.trials_path}", file=sys.stderr)
    if outcome.stopped_by:
        print(f"stopped early: {outcome.stopped_by}", file=sys.stderr)
    print(
        f"next: simlab view {plan.run_id}   (or: simlab report {plan.run_id} --format markdown)",
        file=sys.stderr,
    )
    if args.suite and shard[1] > 1:  # one shard is not the run: gate it once the shards are merged
        print(
            f"shard {shard[0]}/{shard[1]} done; check the gates after merging the shards: "
            f"simlab gate {plan.run_id} --suite {args.suite}",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE if outcome.stopped_by else 0
    if args.suite:
        from simlab.cli.gate_cmd import check_gates
        from simlab.specs import load_suite

        return check_gates(
            plan.folder, load_suite(Path(args.suite)).spec, junit=args.junit, console=report_console()
        )
    problem = over_budget(summary, plan.manifest)
    if problem:  # a run that mostly could not be played is no result: say so, and why
        print(f"{problem}.", file=sys.stderr)
    return EXIT_INCOMPLETE if problem or outcome.stopped_by else 0


def check_project() -> None:
    """``simlab run`` with nothing named, in a folder that is no simlab project: say how to start one
    rather than that the default ``scenarios`` folder is missing."""
    if not Path("simlab.yaml").exists() and not Path("scenarios").exists():
        raise UsageError(
            f"no simlab.yaml and no scenarios/ in {Path.cwd()}: nothing to run here. Start a project "
            "with `simlab init` (a runnable starter), or name what to play: simlab run SCENARIO_FILES "
            "or simlab run --suite SUITE"
        )


def interrupted(result: BatchResult, summary: RunSummary) -> int:
    """Ctrl-C: the finished trials' report, then how to resume; exit 130, the same in a terminal
    and through a pipe. A Ctrl-C typed in a terminal reaches every process of the pipeline, so in
    ``simlab run … 2>&1 | tee log`` the reader is gone too: what can no longer be written is
    dropped (``ReportConsole``; stderr pointed at /dev/null), the resume command goes to the
    terminal itself (``tell_terminal``), and the exit code still says 130."""
    from simlab.report.terminal import print_report, report_console, silence

    command = resume_command(result.plan.manifest.get("command") or [], result.plan.run_id)
    line = f"interrupted: finished trials are saved; {result.left} left. Resume with: {command}"
    try:
        print_report(summary, report_console())
        print(f"transcripts: {result.store.trials_path}", file=sys.stderr)
        print(line, file=sys.stderr)
    except BrokenPipeError:
        silence(sys.stderr)
        tell_terminal(line)
    return EXIT_INTERRUPTED


def tell_terminal(text: str) -> None:
    """``text`` on the controlling terminal (``/dev/tty``), printed inert, when stderr's reader is
    gone: whoever typed the Ctrl-C there still needs the resume command. Nothing without one (CI)."""
    from simlab.inert import InertStream

    try:
        with open("/dev/tty", "w", encoding="utf-8") as tty:
            InertStream(tty).write(text + "\n")
    except OSError:
        pass


def resume_command(command: list[str], run_id: str) -> str:
    """The command that resumes a run: the one it was started with (run.json keeps it), with its
    run id made explicit (a generated id would otherwise start a new run)."""
    import shlex

    words = list(command) or ["simlab", "run"]
    if not any(w == "--run-id" or w.startswith("--run-id=") for w in words):
        words += ["--run-id", run_id]
    return shlex.join(words)


def list_plan(plan: RunPlan, suite: str | None = None) -> int:
    """``--list``: what would be played, scenario by scenario, and who set each trial count; with
    a suite, how noisy each of its gates is with these trial counts (``report/gates.power_line``)."""
    from simlab.inert import one_line

    print(
        f"run {plan.run_id}: {len(plan.scenarios)} scenarios, {len(plan.units)} trials; agent "
        f"{plan.agent.ref}, "
        f"simulator {plan.simulator.ref}" + (f", judge {plan.judge.ref}" if plan.judge else "")
    )
    width = max(len(sid) for sid in plan.scenarios)
    for sid, loaded in plan.scenarios.items():
        n, source = plan.trial_sources.get(sid, (0, "?"))
        tags = f"  [{', '.join(one_line(t) for t in loaded.spec.tags)}]" if loaded.spec.tags else ""
        print(f"  {one_line(sid):<{width}}  {n:>4} trials  (from {source}){tags}")
    print("trial counts: --trials, then the suite, then the scenario file, then simlab.yaml, then 1")
    if suite:
        from simlab.report.gates import power_line
        from simlab.specs import load_suite

        planned = [n for n, _ in plan.trial_sources.values()]
        for gate in load_suite(Path(suite)).spec.gates:
            line = power_line(gate, planned)
            if line:
                print(f"gate {one_line(gate.label)} — {line} (if every trial is valid)")
    return 0
