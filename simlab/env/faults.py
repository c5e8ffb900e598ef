"""Which tool call a scenario's ``faults:`` hit (``specs/faults.py``), decided without a clock.

Each fault keeps its own count of the tool's calls and its own random stream, seeded by the trial's
seed and the fault's place in the list: adding a fault, or another tool's calls, never moves where
an existing fault fires. Only calls that run count (an invalid call never reaches the tool).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from simlab.specs.faults import ToolFault

__all__ = ["FaultHit", "FaultPlan"]


@dataclass(frozen=True)
class FaultHit:
    """A fault that fires on this call: which one (its index in ``faults:``) and the call's number."""

    index: int
    fault: ToolFault
    call_number: int


class FaultPlan:
    """One trial's faults: asked once per tool call that runs, in order."""

    def __init__(self, faults: Sequence[ToolFault], seed: int):
        self._faults = list(faults)
        self._rngs = [random.Random(f"simlab-fault:{seed}:{i}:{f.tool}") for i, f in enumerate(self._faults)]
        self._calls: dict[str, int] = {}

    def __bool__(self) -> bool:
        return bool(self._faults)

    def next_call(self, tool: str) -> FaultHit | None:
        """Count a call of ``tool`` and return the first fault that fires on it, if any. Every
        probabilistic fault on the tool draws on every call, fired or not, so its stream stays put."""
        number = self._calls[tool] = self._calls.get(tool, 0) + 1
        hit: FaultHit | None = None
        for index, fault in enumerate(self._faults):
            if fault.tool != tool:
                continue
            if fault.probability is not None:
                fires = self._rngs[index].random() < fault.probability
            else:
                fires = fault.on_call == number
            if fires and hit is None:
                hit = FaultHit(index, fault, number)
        return hit
