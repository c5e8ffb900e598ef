"""PII masking of imported traces grows linearly: ``simlab import openai`` of a 1 MB and a 10 MB
message JSONL file, each made of what once made the e-mail pattern scan the text once per position
(long runs of letters and digits, e-mail addresses, card and phone numbers, API keys), 100 KB per
message. Each import is a fresh process of the installed ``simlab``, the two sizes interleaved over
``--rounds``; the median counts.

Targets: the 10 MB file imports in under 30 s, and takes at most 15x the 1 MB file (linear: 10x,
with start-up and writing on top). Before the look-behind on the e-mail pattern, one 100 KB message
took 10 s and a 1 MB one did not finish in 100 s.

    python bench/bench_pii.py
    python bench/bench_pii.py --rounds 1
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import Figures, add_rounds, interleaved, save, scratch_project, table, verdict

MESSAGE = 100_000  # characters of one message
PIECES = ["a" * 20_000, "1" * 20_000, "dana.smith@example.com ", "4242 4242 4242 4242 ", "+1 415 555 0100 ",
          "sk-proj-4f9aZ81kLmNoPqRs ", "x@" * 5_000]


def message(n: int) -> str:
    text = "".join(PIECES[(n + i) % len(PIECES)] for i in range(len(PIECES)))
    return (text * (MESSAGE // len(text) + 1))[:MESSAGE]


def trace_file(path: Path, megabytes: int) -> Path:
    with path.open("w") as f:
        for n in range(megabytes * 1_000_000 // (2 * MESSAGE)):
            f.write(json.dumps({"messages": [{"role": "user", "content": message(n)},
                                             {"role": "assistant", "content": message(n + 1)}]}) + "\n")
    return path


def imported(root: Path, source: Path, run_id: str) -> float:
    script = Path(sys.executable).parent / "simlab"
    shutil.rmtree(root / "transcripts" / run_id, ignore_errors=True)
    start = time.perf_counter()
    done = subprocess.run([str(script), "import", "openai", str(source), "--run-id", run_id], cwd=root,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"import exited {done.returncode}: {done.stderr[-1000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_rounds(parser, 3)
    args = parser.parse_args()
    root = scratch_project("pii")
    sizes = {"1 MB": trace_file(root / "one.jsonl", 1), "10 MB": trace_file(root / "ten.jsonl", 10)}
    found = interleaved(args.rounds, [(name, lambda p=path, n=name: imported(root, p, n.replace(" ", "")))
                                      for name, path in sizes.items()])
    figures = Figures()
    small, large = (figures.add(f"import {name}", found[name], "s") for name in sizes)
    ratio = large["median"] / small["median"]
    rows: list[dict[str, Any]] = [
        {"figure": "10 MB import (s)", "median": large["median"], "target": 30.0,
         "verdict": verdict(large["median"], 30.0)},
        {"figure": "10 MB / 1 MB", "median": round(ratio, 2), "target": 15.0, "verdict": verdict(ratio, 15.0)},
    ]
    table(rows, ["figure", "median", "target", "verdict"])
    save("pii", {"rounds": args.rounds, "figures": figures.as_dict(), "ratio_10mb_to_1mb": ratio, "rows": rows})
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
