"""``simlab``: the command line. Errors become one message and an exit code, never a traceback."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Iterable
from typing import Any

from simlab.errors import EXIT_INFRA, EXIT_USAGE, SimlabError
from simlab.inert import InertStream, inert_text, one_line
from simlab.version import __version__

EXIT_INTERRUPTED = 130


# name → (its module, its line in ``simlab --help``), in the order ``simlab --help`` lists them. A
# command module has configure(parser) (its arguments; DESCRIPTION, if it has one, heads its own
# --help) and run(args) -> exit code. It is imported only when its command is parsed (its --help
# included), so ``simlab --help`` imports none, and it imports what its work needs inside run
# (tests/test_cli_registry.py checks both). Add a command here.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("simlab.cli.run_cmd", "simulate conversations and record transcripts"),
    "init": (
        "simlab.cli.init_cmd",
        "write a runnable starter project (domain, agent, persona, scenarios, suite)",
    ),
    "runs": ("simlab.cli.runs_cmd", "list the runs: id, date, trials done of planned, pass^1, pass^k, agent"),
    "tools": ("simlab.cli.tools_cmd", "show a domain's tools, their arguments and its seed data"),
    "validate": ("simlab.cli.validate_cmd", "check scenario, persona, suite and config files"),
    "lint": ("simlab.cli.lint_cmd", "check that each scenario can be solved, before any model is called"),
    "report": ("simlab.cli.report_cmd", "summarise a run: pass^k, intervals, failing checks, cost"),
    "coverage": (
        "simlab.cli.coverage_cmd",
        "what a suite (or a run) leaves untested: tools, refusal paths, rules, traits, terminations, drift",
    ),
    "generate": (
        "simlab.cli.generate_cmd",
        "draft scenarios with a model; keep only those that validate, lint, replay, play and add something",
    ),
    "grade": ("simlab.cli.grade_cmd", "re-grade a stored run without simulating again"),
    "gate": (
        "simlab.cli.gate_cmd",
        "check a run against a suite's gates (exit 0 held, 1 failed, 3 inconclusive)",
    ),
    "compare": (
        "simlab.cli.compare_cmd",
        "compare two runs: per scenario and pooled, with intervals (exit 0; "
        "1 regressed with --fail-on-regression; 3 no data)",
    ),
    "triage": (
        "simlab.cli.triage_cmd",
        "ask a judge model for each failure mode's fault type and cause (one call per mode; off by default)",
    ),
    "calibrate": ("simlab.cli.calibrate_cmd", "measure a judge against human labels (agreement, kappa)"),
    "merge": (
        "simlab.cli.merge_cmd",
        "merge the shards of a run (--shard i/N on several machines) into one run",
    ),
    "view": ("simlab.cli.view_cmd", "browse runs and transcripts in the terminal"),
    "serve": (
        "simlab.cli.serve_cmd",
        "serve a domain's tools over MCP for one session (point an agent at them)",
    ),
    "cache": ("simlab.cli.cache_cmd", "the response cache of model answers (--cache, cache: in simlab.yaml)"),
    "grade-traces": (
        "simlab.cli.traces_cmd",
        "grade imported production traces: reference-free checks on a seeded sample plus every flagged trace",
    ),
    "promote": (
        "simlab.cli.promote_cmd",
        "write a scenario YAML draft from a stored trial (e.g. an imported production trace)",
    ),
    "import": ("simlab.cli.import_cmd", "import conversations or eval sets written by other tools"),
    "schema": ("simlab.cli.schema_cmd", "write JSON Schemas for the YAML files (for editors)"),
}


def command_module(name: str) -> Any:
    """The module of command ``name`` (``COMMANDS``)."""
    return importlib.import_module(COMMANDS[name][0])


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The command line: every command listed with its help line; the arguments of ``commands``
    (default: all of them), whose modules are imported for it (``main`` builds the one it runs)."""
    parser = argparse.ArgumentParser(
        prog="simlab",
        description="Simulated users talk to your agent; every conversation is recorded, graded and "
        "summarised.",
    )
    parser.add_argument("--version", action="version", version=f"simlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = set(COMMANDS if commands is None else commands)
    for name, (_, text) in COMMANDS.items():
        command = sub.add_parser(name, help=text)
        if name in chosen:
            module = command_module(name)
            command.description = getattr(module, "DESCRIPTION", None)
            module.configure(command)
    return parser


def command_named(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is no option (simlab's own options, --help and
    --version, take no value), when that word is a command."""
    word = next((w for w in argv if not w.startswith("-")), None)
    return word if word in COMMANDS else None


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
    named = command_named(sys.argv[1:] if argv is None else argv)
    parser = build_parser([named] if named else [])  # only the command given is imported
    args, extra = parser.parse_known_args(argv)
    if args.command == "import":
        args.rest = extra  # the format's own arguments: its module parses them (cli/import_cmd.py)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the project's own agents and domains import like in pytest
    if args.command != "view":  # the viewer draws the terminal itself; its text is made literal there
        sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)
    try:
        return int(command_module(args.command).run(args))
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
        print(
            f"internal error: {type(exc).__name__}: {one_line(exc)} (set SIMLAB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
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


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    entry()
