"""``simlab cache clear``: the response cache of model answers, beside the runs
(``transcripts/.cache``; ``--cache``, ``cache:`` in simlab.yaml)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["clear"], help="clear: delete every stored answer")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simlab.llm.cache import clear_cache
    from simlab.runner.prepare import cache_folder
    from simlab.specs import load_config

    folder = cache_folder(load_config(Path("simlab.yaml")))
    files, size = clear_cache(folder)
    print(f"cleared the response cache {folder}: {files} model files, {size / 1e6:.1f} MB")
    return 0
