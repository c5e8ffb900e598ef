"""Target 6: start-up: ``simlab --help`` (< 0.5 s) and ``simlab validate scenarios/`` (< 1 s).

Each command runs as a user runs it (a fresh process of the installed ``simlab`` script, in the
demo project), ten times, the two commands interleaved; each is recorded as its spread (n, min,
median, max), and the median counts. The first screen
of ``simlab view`` is measured by ``bench/bench_view.py``. ``-X importtime`` names the heaviest
imports of each command.

    python bench/bench_startup.py
    python bench/bench_startup.py --quick     # 3 rounds
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import Figures, add_rounds, interleaved, save, scratch_project, table, verdict


def command() -> list[str]:
    script = Path(sys.executable).parent / "simlab"
    return [str(script)] if script.exists() else [sys.executable, "-m", "simlab.cli.main"]


def timed_run(args: list[str], cwd: Path) -> float:
    """Wall seconds of one fresh ``simlab <args>`` process."""
    start = time.perf_counter()
    done = subprocess.run(command() + args, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"simlab {' '.join(args)} exited {done.returncode}: {done.stderr[-1000:]}")
    return wall


def heaviest_imports(args: list[str], cwd: Path, top: int = 5) -> list[tuple[str, float]]:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(command() + args, cwd=cwd, capture_output=True, text=True, env=env)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|", 2))
            if cumulative.isdigit() and not name.startswith(" "):
                rows.append((name.strip(), int(cumulative) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_rounds(parser, 10)
    parser.add_argument("--repeat", dest="rounds", type=int, help=argparse.SUPPRESS)  # its earlier name
    parser.add_argument("--quick", action="store_true", help="3 rounds: a smoke test")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 3
    root = scratch_project("startup")
    commands = [("simlab --help", ["--help"], 0.5), ("simlab validate scenarios/", ["validate", "scenarios"], 1.0)]
    found = interleaved(args.rounds, [(name, lambda argv=argv: timed_run(argv, root)) for name, argv, _ in commands])
    figures = Figures()
    rows: list[dict[str, Any]] = []
    for name, argv, target in commands:
        figure = figures.add(name, found[name], "s")
        rows.append({"command": name, "median_s": figure["median"], "best_s": figure["min"], "worst_s": figure["max"],
                     "target_s": target, "verdict": verdict(figure["median"], target),
                     "heaviest_imports_s": heaviest_imports(argv, root)})
    print()
    table(rows, ["command", "median_s", "best_s", "worst_s", "target_s", "verdict"])
    for row in rows:
        print(f"{row['command']}: heaviest imports " + ", ".join(f"{n} {s:.2f}s" for n, s in row["heaviest_imports_s"]))
    save("startup", {"rounds": args.rounds, "figures": figures.as_dict(), "commands": rows})
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
