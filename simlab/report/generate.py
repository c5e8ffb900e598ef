"""``simlab generate``: scenario drafts a model writes for a domain, each of which must earn its
place before it lands in the review folder (docs/how-to/generate.md).

A draft (``report/draft.py``) is kept only when, in this order:

1. the model's answer is the JSON object asked for (``judge.ask_json``: a malformed answer is
   asked again, up to ``max_attempts`` calls; then the draft is dropped, file-less);
2. its id is new (no scenario of the suite, no earlier draft, no file in the review folder) and a
   new persona's id is new too;
3. it validates: the spec models (scenario, persona) and the checks against its domain
   (``env/checks.check_against_domain``), as ``simlab validate`` reads them;
4. its expected actions, replayed on the domain from its initial state (``state.replay_actions``,
   the oracle run of the expected-state check), all succeed;
5. ``simlab lint`` finds no error in it (``graders/lint.lint_scenario``, under the simulator kind
   given);
6. it is no near-duplicate (``draft.near_duplicate``) of a scenario of the suite or of a draft
   kept before it;
7. played against the reference agent (``draft_play.py``: a few trials, a deterministic user), it
   can be completed and the agent reaches its expected end state (kept, flagged for review, when
   the agent reached it but broke a rule).

A draft that fails steps 2-7 is asked again, with what failed (fenced as data, bounded:
``draft_prompt.Repair``), up to ``repair_rounds`` more times; each kept or dropped draft records
its rounds and what failed in the earlier ones.

A draft the checks themselves cannot read (a bug of simlab's, an answer no check foresaw) is
dropped at the ``internal`` step with the exception's one line: it never ends the batch.

What each kept draft adds is the coverage (``report/coverage.py``) of the suite with it against
the suite without it; ``summary.json`` in the review folder says it, and why each other draft was
dropped. ``accept`` moves reviewed drafts (and their new personas) into the project, never over a
file.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, Field

from simlab.env.domain import Domain
from simlab.errors import InfraError, SpecError, UsageError
from simlab.inert import one_line
from simlab.llm.types import ModelError
from simlab.redact import mask_tree
from simlab.report.coverage import Coverage, coverage
from simlab.report.draft import (
    DraftAnswer,
    Shape,
    draft_yaml,
    near_duplicate,
    persona_data,
    scenario_data,
    shape_of,
)
from simlab.report.draft_play import PLAY_ROLES, Play, Reference, play_draft
from simlab.report.draft_prompt import DraftContext, Repair, draft_messages
from simlab.runner.store import write_atomic
from simlab.specs.loader import Loaded, LoadedScenario
from simlab.transcript import ModelCall, Usage

if TYPE_CHECKING:
    from simlab.llm.types import ChatModel

SUMMARY_FILE = "summary.json"
PERSONAS = "personas"
STAGES = ("answer", "id", "validate", "oracle", "lint", "duplicate", "trial", "internal")
REPAIRABLE = ("id", "validate", "oracle", "lint", "duplicate", "trial")  # asked again with the reason
AUTHOR: Final = "author"  # the role of the model that writes the drafts (its calls, cost and cache key)


class Round(BaseModel):
    """An earlier round of a draft: the step its answer failed and why (the next round was told)."""

    stage: str
    reason: str


class RoleSpend(BaseModel):
    """What one model role spent: its calls and their usage (an unknown part stays unknown)."""

    ref: str = Field(description="The model or agent that played the role.")
    calls: int = 0
    usage: Usage = Field(default_factory=lambda: Usage(input_tokens=0, output_tokens=0, cost_usd=0.0))


class KeptDraft(BaseModel):
    draft: int = Field(description="Which of the drafts asked for (1…N).")
    id: str
    file: str = Field(description="The scenario file, relative to the review folder.")
    persona: str
    persona_file: str | None = Field(None, description="A new persona's file; None: an existing one.")
    actions: list[str] = Field(description="The expected actions: tool(argument keys), in order.")
    adds: list[str] = Field(description="What the suite with it covers that the suite without it does not.")
    rounds: int = Field(1, description="The model's answers checked for it (1: kept as first written).")
    earlier: list[Round] = Field(default_factory=list, description="Why its earlier rounds failed.")
    played: str | None = Field(None, description="How the reference agent did; None: not played.")
    flag: str | None = Field(None, description="Kept, but read this first (the reference agent failed).")


class DroppedDraft(BaseModel):
    draft: int
    id: str | None = None
    stage: str = Field(description="The step it failed: " + ", ".join(STAGES) + ".")
    reason: str
    rounds: int = Field(1, description="The model's answers checked for it, the last one failed as said.")
    earlier: list[Round] = Field(default_factory=list, description="Why its earlier rounds failed.")


class GenerateSummary(BaseModel):
    """``summary.json`` of a review folder: the last ``simlab generate`` into it."""

    schema_version: int = 1
    created_at: str
    domain: str
    model: dict[str, Any]
    target: str | None = None
    asked: int
    kept: list[KeptDraft] = Field(default_factory=list)
    dropped: list[DroppedDraft] = Field(default_factory=list)
    missing_before: int = Field(description="Coverage gaps of the suite without the drafts.")
    missing_after: int = Field(description="Coverage gaps of the suite with every kept draft.")
    calls: int = Field(0, description="The author model's calls (also roles.author).")
    usage: Usage = Field(
        default_factory=lambda: Usage(input_tokens=0, output_tokens=0, cost_usd=0.0),
        description="The author model's usage (also roles.author).",
    )
    reference: str | None = Field(None, description="The reference agent the drafts were played against.")
    trials: int = Field(0, description="Trials of each draft against it (0: not played).")
    repair_rounds: int = Field(0, description="Rounds a failed draft was asked again at most.")
    roles: dict[str, RoleSpend] = Field(
        default_factory=dict,
        description="What each model role spent: author (the drafts), agent and simulator (the plays). "
        "Absent in files written before the roles were kept.",
    )


@dataclass
class GenerateRequest:
    """What one ``simlab generate`` works on."""

    domain: Domain
    suite: list[LoadedScenario]  # the scenarios that exist (of this domain)
    personas: dict[str, Loaded]  # the project's personas
    out: Path
    count: int = 5
    target: str | None = None  # "uncovered": the gaps coverage reports go into the prompt
    seeds: list[Path] = field(default_factory=list)
    simulator: str = "rules"  # the simulator kind lint reads the drafts under
    max_attempts: int = 3
    repair_rounds: int = 2  # a failed draft is asked again with what failed, at most this many times
    reference: Reference | None = None  # who plays each draft before it is kept; None: not played
    now: Callable[[], datetime] | None = None


def gap_lines(cov: Coverage) -> list[str]:
    """What ``coverage`` reports missing, one line each (``--target uncovered``)."""
    return [
        f"{section.area}: {entry.name} ({entry.detail}): {', '.join(entry.gaps)}"
        for section in cov.sections
        for entry in section.entries
        if entry.gaps
    ]


def _covered(cov: Coverage) -> set[tuple[str, str]]:
    return {(s.area, e.name) for s in cov.sections for e in s.entries if e.status == "covered"}


def _action_text(actions: list[Any]) -> list[str]:
    return [f"{a.tool}({', '.join(sorted(a.args))})" for a in actions]


def _scenario_line(entry: LoadedScenario) -> str:
    actions = ", ".join(_action_text(entry.spec.expect.expected_actions)) or "none"
    goal = one_line(entry.spec.user.goal)
    goal = goal if len(goal) <= 200 else goal[:199] + "…"
    return f"- {entry.spec.id}: goal: {goal}; expected actions: {actions}"


@dataclass
class Rejected:
    """Why one round of a draft failed: its step, the reason shown, and what the next round is told
    (every problem found, not only the first)."""

    stage: str
    reason: str
    problems: list[str]


class _Drafting:
    """The state of one generate: what is taken (ids, shapes), what was kept and dropped."""

    def __init__(self, request: GenerateRequest, staging: Path) -> None:
        self.request, self.staging = request, staging
        self.base = coverage(request.suite, request.personas, source="suite")
        self.ids = {e.spec.id for e in request.suite}
        self.shapes: list[tuple[str, Shape]] = [
            (e.spec.id, shape_of(e.spec.expect.expected_actions, e.spec.user.goal))
            for e in request.suite
            if e.spec.expect.expected_actions
        ]
        self.new_personas: dict[str, Loaded] = {}
        self.entries: list[LoadedScenario] = []
        self.kept: list[KeptDraft] = []
        self.dropped: list[DroppedDraft] = []
        self.lines: list[str] = []
        self.memo: dict[str, Any] = {}
        self.plays: list[Play] = []

    def plain(self, text: str) -> str:
        """``text`` without the staging folder (no place a reader can find)."""
        return text.replace(str(self.staging) + "/", "")

    def drop(
        self, number: int, draft_id: str | None, stage: str, reason: str, earlier: list[Round] | None = None
    ) -> None:
        earlier = list(earlier or [])
        self.dropped.append(
            DroppedDraft(
                draft=number,
                id=draft_id,
                stage=stage,
                reason=self.plain(reason),
                rounds=len(earlier) + 1,
                earlier=earlier,
            )
        )

    def personas(self) -> dict[str, Loaded]:
        return {**self.request.personas, **self.new_personas}

    async def check(self, number: int, answer: DraftAnswer, earlier: list[Round]) -> Rejected | None:
        """Keep ``answer`` (None) or say at which step it failed."""
        request, sid = self.request, answer.id
        if sid in self.ids or (request.out / f"{sid}.yaml").exists():
            where = "the suite or an earlier draft" if sid in self.ids else f"{request.out}/"
            return _rejected("id", f"a scenario {sid!r} is already in {where}: drafts need new ids")
        persona = self._persona(answer)
        if isinstance(persona, Rejected):
            return persona
        entry = self._validated(answer, persona)
        if isinstance(entry, Rejected):
            return entry
        unsound = self._sound(entry)
        if unsound is not None:
            return unsound
        shape = shape_of(entry.spec.expect.expected_actions, entry.spec.user.goal)
        twin = next((other for other, known in self.shapes if near_duplicate(shape, known)), None)
        if twin is not None:
            actions = ", ".join(_action_text(entry.spec.expect.expected_actions))
            why = f"near-duplicate of {twin}: the same expected actions ({actions}), goals alike"
            return _rejected("duplicate", why)
        play = None
        if request.reference is not None and request.reference.trials > 0:
            play = await play_draft(entry, request.domain, request.reference)
            self.plays.append(play)
            if not play.kept:
                return _rejected("trial", play.text)
        self._keep(number, entry, persona, earlier, play)
        return None

    def _persona(self, answer: DraftAnswer) -> Loaded | Rejected | None:
        """Its new persona loaded from its staged file; None: it reuses one."""
        data = persona_data(answer)
        if data is None:
            return None
        pid = data["id"]
        if pid in self.request.personas or pid in self.new_personas:
            why = f"persona {pid!r} exists already: reuse it by its id or give the new one another id"
            return _rejected("id", why)
        from simlab.specs import Persona, load_model

        path = self.staging / PERSONAS / f"{pid}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(draft_yaml(data, "persona drafted by simlab generate"), encoding="utf-8")
        try:
            return load_model(path, Persona)
        except SpecError as exc:
            return Rejected("validate", self.plain("; ".join(exc.problems)), [*map(self.plain, exc.problems)])

    def _validated(self, answer: DraftAnswer, persona: Loaded | None) -> LoadedScenario | Rejected:
        from simlab.env.checks import check_against_domain
        from simlab.specs.loader import read_scenarios

        path = self.staging / f"{answer.id}.yaml"
        header = (
            "scenario drafted by simlab generate: review it, then `simlab generate --accept`\n"
            "its expected state is the replay of expect.expected_actions (the state grader's oracle run)"
        )
        path.write_text(draft_yaml(scenario_data(answer, self.request.domain.name), header), encoding="utf-8")
        personas = self.personas() | ({persona.spec.id: persona} if persona else {})
        entries, problems = read_scenarios([path], personas)
        entry = entries[0] if entries else None
        if entry is not None and "domain" in entry.spec.model_fields_set:  # a partial one too, as validate
            problems = [*problems, *check_against_domain(entry)[1]]
        if problems or not isinstance(entry, LoadedScenario):
            problems = [self.plain(p) for p in problems] or ["not a scenario"]
            return Rejected("validate", "; ".join(problems), problems)
        return entry

    def _sound(self, entry: LoadedScenario) -> Rejected | None:
        from simlab.graders.lint import lint_scenario
        from simlab.graders.state import replay_actions

        spec, domain = entry.spec, self.request.domain
        replay = replay_actions(domain, spec, spec.expect.expected_actions)
        if replay.failed is not None:
            failed = spec.expect.expected_actions[replay.failed].tool if replay.failed >= 0 else "the start"
            return _rejected("oracle", f"replayed on the initial state, {failed} fails: {replay.error}")
        errors = [
            self.plain(f.text())
            for f in lint_scenario(entry, domain, self.request.simulator, self.memo)
            if f.severity == "error"
        ]
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            return Rejected("lint", errors[0] + more, errors)
        return None

    def _keep(
        self,
        number: int,
        entry: LoadedScenario,
        persona: Loaded | None,
        earlier: list[Round],
        play: Play | None,
    ) -> None:
        request, sid = self.request, entry.spec.id
        personas = self.personas() | ({persona.spec.id: persona} if persona else {})
        with_it = coverage([*request.suite, entry], personas, source="suite")
        adds = sorted(_covered(with_it) - _covered(self.base))
        request.out.mkdir(parents=True, exist_ok=True)
        final = request.out / f"{sid}.yaml"
        final.write_bytes(entry.path.read_bytes())
        persona_file = None
        if persona is not None:
            self.new_personas[persona.spec.id] = persona
            persona_file = f"{PERSONAS}/{persona.spec.id}.yaml"
            (request.out / PERSONAS).mkdir(exist_ok=True)
            (request.out / persona_file).write_bytes(persona.path.read_bytes())
        self.ids.add(sid)
        self.shapes.append((sid, shape_of(entry.spec.expect.expected_actions, entry.spec.user.goal)))
        self.entries.append(entry)
        self.lines.append(_scenario_line(entry))
        self.kept.append(
            KeptDraft(
                draft=number,
                id=sid,
                file=final.name,
                persona=entry.persona.id,
                persona_file=persona_file,
                actions=_action_text(entry.spec.expect.expected_actions),
                adds=[f"{area}: {name}" for area, name in adds],
                rounds=len(earlier) + 1,
                earlier=list(earlier),
                played=play.text if play else None,
                flag=play.flag if play else None,
            )
        )


def _rejected(stage: str, reason: str) -> Rejected:
    return Rejected(stage, reason, [reason])


def _seed_texts(paths: list[Path]) -> list[tuple[str, str]]:
    seeds = []
    for path in paths:
        try:
            seeds.append((path.name, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read the seed scenario: {exc}") from None
    return seeds


async def generate(request: GenerateRequest, model: ChatModel) -> GenerateSummary:
    """Ask ``model`` for ``request.count`` drafts, keep those that earn their place in
    ``request.out`` and write its ``summary.json``. A permanent model error is raised (it would
    fail every draft alike); a model that answered no draft at all is an ``InfraError``."""
    from simlab.graders.judge import judge_pin

    calls: list[ModelCall] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="simlab-drafts-") as staging:
        drafting = _Drafting(request, Path(staging))
        context = DraftContext(
            domain=request.domain,
            personas={pid: p.spec for pid, p in request.personas.items()},
            existing=[_scenario_line(e) for e in request.suite],
            gaps=gap_lines(drafting.base) if request.target == "uncovered" else [],
            seeds=_seed_texts(request.seeds),
        )
        for number in range(1, request.count + 1):
            await _draft(drafting, context, model, number, calls, failures)
    if failures and len(failures) == request.count:
        raise InfraError(f"the model answered none of the {request.count} drafts: {failures[-1]}")
    after = coverage([*request.suite, *drafting.entries], drafting.personas(), source="suite")
    summary = GenerateSummary(
        created_at=(request.now or (lambda: datetime.now(UTC)))().isoformat(timespec="seconds"),
        domain=request.domain.name,
        model=judge_pin(model),
        target=request.target,
        asked=request.count,
        kept=drafting.kept,
        dropped=sorted(drafting.dropped, key=lambda d: d.draft),
        missing_before=drafting.base.missing,
        missing_after=after.missing,
        calls=len(calls),
        usage=Usage.total(call.usage for call in calls),
        reference=request.reference.ref if request.reference and request.reference.trials else None,
        trials=request.reference.trials if request.reference else 0,
        repair_rounds=request.repair_rounds,
        roles=_roles(model, calls, drafting.plays, request.reference),
    )
    request.out.mkdir(parents=True, exist_ok=True)
    data = mask_tree(summary.model_dump(mode="json"))
    write_atomic(request.out / SUMMARY_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return GenerateSummary.model_validate(data)


async def _draft(
    drafting: _Drafting,
    context: DraftContext,
    model: ChatModel,
    number: int,
    calls: list[ModelCall],
    failures: list[str],
) -> None:
    """One draft: asked, checked, and asked again with what failed, ``repair_rounds`` times at most."""
    from simlab.graders.judge import ask_json

    request = drafting.request
    earlier: list[Round] = []
    repair: Repair | None = None
    for round_ in range(1, request.repair_rounds + 2):
        messages = draft_messages(context, number, request.count, drafting.lines, repair)
        asked = await ask_json(
            model,
            messages,
            DraftAnswer,
            max_attempts=request.max_attempts,
            turn=0,
            calls=calls,
            seed=_seed(request.domain.name, number),
            role=AUTHOR,
        )
        if asked.answer is None:
            why = (asked.error or "no answer").replace(f"{AUTHOR} ", "")
            if why.startswith("model error") and not earlier:
                failures.append(why)
            drafting.drop(number, None, "answer", why, earlier)
            return
        try:
            rejected = await drafting.check(number, asked.answer, earlier)
        except ModelError:
            raise  # the reference agent's provider refused for good: every draft would fail alike
        except Exception as exc:  # a draft simlab's checks cannot read: its own, never the batch's end
            reason = f"{type(exc).__name__}: {one_line(exc)}"
            drafting.drop(number, asked.answer.id, "internal", reason, earlier)
            return
        if rejected is None:
            return
        if rejected.stage not in REPAIRABLE or round_ > request.repair_rounds:
            drafting.drop(number, asked.answer.id, rejected.stage, rejected.reason, earlier)
            return
        earlier.append(Round(stage=rejected.stage, reason=drafting.plain(rejected.reason)))
        repair = Repair(
            answer=asked.answer.model_dump_json(exclude_defaults=True),
            stage=rejected.stage,
            problems=[drafting.plain(p) for p in rejected.problems],
            round=round_ + 1,
            rounds=request.repair_rounds + 1,
        )


def _roles(
    model: ChatModel, calls: list[ModelCall], plays: list[Play], reference: Reference | None
) -> dict[str, RoleSpend]:
    """What each role spent: the author's calls, and the agent's and simulator's over every play."""
    from simlab.graders.judge import judge_pin

    roles = {
        AUTHOR: RoleSpend(
            ref=str(judge_pin(model).get("ref", "?")),
            calls=len(calls),
            usage=Usage.total(call.usage for call in calls),
        )
    }
    if reference is None or not plays:
        return roles
    refs = {"agent": reference.ref, "simulator": _simulator_ref(reference)}
    for role in PLAY_ROLES:
        roles[role] = RoleSpend(
            ref=refs[role],
            calls=sum(len(p.calls.get(role, [])) for p in plays),
            usage=Usage.total(p.usage[role] for p in plays if role in p.usage),
        )
    return roles


