"""``simlab``: the command line. Errors become one message and an exit code, never a traceback."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from simlab.errors import EXIT_INFRA, EXIT_USAGE, SimlabError
from simlab.inert import InertStream, inert_text, one_line
from simlab.version import __version__

EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simlab",
        description="Simulated users talk to your agent; every conversation is recorded, graded and summarised.",
    )
    parser.add_argument("--version", action="version", version=f"simlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="simulate conversations and record transcripts",
                         description="Plan scenario × trial units and play them; re-running a run id resumes it.")
    run.add_argument("paths", nargs="*", help="scenario files or folders (default: simlab.yaml's scenarios)")
    run.add_argument("--suite", help="a suite file naming scenarios and settings")
    run.add_argument("--agent", help="LiteLLM model string, python:module:attr, or an agent service's http:// URL")
    run.add_argument("--simulator", help="rules | scripted | a LiteLLM model string")
    run.add_argument("--judge", help="judge model (LiteLLM string), for the graders")
    run.add_argument("--trials", type=_positive, help="trials per scenario")
    run.add_argument("--concurrency", type=_positive, help="trials played at once")
    run.add_argument("--run-id", help="name of the run folder; an existing one is resumed")
    run.add_argument("--seed", type=int, help="run seed; trial seeds are derived from it (default 0)")
    run.add_argument("--force", action="store_true", help="resume even if the stored pins differ")
    run.add_argument("-k", dest="keywords", metavar="EXPR",
                     help="only scenarios whose id, title or tags match: words joined by and/or/not, e.g. "
                          "-k 'refund and not card'")
    run.add_argument("--tags", type=lambda text: [t.strip() for t in text.split(",") if t.strip()], default=[],
                     help="only scenarios carrying one of these tags (comma-separated)")
    run.add_argument("--partial-ok", action="store_true",
                     help="with --suite and -k, --tags or paths: gate the part of the suite played (every report "
                          "says partial) instead of exiting 3")
    run.add_argument("--list", "--dry-run", dest="list", action="store_true",
                     help="show the planned scenarios and trials (and where each trial count comes from); play nothing")
    run.add_argument("--keep-errors", action="store_true",
                     help="on resume, keep trials that ended in an infrastructure error instead of playing them again")
    run.add_argument("--allow-same-family", action="store_true",
                     help="allow a simulator of the same model family as the agent")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--junit", help="with --suite: write a JUnit XML file of the gates")
    run.add_argument("--workers", type=_workers, default=1,
                     help="processes playing disjoint shares of the units, to use every core (default 1), or "
                          "auto: one per 16 trials in flight, at most one per core; --concurrency is the total "
                          "across them")
    run.add_argument("--cache", action="store_true", default=None,
                     help="answer a model request from the response cache when the same request (same trial seed "
                          "and role) was answered before; new answers are stored (transcripts/.cache)")
    run.add_argument("--replay", metavar="RUN",
                     help="replay the user turns of every trial of RUN against the agent (a frozen user); "
                          "default scenarios and trials: RUN's")
    run.add_argument("--divergence", choices=["tools", "never", "judge"],
                     help="with --replay: when the agent's turn counts as diverging (default tools: its tool calls "
                          "differ from the recording's; judge: the judge model (--judge) says the next recorded "
                          "user turn no longer fits)")
    run.add_argument("--on-divergence", metavar="THEN",
                     help="with --replay: stop (default; termination diverged), or the simulator that takes over: "
                          "rules, scripted or a LiteLLM model")
    run.add_argument("--shard", metavar="I/N|auto",
                     help="play only share I of N (1-based), e.g. one job of a CI matrix; the same split on "
                          "every machine, then `simlab merge` the shards. auto: from a Kubernetes Indexed Job, "
                          "GitLab, CircleCI or Buildkite, or SIMLAB_SHARD_INDEX/COUNT")

    init = sub.add_parser("init", help="write a runnable starter project (domain, agent, persona, scenarios, suite)",
                          description="A tiny library domain, a Python agent, a persona, two scenarios and a suite, "
                                      "green on the first `simlab run`.")
    init.add_argument("folder", nargs="?", default=".", help="where to write it (default: here)")
    init.add_argument("--force", action="store_true", help="overwrite files that exist")

    runs = sub.add_parser("runs", help="list the runs: id, date, trials done of planned, pass^1, pass^k, agent")
    runs.add_argument("--k", type=_positive, default=3, help="the k of the pass^k column (default 3)")
    runs.add_argument("--last", type=_positive, default=20, help="how many runs, newest first (default 20)")

    tools = sub.add_parser("tools", help="show a domain's tools, their arguments and its seed data")
    tools.add_argument("domain", help="a built-in domain (retail) or an importable module exposing DOMAIN")
    tools.add_argument("--state", action="store_true", help="also print the seed data")
    tools.add_argument("--policy", action="store_true", help="also print the policy text")

    validate = sub.add_parser("validate", help="check scenario, persona, suite and config files")
    validate.add_argument("paths", nargs="*", help="files or folders (default: the project's scenarios and personas)")

    report = sub.add_parser("report", help="summarise a run: pass^k, intervals, failing checks, cost")
    report.add_argument("run", nargs="?", help="run id or run folder (default: the newest run)")
    report.add_argument("--format", choices=["terminal", "markdown", "json", "csv"], default="terminal")
    report.add_argument("--json", action="store_true", help="print only the JSON summary on stdout")
    report.add_argument("--out", help="write the report to this file instead of stdout")
    report.add_argument("--html", metavar="FILE",
                        help="also write a self-contained HTML report (charts, failed transcripts; no network)")
    report.add_argument("--view", choices=["raw", "valid"], default="raw",
                        help="per-scenario figures over all trials (raw) or valid ones only")
    report.add_argument("--checks-table", action="store_true",
                        help="also write checks.parquet, one row per check (parses every transcript; "
                             "kept up to date from then on)")

    grade = sub.add_parser("grade", help="re-grade a stored run without simulating again")
    grade.add_argument("run", nargs="?", help="run id or run folder (default: the newest run)")
    grade.add_argument("--rejudge", action="store_true", help="also re-run the LLM judges (model calls)")
    grade.add_argument("--judge", help="judge model for --rejudge (default: the run's)")
    grade.add_argument("--cache", action="store_true",
                       help="with --rejudge: answer the judges from the response cache where they were asked the "
                            "same before (without it, --rejudge asks the judge model again)")
    grade.add_argument("--show", type=int, default=20, help="how many check changes to list")
    grade.add_argument("--json", action="store_true", help="print the changes as JSON on stdout")

    gate = sub.add_parser("gate", help="check a run against a suite's gates (exit 0 held, 1 failed, 3 inconclusive)")
    gate.add_argument("run", nargs="?", help="run id or run folder (default: the newest run)")
    gate.add_argument("--suite", required=True, help="the suite file whose gates to check")
    gate.add_argument("--junit", help="write a JUnit XML file (one testcase per scenario)")
    gate.add_argument("--json", action="store_true", help=argparse.SUPPRESS)

    compare = sub.add_parser("compare", help="compare two runs: per scenario and pooled, with intervals "
                                             "(exit 0; 1 regressed with --fail-on-regression; 3 no data)")
    compare.add_argument("base", help="baseline run id or folder")
    compare.add_argument("candidate", help="candidate run id or folder")
    compare.add_argument("--allow-different-pins", action="store_true",
                         help="compare even if simulator, judge or scenario files differ")
    compare.add_argument("--margin", type=float, default=0.0, help="tolerated drop in points (0.05 = 5 points)")
    compare.add_argument("--fail-on-regression", action="store_true",
                         help="exit 1 when the pooled success regressed beyond noise (and --margin), 3 when a run "
                              "is incomplete; without it only 'no data' (exit 3) changes the exit code")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")

    calibrate = sub.add_parser("calibrate", help="measure a judge against human labels (agreement, kappa)")
    calibrate.add_argument("labels", help="LABELS.yaml: transcripts, criteria, human yes/no labels")
    calibrate.add_argument("--judge", help="judge model (default: simlab.yaml's judge)")
    calibrate.add_argument("--samples", type=_positive, default=1, help="judge samples per item (majority vote)")

    merge = sub.add_parser("merge", help="merge the shards of a run (--shard i/N on several machines) into one run",
                           description="Check that the shards are parts of one run (same pins and plan, no torn "
                                       "or bad line, no unit twice) and write them as one run.")
    merge.add_argument("out", help="run id (or folder) of the merged run; it must not exist yet")
    merge.add_argument("shards", nargs="+", metavar="SHARD_DIR", help="run folders (or run ids) of the shards")
    merge.add_argument("--force", action="store_true",
                       help="merge shards whose pins (code included) differ; the merged run is marked mixed")

    view = sub.add_parser("view", help="browse runs and transcripts in the terminal")
    view.add_argument("target", nargs="?", help="a run id or a run folder (default: the newest run)")

    serve = sub.add_parser("serve", help="serve a domain's tools over MCP for one session (point an agent at them)",
                           description="Serve DOMAIN's tools over MCP (streamable HTTP) for one hand-driven session: "
                                       "prints the URL, then every call. Needs the serve extra.")
    serve.add_argument("domain", metavar="DOMAIN", help="a built-in domain (retail) or module[:attr] defining one")
    serve.add_argument("--scenario", metavar="FILE", help="start from this scenario's initial state")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default: any free one)")

    cache = sub.add_parser("cache", help="the response cache of model answers (--cache, cache: in simlab.yaml)")
    cache.add_argument("action", choices=["clear"], help="clear: delete every stored answer")

    traces = sub.add_parser("grade-traces", help="grade imported production traces: reference-free checks on a "
                                                 "seeded sample plus every flagged trace",
                            description="Apply a rules file's reference-free checks to the observed trials of an "
                                        "imported run and write the graded ones as a new run.")
    traces.add_argument("run", help="an imported run (simlab import): run id or folder")
    traces.add_argument("--rules", required=True, metavar="FILE",
                        help="the rules file: expect: (the checks), sample: (rate, seed, flags), domain: (optional)")
    traces.add_argument("--out", help="run id of the graded run (default: RUN-graded)")
    traces.add_argument("--judge", help="judge model for rubric and groundedness (none: those checks are not run)")
    traces.add_argument("--rate", type=float, help="fraction of the unflagged traces to grade (over sample.rate)")
    traces.add_argument("--seed", type=int, help="seed of the sample (over sample.seed)")

    from simlab.cli.import_cmd import add_parser as add_import_parser  # the formats' modules load on use only
    from simlab.cli.promote_cmd import add_parser as add_promote_parser

    add_promote_parser(sub)

    add_import_parser(sub)

    schema = sub.add_parser("schema", help="write JSON Schemas for the YAML files (for editors)")
    schema.add_argument("--out", default="schemas", help="folder to write into (default: schemas)")
    return parser


def _workers(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return _positive(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or auto, got {text!r}") from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run one command; errors become one message and an exit code. Everything printed goes through
    ``InertStream`` (secrets masked, control sequences and CI workflow commands from files made
    inert). A Ctrl-C anywhere, start-up included, exits 130; once one was seen, further Ctrl-Cs
    are ignored while simlab winds down, so a second one cannot end it with a traceback."""
    previous = signal.getsignal(signal.SIGINT)
    streams = sys.stdout, sys.stderr
    try:
        return _main(argv)
    except KeyboardInterrupt:
        _ignore_interrupts()
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        sys.stdout, sys.stderr = streams
        if not _EXITING and previous is not None:
            _set_sigint(previous)  # called in-process (tests, scripts): leave the handler as found


