"""Project config (``simlab.yaml``), suites, and how the agent and simulator are named."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, ValidationInfo, field_validator, model_validator

from simlab.redact import declare_secret_env
from simlab.specs.base import CheckKind, SpecModel
from simlab.specs.expect import GraderUse
from simlab.specs.gates import Gate, known_metric, parse_gate
from simlab.specs.http_agent import HttpAgentSpec
from simlab.specs.scenario import Limits

PYTHON_PREFIX = "python:"
# Agents built with a framework (optional extras): spec key -> the pip extra that installs it.
FRAMEWORKS = {"langgraph": "langgraph", "openai_agents": "openai-agents", "pydantic_ai": "pydantic-ai"}
_MODEL_ONLY = ("api_base", "api_key_env", "system_prompt", "params")
ONE_KIND = (
    "give exactly one of 'model' (a LiteLLM model), 'python' (module:attr), 'http' (an agent service's "
    "URL), or a framework agent: 'langgraph', 'openai_agents' or 'pydantic_ai' (module:attr)"
)
HTTP_PREFIXES = ("http://", "https://")  # an agent named by a URL is a service (``agent: {http: URL}``)

# How a model is reached, the same for the agent, the simulator and the judge.
ApiBase = Annotated[str | None, Field(description="OpenAI-compatible endpoint (llama.cpp, Ollama, vLLM…).")]


def _secret_env(name: str | None) -> str | None:
    declare_secret_env(name)  # its value is masked wherever anything is stored or printed
    return name


ApiKeyEnv = Annotated[
    str | None,
    AfterValidator(_secret_env),
    Field(description="Name of the environment variable holding the key."),
]
Params = dict[str, Any]


class Price(SpecModel):
    """What a model costs, in USD per million tokens. Needed for a model behind ``api_base``:
    there its name says nothing of its price, so its cost is unknown unless stated here."""

    input: float = Field(ge=0, description="USD per million input (prompt) tokens.")
    output: float = Field(ge=0, description="USD per million output (completion) tokens.")


ModelPrice = Annotated[
    Price | None,
    Field(
        description="USD per million tokens, {input, output}; overrides "
        "LiteLLM's price list (behind api_base: the only price)."
    ),
]


class AgentSpec(SpecModel):
    """The agent under test: a LiteLLM model, a Python callable ``module:attr``, a service (``http``),
    or an agent built with a framework (LangGraph, OpenAI Agents SDK, pydantic-ai) named as
    ``module:attr``."""

    model: str | None = Field(None, description="Any LiteLLM model string, e.g. openai/gpt-4o-2024-08-06.")
    python: str | None = Field(None, description="module:attr of a sync or async callable.")
    http: HttpAgentSpec | None = Field(
        None,
        description="An agent service: its URL, or {url, format, ...}; it calls the trial's tools over MCP.",
    )
    langgraph: str | None = Field(
        None,
        description="module:attr of a compiled LangGraph graph (or StateGraph), or of a factory(tools) "
        "that returns one; needs pip install 'simlab[langgraph]'.",
    )
    openai_agents: str | None = Field(
        None,
        description="module:attr of an OpenAI Agents SDK Agent, or of a factory(tools) that returns one; "
        "needs pip install 'simlab[openai-agents]'.",
    )
    pydantic_ai: str | None = Field(
        None,
        description="module:attr of a pydantic-ai Agent, or of a factory(tools) that returns one; needs "
        "pip install 'simlab[pydantic-ai]'.",
    )
    tool_nodes: list[str] | None = Field(
        None,
        description="LangGraph only: the nodes that run tools, where a single-step check interrupts "
        "(default: every ToolNode of the graph).",
    )
    api_base: ApiBase = None
    api_key_env: ApiKeyEnv = None
    temperature: float | None = 0.0
    system_prompt: str | None = Field(None, description="Overrides the domain policy as system prompt.")
    max_steps: int = Field(
        10,
        ge=1,
        description="Tool-call rounds per agent turn. For a framework agent: "
        "LangGraph's recursion_limit (50 supersteps when not given), "
        "the Agents SDK's max_turns and pydantic-ai's request_limit "
        "(when not given, their defaults: 10 and 50).",
    )
    params: Params = Field(default_factory=dict, description="Extra LiteLLM parameters.")
    price: ModelPrice = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(PYTHON_PREFIX):
                return {"python": value[len(PYTHON_PREFIX) :]}
            if value.startswith(HTTP_PREFIXES):
                return {"http": value}
            for kind in FRAMEWORKS:
                if value.startswith(kind + ":"):
                    return {kind: value[len(kind) + 1 :]}
            return {"model": value}
        return _mapping_or_fail(
            value, "a LiteLLM model string, 'python:module:attr', an http:// URL, or a mapping"
        )

    @model_validator(mode="after")
    def _one_kind(self) -> AgentSpec:
        kinds = ["model", "python", "http", *FRAMEWORKS]
        given = [k for k in kinds if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(ONE_KIND)
        if self.model is not None and not self.model.strip():
            raise ValueError("'model' is empty; give a LiteLLM model string, e.g. openai/gpt-4o-2024-08-06")
        for kind in ("python", *FRAMEWORKS):
            ref = getattr(self, kind)
            module, sep, attr = (ref or "").rpartition(":")
            if ref is not None and not (sep and module.strip() and attr.strip()):
                raise ValueError(f"{kind!r} must be module:attr (e.g. mypkg.agents:answer), got {ref!r}")
        framework = self.framework
        if framework is not None:
            wrong = [k for k in _MODEL_ONLY if k in self.model_fields_set and getattr(self, k)]
            if wrong:
                raise ValueError(
                    f"{', '.join(wrong)} only apply to a 'model' agent; a {framework[0]} agent holds "
                    "its own model and prompt"
                )
        if self.tool_nodes is not None and self.langgraph is None:
            raise ValueError("'tool_nodes' only applies to a 'langgraph' agent")
        return self

    @property
    def framework(self) -> tuple[str, str] | None:
        """(kind, module:attr) of a framework agent, or None."""
        return next(((k, getattr(self, k)) for k in FRAMEWORKS if getattr(self, k) is not None), None)

    def cost_unknown(self) -> str | None:
        """Why every trial's cost will be unknown (so a cost budget cannot be judged), or None."""
        if self.framework and self.price is None:
            return f"the {self.framework[0]} agent has no price (a framework reports tokens, not dollars)"
        if self.http is not None and self.http.price is None and self.http.uses_models is not False:
            return "the HTTP agent has no price and does not say uses_models: false"
        return None

    @property
    def ref(self) -> str:
        if self.framework:
            return f"{self.framework[0]}:{self.framework[1]}"
        if self.http is not None:
            from simlab.redact import mask_url

            return mask_url(self.http.endpoint)
        return self.model or f"{PYTHON_PREFIX}{self.python}"


