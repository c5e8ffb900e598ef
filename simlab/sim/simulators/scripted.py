"""The scripted simulator: the scenario's ``user.script``, one line per turn.

For regression replays. A line may carry a signal (``###STOP###``). When the script runs out the
user has nothing left to say: the trial ends as ``script_ended`` (no signal: the user did not say
the goal was reached), and the graders judge the outcome from the state.
"""

from __future__ import annotations

from simlab.sim.simulators.base import Simulator, SimView, UserTurn, split_signal
from simlab.specs import Scenario
from simlab.transcript import Pin


def script_of(scenario: Scenario) -> list[str]:
    """The lines a scripted user says, one per turn: the script, after the opening when the script
    does not start with it."""
    script = list(scenario.user.script)
    if scenario.user.opening and (not script or script[0] != scenario.user.opening):
        script.insert(0, scenario.user.opening)
    return script


class ScriptedSimulator(Simulator):
    def pin(self) -> Pin:
        return Pin(kind="scripted", ref="scripted")

    async def next_message(self, view: SimView) -> UserTurn:
        script = script_of(view.scenario)
        index = view.turn - 1
        if index >= len(script):
            lines = f"{len(script)} line" + ("" if len(script) == 1 else "s")
            return UserTurn(text="", ended=f"the script ended: all {lines} played, none signalled stop")
        text, signal = split_signal(script[index])
        return UserTurn(text=text, signal=signal)
