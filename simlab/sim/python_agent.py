"""A Python callable as the agent under test: ``python:module:attr`` (or ``python:path/to/file.py:attr``),
sync or async, taking one ``AgentInput`` and returning the reply text or an ``AgentReply``. A sync
one runs on a thread while the loop waits for it (``sim/agent_thread.py``): a turn that hangs there
is cut off at its bound as an async one is."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from simlab.errors import SpecError
from simlab.imports import RefError, load_callable
from simlab.sim.agent_io import AgentInput, AgentReply
from simlab.sim.agent_thread import run_bounded
from simlab.transcript import Pin

__all__ = ["PythonAgent", "load_python_agent"]


class PythonAgent:
    def __init__(self, func: Callable[[AgentInput], Any], ref: str):
        self.func = func
        self.ref = ref
        # an ``async def`` (or an object whose __call__ is one) runs on the loop; anything else is
        # called on the agent thread, the loop waiting for it; an awaitable it returns is awaited
        self.is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
            getattr(func, "__call__", None)  # noqa: B004 - an object's async __call__
        )

    def pin(self) -> Pin:
        """``uses_models = False`` on the callable declares that it spends no tokens we cannot see."""
        uses_models = getattr(self.func, "uses_models", None)
        return Pin(
            kind="python", ref=self.ref, settings={} if uses_models is None else {"uses_models": uses_models}
        )

    async def respond(self, inp: AgentInput) -> AgentReply:
        value = self.func(inp) if self.is_async else run_bounded(self.func, inp)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, AgentReply):
            return value
        if not isinstance(value, str):
            raise TypeError(f"agent {self.ref} returned {type(value).__name__}; return the reply text")
        return AgentReply(text=value)


def load_python_agent(ref: str, *, source: str = "agent") -> PythonAgent:
    """Import ``module:attr`` (the module may also be a path to a .py file)."""
    try:
        return PythonAgent(load_callable(ref, example="examples.retail_agents:careful_agent"), ref)
    except RefError as exc:  # an import error in user code is a spec problem, shown in one line
        raise SpecError(f"{source}: {exc}") from None
