"""Simulators that play the user: rule-based, scripted, or an LLM."""

from simlab.sim.simulators.base import Simulator, SimView, UserTurn, split_signal
from simlab.sim.simulators.llm import LLMSimulator
from simlab.sim.simulators.rules import RulesSimulator
from simlab.sim.simulators.scripted import ScriptedSimulator

__all__ = [
    "LLMSimulator",
    "RulesSimulator",
    "ScriptedSimulator",
    "SimView",
    "Simulator",
    "UserTurn",
    "split_signal",
]
