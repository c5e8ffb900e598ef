"""Whether a trial line belongs to the run whose ``run.json`` sits beside it.

A line is a trial of a run only when its unit id is its transcript's ``scenario_id#trial``, its
transcript names the run (or a run the manifest records as a source: a shard it was merged from, the
observed run a graded sample came from), its seed is the one the plan derives for that unit
(``plan.derive_seed``) and its agent is the agent the run pins. Every reader of ``trials.jsonl``
applies this check to every line it yields (``lines.scan``, ``heads_tail.Tail``), from the
head's row on the fast path: the head holds all five fields (``transcript/row.record_head``), so no
transcript is parsed. A line that fails is a ``lines.TrialMismatch`` naming file, line and field (exit 3:
like a corrupt line, the run's files cannot stand for the run; ``LineError``).

Exceptions, each written down: a run resumed with ``--force`` over other pins
(``resumes[].forced_over``) (or merged with ``--force``) holds trials of other pins by design, so
its seeds and agent are not checked (its gates are inconclusive anyway: ``report/gates.py``); an
observed run's trials have seed 0 and the agent of production, which no pin names, so only seed 0 is
checked; a manifest whose agent pin is not a spec simlab reads leaves the agent unverifiable, and
says so (``unverifiable``), never passed in silence."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simlab.runner.code_pins import mixed_pins
from simlab.runner.plan import derive_seed, unit_id_of

MANIFEST = "run.json"
TRIALS = "trials.jsonl"


@dataclass
class RunIdentity:
    """What every trial of one run must carry, from its manifest."""

    manifest: Path  # named in messages
    run_id: str
    run_ids: frozenset[str]  # the run's own id, and the runs its trials may name (shards, sources)
    seed: int | None  # the run's seed, from which each unit's seed is derived; None: not checked
    agents: frozenset[str] | None  # the forms of the pinned agent's reference; None: not checked
    observed: bool = False  # imported conversations: every seed is 0
    unverifiable: list[str] = field(default_factory=list)  # what could not be checked, and why

    def check(self, path: Path, number: int, unit: str, row: Mapping[str, Any]) -> None:
        """Raise ``TrialMismatch`` unless the line's figures (a head's row, or ``row_of_record``)
        belong to this run. Kept tight: a report of 100,000 trials calls it 100,000 times."""
        scenario, trial = row.get("scenario_id"), row.get("trial")
        if (
            type(trial) is int
            and type(scenario) is str
            and unit == f"{scenario}#{trial}"
            and row.get("unit_id") in (None, unit)
            and row.get("run_id") in self.run_ids
            and (self.seed is None or row.get("seed") == self._seed(scenario, trial))
            and (self.agents is None or row.get("agent") in self.agents)
        ):
            return
        raise _mismatch(f"{path}:{number}: trial {unit!r}: {self._why(unit, row)}; {_FIX}")

    def _why(self, unit: str, row: Mapping[str, Any]) -> str:
        """What is wrong with a line ``check`` refused, naming the field."""
        scenario, trial = row.get("scenario_id"), row.get("trial")
        if not isinstance(scenario, str) or not isinstance(trial, int) or unit != unit_id_of(scenario, trial):
            return (
                f"field unit_id: its transcript is trial {trial!r} of scenario {scenario!r}, so the line is "
                "stored under another unit's id"
            )
        if row.get("unit_id") not in (None, unit):
            return f"field head.row.unit_id is {row.get('unit_id')!r}: the head belongs to another line"
        if row.get("run_id") not in self.run_ids:
            named = ", ".join(repr(r) for r in sorted(self.run_ids))
            return (
                f"field run_id is {row.get('run_id')!r}, but {self.manifest} is run {self.run_id!r} (trials "
                f"may name {named}): the line was played by another run"
            )
        if self.seed is not None and row.get("seed") != self._seed(scenario, trial):
            return (
                f"field seed is {row.get('seed')!r}, not the seed the plan derives for this unit from the "
                f"run's seed {self.seed} ({self.manifest})"
            )
        pinned = ", ".join(repr(a) for a in sorted(self.agents or ()))
        return f"field agent is {row.get('agent')!r}, but {self.manifest} pins {pinned}"

    def _seed(self, scenario: str, trial: int) -> int:
        assert self.seed is not None
        return 0 if self.observed else derive_seed(self.seed, scenario, trial)

    def warnings(self, folder: Path) -> list[str]:
        out = []
        if folder.name != self.run_id:
            out.append(
                f"{folder}: the folder is named {folder.name!r} but its run.json is run {self.run_id!r}: "
                "a copy of another run's folder (its figures are that run's)"
            )
        out += [f"{self.manifest}: {why}" for why in self.unverifiable]
        return out


def _mismatch(text: str) -> Exception:
    from simlab.runner.lines import TrialMismatch  # lines.py imports this module

    return TrialMismatch(text)


_FIX = (
    "trials of one run cannot stand for another: play the run again (or restore its own trials.jsonl), "
    "and merge shards with `simlab merge`"
)


def row_of_record(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The fields ``RunIdentity.check`` reads, from a parsed line's transcript (the head's row names)."""
    transcript = _mapping(raw.get("transcript"))
    agent = _mapping(transcript.get("agent"))
    return {
        "run_id": transcript.get("run_id"),
        "scenario_id": transcript.get("scenario_id"),
        "trial": transcript.get("trial"),
        "seed": transcript.get("seed"),
        "agent": agent.get("ref"),
    }


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def identity_of(manifest: Mapping[str, Any], path: Path) -> RunIdentity | None:
    """The identity a manifest (read from ``path``) gives its trials; None when it names no run id."""
    run_id = manifest.get("run_id")
    if not isinstance(run_id, str):
        return None
    pins = _mapping(manifest.get("pins"))
    identity = RunIdentity(path, run_id, frozenset(source_run_ids(manifest)), None, None)
    mixed = bool(mixed_pins(dict(manifest)))
    if manifest.get("observed") is not None:
        identity.seed, identity.observed = 0, True  # imported conversations: seed 0, the agent of production
    elif not mixed:
        seed = pins.get("seed")
        identity.seed = seed if isinstance(seed, int) else None
        if identity.seed is None:
            identity.unverifiable.append("pins.seed is missing: the trials' seeds cannot be checked")
        identity.agents = agent_refs(pins.get("agent"))
        if identity.agents is None:
            identity.unverifiable.append(
                "pins.agent is not an agent simlab reads: the trials' agent cannot be checked"
            )
    return identity


