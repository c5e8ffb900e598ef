"""Project config (``simlab.yaml``), suites, and how the agent and simulator are named."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from simlab.specs.base import CheckKind, SpecModel
from simlab.specs.expect import GraderUse
from simlab.specs.gates import Gate
from simlab.specs.scenario import Limits

PYTHON_PREFIX = "python:"

# How a model is reached, the same for the agent, the simulator and the judge.
ApiBase = Annotated[str | None, Field(description="OpenAI-compatible endpoint (llama.cpp, Ollama, vLLM…).")]
ApiKeyEnv = Annotated[str | None, Field(description="Name of the environment variable holding the key.")]
Params = Annotated[dict[str, Any], Field(default_factory=dict, description="Extra LiteLLM parameters.")]


class Price(SpecModel):
    """What a model costs, in USD per million tokens. Needed for a model behind ``api_base``:
    there its name says nothing of its price, so its cost is unknown unless stated here."""

    input: float = Field(ge=0, description="USD per million input (prompt) tokens.")
    output: float = Field(ge=0, description="USD per million output (completion) tokens.")


ModelPrice = Annotated[Price | None, Field(description="USD per million tokens, {input, output}; overrides "
                                                        "LiteLLM's price list (behind api_base: the only price).")]


class AgentSpec(SpecModel):
    """The agent under test: a LiteLLM model, or a Python callable ``module:attr``."""

    model: str | None = Field(None, description="Any LiteLLM model string, e.g. openai/gpt-4o-2024-08-06.")
    python: str | None = Field(None, description="module:attr of a sync or async callable.")
    api_base: ApiBase = None
    api_key_env: ApiKeyEnv = None
    temperature: float | None = 0.0
    system_prompt: str | None = Field(None, description="Overrides the domain policy as system prompt.")
    max_steps: int = Field(10, ge=1, description="Tool-call rounds per agent turn.")
    params: Params
    price: ModelPrice = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(PYTHON_PREFIX):
                return {"python": value[len(PYTHON_PREFIX):]}
            return {"model": value}
        return _mapping_or_fail(value, "a LiteLLM model string, 'python:module:attr', or a mapping")

    @model_validator(mode="after")
    def _one_kind(self) -> "AgentSpec":
        if (self.model is None) == (self.python is None):
            raise ValueError("give exactly one of 'model' (a LiteLLM model) or 'python' (module:attr)")
        if self.model is not None and not self.model.strip():
            raise ValueError("'model' is empty; give a LiteLLM model string, e.g. openai/gpt-4o-2024-08-06")
        if self.python is not None:
            module, sep, attr = self.python.rpartition(":")
            if not (sep and module.strip() and attr.strip()):
                raise ValueError(f"'python' must be module:attr (e.g. mypkg.agents:answer), got {self.python!r}")
        return self

    @property
    def ref(self) -> str:
        return self.model or f"{PYTHON_PREFIX}{self.python}"


class SimulatorSpec(SpecModel):
    """Who plays the user: ``rules`` or ``scripted`` (offline, deterministic) or a LiteLLM model."""

    kind: Literal["rules", "scripted", "llm"] = "rules"
    model: str | None = None
    api_base: ApiBase = None
    api_key_env: ApiKeyEnv = None
    temperature: float = 0.7
    allow_same_family: bool = False
    params: Params
    price: ModelPrice = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value in ("rules", "scripted", "llm"):
                return {"kind": value}
            if value.startswith(PYTHON_PREFIX):
                raise ValueError("a simulator is 'rules', 'scripted' or a LiteLLM model, not a Python callable")
            return {"kind": "llm", "model": value}
        if isinstance(value, dict) and "model" in value and "kind" not in value:
            return {**value, "kind": "llm"}
        return _mapping_or_fail(value, "'rules', 'scripted', a LiteLLM model string, or a mapping")

    @model_validator(mode="after")
    def _model_for_llm(self) -> "SimulatorSpec":
        if self.kind == "llm" and not (self.model and self.model.strip()):
            raise ValueError("an llm simulator needs 'model' (a LiteLLM model string)")
        if self.kind != "llm" and self.model:
            raise ValueError(f"a {self.kind} simulator takes no model")
        return self

    @property
    def ref(self) -> str:
        return self.model if self.kind == "llm" and self.model else self.kind


class JudgeSpec(SpecModel):
    """The model that grades rubrics and groundedness: a LiteLLM model, configured like the agent's."""

    model: str = Field(description="Any LiteLLM model string, e.g. anthropic/claude-3-5-sonnet-20241022.")
    api_base: ApiBase = None
    api_key_env: ApiKeyEnv = None
    params: Params
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
    def _named(self) -> "JudgeSpec":
        if not self.model.strip():
            raise ValueError("'model' is empty; give a LiteLLM model string")
        fmt = self.params.get("response_format")
        if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") in ("json_object", "text")):
            raise ValueError("params.response_format: the rubric, groundedness and drift judges answer different "
                             "JSON shapes, each asked for in its prompt; one schema for all breaks the others. "
                             "Leave it out, or use {type: json_object} (JSON mode, any shape)")
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


