"""Build the agent under test and the simulator from their specs; refuse unrealistic pairings."""

from __future__ import annotations

import warnings
from typing import Any

from pydantic import ValidationError

from simlab.errors import UsageError
from simlab.sim.agents import Agent, LLMAgent, load_python_agent
from simlab.sim.simulators import LLMSimulator, RulesSimulator, ScriptedSimulator, Simulator
from simlab.specs import AgentSpec, JudgeSpec, SimulatorSpec


class PinWarning(UserWarning):
    """A model named by an alias (e.g. ``-latest``) that can change under a run."""


def build_agent(spec: AgentSpec, *, limiter: Any = None, max_retries: int = 4, timeout_s: float = 60.0,
                transfer_tools: tuple[str, ...] = ("transfer_to_human",)) -> Agent:
    if spec.python:
        return load_python_agent(spec.python, source="agent")
    model = _model(
        spec.model or "", role="agent", api_base=spec.api_base, api_key_env=spec.api_key_env,
        temperature=spec.temperature, params=spec.params, max_retries=max_retries, timeout_s=timeout_s,
        limiter=limiter,
    )
    return LLMAgent(model, system_prompt=spec.system_prompt, max_steps=spec.max_steps, transfer_tools=transfer_tools)


def build_simulator(spec: SimulatorSpec, agent: AgentSpec, *, limiter: Any = None, max_retries: int = 4,
                    timeout_s: float = 60.0) -> Simulator:
    if spec.kind == "rules":
        return RulesSimulator()
    if spec.kind == "scripted":
        return ScriptedSimulator()
    from simlab.llm.family import is_pinned, model_family, same_family

    assert spec.model is not None
    pinned, why = is_pinned(spec.model)
    if not pinned:
        warnings.warn(f"simulator model {spec.model!r} is not pinned to a dated version: {why}", PinWarning,
                      stacklevel=2)
    if agent.model and same_family(agent.model, spec.model) and not spec.allow_same_family:
        raise UsageError(
            f"the simulator ({spec.model}) and the agent ({agent.model}) are of the same model family "
            f"({model_family(spec.model)}); a model talking to itself is unrealistically cooperative. "
            "Pick a simulator of another family, or pass --allow-same-family."
        )
    model = _model(
        spec.model, role="simulator", api_base=spec.api_base, api_key_env=spec.api_key_env,
        temperature=spec.temperature, params=spec.params, max_retries=max_retries, timeout_s=timeout_s,
        limiter=limiter,
    )
    return LLMSimulator(model)


def build_judge(ref: JudgeSpec | str | dict[str, Any] | None, *, limiter: Any = None, max_retries: int = 4,
                timeout_s: float = 60.0) -> Any:
    """The judge model at temperature 0, or None when none is configured (judge checks: not run).
    ``ref`` is a spec, a model string (``--judge``) or a pinned mapping (``run.json``)."""
    if not ref:
        return None
    try:
        spec = ref if isinstance(ref, JudgeSpec) else JudgeSpec.model_validate(ref)
    except ValidationError as exc:
        raise UsageError(f"judge {ref!r}: {exc.errors()[0]['msg']}") from None
    return _model(spec.model, role="judge", api_base=spec.api_base, api_key_env=spec.api_key_env, temperature=0.0,
                  params=spec.params, max_retries=max_retries, timeout_s=timeout_s, limiter=limiter)


def _model(model: str, **settings: Any) -> Any:
    from simlab.llm.client import LiteLLMModel

    try:
        return LiteLLMModel(model, **settings)
    except ValueError as exc:  # e.g. a reserved key in params
        raise UsageError(f"{settings.get('role', 'model')} {model}: {exc}") from None