class SimulatorSpec(SpecModel):
    """Who plays the user: ``rules`` or ``scripted`` (offline, deterministic) or a LiteLLM model."""

    kind: Literal["rules", "scripted", "llm", "replay"] = "rules"
    model: str | None = None
    run: str | None = Field(None, description="replay: the run (id or folder) whose user turns are replayed.")
    divergence: Literal["never", "tools", "judge"] | None = Field(
        None,
        description="replay: when the agent's turn no longer matches the recording: never, on a different "
        "tool trajectory (tools, the default), or when the run's judge model says the next "
        "recorded user turn no longer makes sense (judge; asked only about turns that differ).",
    )
    then: str | None = Field(
        None,
        description="replay: after a divergence, stop the trial (the default; termination "
        "diverged), or hand the user to rules, scripted or a LiteLLM model.",
    )
    api_base: ApiBase = None
    api_key_env: ApiKeyEnv = None
    temperature: float = 0.7
    allow_same_family: bool = False
    params: Params = Field(default_factory=dict, description="Extra LiteLLM parameters.")
    price: ModelPrice = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value in ("rules", "scripted", "llm"):
                return {"kind": value}
            if value.startswith(PYTHON_PREFIX):
                raise ValueError(
                    "a simulator is 'rules', 'scripted' or a LiteLLM model, not a Python callable"
                )
            return {"kind": "llm", "model": value}
        if isinstance(value, dict) and "model" in value and "kind" not in value:
            return {**value, "kind": "llm"}
        return _mapping_or_fail(value, "'rules', 'scripted', a LiteLLM model string, or a mapping")

    @model_validator(mode="after")
    def _model_for_llm(self) -> SimulatorSpec:
        if self.kind == "llm" and not (self.model and self.model.strip()):
            raise ValueError("an llm simulator needs 'model' (a LiteLLM model string)")
        if self.kind != "llm" and self.model:
            raise ValueError(f"a {self.kind} simulator takes no model")
        if self.kind != "replay" and (self.run or self.divergence or self.then):
            raise ValueError("run, divergence and then are settings of a replay simulator")
        if self.kind == "replay" and not (self.run and self.run.strip()):
            raise ValueError("a replay simulator needs 'run' (the run whose user turns it replays)")
        if self.kind == "replay" and self.then in ("replay", "llm"):
            raise ValueError("then: stop, rules, scripted or a LiteLLM model string")
        return self

    @property
    def ref(self) -> str:
        if self.kind == "replay":
            return f"replay:{self.run}"
        return self.model if self.kind == "llm" and self.model else self.kind


