"""Work units: scenario × trial, each with a seed derived by sha256 (never Python's salted hash)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from simlab.errors import InfraError


@dataclass(frozen=True)
class WorkUnit:
    scenario_id: str
    trial: int  # 1-based
    seed: int

    @property
    def unit_id(self) -> str:
        return f"{self.scenario_id}#{self.trial}"


def derive_seed(run_seed: int, scenario_id: str, trial: int) -> int:
    digest = hashlib.sha256(f"simlab/{run_seed}/{scenario_id}/{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # a non-negative 63-bit int


def plan_units(trials_by_scenario: dict[str, int], run_seed: int) -> list[WorkUnit]:
    """Every unit of the run, scenario by scenario, trials in order."""
    return [
        WorkUnit(scenario_id, trial, derive_seed(run_seed, scenario_id, trial))
        for scenario_id, count in trials_by_scenario.items()
        for trial in range(1, count + 1)
    ]


_PREFIX = re.compile(rb'\{"schema_version":\d+,"unit_id":"([^"\\]*)"')


def finished_unit_ids(path: Path) -> set[str]:
    """The unit ids stored in a trials file, read fast enough for a resume of 100,000 units.

    simlab writes every line as ``{"schema_version":N,"unit_id":"…",…}``, so the id is read from
    the start of the line and the rest is skipped: the file is read in blocks and never split
    into line objects (1.6 GB for 100,000 trials). A line in any other shape (a hand edit,
    another writer) is parsed in full, and one that is not a trial record is an error unless it
    is a torn last line (ignored, like ``RunStore.iter_raw``; ``repair_torn_tail`` cuts it
    before anything is appended).
    """
    done: set[str] = set()
    if not path.exists():
        return done
    number = 0
    data, block = bytearray(), bytearray(_BLOCK)  # reused: fresh 4 MB buffers would cost page faults
    with open(path, "rb") as fh:
        while size := fh.readinto(block):
            data += memoryview(block)[:size]
            pos = 0
            while (end := data.find(b"\n", pos)) >= 0:
                number += 1
                match = _PREFIX.match(data, pos, end)
                if match and data[end - 1] == 0x7D:  # "}"
                    done.add(match.group(1).decode("utf-8"))
                elif data[pos:end].strip():
                    _slow_line(bytes(data[pos:end]), path, number, False, done)
                pos = end + 1
            del data[:pos]  # cheap: a bytearray drops its head without moving the rest
    if data.strip():
        _slow_line(bytes(data), path, number + 1, True, done)
    return done


_BLOCK = 1 << 22


def _slow_line(line: bytes, path: Path, number: int, last: bool, done: set[str]) -> None:
    try:
        done.add(str(json.loads(line)["unit_id"]))
    except (ValueError, KeyError, TypeError):
        if not last:
            raise InfraError(f"{path}:{number}: not a trial record; the file was edited or corrupted") from None
        # a torn tail from a crash: not a finished unit


def remaining(units: list[WorkUnit], done: set[str]) -> list[WorkUnit]:
    """The units still to play, in plan order."""
    return [u for u in units if u.unit_id not in done]