_EXITING = False  # set by ``entry``: the process ends after main, so interrupts stay ignored


def entry() -> None:
    """The ``simlab`` console script: ``main`` in a process of its own. The command line module is
    imported here, inside the guard, so a Ctrl-C during start-up is an interrupt like any other."""
    global _EXITING
    _EXITING = True
    try:
        code = main()
    except KeyboardInterrupt:  # between the guards: before main's own, or after it
        _ignore_interrupts()
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:
        _ignore_interrupts()  # the interpreter's shutdown (joining threads) is not interrupted again
    sys.exit(code)


def _set_sigint(handler: Any) -> None:
    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: nothing to set
        pass


def _ignore_interrupts() -> None:
    _set_sigint(signal.SIG_IGN)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "import":
        args.rest = extra  # the format's own arguments: its module parses them (cli/import_cmd.py)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "run": _run, "validate": _validate, "schema": _schema, "view": _view, "init": _init, "runs": _runs,
        "tools": _tools,
        "report": _report, "grade": _grade, "calibrate": _calibrate,
        "gate": _gate, "compare": _compare, "merge": _merge, "serve": _serve, "import": _import,
        "grade-traces": _grade_traces, "promote": _promote, "cache": _cache,
    }
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the project's own agents and domains import like in pytest
    if args.command != "view":  # the viewer draws the terminal itself; its text is made literal there
        sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)
    try:
        return commands[args.command](args)
    except SimlabError as exc:
        if os.environ.get("SIMLAB_DEBUG"):
            _print_chain(exc)  # e.g. the traceback inside a user's agent file that failed to import
        message = inert_text(str(exc))
        print(f"error: {message}" if "\n" not in message else f"error:\n{message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        _ignore_interrupts()
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`simlab tools retail | head`): nothing more to say
        _quiet_stdout()
        return 0
    except OSError as exc:  # the disk or file system refused us (full, read-only, gone)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_INFRA
    except Exception as exc:  # a bug in simlab: one line unless asked for the traceback
        from simlab.llm.types import ModelError  # imported here: the LLM package stays off start-up

        if isinstance(exc, ModelError):  # a provider refused us outside a run (e.g. calibrate)
            print(f"error: {exc.describe()}", file=sys.stderr)
            return EXIT_INFRA
        if os.environ.get("SIMLAB_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {one_line(exc)} (set SIMLAB_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 70


def _print_chain(exc: BaseException) -> None:
    """The traceback of ``exc`` and of what caused it, also where the message left it out
    (``raise ... from None`` keeps one-line messages short; the cause is still on the object)."""
    import traceback

    link: BaseException | None = exc
    seen: set[int] = set()
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.__suppress_context__ = False
        link = link.__cause__ or link.__context__
    traceback.print_exception(exc, file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from simlab.cli.run_cmd import run_command

    return run_command(args)


def _validate(args: argparse.Namespace) -> int:
    from simlab.cli.validate_cmd import validate_command

    return validate_command(args)


def _report(args: argparse.Namespace) -> int:
    from simlab.cli.report_cmd import report_command

    return report_command(args)


def _grade(args: argparse.Namespace) -> int:
    from simlab.cli.report_cmd import grade_command

    return grade_command(args)


def _gate(args: argparse.Namespace) -> int:
    from simlab.cli.gate_cmd import gate_command

    return gate_command(args)


def _compare(args: argparse.Namespace) -> int:
    from simlab.cli.gate_cmd import compare_command

    return compare_command(args)


def _merge(args: argparse.Namespace) -> int:
    from simlab.cli.merge_cmd import merge_command

    return merge_command(args)


def _calibrate(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from simlab.errors import UsageError
    from simlab.graders.calibrate import calibrate, format_report, load_labels
    from simlab.runner.factory import build_judge
    from simlab.specs import load_config

    items = load_labels(Path(args.labels))  # spec errors first, before any model is touched
    judge = build_judge(args.judge or load_config(Path("simlab.yaml")).judge)
    if judge is None:
        raise UsageError("calibrate needs a judge model: pass --judge MODEL or set 'judge' in simlab.yaml")
    print(format_report(asyncio.run(calibrate(items, judge, samples=args.samples))))
    return 0


def _promote(args: argparse.Namespace) -> int:
    from simlab.cli.promote_cmd import promote_command

    return promote_command(args)


def _grade_traces(args: argparse.Namespace) -> int:
    from simlab.cli.traces_cmd import grade_traces_command

    return grade_traces_command(args)


def _import(args: argparse.Namespace) -> int:
    from simlab.cli.import_cmd import import_command

    return import_command(args)


def _serve(args: argparse.Namespace) -> int:
    from simlab.cli.serve_cmd import serve_command

    return serve_command(args)


def _view(args: argparse.Namespace) -> int:
    from simlab.cli.view_cmd import view_command

    return view_command(args)


def _cache(args: argparse.Namespace) -> int:
    """``simlab cache clear``: the cache lives beside the runs (``transcripts/.cache``)."""
    from pathlib import Path

    from simlab.llm.cache import clear_cache
    from simlab.runner.prepare import cache_folder
    from simlab.specs import load_config

    folder = cache_folder(load_config(Path("simlab.yaml")))
    files, size = clear_cache(folder)
    print(f"cleared the response cache {folder}: {files} model files, {size / 1e6:.1f} MB")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simlab.specs.schema import write_schemas

    for path in write_schemas(Path(args.out)):
        print(path)
    return 0




def _init(args: argparse.Namespace) -> int:
    from simlab.cli.project_cmd import init_command

    return init_command(args)


def _runs(args: argparse.Namespace) -> int:
    from simlab.cli.project_cmd import runs_command

    return runs_command(args)


def _tools(args: argparse.Namespace) -> int:
    from simlab.cli.project_cmd import tools_command

    return tools_command(args)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    entry()
