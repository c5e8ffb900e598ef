"""Work units: scenario × trial, each with a seed derived by sha256 (never Python's salted hash)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkUnit:
    scenario_id: str
    trial: int  # 1-based
    seed: int

    @property
    def unit_id(self) -> str:
        return unit_id_of(self.scenario_id, self.trial)


def unit_id_of(scenario_id: str, trial: int) -> str:
    """The id of trial ``trial`` (1-based) of a scenario: what a run plans and stores."""
    return f"{scenario_id}#{trial}"


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


def remaining(units: list[WorkUnit], done: set[str]) -> list[WorkUnit]:
    """The units still to play, in plan order."""
    return [u for u in units if u.unit_id not in done]
