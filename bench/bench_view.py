"""How fast does ``simlab view`` show a big run? A script, not a test: run it by hand.

    python bench/bench_view.py [--trials 10000] [--rounds 3] [--no-heads] [--quick]

Writes a run of N trials (100 per scenario, ~10 KB a line like the retail demo's) into a temporary
folder, then, in a fresh Python process each time (cold imports, as a user would start it),
measures from the moment the process is launched (the monotonic clock is shared with the child):

- ``imports_s``: launch to app built (interpreter, simlab.specs, textual, simlab.tui);
- ``first_screen_s``: the scenarios screen drawn (rows from the manifest; figures fill in);
- ``figures_complete_s``: every trial indexed: verdicts, pass^k, flake classes, failed checks final;
- ``details_complete_s``: every background read done (each row's turns, tool calls and cost come
  with its head, so this is ``figures_complete_s`` plus the last redraw);
- ``open_scenario_s`` / ``open_transcript_s``: one key press each, after the index.

``--no-heads`` writes the lines without their head, as simlab wrote them before record schema 2:
the viewer then parses (and validates) every line whole.

Prints each figure as its median and spread over ``--rounds`` runs (a bare interpreter's start-up
interleaved with them), and writes them with the machine block to bench/results/view.json
(``view-no-heads.json`` with ``--no-heads``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _common import Figures, add_rounds, interleaved, save  # noqa: E402  (beside this file)

CHILD = r"""
import time
import asyncio, json, sys
from pathlib import Path
from simlab.specs import load_config          # what `simlab view` imports first
from simlab.tui import make_app

async def main(root, run_id, started):
    app = make_app(root, run_id, poll_interval=None)
    built = time.perf_counter()
    out = {"imports_s": built - started}
    async with app.run_test(size=(100, 30)) as pilot:
        while app.first_screen_at is None:
            await asyncio.sleep(0.05)  # coarse: a busy poll would steal the indexing thread's time
        out["first_screen_s"] = app.first_screen_at - started
        out["rows_on_first_screen"] = app.screen.query_one("DataTable").row_count
        index = next(iter(app.indexes.values()))
        while app._busy is not None or app._queue:
            await app.workers.wait_for_complete()
            await asyncio.sleep(0.05)
        out["figures_complete_s"] = index.completed_at - started
        out["details_complete_s"] = time.perf_counter() - started
        out["trials_indexed"] = len(index.rows)
        await pilot.pause()
        t = time.perf_counter()
        await pilot.press("enter")
        await pilot.pause()
        out["open_scenario_s"] = time.perf_counter() - t
        t = time.perf_counter()
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "TranscriptScreen", app.screen
        out["open_transcript_s"] = time.perf_counter() - t
    out["litellm_imported"] = "litellm" in sys.modules
    out["pandas_imported"] = "pandas" in sys.modules
    print(json.dumps(out))

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
"""


def write_big_run(folder: Path, trials: int, per_scenario: int = 100, heads: bool = True) -> Path:
    from tests.sample_runs import sample_manifest, sample_record

    scenarios = {f"scenario-{i:03d}": min(per_scenario, trials - i * per_scenario)
                 for i in range((trials + per_scenario - 1) // per_scenario)}
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(sample_manifest("bench", scenarios), indent=2))
    from simlab.runner.store import encode_record

    templates = {k: encode_record(sample_record("bench", "SCENARIO", k, orders=16)).decode().rstrip("\n")
                 for k in (1, 2, 3)}  # as the runner writes them: head first
    if not heads:  # as simlab wrote them before record schema 2
        templates = {k: json.dumps({key: value for key, value in json.loads(line).items() if key != "head"},
                                   ensure_ascii=False, separators=(",", ":")) for k, line in templates.items()}
    from simlab.runner.plan import derive_seed

    with open(folder / "trials.jsonl", "w", encoding="utf-8") as fh:
        for sid, n in scenarios.items():
            for trial in range(1, n + 1):
                k = (trial - 1) % 3 + 1
                line = templates[k].replace("SCENARIO", sid)
                line = line.replace(f'"trial":{k},', f'"trial":{trial},')  # head and transcript
                line = line.replace(f'#{k}"', f'#{trial}"')
                # the unit's own seed (head and transcript): every reader checks it (runner/identity.py)
                line = line.replace(f'"seed":{derive_seed(0, "SCENARIO", k)},', f'"seed":{derive_seed(0, sid, trial)},')
                fh.write(line + "\n")
    return folder


def measure(root: Path, run_id: str) -> dict[str, float]:
    started = time.perf_counter()  # CLOCK_MONOTONIC: the child's perf_counter reads the same clock
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), run_id, repr(started)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process_wall_s"] = wall
    return figures


def interpreter_start() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10_000)
    add_rounds(parser, 3)
    parser.add_argument("--repeat", dest="rounds", type=int, help=argparse.SUPPRESS)  # its earlier name
    parser.add_argument("--quick", action="store_true", help="1,000 trials, 2 rounds: a smoke test")
    parser.add_argument("--no-heads", action="store_true", help="lines without their head (record schema 1)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.quick:
        args.trials, args.rounds = 1000, 2
    name = "view-no-heads" if args.no_heads else "view"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        run = write_big_run(root / "bench", args.trials, heads=not args.no_heads)
        size_mb = (run / "trials.jsonl").stat().st_size / 1e6
        print(f"wrote {args.trials:,} trials ({size_mb:.1f} MB) in {time.perf_counter() - t:.1f}s")
        found = interleaved(args.rounds, [("interpreter", interpreter_start), ("view", lambda: measure(root, "bench"))])
    runs = found["view"]
    figures = Figures()
    figures.add("interpreter_start_s", found["interpreter"], "s")
    for key in ("imports_s", "first_screen_s", "figures_complete_s", "details_complete_s", "open_scenario_s",
                "open_transcript_s", "process_wall_s"):
        figures.add(key, [r[key] for r in runs], "s")
    median = {k: round(v["median"], 3) for k, v in figures.as_dict().items()}
    result = {
        "trials": args.trials, "heads": not args.no_heads, "file_mb": round(size_mb, 1), "rounds": args.rounds,
        "figures": figures.as_dict(), **median,
        "rows_on_first_screen": runs[0]["rows_on_first_screen"], "trials_indexed": runs[0]["trials_indexed"],
        "litellm_imported": runs[0]["litellm_imported"], "pandas_imported": runs[0]["pandas_imported"],
        "each_run": runs,
    }
    verdict = "OK" if result["first_screen_s"] < 1.0 else "TOO SLOW"
    print(f"first screen of {args.trials:,} trials: {result['first_screen_s']:.3f} s, median of {args.rounds} "
          f"({verdict}, goal < 1 s)")
    save(name, result, args.out)


if __name__ == "__main__":
    main()
