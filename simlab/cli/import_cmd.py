"""``simlab import FORMAT SOURCE ...``: bring other tools' files in. Each format is a module with
``configure(parser)`` (its own arguments) and ``run(args) -> int``, listed in ``FORMATS`` and
imported only when that format is used (``simlab --help`` stays fast).

Formats write simlab's own files: conversations from production become a run of observed trials
(``transcripts/<run_id>/``); eval sets of other tools become scenario files.
"""

from __future__ import annotations

import argparse
import importlib

# name → (module with configure(parser) and run(args), one line of help). Add a format here.
FORMATS: dict[str, tuple[str, str]] = {
    "adk": ("simlab.adk.cli", "Google ADK eval sets (.evalset.json, .test.json) as scenarios and suites"),
    "openai": (
        "simlab.cli.import_openai",
        "production conversations as OpenAI-style message lists (JSONL, one a line)",
    ),
    "otlp": (
        "simlab.cli.import_otlp",
        "production traces as OTLP JSON spans (GenAI semantic conventions, OpenInference)",
    ),
}


DESCRIPTION = "Turn other tools' files into simlab runs or scenarios."


def configure(parser: argparse.ArgumentParser) -> None:
    formats = parser.add_subparsers(dest="format", metavar="FORMAT")
    for name, (module, text) in FORMATS.items():
        # the format's own arguments (and its --help) are parsed by run, once its module is loaded
        formats.add_parser(name, help=text, add_help=False).set_defaults(_import_module=module)


def run(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    """Parse the format's own arguments (its module is imported now), then run it."""
    from simlab.errors import UsageError

    module = getattr(args, "_import_module", None)
    if module is None:
        known = ", ".join(FORMATS) or "none yet"
        raise UsageError(f"simlab import FORMAT SOURCE: name a format ({known})")
    parser = argparse.ArgumentParser(prog=f"simlab import {args.format}")
    imported = importlib.import_module(module)
    imported.configure(parser)
    given = argv or []
    rest = (
        list(args.rest) if getattr(args, "rest", None) is not None else given[given.index(args.format) + 1 :]
    )
    return int(imported.run(parser.parse_args(rest)))