def source_run_ids(manifest: Mapping[str, Any]) -> set[str]:
    """The run ids a run's trials may carry: its own, the names it was resumed under after its folder
    was copied or renamed (``run_ids``), every shard's it was merged from (and theirs), and the
    observed run a graded sample was drawn from."""
    ids = {str(manifest.get("run_id")), *(str(r) for r in manifest.get("run_ids") or [])}
    for shard in manifest.get("merged_from") or []:
        if isinstance(shard, Mapping):
            ids.update(str(r) for r in [shard.get("run_id"), *(shard.get("run_ids") or [])] if r is not None)
    sample = manifest.get("grade_traces")
    if isinstance(sample, Mapping) and sample.get("from_run") is not None:
        ids.add(str(sample["from_run"]))
    return ids


def agent_refs(pin: Any) -> frozenset[str] | None:
    """The references a trial of this agent pin records (``Pin.ref``): a model string, a Python
    agent's ``module:attr``, a framework's factory, a service's masked URL. None: not a spec."""
    from pydantic import ValidationError

    from simlab.specs import AgentSpec

    if not isinstance(pin, Mapping):
        return None
    try:
        spec = AgentSpec.model_validate(dict(pin))
    except (ValidationError, ValueError, TypeError):
        return None
    refs = {spec.ref}
    if spec.python:
        refs.add(spec.python)
    if spec.framework:
        refs.add(spec.framework[1])
    return frozenset(refs)


def load_identity(trials: Path) -> RunIdentity | None:
    """The identity of the run whose ``trials.jsonl`` is ``trials``, from the ``run.json`` beside it;
    None for another file or a run without a readable manifest (refused or flagged elsewhere)."""
    if trials.name != TRIALS:
        return None
    manifest_path = trials.with_name(MANIFEST)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return identity_of(manifest, manifest_path) if isinstance(manifest, dict) else None