def _simulator_ref(reference: Reference) -> str:
    try:
        pin = reference.simulator.pin()
    except Exception:  # a minimal simulator without a pin
        return type(reference.simulator).__name__
    return str(pin.ref or pin.kind)


def _seed(domain: str, number: int) -> int:
    key = f"simlab-generate/{domain}/{number}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") >> 1


def outcome_rows(summary: GenerateSummary) -> list[tuple[int, str, str, str]]:
    """(draft, id, outcome, what it adds or why it was dropped) per draft, in draft order: the
    terminal's table, each cell one inert line (a drafted persona's trait is the model's text). A
    draft asked again says its rounds; a flagged one its flag first."""

    def rounds(n: int) -> str:
        return f" (round {n})" if n > 1 else ""

    rows = []
    for k in summary.kept:
        adds = "; ".join(k.adds) or "nothing coverage counts"
        text = f"flag: {k.flag}; adds: {adds}" if k.flag else adds
        rows.append((k.draft, k.id, ("kept, flagged" if k.flag else "kept") + rounds(k.rounds), text))
    rows += [
        (d.draft, d.id or "–", f"dropped: {d.stage}{rounds(d.rounds)}", d.reason) for d in summary.dropped
    ]
    return sorted((draft, one_line(sid), outcome, one_line(text)) for draft, sid, outcome, text in rows)


