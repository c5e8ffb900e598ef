"""What a suite leaves untested (``simlab coverage``): one definition of each gap, for the terminal
table, ``--json`` and the HTML report's coverage section (docs/how-to/coverage.md).

From the scenarios alone (a suite, a folder, the scenarios of a run):

- **tools**: a tool of a scenario's domain is *expected* when some scenario names it in
  ``expect.expected_actions``, ``expect.trajectory.calls`` or ``expect.first_tool_call``.
- **refusal paths**: a WRITE tool has one when some scenario says that the right outcome is *not*
  calling it (at all, or with some arguments): it is in ``expect.forbidden`` (a name or
  ``{tool, args}``), a ``forbid_args`` rule names it, or a ``max_calls`` rule allows it 0 calls.
  (A state assertion names no tool, so it is not read as one.)
- **policy rules** (``expect.rules``, one entry per distinct rule, its ``name`` aside): a rule is
  *at risk* in a scenario that carries it when a tool it guards is in play there: expected (as
  above) or refused (as above: the scenario tempts the call). The tool a rule guards:
  ``before: [A, B]`` B; ``after_confirmation``, ``limit``, ``forbid_args`` their tool;
  ``max_calls`` and ``owner`` each tool they name; ``no_write_after_refusal`` every WRITE tool.
  A ``python`` rule names no tool: unknown.
- **traits**: a trait of a persona (the project's personas and inline ones) is covered when a
  scenario's persona has it.

From a run's trials besides (``TrialRecord``s read by the storage layer's rule):

- a tool is *called* in a trial with a live call of it that ran (history and invalid calls left out);
- a refusal path is *played* in a trial of a scenario that gives it;
- a rule is *triggered* in a trial of a scenario that carries it when its check failed, or passed
  with a live call of a tool it guards (evaluated on a call); a python rule only by failing;
- termination kinds (``observed`` left out; ``diverged`` only for a replay) and drift kinds
  (``graders/drift.KINDS``) are *seen* in the trials that ended so or failed that check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from simlab.env.domain import Domain, load_domain
from simlab.env.tools import Access
from simlab.errors import UsageError
from simlab.specs.expect import LIMIT, Expect, Rule
from simlab.specs.loader import Loaded, LoadedScenario
from simlab.transcript.model import InvalidCall, TerminationReason, ToolCall, TrialRecord

SCHEMA_VERSION = 1
Status = Literal["covered", "missing", "unknown"]


class Entry(BaseModel):
    """One thing a suite may cover: a tool, a rule, a trait…"""

    name: str
    detail: str = Field("", description="What it is: a tool's access, the scenarios carrying a rule…")
    scenarios: list[str] = Field(default_factory=list, description="The scenarios that cover it.")
    trials: int | None = Field(None, description="On a run: the trials that show it; None: scenarios only.")
    gaps: list[str] = Field(default_factory=list, description="What is missing; empty when covered.")
    unknown: str = Field("", description="Why coverage cannot be told (a python rule names no tool).")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Status:
        return "missing" if self.gaps else "unknown" if self.unknown else "covered"


class Section(BaseModel):
    area: str
    meaning: str = Field(description="What covers an entry, in one line.")
    entries: list[Entry]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def missing(self) -> int:
        return sum(e.status == "missing" for e in self.entries)


class Coverage(BaseModel):
    """``simlab coverage --json``."""

    schema_version: int = SCHEMA_VERSION
    source: str = Field(description="What was read: a suite, scenario files or folders, a run.")
    run_id: str | None = None
    scenarios: list[str]
    domains: list[str]
    sections: list[Section]
    notes: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def missing(self) -> int:
        return sum(s.missing for s in self.sections)


def expected_tools(expect: Expect) -> set[str]:
    """The tools a scenario expects the agent to call."""
    names = {a.tool for a in expect.expected_actions}
    names |= {
        c if isinstance(c, str) else c.tool for c in (expect.trajectory.calls if expect.trajectory else [])
    }
    if expect.first_tool_call is not None:
        names.add(expect.first_tool_call.tool)
    return names


def forbidden_tools(expect: Expect) -> set[str]:
    return {f if isinstance(f, str) else f.tool for f in expect.forbidden}


def refused_tools(expect: Expect) -> set[str]:
    """The tools this scenario's right outcome does not call (at all, or with some arguments)."""
    names = forbidden_tools(expect)
    for rule in expect.rules:
        if rule.forbid_args and "tool" in rule.forbid_args:
            names.add(str(rule.forbid_args["tool"]))
        names |= {tool for tool, n in (rule.max_calls or {}).items() if n == 0}
    return names


