"""``simlab schema``: JSON Schemas of the YAML files, for editors (``specs/schema.py``)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="schemas", help="folder to write into (default: schemas)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simlab.specs.schema import write_schemas

    for path in write_schemas(Path(args.out)):
        print(path)
    return 0
