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
   kept before it.

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
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from simlab.env.domain import Domain
from simlab.errors import InfraError, SpecError, UsageError
from simlab.inert import one_line
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
from simlab.report.draft_prompt import DraftContext, draft_messages
from simlab.runner.store import write_atomic
from simlab.specs.loader import Loaded, LoadedScenario
from simlab.transcript import ModelCall, Usage

if TYPE_CHECKING:
    from simlab.llm.types import ChatModel

SUMMARY_FILE = "summary.json"
PERSONAS = "personas"
STAGES = ("answer", "id", "validate", "oracle", "lint", "duplicate", "internal")


class KeptDraft(BaseModel):
    draft: int = Field(description="Which of the drafts asked for (1…N).")
    id: str
    file: str = Field(description="The scenario file, relative to the review folder.")
    persona: str
    persona_file: str | None = Field(None, description="A new persona's file; None: an existing one.")
    actions: list[str] = Field(description="The expected actions: tool(argument keys), in order.")
    adds: list[str] = Field(description="What the suite with it covers that the suite without it does not.")


class DroppedDraft(BaseModel):
    draft: int
    id: str | None = None
    stage: str = Field(description="The step it failed: " + ", ".join(STAGES) + ".")
    reason: str


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
    calls: int = 0
    usage: Usage = Field(default_factory=lambda: Usage(input_tokens=0, output_tokens=0, cost_usd=0.0))


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

    def drop(self, number: int, draft_id: str | None, stage: str, reason: str) -> None:
        where = str(self.staging) + "/"
        self.dropped.append(
            DroppedDraft(draft=number, id=draft_id, stage=stage, reason=reason.replace(where, ""))
        )

    def personas(self) -> dict[str, Loaded]:
        return {**self.request.personas, **self.new_personas}

    def check(self, number: int, answer: DraftAnswer) -> None:
        """Keep ``answer`` or say at which step it was dropped."""
        request, sid = self.request, answer.id
        if sid in self.ids or (request.out / f"{sid}.yaml").exists():
            where = "the suite or an earlier draft" if sid in self.ids else f"{request.out}/"
            self.drop(number, sid, "id", f"a scenario {sid!r} is already in {where}: drafts need new ids")
            return
        usable, persona = self._persona(number, answer)
        if not usable:
            return
        entry = self._validated(number, answer, persona)
        if entry is None or not self._sound(number, entry):
            return
        shape = shape_of(entry.spec.expect.expected_actions, entry.spec.user.goal)
        twin = next((other for other, known in self.shapes if near_duplicate(shape, known)), None)
        if twin is not None:
            actions = ", ".join(_action_text(entry.spec.expect.expected_actions))
            why = f"near-duplicate of {twin}: the same expected actions ({actions}), goals alike"
            self.drop(number, sid, "duplicate", why)
            return
        self._keep(number, entry, persona)

    def _persona(self, number: int, answer: DraftAnswer) -> tuple[bool, Loaded | None]:
        """(usable, its new persona loaded from its staged file; None: it reuses one); not usable: dropped."""
        data = persona_data(answer)
        if data is None:
            return True, None
        pid = data["id"]
        if pid in self.request.personas or pid in self.new_personas:
            self.drop(
                number,
                answer.id,
                "id",
                f"persona {pid!r} exists already: reuse it by its id or give the new one another id",
            )
            return False, None
        from simlab.specs import Persona, load_model

        path = self.staging / PERSONAS / f"{pid}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(draft_yaml(data, "persona drafted by simlab generate"), encoding="utf-8")
        try:
            return True, load_model(path, Persona)
        except SpecError as exc:
            self.drop(number, answer.id, "validate", "; ".join(exc.problems))
            return False, None

    def _validated(self, number: int, answer: DraftAnswer, persona: Loaded | None) -> LoadedScenario | None:
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
            self.drop(number, answer.id, "validate", "; ".join(problems) or "not a scenario")
            return None
        return entry

    def _sound(self, number: int, entry: LoadedScenario) -> bool:
        from simlab.graders.lint import lint_scenario
        from simlab.graders.state import replay_actions

        spec, domain = entry.spec, self.request.domain
        replay = replay_actions(domain, spec, spec.expect.expected_actions)
        if replay.failed is not None:
            failed = spec.expect.expected_actions[replay.failed].tool if replay.failed >= 0 else "the start"
            self.drop(
                number, spec.id, "oracle", f"replayed on the initial state, {failed} fails: {replay.error}"
            )
            return False
        errors = [
            f
            for f in lint_scenario(entry, domain, self.request.simulator, self.memo)
            if f.severity == "error"
        ]
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            self.drop(number, spec.id, "lint", errors[0].text() + more)
            return False
        return True

    def _keep(self, number: int, entry: LoadedScenario, persona: Loaded | None) -> None:
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
            )
        )


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
    from simlab.graders.judge import ask_json, judge_pin

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
            messages = draft_messages(context, number, request.count, drafting.lines)
            asked = await ask_json(
                model,
                messages,
                DraftAnswer,
                max_attempts=request.max_attempts,
                turn=0,
                calls=calls,
                seed=_seed(request.domain.name, number),
            )
            if asked.answer is None:
                why = (asked.error or "no answer").replace("judge ", "")
                if why.startswith("model error"):
                    failures.append(why)
                drafting.drop(number, None, "answer", why)
                continue
            try:
                drafting.check(number, asked.answer)
            except Exception as exc:  # a draft simlab's checks cannot read: its own, never the batch's end
                drafting.drop(number, asked.answer.id, "internal", f"{type(exc).__name__}: {one_line(exc)}")
    if failures and len(failures) == request.count:
        raise InfraError(f"the model answered none of the {request.count} drafts: {failures[-1]}")
    after = coverage([*request.suite, *drafting.entries], drafting.personas(), source="suite")
    usage = Usage.total(call.usage for call in calls)
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
        usage=usage,
    )
    request.out.mkdir(parents=True, exist_ok=True)
    data = mask_tree(summary.model_dump(mode="json"))
    write_atomic(request.out / SUMMARY_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return GenerateSummary.model_validate(data)


def _seed(domain: str, number: int) -> int:
    key = f"simlab-generate/{domain}/{number}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") >> 1


def cost_line(summary: GenerateSummary) -> str:
    """What the drafts cost, as every report says a model role's cost."""
    from simlab.report.fmt import count, money

    usage, ref = summary.usage, one_line(str(summary.model.get("ref", "?")))
    return (
        f"author {ref}: {summary.calls} calls, {count(usage.input_tokens)} tokens in, "
        f"{count(usage.output_tokens)} out, cost {money(usage.cost_usd)}"
    )


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
