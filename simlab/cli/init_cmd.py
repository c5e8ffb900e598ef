"""``simlab init [FOLDER]``: write a runnable starter project (``simlab/starter/files``)."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path
from typing import Any

from simlab.errors import UsageError

DESCRIPTION = (
    "A tiny library domain, a Python agent, a persona, two scenarios and a suite, green on the first "
    "`simlab run`."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", nargs="?", default=".", help="where to write it (default: here)")
    parser.add_argument("--force", action="store_true", help="overwrite files that exist")


def run(args: argparse.Namespace) -> int:
    """Write the starter project into ``args.folder`` (refusing to overwrite a file) and its schemas."""
    target = Path(args.folder)
    source = resources.files("simlab.starter") / "files"
    files = sorted(_walk(source))
    clashes = [rel for rel, _ in files if (target / rel).exists()]
    if clashes and not args.force:
        raise UsageError(
            f"{target}: {', '.join(clashes[:5])} already exist(s); simlab init writes a new project "
            "(use an empty folder, or --force to overwrite those files)"
        )
    for rel, entry in files:
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(entry.read_bytes())
    from simlab.specs.schema import write_schemas

    write_schemas(target / "schemas")
    print(
        f"wrote a starter project in {target}: simlab.yaml, library_domain.py, library_agent.py, personas/, "
        "scenarios/, suites/, schemas/"
    )
    where = "" if target.resolve() == Path.cwd().resolve() else f"cd {target} && "
    print(f"next: {where}simlab run      (then: simlab view, simlab run --suite suites/smoke.yaml)")
    return 0


def _walk(folder: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for entry in folder.iterdir():
        rel = f"{prefix}{entry.name}"
        if entry.is_dir():
            if entry.name != "__pycache__":
                out.extend(_walk(entry, rel + "/"))
        elif not entry.name.endswith((".pyc", ".pyo")):
            out.append((rel, entry))
    return out
