"""simlab: a simulated-user conversation lab.

The public surface is what this module exports (``__all__``, pinned by ``tests/test_api.py``);
every other module is internal and may change (ARCHITECTURE.md, *Public API*). The facade stays
cheap to import: names load on first use, so ``import simlab`` pulls in neither LiteLLM, pandas
nor Textual.

- Domains: ``Domain``, ``tool``, ``READ``, ``WRITE``, ``ToolError``.
- Agents: ``AgentInput``, ``AgentReply``, the ``Agent`` protocol (an object meeting it can be
  passed to ``run``).
- Simulators: the ``Simulator`` protocol (likewise), ``SimView``, ``UserTurn``.
- Checks: ``Check``, the ``grader`` decorator and ``GradeContext`` (what a grader gets).
- Runs: ``run(...)``, ``arun(...)``, ``load_run(...)``, ``Run``, ``RunSummary``, ``RunManifest``.
- Errors: ``SimlabError`` (what the user must fix; ``python -m simlab`` is the CLI).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from simlab.version import __version__

_EXPORTS: dict[str, str] = {
    "Domain": "simlab.env.domain",
    "tool": "simlab.env.tools",
    "READ": "simlab.env.tools",
    "WRITE": "simlab.env.tools",
    "ToolError": "simlab.env.tools",
    "AgentInput": "simlab.sim.agent_io",
    "AgentReply": "simlab.sim.agent_io",
    "Agent": "simlab.sim.agent_io",
    "Simulator": "simlab.sim.simulators.base",
    "SimView": "simlab.sim.simulators.base",
    "UserTurn": "simlab.sim.simulators.base",
    "Check": "simlab.transcript.checks",
    "GradeContext": "simlab.graders.base",
    "grader": "simlab.graders.registry",
    "run": "simlab.api",
    "arun": "simlab.api",
    "load_run": "simlab.api",
    "Run": "simlab.api",
    "RunSummary": "simlab.results.figures",
    "RunManifest": "simlab.runner.manifest",
    "SimlabError": "simlab.errors",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from simlab.api import Run as Run
    from simlab.api import arun as arun
    from simlab.api import load_run as load_run
    from simlab.api import run as run
    from simlab.env.domain import Domain as Domain
    from simlab.env.tools import READ as READ
    from simlab.env.tools import WRITE as WRITE
    from simlab.env.tools import ToolError as ToolError
    from simlab.env.tools import tool as tool
    from simlab.errors import SimlabError as SimlabError
    from simlab.graders.base import GradeContext as GradeContext
    from simlab.graders.registry import grader as grader
    from simlab.results.figures import RunSummary as RunSummary
    from simlab.runner.manifest import RunManifest as RunManifest
    from simlab.sim.agent_io import Agent as Agent
    from simlab.sim.agent_io import AgentInput as AgentInput
    from simlab.sim.agent_io import AgentReply as AgentReply
    from simlab.sim.simulators.base import Simulator as Simulator
    from simlab.sim.simulators.base import SimView as SimView
    from simlab.sim.simulators.base import UserTurn as UserTurn
    from simlab.transcript.checks import Check as Check


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'simlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