def guarded_tools(rule: Rule, writes: set[str]) -> set[str] | None:
    """The tools ``rule`` guards; None: a python rule (it names none)."""
    if rule.before:
        return {rule.before[1]}
    if rule.after_confirmation:
        return {rule.after_confirmation}
    if rule.max_calls:
        return set(rule.max_calls)
    if rule.limit and (match := LIMIT.match(rule.limit)):
        return {match.group(1)}
    if rule.no_write_after_refusal is not None:
        return set(writes) if rule.no_write_after_refusal else set()
    if rule.owner:
        return {key.split(".", 1)[0] for key in rule.owner if "." in key}
    if rule.forbid_args:
        return {str(rule.forbid_args.get("tool"))}
    return None


def rule_label(rule: Rule) -> str:
    """A rule as one line (its name aside): two rules with the same label are the same rule."""
    data = rule.model_dump(exclude={"name"}, exclude_none=True, mode="json")
    return "; ".join(f"{key}: {_flow(value)}" for key, value in data.items())


def _flow(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    return value if isinstance(value, str) else json.dumps(value)


class _Suite:
    """The scenarios read, their domains and the personas they could use."""

    def __init__(self, scenarios: list[LoadedScenario], personas: dict[str, Loaded]):
        self.scenarios = scenarios
        cache: dict[str, Domain] = {}
        self.domain_of: dict[str, Domain] = {}
        for s in scenarios:
            if s.spec.domain not in cache:
                cache[s.spec.domain] = load_domain(s.spec.domain, source=str(s.path))
            self.domain_of[s.spec.id] = cache[s.spec.domain]
        self.domains = list({id(d): d for d in cache.values()}.values())
        self.personas = {pid: p.spec for pid, p in personas.items()}
        for s in scenarios:
            self.personas.setdefault(s.persona.id, s.persona)

    def writes(self, sid: str) -> set[str]:
        return {t.name for t in self.domain_of[sid].tools if t.access is Access.WRITE}


class _Trials:
    """What a run's trials show, per scenario."""

    def __init__(self, records: Iterable[TrialRecord]):
        self.count: dict[str, int] = {}
        self.called: dict[str, list[set[str]]] = {}  # scenario → each trial's tools called (live, ran)
        self.checks: dict[str, list[dict[str, str]]] = {}  # scenario → each trial's check name → status
        self.terminations: dict[str, list[str]] = {}  # reason → the scenario of each trial that ended so
        self.replayed = False
        for record in records:
            t = record.transcript
            sid = t.scenario_id
            self.count[sid] = self.count.get(sid, 0) + 1
            live = t.events[t.history_events :]
            invalid = {e.call_id for e in live if isinstance(e, InvalidCall)}
            self.called.setdefault(sid, []).append(
                {e.name for e in live if isinstance(e, ToolCall) and e.call_id not in invalid}
            )
            self.checks.setdefault(sid, []).append({c.name: c.status for c in record.checks})
            self.terminations.setdefault(t.termination.reason.value, []).append(sid)
            self.replayed = self.replayed or t.replay is not None


def coverage(
    scenarios: list[LoadedScenario],
    personas: dict[str, Loaded],
    *,
    source: str,
    records: Iterable[TrialRecord] | None = None,
    run_id: str | None = None,
    notes: list[str] | None = None,
) -> Coverage:
    """The coverage of ``scenarios`` (and, given a run's ``records``, of its trials)."""
    suite = _Suite(scenarios, personas)
    trials = _Trials(records) if records is not None else None
    sections = [_tools(suite, trials), _refusals(suite, trials), _rules(suite, trials), _traits(suite)]
    if trials is not None:
        sections += [_terminations(trials), _drift(trials)]
    return Coverage(
        source=source,
        run_id=run_id,
        scenarios=[s.spec.id for s in scenarios],
        domains=[d.name for d in suite.domains],
        sections=sections,
        notes=notes or [],
    )


def _each_tool(suite: _Suite, access: Access | None = None) -> Iterable[tuple[str, str, list[str]]]:
    """(shown name, tool name, the scenarios of its domain) of each tool (of ``access``)."""
    many = len(suite.domains) > 1
    for domain in suite.domains:
        sids = [sid for sid, d in suite.domain_of.items() if d is domain]
        for tool in domain.tools:
            if access is None or tool.access is access:
                yield (f"{domain.name}.{tool.name}" if many else tool.name), tool.name, sids


def _tools(suite: _Suite, trials: _Trials | None) -> Section:
    expected = {s.spec.id: expected_tools(s.spec.expect) for s in suite.scenarios}
    access = {t.name: t.access.value for d in suite.domains for t in d.tools}
    entries = []
    for shown, tool, sids in _each_tool(suite):
        entry = Entry(
            name=shown, detail=access[tool], scenarios=[sid for sid in sids if tool in expected[sid]]
        )
        if not entry.scenarios:
            entry.gaps.append("never expected")
        if trials is not None:
            entry.trials = sum(tool in called for sid in sids for called in trials.called.get(sid, []))
            if not entry.trials:
                entry.gaps.append("never called")
        entries.append(entry)
    meaning = "expected by a scenario (expected_actions, trajectory, first_tool_call)"
    return Section(area="tools", meaning=meaning + ("; called in a trial" if trials else ""), entries=entries)


def _refusals(suite: _Suite, trials: _Trials | None) -> Section:
    refused = {s.spec.id: refused_tools(s.spec.expect) for s in suite.scenarios}
    entries = []
    for shown, tool, sids in _each_tool(suite, Access.WRITE):
        entry = Entry(name=shown, detail="write", scenarios=[sid for sid in sids if tool in refused[sid]])
        if not entry.scenarios:
            entry.gaps.append("no refusal path")
        elif trials is not None:
            entry.trials = sum(trials.count.get(sid, 0) for sid in entry.scenarios)
            if not entry.trials:
                entry.gaps.append("refusal path never played")
        entries.append(entry)
    meaning = "a WRITE tool a scenario forbids (forbidden, forbid_args, max_calls 0)"
    return Section(
        area="refusal paths", meaning=meaning + ("; played in a trial" if trials else ""), entries=entries
    )


def _rules(suite: _Suite, trials: _Trials | None) -> Section:
    from simlab.graders.policy import check_names

    found: dict[str, tuple[Entry, list[str]]] = {}
    for s in suite.scenarios:
        sid, expect = s.spec.id, s.spec.expect
        in_play = expected_tools(expect) | refused_tools(expect)
        names = check_names(expect)
        for i, rule in enumerate(expect.rules):
            entry, carriers = found.setdefault(rule_label(rule), (Entry(name=rule_label(rule)), []))
            if sid not in carriers:
                carriers.append(sid)
            guarded = guarded_tools(rule, suite.writes(sid))
            if guarded is None:
                entry.unknown = "a python rule names no tool"
            elif guarded & in_play and sid not in entry.scenarios:
                entry.scenarios.append(sid)
            if trials is not None:
                mine = {name for name, index in names if index == i}
                per_trial = zip(trials.checks.get(sid, []), trials.called.get(sid, []), strict=True)
                shown = sum(_triggered(checks, called, mine, guarded) for checks, called in per_trial)
                entry.trials = (entry.trials or 0) + shown
    entries = []
    for entry, carriers in found.values():
        entry.detail = f"in {', '.join(carriers)}"
        if not entry.unknown and not entry.scenarios:
            entry.gaps.append("never at risk")
        if trials is not None:
            if entry.trials:
                entry.unknown = ""  # a python rule that failed was triggered
            elif not entry.unknown:
                entry.gaps.append("never triggered")
        entries.append(entry)
    meaning = "at risk: a tool it guards is expected or refused in a scenario carrying it"
    if trials:
        meaning += "; triggered: failed, or evaluated on a live call"
    return Section(area="policy rules", meaning=meaning, entries=entries)


def _triggered(checks: dict[str, str], called: set[str], mine: set[str], guarded: set[str] | None) -> bool:
    statuses = [checks[name] for name in mine if name in checks]
    if "fail" in statuses:
        return True
    return guarded is not None and "pass" in statuses and bool(guarded & called)


def _traits(suite: _Suite) -> Section:
    users: dict[str, list[str]] = {}
    for s in suite.scenarios:
        users.setdefault(s.persona.id, []).append(s.spec.id)
    carriers: dict[str, list[str]] = {}
    for pid, persona in suite.personas.items():
        for trait in persona.traits:
            carriers.setdefault(trait, []).append(pid)
    entries = []
    for trait, pids in carriers.items():
        entry = Entry(
            name=trait,
            detail=f"of {', '.join(pids)}",
            scenarios=[sid for pid in pids for sid in users.get(pid, [])],
        )
        if not entry.scenarios:
            entry.gaps.append("no scenario")
        entries.append(entry)
    return Section(area="persona traits", meaning="a scenario's persona has it", entries=entries)


def _terminations(trials: _Trials) -> Section:
    kinds = [
        r.value
        for r in TerminationReason
        if r is not TerminationReason.OBSERVED and (r is not TerminationReason.DIVERGED or trials.replayed)
    ]
    entries = []
    for kind in kinds:
        sids = trials.terminations.get(kind, [])
        entry = Entry(name=kind, scenarios=list(dict.fromkeys(sids)), trials=len(sids))
        if not entry.trials:
            entry.gaps.append("never seen")
        entries.append(entry)
    return Section(area="terminations", meaning="a trial ended so", entries=entries)


def _drift(trials: _Trials) -> Section:
    from simlab.graders.drift import KINDS

    names = [f"drift:{kind}" for kind in KINDS]
    names += sorted(
        {
            n
            for per in trials.checks.values()
            for c in per
            for n in c
            if n.startswith("drift_llm:") and n not in names
        }
    )
    entries = []
    for name in names:
        statuses = [(sid, c[name]) for sid, per in trials.checks.items() for c in per if name in c]
        checked = sum(status in ("pass", "fail") for _, status in statuses)
        seen = [sid for sid, status in statuses if status == "fail"]
        entry = Entry(
            name=name,
            detail=f"checked in {checked} trials",
            scenarios=list(dict.fromkeys(seen)),
            trials=len(seen),
        )
        if not checked:
            entry.gaps.append("never checked")
        elif not entry.trials:
            entry.gaps.append("never seen")
        entries.append(entry)
    return Section(
        area="drift", meaning="its check failed in a trial (the simulated user drifted so)", entries=entries
    )


def run_coverage(folder: Path, personas_dir: Path) -> Coverage:
    """The coverage of the run in ``folder``: its scenarios (the files its ``run.json`` pins, read
    from the project's folder) and its trials, read by the storage layer's rule."""
    from simlab.runner.lines import ReadNotes
    from simlab.runner.regrade import load_run_scenarios
    from simlab.runner.store import RunStore
    from simlab.specs import load_personas

    store = RunStore(folder)
    manifest = store.read_manifest() or {}
    if manifest.get("observed"):
        raise UsageError(
            f"{folder.name} holds imported traces, which have no scenario: coverage needs a run "
            "played from scenarios (or name the suite or scenarios themselves)"
        )
    loaded, changed = load_run_scenarios(store, personas_dir)
    notes = [
        f"scenario file changed since the run: {sid} (the trials were graded against the old one)"
        for sid in changed
    ]
    plan = store.planned_units(manifest)
    read = ReadNotes(store.trials_path, plan=plan)
    records = list(store.records(read))
    notes += read.warnings()
    if plan is not None and len(records) < len(plan):
        notes.append(
            f"{len(records)} of the {len(plan)} planned trials finished: what the trials show stands "
            "for those only"
        )
    return coverage(
        list(loaded.values()),
        load_personas(personas_dir),
        source=f"run {folder.name}",
        records=records,
        run_id=manifest.get("run_id", folder.name),
        notes=notes,
    )
