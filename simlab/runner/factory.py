"""Build the agent under test and the simulator from their specs; refuse unrealistic pairings."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from simlab.errors import UsageError
from simlab.sim.agent_io import Agent
from simlab.sim.llm_agent import LLMAgent
from simlab.sim.python_agent import load_python_agent
from simlab.sim.simulators import LLMSimulator, RulesSimulator, ScriptedSimulator, Simulator
from simlab.specs import AgentSpec, JudgeSpec, SimulatorSpec

if TYPE_CHECKING:
    from simlab.llm.limits import ModelLimiter
    from simlab.llm.types import ChatModel


class PinWarning(UserWarning):
    """A model named by an alias (e.g. ``-latest``) that can change under a run."""


def build_agent(
    spec: AgentSpec,
    *,
    limiter: ModelLimiter | None = None,
    max_retries: int = 4,
    timeout_s: float = 60.0,
    transfer_tools: tuple[str, ...] = ("transfer_to_human",),
    cache: Any = None,
) -> Agent:
    if spec.python:
        return load_python_agent(spec.python, source="agent")
    if spec.framework:  # LangGraph, OpenAI Agents SDK, pydantic-ai: imported only now
        from simlab.frameworks.common import build_framework_agent

        return build_framework_agent(spec, transfer_tools=transfer_tools)
    if spec.http is not None:  # a service: it calls the trial's tools over MCP (the serve extra)
        from simlab.serve import require_serve_extra
        from simlab.sim.http_agent import HttpAgent

        require_serve_extra("an HTTP agent (its tools are served over MCP)")
        from simlab.serve.server import ToolServer

        return HttpAgent(spec.http, tool_server=ToolServer, max_retries=max_retries, timeout_s=timeout_s)
    model = _model(
        spec,
        "agent",
        spec.temperature,
        max_retries=max_retries,
        timeout_s=timeout_s,
        limiter=limiter,
        cache=cache,
    )
    return LLMAgent(
        model, system_prompt=spec.system_prompt, max_steps=spec.max_steps, transfer_tools=transfer_tools
    )


def build_simulator(
    spec: SimulatorSpec,
    agent: AgentSpec,
    *,
    limiter: ModelLimiter | None = None,
    max_retries: int = 4,
    timeout_s: float = 60.0,
    judge: ChatModel | None = None,
    cache: Any = None,
    root: Path = Path("."),
) -> Simulator:
    """The simulator a spec names; ``judge`` (a chat model): what a replay with ``divergence: judge`` asks;
    ``root``: the project's folder, where a replay's run is looked up."""
    if spec.kind == "rules":
        return RulesSimulator()
    if spec.kind == "scripted":
        return ScriptedSimulator()
    if spec.kind == "replay":
        return _replay(
            spec,
            agent,
            judge,
            limiter=limiter,
            max_retries=max_retries,
            timeout_s=timeout_s,
            cache=cache,
            root=root,
        )
    from simlab.llm.family import is_pinned

    assert spec.model is not None
    pinned, why = is_pinned(spec.model)
    if not pinned:
        warnings.warn(
            f"simulator model {spec.model!r} is not pinned to a dated version: {why}",
            PinWarning,
            stacklevel=2,
        )
    kin = _kinship(agent, spec) if agent.model and not spec.allow_same_family else None
    if kin:
        raise UsageError(
            f"the simulator ({spec.model}) and the agent ({agent.model}) {kin}; a model talking to itself is "
            "unrealistically cooperative. Pick a simulator of another family, or pass --allow-same-family."
        )
    model = _model(
        spec,
        "simulator",
        spec.temperature,
        max_retries=max_retries,
        timeout_s=timeout_s,
        limiter=limiter,
        cache=cache,
    )
    return LLMSimulator(model)


def _replay(spec: SimulatorSpec, agent: AgentSpec, judge: Any, **how: Any) -> Simulator:
    """The replay simulator: the recorded trials of ``spec.run``, and who takes over after a divergence."""
    from simlab.runner.store import RunStore
    from simlab.sim.replay import ReplaySimulator
    from simlab.specs import load_config

    run, root = str(spec.run), how["root"]
    folder = next(
        (
            f
            for f in (root / run, root / load_config(root / "simlab.yaml").transcripts / run)
            if (f / "trials.jsonl").exists()
        ),
        None,
    )
    if folder is None:
        raise UsageError(
            f"replay: no run {run!r} with trials (a run id under the transcripts folder, or a run folder)"
        )
    recordings = {r.unit_id: r.transcript for r in RunStore(folder).records()}
    if spec.divergence == "judge" and judge is None:
        raise UsageError(
            "replay with divergence: judge needs a judge model: pass --judge MODEL or set 'judge' in "
            "simlab.yaml"
        )
    then = spec.then or "stop"
    fallback = None if then == "stop" else build_simulator(SimulatorSpec.model_validate(then), agent, **how)
    return ReplaySimulator(
        recordings,
        run=folder.name,
        divergence=spec.divergence or "tools",
        then=then,
        fallback=fallback,
        judge=judge if spec.divergence == "judge" else None,
    )


def _endpoint(model: str, api_base: str | None) -> str:
    """Where a model is served: its ``api_base``, or its provider's own endpoint."""
    return api_base.strip().rstrip("/").lower() if api_base else "provider:" + model.split("/", 1)[0].lower()


