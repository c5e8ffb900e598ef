"""``simlab``: the command line. Errors become one message and an exit code, never a traceback."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import Any

from simlab.errors import EXIT_INFRA, EXIT_USAGE, SimlabError
from simlab.inert import InertStream, inert_text, one_line
from simlab.version import __version__

EXIT_INTERRUPTED = 130


# Every command, in the order ``simlab --help`` lists them: its name → its module. A command module
# has HELP (its line in ``simlab --help``), optionally DESCRIPTION (atop its own --help),
# configure(parser) (its arguments) and run(args) -> exit code. Every one is imported to build the
# parser, so each keeps its top-level imports light and imports what its work needs inside run
# (tests/test_cli_registry.py checks both). Add a command here.
COMMANDS: dict[str, str] = {
    "run": "simlab.cli.run_cmd",
    "init": "simlab.cli.init_cmd",
    "runs": "simlab.cli.runs_cmd",
    "tools": "simlab.cli.tools_cmd",
    "validate": "simlab.cli.validate_cmd",
    "report": "simlab.cli.report_cmd",
    "grade": "simlab.cli.grade_cmd",
    "gate": "simlab.cli.gate_cmd",
    "compare": "simlab.cli.compare_cmd",
    "calibrate": "simlab.cli.calibrate_cmd",
    "merge": "simlab.cli.merge_cmd",
    "view": "simlab.cli.view_cmd",
    "serve": "simlab.cli.serve_cmd",
    "cache": "simlab.cli.cache_cmd",
    "grade-traces": "simlab.cli.traces_cmd",
    "promote": "simlab.cli.promote_cmd",
    "import": "simlab.cli.import_cmd",
    "schema": "simlab.cli.schema_cmd",
}


def command_module(name: str) -> Any:
    """The module of command ``name`` (``COMMANDS``)."""
    return importlib.import_module(COMMANDS[name])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simlab",
        description="Simulated users talk to your agent; every conversation is recorded, graded and summarised.",
    )
    parser.add_argument("--version", action="version", version=f"simlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = command_module(name)
        module.configure(sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", None)))
    return parser


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


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    entry()
