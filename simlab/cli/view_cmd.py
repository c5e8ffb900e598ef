"""``simlab view [RUN_ID | PATH]``: browse runs and transcripts in the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path


def view_command(args: argparse.Namespace) -> int:
    from simlab.specs import load_config
    from simlab.tui import make_app

    root = Path(load_config(Path("simlab.yaml")).transcripts)
    app = make_app(root, getattr(args, "target", None))  # UsageError (exit 2) when there is no run
    app.run()
    return app.return_code or 0