class JudgeSpec(SpecModel):
    """The model that grades rubrics and groundedness: a LiteLLM model, configured like the agent's."""

    model: str = Field(description="Any LiteLLM model string, e.g. anthropic/claude-3-5-sonnet-20241022.")
    api_base: ApiBase = None
    api_key_env: ApiKeyEnv = None
    params: Params = Field(default_factory=dict, description="Extra LiteLLM parameters.")
    price: ModelPrice = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(PYTHON_PREFIX):
                raise ValueError("a judge is a LiteLLM model, not a Python callable")
            return {"model": value}
        return _mapping_or_fail(value, "a LiteLLM model string or a mapping")

    @model_validator(mode="after")
    def _named(self) -> JudgeSpec:
        if not self.model.strip():
            raise ValueError("'model' is empty; give a LiteLLM model string")
        fmt = self.params.get("response_format")
        if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") in ("json_object", "text")):
            raise ValueError(
                "params.response_format: the rubric, groundedness and drift judges answer different "
                "JSON shapes, each asked for in its prompt; one schema for all breaks the others. "
                "Leave it out, or use {type: json_object} (JSON mode, any shape)"
            )
        return self

    @property
    def ref(self) -> str:
        return self.model

    def pin(self) -> str | dict[str, Any]:
        """The model string alone when nothing else is set (as run.json has always pinned it)."""
        if self.api_base is None and self.api_key_env is None and not self.params and self.price is None:
            return self.model
        return self.model_dump(mode="json", exclude_none=True)


def _mapping_or_fail(value: Any, expected: str) -> Any:
    """Let mappings and built models through; anything else gets one clear message."""
    if isinstance(value, (dict, BaseModel)):
        return value
    raise ValueError(f"expected {expected}; got {value!r}")


class CacheSpec(SpecModel):
    """simlab's response cache (``llm/cache.py``): a model's earlier answer to exactly the same request."""

    max_mb: float = Field(
        1024,
        gt=0,
        description="Size cap of each model's cache file, in MB; a full file is "
        "read but no longer grows (`simlab cache clear` empties it).",
    )