def cost_lines(summary: GenerateSummary) -> list[str]:
    """What each role spent, as every report says a model role's cost: the author's calls (a file
    written before the roles were kept: its top-level calls and usage), then the plays'."""
    from simlab.report.fmt import count, money

    roles = summary.roles or {
        AUTHOR: RoleSpend(ref=str(summary.model.get("ref", "?")), calls=summary.calls, usage=summary.usage)
    }
    return [
        f"{role} {one_line(spend.ref)}: {spend.calls} calls, {count(spend.usage.input_tokens)} tokens in, "
        f"{count(spend.usage.output_tokens)} out, cost {money(spend.usage.cost_usd)}"
        for role, spend in roles.items()
    ]


# --- accept ------------------------------------------------------------------------------------


def _named(out: Path, names: list[str]) -> list[Path]:
    if not names:
        found = sorted(p for p in out.glob("*.yaml") if p.is_file())
        if not found:
            raise UsageError(f"{out}/ holds no draft to accept (run `simlab generate --model MODEL` first)")
        return found
    paths = []
    for name in names:
        path = out / (Path(name).name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
        if not path.is_file():
            raise UsageError(f"{path}: no such draft in {out}/")
        paths.append(path)
    return paths


def _persona_of(path: Path) -> str | None:
    from simlab.specs.yamlio import load_yaml_file

    data, _ = load_yaml_file(path)
    persona = data.get("persona") if isinstance(data, dict) else None
    return persona if isinstance(persona, str) else None


def accept(out: Path, names: list[str], scenarios: Path, personas: Path) -> list[tuple[Path, Path]]:
    """Move the drafts ``names`` (default: every draft in ``out``) into ``scenarios``, and the new
    personas they use into ``personas``. Nothing is moved when any target file exists already
    (a persona file with the same bytes is no clash: it is the same persona)."""
    moves: list[tuple[Path, Path]] = []
    for path in _named(out, names):
        moves.append((path, scenarios / path.name))
        pid = _persona_of(path)
        drafted = out / PERSONAS / f"{pid}.yaml"
        if pid and drafted.is_file() and (drafted, personas / drafted.name) not in moves:
            moves.append((drafted, personas / drafted.name))
    clashes = [
        str(target)
        for source, target in moves
        if target.exists()
        and not (source.parent.name == PERSONAS and target.read_bytes() == source.read_bytes())
    ]
    if clashes:
        raise UsageError(
            f"not accepting: {', '.join(clashes)} exist{'s' if len(clashes) == 1 else ''} already; "
            "rename the draft (its file and id) or remove the file, then accept again"
        )
    done = []
    for source, target in moves:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # the same persona: its draft copy goes
            source.unlink()
            continue
        shutil.move(str(source), str(target))
        done.append((source, target))
    return done
