"""Argument types the commands share (``type=`` of ``add_argument``): a bad value is a usage error
(exit 2) that names the flag. Below them, the arguments several commands share, each defined once:
its name, its kind and, where the commands say the same, its help (``tests/fixtures/cli/parser.json``
holds the parser's shape). Light to import, and the one module of ``cli/`` besides ``main`` that a
command's ``--help`` loads with the command's own (``tests/test_cli_registry.py``)."""

from __future__ import annotations

import argparse
from typing import Any


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def count(text: str) -> int:
    """A whole number, 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def workers(text: str) -> int | str:
    """A number of processes, or ``auto``."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or auto, got {text!r}") from None


def tags(text: str) -> list[str]:
    """Comma-separated words, blanks dropped."""
    return [t.strip() for t in text.split(",") if t.strip()]


# --- arguments several commands share ----------------------------------------------------------


def add_run(parser: argparse.ArgumentParser) -> None:
    """The run a command reads: its id or folder, the newest run when none is given."""
    parser.add_argument("run", nargs="?", help="run id or run folder (default: the newest run)")


def add_paths(parser: argparse.ArgumentParser, text: str) -> None:
    """The files or folders a command reads, the project's when none is given (``text`` says which)."""
    parser.add_argument("paths", nargs="*", help=text)


def add_json(parser: argparse.ArgumentParser, text: str) -> None:
    """``--json``: print the command's result as JSON on stdout (``text`` says which)."""
    parser.add_argument("--json", action="store_true", help=text)


def add_max_attempts(parser: argparse.ArgumentParser, calls: str) -> None:
    """``--max-attempts N``: how many ``calls`` a model gets to give a well-formed answer."""
    parser.add_argument(
        "--max-attempts",
        type=positive,
        default=3,
        metavar="N",
        help=f"{calls} at most, when its answer is malformed (default 3)",
    )


def add_simulator_kind(parser: argparse.ArgumentParser, kinds: tuple[str, ...], text: str) -> None:
    """``--simulator KIND``: the simulator kind a command reads scenarios under; by default
    ``configured_simulator``'s."""
    parser.add_argument("--simulator", choices=kinds, help=text)


def configured_simulator(config: Any) -> str:
    """The simulator kind a command reads scenarios under when ``--simulator`` is not given:
    simlab.yaml's, else ``rules``."""
    configured = config.__dict__.get("simulator")
    return str(configured.kind) if configured is not None else "rules"
