"""Target 6: start-up: ``simlab --help`` (< 0.5 s) and ``simlab validate scenarios/`` (< 1 s).

Each command runs as a user runs it (a fresh process of the installed ``simlab`` script, in the
demo project), ten times; the median counts, and the best is shown beside it. The first screen
of ``simlab view`` is measured by ``bench/bench_view.py``. ``-X importtime`` names the heaviest
imports of each command.

    python bench/bench_startup.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import save, scratch_project, table, verdict


def command() -> list[str]:
    script = Path(sys.executable).parent / "simlab"
    return [str(script)] if script.exists() else [sys.executable, "-m", "simlab.cli.main"]


def timings(args: list[str], cwd: Path, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(command() + args, cwd=cwd, capture_output=True, text=True)
        out.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"simlab {' '.join(args)} exited {done.returncode}: {done.stderr[-1000:]}")
    return out


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
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    root = scratch_project("startup")
    rows: list[dict[str, Any]] = []
    for name, argv, target in [("simlab --help", ["--help"], 0.5),
                               ("simlab validate scenarios/", ["validate", "scenarios"], 1.0)]:
        runs = timings(argv, root, args.repeat)
        median = statistics.median(runs)
        rows.append({"command": name, "median_s": median, "best_s": min(runs), "target_s": target,
                     "verdict": verdict(median, target), "heaviest_imports_s": heaviest_imports(argv, root)})
    table(rows, ["command", "median_s", "best_s", "target_s", "verdict"])
    for row in rows:
        print(f"{row['command']}: heaviest imports " + ", ".join(f"{n} {s:.2f}s" for n, s in row["heaviest_imports_s"]))
    save("startup", {"repeat": args.repeat, "commands": rows})
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
