"""``run.json`` typed: the ``RunManifest`` model of what ``runner/batch`` (and ``merge``,
``observed``, ``grade_traces``) write, as ARCHITECTURE.md's *Files on disk* lists it.

Reading only: the writers keep their dicts. Every field has a default, so a manifest written by an
older simlab (without ``pins.code``, ``suite``, ``run_ids``…) reads with those fields empty, and a
key this model does not know is kept (``extra="allow"``), never dropped or refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simlab.errors import InfraError

__all__ = ["RunManifest", "read_manifest_model"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")


class ScenarioPin(_Part):
    """``pins.scenarios[id]``: the file a scenario came from (relative to the project), its hash, its
    persona's, and the trials planned; the hashes of the files its trials were re-graded with
    when they are not the ones played."""

    path: str | None = None
    sha256: str | None = None
    persona: str | None = None
    persona_sha256: str | None = None
    trials: int = 0
    # the files `simlab grade` last graded the trials with, when not the ones played (runner/regrade)
    graded_sha256: str | None = None
    graded_persona_sha256: str | None = None


class CodePin(_Part):
    """``pins.code`` (``runner/code_pins``): simlab's version, the project's commit, file → sha256."""

    simlab: str | None = None
    git_commit: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


class Pins(_Part):
    """``pins``: everything that decides a trial (agent, simulator and judge as their specs, masked)."""

    agent: dict[str, Any] | None = None
    simulator: dict[str, Any] | None = None
    judge: str | dict[str, Any] | None = None
    seed: int | None = None
    limits: dict[str, Any] | None = None
    code: CodePin | None = None  # None: a run made before code was pinned
    scenarios: dict[str, ScenarioPin] = Field(default_factory=dict)
    graders: list[dict[str, Any]] | None = None  # only when a suite adds graders


class SuitePin(_Part):
    """``suite``: the suite a run was played from, and its own plan (scenario id → trials)."""

    id: str | None = None
    plan: dict[str, int] = Field(default_factory=dict)


class Resume(_Part):
    """One ``resumes[]`` entry: when, by which command, over which pin differences (``--force``)."""

    at: str | None = None
    command: list[str] = Field(default_factory=list)
    forced_over: list[str] = Field(default_factory=list)


class MergedFrom(_Part):
    """One ``merged_from[]`` entry: a shard folder merged into this run."""

    folder: str | None = None
    run_id: str | None = None
    trials: int | None = None
    run_ids: list[str] = Field(default_factory=list)


class Observed(_Part):
    """``observed``: the production file an imported run came from (``simlab import``)."""

    format: str | None = None
    source: str | None = None
    sha256: str | None = None
    conversations: int | None = None
    redaction: dict[str, Any] = Field(default_factory=dict)
    raw_kept: bool = False


class RunManifest(_Part):
    """``run.json``: the command, every pin, the plan, and what happened to the run since (resumes,
    merges). ``schema_version`` 1 (``store.MANIFEST_SCHEMA_VERSION``)."""

    schema_version: int = 1
    run_id: str | None = None
    simlab_version: str | None = None
    python: str | None = None
    created_at: str | None = None  # ISO 8601, UTC
    command: list[str] = Field(default_factory=list)
    pins: Pins = Field(default_factory=Pins)
    units: int | None = None  # planned trials
    allow_unjudged: list[str] = Field(default_factory=list)
    max_error_rate: float | None = None  # the run's error budget (None: report/gates.RUN_MAX_ERROR_RATE)
    summary_evaluators: list[str] = Field(default_factory=list)
    suite: SuitePin | None = None
    partial_ok: bool | None = None
    run_ids: list[str] = Field(default_factory=list)  # names a copied folder was resumed under
    resumes: list[Resume] = Field(default_factory=list)
    merged_from: list[MergedFrom] = Field(default_factory=list)
    merge_forced_over: list[str] = Field(default_factory=list)
    code_pinned_at_resume: bool = False  # pins.code was added by a resume: earlier trials' code unknown
    observed: Observed | None = None
    grade_traces: dict[str, Any] | None = None
    planned_units: list[str] | None = None  # a graded sample: exactly the units it planned


def read_manifest_model(path: Path, data: dict[str, Any] | None) -> RunManifest:
    """``data`` (a run's ``run.json`` as read, None: none there) as a ``RunManifest``; ``InfraError``
    naming the file and the field when a value has the wrong type."""
    try:
        return RunManifest.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InfraError(
            f"{path}: {field}: {first['msg']}; this run.json was not written by simlab as it "
            "is; restore it or move the run away"
        ) from None
