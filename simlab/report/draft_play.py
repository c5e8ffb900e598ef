"""A draft played before it is kept (``simlab generate``, step ``trial``): ``trials`` trials of it
against a reference agent, the user played by a deterministic simulator, graded as a run grades
them (no judge), and the one rule that keeps, flags or rejects it (docs/how-to/generate.md).

The rule, trial by trial in order, the first that applies:

1. a trial that could not be completed (verdict ``error``, ``invalid`` or ``unjudged``: a crash, a
   provider that failed, a simulated user that could not play it, a hard check that could not
   run) rejects the draft: what it asks cannot be played as written;
2. a trial that passed keeps it (flagged when another trial failed: which modes);
3. every trial failed:
   - the reference agent reached the expected end state (the oracle's, the state check held) in
     some trial but broke another hard check (a policy rule, the trajectory, a forbidden call):
     the draft is kept and flagged, for a reviewer to decide between an agent bug the scenario
     found and a rule the draft got wrong;
   - it never reached the expected end state: rejected, the end state is unreachable for the
     reference agent (a goal it cannot be led to, facts it cannot learn in the conversation).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from simlab.transcript import ModelCall, Usage

if TYPE_CHECKING:
    from simlab.env.domain import Domain
    from simlab.sim.agent_io import Agent
    from simlab.sim.simulators import Simulator
    from simlab.specs import Limits
    from simlab.specs.loader import LoadedScenario
    from simlab.transcript import TrialRecord

__all__ = ["PLAY_ROLES", "Play", "Reference", "play_draft"]

PLAY_ROLES = ("agent", "simulator")  # the roles a play's trials spend on (no judge is asked)
UNPLAYABLE = ("error", "invalid", "unjudged")


@dataclass
class Reference:
    """Who plays the drafts: the reference agent and the simulated user, built once."""

    agent: Agent
    simulator: Simulator
    ref: str  # the agent as its pin names it (python:…, a model)
    trials: int = 1
    seed: int = 0
    limits: Limits | None = None


@dataclass
class Play:
    """What the trials of one draft said: kept (with a flag, or none) or the reason it is rejected."""

    kept: bool
    text: str  # the reason it is rejected, or how it did (``passed 1 of 1``)
    flag: str | None = None  # kept, but a reviewer should read this first
    verdicts: list[str] = field(default_factory=list)
    calls: dict[str, list[ModelCall]] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)  # per role, from each trial's head


def _limits(entry: LoadedScenario, base: Limits | None) -> Limits:
    from simlab.specs import Limits

    merged = (base or Limits()).model_dump()
    own = entry.spec.limits.model_dump(exclude_unset=True)
    merged.update({k: v for k, v in own.items() if v is not None})
    return Limits.model_validate(merged)


async def _one(entry: LoadedScenario, domain: Domain, ref: Reference, number: int) -> TrialRecord:
    from simlab.runner.execute import grade_record
    from simlab.runner.plan import derive_seed, unit_id_of
    from simlab.sim.loop import Trial, run_trial

    spec = entry.spec
    trial = Trial(
        run_id="simlab-generate",
        unit_id=unit_id_of(spec.id, number),
        trial=number,
        seed=derive_seed(ref.seed, spec.id, number),
        scenario=spec,
        persona=entry.persona,
        domain=domain,
        initial_state=domain.build_state(spec.initial_state),
        agent=ref.agent,
        simulator=ref.simulator,
        limits=_limits(entry, ref.limits),
    )
    transcript = await run_trial(trial)  # a permanent provider error is raised: it fails every draft
    return await grade_record(transcript, entry, domain, None)


def _reached(record: TrialRecord) -> bool:
    return any(c.kind == "state" and c.name == "expected_state" and c.status == "pass" for c in record.checks)


def _mode(record: TrialRecord) -> str:
    from simlab.transcript.row import record_head

    head = record_head(record)
    mode = head.row.failure_mode or str(record.verdict)
    detail = record.transcript.termination.detail
    return f"{mode} ({detail})" if detail and record.verdict in UNPLAYABLE else mode


def _spend(records: list[TrialRecord]) -> tuple[dict[str, list[ModelCall]], dict[str, Usage]]:
    """The model calls of each role and its usage, from each trial's head (unknown stays unknown)."""
    from simlab.transcript.row import record_head

    calls: dict[str, list[ModelCall]] = {role: [] for role in PLAY_ROLES}
    usage: dict[str, Usage] = {}
    for record in records:
        for event in record.transcript.events:
            if isinstance(event, ModelCall) and event.role in calls:
                calls[event.role].append(event)
        figures = record_head(record).row
        for role in PLAY_ROLES:
            spent = Usage(
                input_tokens=getattr(figures, f"{role}_input_tokens"),
                output_tokens=getattr(figures, f"{role}_output_tokens"),
                cached_tokens=getattr(figures, f"{role}_cached_tokens"),
                cost_usd=getattr(figures, f"{role}_cost_usd"),
            )
            usage[role] = usage[role] + spent if role in usage else spent
    return calls, usage


async def play_draft(entry: LoadedScenario, domain: Domain, ref: Reference) -> Play:
    """Play ``ref.trials`` trials of ``entry`` and apply the rule of this module."""
    lifespan = getattr(ref.agent, "lifespan", None)  # an HTTP agent's tool server, up while it plays
    records: list[TrialRecord] = []
    async with lifespan() if callable(lifespan) else contextlib.nullcontext():
        for number in range(1, ref.trials + 1):
            records.append(await _one(entry, domain, ref, number))
    calls, usage = _spend(records)
    verdicts = [str(r.verdict) for r in records]
    play = Play(kept=False, text="", verdicts=verdicts, calls=calls, usage=usage)
    n, against = len(records), f"the reference agent {ref.ref}"
    broken = next((r for r in records if r.verdict in UNPLAYABLE), None)
    if broken is not None:
        play.text = f"trial {broken.transcript.trial} of {n} could not be completed: {_mode(broken)}"
        return play
    failed = [r for r in records if r.verdict != "pass"]
    modes = "; ".join(dict.fromkeys(_mode(r) for r in failed))
    if len(failed) < n:
        play.kept, play.text = True, f"{against} passed {n - len(failed)} of {n}"
        play.flag = f"{against} failed {len(failed)} of {n}: {modes}" if failed else None
        return play
    if any(_reached(r) for r in failed):
        play.kept, play.text = True, f"{against} passed 0 of {n}"
        play.flag = (
            f"{against} reached the expected end state but failed: {modes}; an agent bug the draft "
            "found, or a rule it got wrong: review it"
        )
        return play
    play.text = f"{against} never reached the expected end state in {n} trial{'s' * (n > 1)}: {modes}"
    return play
