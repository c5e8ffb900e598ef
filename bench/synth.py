"""Synthetic runs of any size, made fast by replicating real demo records under new unit ids.

A real demo run (the flaky agent: passes, failures, loops, transfers) gives the records; copy k
of scenario S becomes unit ``S#k`` with ``trial: k``, the new run's id and the seed the plan
derives for that unit (every reader checks all three: ``runner/identity.py``), so the result looks
like a run of ``trials`` per scenario: the same files (``heads.jsonl``, the index of heads,
included), the same manifest, gradable and reportable.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import BinaryIO

from _common import enter, scratch_project

from simlab.runner.heads_index import HEADER, HEADS, entries
from simlab.runner.plan import derive_seed

SEED_TRIALS = 4


def seed_run(root: Path, trials: int = SEED_TRIALS, run_id: str = "seed") -> Path:
    """Play the demo once (offline, deterministic) and return its run folder."""
    import contextlib
    import io

    from simlab.cli.main import main

    enter(root)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", "--run-id", run_id, "--trials", str(trials), "--no-progress"])
    if code not in (0, 3):
        sys.exit(f"the seed run failed with exit code {code}")
    return root / "transcripts" / run_id


def _templates(seed: Path) -> dict[str, list[str]]:
    """Per scenario, its records as format strings with ``{unit}``, ``{trial}``, ``{run}`` and
    ``{seed}`` holes."""
    out: dict[str, list[str]] = {}
    for line in (seed / "trials.jsonl").read_text().splitlines():
        raw = json.loads(line)
        t = raw["transcript"]
        scenario, trial = t["scenario_id"], t["trial"]
        text = line.replace("{", "{{").replace("}", "}}")
        text = text.replace(f'"unit_id":"{scenario}#{trial}"', '"unit_id":"{unit}"')
        text, count = re.subn(rf'"trial":{trial},', '"trial":{trial},', text)  # the transcript's and the head's
        text, runs = re.subn(rf'"run_id":"{t["run_id"]}"', '"run_id":"{run}"', text)
        text, seeds = re.subn(rf'"seed":{t["seed"]}([,}}])', r'"seed":{seed}\1', text)
        assert count == 2 and runs == 2 and seeds == 2 and text.count("{unit}") == 3, "unexpected record layout"
        out.setdefault(scenario, []).append(text)
    return out


def synth_run(seed: Path, folder: Path, trials_per_scenario: int, *, planned: int | None = None) -> int:
    """Write ``folder`` (run.json + trials.jsonl) with ``trials_per_scenario`` per scenario done,
    of ``planned`` per scenario (default: all done)."""
    templates = _templates(seed)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((seed / "run.json").read_text())
    manifest["run_id"] = folder.name
    for pin in manifest["pins"]["scenarios"].values():
        pin["trials"] = planned or trials_per_scenario
    manifest["units"] = (planned or trials_per_scenario) * len(templates)
    manifest.pop("resumes", None)
    (folder / "run.json").write_text(json.dumps(manifest, indent=2))
    run_seed = int(manifest["pins"]["seed"])
    written, offset = 0, 0
    with open(folder / "trials.jsonl", "wb") as fh, open(folder / HEADS, "wb") as index:
        index.write(HEADER)  # the index of heads, as a run's writer appends it (heads_index.entries)
        batch: list[bytes] = []
        for k in range(1, trials_per_scenario + 1):
            for scenario, versions in templates.items():
                text = versions[(k - 1) % len(versions)]
                batch.append(text.format(unit=f"{scenario}#{k}", trial=k, run=folder.name,
                                         seed=derive_seed(run_seed, scenario, k)).encode("utf-8") + b"\n")
                written += 1
            if len(batch) >= 2000:
                offset = _flush(fh, index, offset, batch)
        if batch:
            _flush(fh, index, offset, batch)
    return written


def _flush(fh: BinaryIO, index: BinaryIO, offset: int, batch: list[bytes]) -> int:
    fh.write(b"".join(batch))
    index.write(entries(offset, batch))
    offset += sum(len(line) for line in batch)
    batch.clear()
    return offset


def make(trials_per_scenario: int, name: str = "synth") -> tuple[Path, Path]:
    """(project root, run folder) of a fresh synthetic run."""
    root = scratch_project(name)
    seed = seed_run(root)
    folder = root / "transcripts" / f"{name}-{trials_per_scenario}"
    synth_run(seed, folder, trials_per_scenario)
    return root, folder


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    root, folder = make(size)
    print(folder)