class RunSettings(SpecModel):
    """Settings shared by ``simlab.yaml`` and suite files; a suite's override the project's."""

    agent: AgentSpec | None = None
    simulator: SimulatorSpec | None = None
    judge: JudgeSpec | None = Field(
        None, description="Judge model for the rubric, groundedness and drift judges: a LiteLLM string, or a "
                          "mapping with model, api_base, api_key_env and params.")
    trials: int | None = Field(None, ge=1, le=10_000)
    concurrency: int | None = Field(None, ge=1, le=4096)
    model_concurrency: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict, description="Per-model cap on concurrent calls: {model: N}."
    )
    model_rpm: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict, description="Per-model cap on requests per minute, retries included: {model: N}."
    )
    seed: int | None = None
    limits: Limits | None = None
    max_retries: int | None = Field(None, ge=0, le=20, description="Retries of a transient model error.")
    call_timeout_s: float | None = Field(None, gt=0, description="Per model call timeout.")
    max_error_rate: float | None = Field(
        None, ge=0, le=1, description="Above this share of infrastructure errors a run is incomplete (exit 3). "
                                      "Default: 0.10 for a run, 0.05 for a suite's gates.")
    allow_unjudged: list[CheckKind] | None = Field(
        None, description="Kinds of hard check that may stay unjudged (e.g. [rubric] without a judge model): a "
                          "trial left unjudged only by these counts as a pass, and reports say how many did. "
                          "A suite's gates are inconclusive on unjudged trials unless the suite names the kinds.")


class ProjectConfig(RunSettings):
    """``simlab.yaml`` at the project root."""

    scenarios: list[str] = Field(default_factory=lambda: ["scenarios"], description="Where scenarios live.")
    personas: str = Field("personas", description="Folder of persona files.")
    transcripts: str = Field("transcripts", description="Where runs are written.")


class Suite(RunSettings):
    """A named set of scenarios with its own settings (``--suite FILE``)."""

    id: str
    description: str = ""
    scenarios: list[str] = Field(description="Paths or globs of scenario files, relative to the suite file.")
    tags: list[str] = Field(default_factory=list, description="Only scenarios carrying one of these tags.")
    gates: list[Gate] = Field(default_factory=list, description="Conditions that fail the build (`simlab gate`).")
    max_error_rate: float | None = Field(
        None, ge=0, le=1, description="Above this share of infrastructure errors the run is inconclusive (exit 3); "
                                      "default 0.05.")
    max_run_cost_usd: float | None = Field(
        None, gt=0, description="Budget for the whole run: no new trial starts once spent (the run is incomplete).")
    graders: list[GraderUse] = Field(
        default_factory=list, description="Graders every scenario of the suite runs besides the built-in ones, as in "
                                          "a scenario's expect.graders (a scenario's own entry for the same grader "
                                          "wins).")