def _kinship(agent: AgentSpec, simulator: SimulatorSpec) -> str | None:
    """Why the two models count as one family, or None. Two models of no known family served by the
    same endpoint (one local server under two names) are one family until the user says otherwise."""
    from simlab.llm.family import model_family, same_family
    from simlab.redact import mask_url

    a, b = agent.model or "", simulator.model or ""
    if same_family(a, b):
        family = model_family(b) or model_family(a)
        return f"are of the same model family ({family})" if family else "are the same model"
    if (model_family(a) is None or model_family(b) is None) and _endpoint(a, agent.api_base) == _endpoint(
        b, simulator.api_base
    ):
        where = mask_url(agent.api_base) if agent.api_base else f"the {a.split('/', 1)[0]} provider"
        return (
            f"are served by the same endpoint ({where}) and simlab knows no family for "
            f"{a if model_family(a) is None else b}, so it counts them as one family"
        )
    return None


def build_judge(
    ref: JudgeSpec | str | dict[str, Any] | None,
    *,
    limiter: ModelLimiter | None = None,
    max_retries: int = 4,
    timeout_s: float = 60.0,
    cache: Any = None,
    role: str = "judge",
) -> ChatModel | None:
    """The judge model at temperature 0, or None when none is configured (judge checks: not run).
    ``ref`` is a spec, a model string (``--judge``) or a pinned mapping (``run.json``). ``role``:
    ``author`` for ``simlab generate``'s model, configured like a judge (its calls, errors and
    cache keys say author)."""
    if not ref:
        return None
    try:
        spec = ref if isinstance(ref, JudgeSpec) else JudgeSpec.model_validate(ref)
    except ValidationError as exc:
        raise UsageError(f"{role} {ref!r}: {exc.errors()[0]['msg']}") from None
    return _model(spec, role, 0.0, max_retries=max_retries, timeout_s=timeout_s, limiter=limiter, cache=cache)


def _model(spec: Any, role: str, temperature: float | None, **how: Any) -> Any:
    """The ``LiteLLMModel`` of a role's spec (an agent's, a simulator's or the judge's: model,
    endpoint, key variable, params, price) at ``temperature``; ``how``: retries, timeout, limiter, cache."""
    from simlab.llm.client import LiteLLMModel

    model = spec.model or ""
    try:
        return LiteLLMModel(
            model,
            role=role,
            api_base=spec.api_base,
            api_key_env=spec.api_key_env,
            temperature=temperature,
            params=spec.params,
            price=spec.price.model_dump() if spec.price is not None else None,
            **how,
        )
    except ValueError as exc:  # e.g. a reserved key in params
        raise UsageError(f"{role} {model}: {exc}") from None
