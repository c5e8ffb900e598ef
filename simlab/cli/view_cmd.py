"""``simlab view [RUN_ID | PATH]``: browse runs and transcripts in the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", help="a run id or a run folder (default: the newest run)")


def run(args: argparse.Namespace) -> int:
    from simlab.specs import load_config
    from simlab.tui import make_app

    root = Path(load_config(Path("simlab.yaml")).transcripts)
    app = make_app(root, getattr(args, "target", None))  # UsageError (exit 2) when there is no run
    app.run()
    return app.return_code or 0
