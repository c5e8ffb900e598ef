"""The scripted simulator: the scenario's ``user.script``, one line per turn.

For regression replays. A line may carry a signal (``###STOP###``). When the script runs out the
user has nothing left to say and stops; the graders judge the outcome from the state.
"""

from __future__ import annotations

from simlab.sim.simulators.base import Simulator, SimView, UserTurn, split_signal
from simlab.transcript import Pin


class ScriptedSimulator(Simulator):
    def pin(self) -> Pin:
        return Pin(kind="scripted", ref="scripted")

    async def next_message(self, view: SimView) -> UserTurn:
        script = list(view.scenario.user.script)
        if view.turn == 1 and view.scenario.user.opening and (not script or script[0] != view.scenario.user.opening):
            script.insert(0, view.scenario.user.opening)
        index = view.turn - 1
        if index >= len(script):
            return UserTurn(text="", signal="stop")
        text, signal = split_signal(script[index])
        return UserTurn(text=text, signal=signal)
