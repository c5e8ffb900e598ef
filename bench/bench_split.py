"""Why 16 workers gave 10.5× and not 16× (issue 29): the tail of a fixed split.

Until issue 29 the workers of one machine were dealt fixed shares of the units up front (by the
sha256 of each unit id). A run then lasts as long as its largest share: with ``w`` workers and
``n`` units of equal cost, no split can beat ``n / w`` units per worker, and a fixed split makes
the run take ``max(share)``, so its efficiency is at most ``(n / w) / max(share)``. This script
computes that bound for the demo's own unit ids (the units ``bench_workers.py`` plays: 10
scenarios × trials), exactly and without timing anything. The workers now take units one at a
time from one pipe (``runner/workers.py``): a worker that finishes early takes the next unit, so
the bound is gone (what is left is at most one unit per slot at the very end).

    python bench/bench_split.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from _common import REPO, save

from simlab.runner.shard import unit_number


def scenario_ids() -> list[str]:
    import yaml

    return sorted(yaml.safe_load(p.read_text())["id"] for p in (REPO / "scenarios").rglob("*.yaml"))


def bound(units: list[str], workers: int) -> dict[str, float]:
    shares = [0] * workers
    for unit in units:
        shares[unit_number(unit) % workers] += 1  # the old split (shard.split, removed in issue 29)
    mean = len(units) / workers
    return {"largest_share": max(shares), "mean_share": mean, "efficiency_bound": mean / max(shares)}


def main() -> None:
    ids = scenario_ids()
    out: dict[str, dict[str, dict[str, float]]] = {}
    print("units  workers  largest share  mean share  efficiency at most")
    for trials in (30, 60, 300):
        units = [f"{sid}#{t}" for sid in ids for t in range(1, trials + 1)]
        for workers in (2, 4, 8, 16, 32):
            b = bound(units, workers)
            out.setdefault(str(len(units)), {})[str(workers)] = b
            print(f"{len(units):5d}  {workers:7d}  {b['largest_share']:13d}  {b['mean_share']:10.1f}  "
                  f"{b['efficiency_bound']:.0%}")
    save("split", {"scenarios": len(ids), "bounds": out})


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