class RunSettings(SpecModel):
    """Settings shared by ``simlab.yaml`` and suite files; a suite's override the project's."""

    agent: AgentSpec | None = None
    simulator: SimulatorSpec | None = None
    judge: JudgeSpec | None = Field(
        None,
        description="Judge model for the rubric, groundedness and drift judges: a LiteLLM string, or a "
        "mapping with model, api_base, api_key_env and params.",
    )
    trials: int | None = Field(None, ge=1, le=10_000)
    concurrency: int | None = Field(None, ge=1, le=4096)
    model_concurrency: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict, description="Per-model cap on concurrent calls: {model: N}."
    )
    model_rpm: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict,
        description="Per-model cap on requests per minute, retries included: {model: N}.",
    )
    model_limits_scope: Literal["run", "machine"] | None = Field(
        None,
        description="What model_concurrency and model_rpm bound: run (default) the whole run, so the "
        "machines of `--shard i/N` each get 1/N of them; machine: each shard gets all of them. "
        "The workers of one machine (--workers) always divide its part.",
    )
    seed: int | None = None
    limits: Limits | None = None
    max_retries: int | None = Field(None, ge=0, le=20, description="Retries of a transient model error.")
    call_timeout_s: float | None = Field(None, gt=0, description="Per model call timeout.")
    max_error_rate: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Above this share of infrastructure errors a run is incomplete (exit 3). "
        "Default: 0.10 for a run, 0.05 for a suite's gates.",
    )
    cache: bool | CacheSpec | None = Field(
        None,
        description="Answer a model call from the response cache when the same request (with the same trial "
        "seed and role) was answered before: true, or {max_mb: N}. Off by default (--cache).",
    )
    allow_unjudged: list[CheckKind] | None = Field(
        None,
        description="Kinds of hard check that may stay unjudged (e.g. [rubric] without a judge model): a "
        "trial left unjudged only by these counts as a pass, and reports say how many did. "
        "A suite's gates are inconclusive on unjudged trials unless the suite names the kinds.",
    )


class ProjectConfig(RunSettings):
    """``simlab.yaml`` at the project root."""

    scenarios: list[str] = Field(default_factory=lambda: ["scenarios"], description="Where scenarios live.")
    personas: str = Field("personas", description="Folder of persona files.")
    transcripts: str = Field("transcripts", description="Where runs are written.")
    author: JudgeSpec | None = Field(
        None,
        description="The model `simlab generate` drafts scenarios with (its role: author, in costs, "
        "errors and cache keys), configured like judge; `--model` overrides it. Unset: `--model`, "
        "read against judge's endpoint settings.",
    )


class Suite(RunSettings):
    """A named set of scenarios with its own settings (``--suite FILE``)."""

    id: str
    description: str = ""
    scenarios: list[str] = Field(description="Paths or globs of scenario files, relative to the suite file.")
    tags: list[str] = Field(default_factory=list, description="Only scenarios carrying one of these tags.")
    summary_evaluators: list[str] = Field(
        default_factory=list,
        description="Dataset-level functions, module:function(trials) -> {key, score} (or a "
        "list of them), run over every trial of the run; their keys are shown in "
        "the report and can be gated like tool_f1.",
    )
    gates: list[Gate] = Field(
        default_factory=list, description="Conditions that fail the build (`simlab gate`)."
    )
    max_error_rate: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Above this share of infrastructure errors the run is inconclusive (exit 3); "
        "default 0.05.",
    )
    max_run_cost_usd: float | None = Field(
        None,
        gt=0,
        description="Budget for the whole run: no new trial starts once spent (the run is incomplete).",
    )
    graders: list[GraderUse] = Field(
        default_factory=list,
        description="Graders every scenario of the suite runs besides the built-in ones, as in "
        "a scenario's expect.graders (a scenario's own entry for the same grader "
        "wins).",
    )

    @field_validator("summary_evaluators")
    @classmethod
    def _function_refs(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            module, sep, attr = ref.rpartition(":")
            if not (sep and module.strip() and attr.strip()):
                raise ValueError(
                    f"write a summary function as module:function (e.g. mypkg.evals:tool_f1); got {ref!r}"
                )
        return refs

    @field_validator("gates")
    @classmethod
    def _gate_metrics_known(cls, gates: list[Gate], info: ValidationInfo) -> list[Gate]:
        """A gate on a metric simlab does not compute needs a summary function that may return it."""
        if info.data.get("summary_evaluators"):
            return gates
        for index, gate in enumerate(gates):
            if gate.gate and not known_metric(parse_gate(gate.gate, custom=True)[0]):
                try:
                    parse_gate(gate.gate)
                except ValueError as exc:
                    raise ValueError(f"gates.{index}: {exc}") from None
        return gates
