"""The shape of simlab's command line as data: every command, its description and help line, and
every argument's flags, default, help, type, choices, nargs, metavar and whether it is required.
``tests/fixtures/cli/parser.json`` holds it as it stood before the commands moved into a registry
(issue 27); ``test_cli_parser.py`` compares the parser of today against it.

After an intended change of a flag, rewrite the fixture and review its diff:

    python tests/cli_shape.py > tests/fixtures/cli/parser.json
"""

from __future__ import annotations

import argparse
import importlib
import json
from typing import Any


def _value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return repr(value)


def _type(kind: Any) -> str | None:
    return None if kind is None else getattr(kind, "__name__", repr(kind))


def arguments(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        rows.append({"flags": list(action.option_strings), "dest": action.dest, "action": type(action).__name__,
                     "default": _value(action.default), "help": action.help, "type": _type(action.type),
                     "choices": _value(action.choices), "nargs": _value(action.nargs),
                     "metavar": _value(action.metavar), "required": action.required,
                     "const": _value(action.const)})
    return rows


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def help_lines(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    lines: dict[str, str | None] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            lines.update({choice.dest: choice.help for choice in action._choices_actions})
    return lines


def shape(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The top-level parser and every command under it, in the order ``--help`` lists them."""
    found: dict[str, Any] = {"prog": parser.prog, "description": parser.description,
                             "arguments": arguments(parser), "commands": {}}
    lines = help_lines(parser)
    for name, sub in subcommands(parser).items():
        entry = {"prog": sub.prog, "help": lines.get(name), "description": sub.description,
                 "add_help": sub.add_help, "arguments": arguments(sub),
                 "defaults": {k: _value(v) for k, v in sub._defaults.items() if not k.startswith("_")}}
        nested = subcommands(sub)
        if nested:
            formats = help_lines(sub)
            entry["commands"] = {fmt: {"help": formats.get(fmt), "arguments": _format_arguments(p)}
                                 for fmt, p in nested.items()}
        found["commands"][name] = entry
    return found


def _format_arguments(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """A ``simlab import`` format's own arguments, from its module's ``configure``."""
    module = parser._defaults.get("_import_module")
    if module is None:
        return arguments(parser)
    own = argparse.ArgumentParser(prog=parser.prog)
    importlib.import_module(module).configure(own)
    return arguments(own)


if __name__ == "__main__":
    from simlab.cli.main import build_parser

    print(json.dumps(shape(build_parser()), indent=1, ensure_ascii=False))
