"""The checks one draft of ``simlab generate`` must pass before it lands in the review folder
(steps 2-7 of ``report/generate.py``), and what is taken as drafts are kept: ids, shapes, new
personas; a kept draft's files copied into the review folder and its ``KeptDraft`` written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simlab.errors import SpecError
from simlab.inert import one_line
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
from simlab.report.draft_play import Play, play_draft
from simlab.report.draft_summary import PERSONAS, DroppedDraft, KeptDraft, Round
from simlab.specs.loader import Loaded, LoadedScenario

if TYPE_CHECKING:
    from simlab.report.generate import GenerateRequest


def _covered(cov: Coverage) -> set[tuple[str, str]]:
    return {(s.area, e.name) for s in cov.sections for e in s.entries if e.status == "covered"}


def _shape(entry: LoadedScenario) -> Shape:
    """What a near-duplicate is judged on: its expected actions and its user's goal."""
    return shape_of(entry.spec.expect.expected_actions, entry.spec.user.goal)


def _action_text(actions: list[Any]) -> list[str]:
    return [f"{a.tool}({', '.join(sorted(a.args))})" for a in actions]


def scenario_line(entry: LoadedScenario) -> str:
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


class Drafting:
    """The state of one generate: what is taken (ids, shapes), what was kept and dropped."""

    def __init__(self, request: GenerateRequest, staging: Path) -> None:
        self.request, self.staging = request, staging
        self.base = coverage(request.suite, request.personas, source="suite")
        self.ids = {e.spec.id for e in request.suite}
        self.shapes: list[tuple[str, Shape]] = [
            (e.spec.id, _shape(e)) for e in request.suite if e.spec.expect.expected_actions
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

    def personas(self, new: Loaded | None = None) -> dict[str, Loaded]:
        """The project's personas, those of the drafts kept, and ``new`` (a draft's own)."""
        return {**self.request.personas, **self.new_personas} | ({new.spec.id: new} if new else {})

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
        shape = _shape(entry)
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
        personas = self.personas(persona)
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
        personas = self.personas(persona)
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
        self.shapes.append((sid, _shape(entry)))
        self.entries.append(entry)
        self.lines.append(scenario_line(entry))
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
