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
dropped (``report/draft_summary.py``). The checks of one draft are ``report/draft_checks.py``'s;
this module asks for the drafts and asks again. ``accept`` (``report/draft_accept.py``) moves
reviewed drafts (and their new personas) into the project, never over a file.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from simlab.env.domain import Domain
from simlab.errors import InfraError, SpecError, UsageError
from simlab.inert import one_line
from simlab.llm.types import ModelError
from simlab.report.coverage import Coverage, coverage
from simlab.report.draft import DraftAnswer
from simlab.report.draft_checks import Drafting, scenario_line
from simlab.report.draft_play import Reference
from simlab.report.draft_prompt import DraftContext, Repair, draft_messages, example_text
from simlab.report.draft_summary import AUTHOR, GenerateSummary, Round, role_spend, write_summary
from simlab.report.draft_summary import SUMMARY_FILE as SUMMARY_FILE  # where tests import it
from simlab.report.draft_table import cost_lines as cost_lines  # where tests import it
from simlab.specs.loader import Loaded, LoadedScenario
from simlab.specs.yamlio import load_yaml_file
from simlab.transcript import ModelCall, Usage

if TYPE_CHECKING:
    from simlab.llm.types import ChatModel

REPAIRABLE = ("id", "validate", "oracle", "lint", "duplicate", "trial")  # asked again with the reason


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


def _seed_texts(paths: list[Path]) -> list[tuple[str, str]]:
    """Each seed scenario as the model reads it (``draft_prompt.example_text``: its secrets hidden)."""
    seeds = []
    for path in paths:
        try:
            data, _ = load_yaml_file(path)
        except SpecError as exc:
            raise UsageError(f"cannot read the seed scenario: {exc}") from None
        seeds.append((path.name, example_text(data)))
    return seeds


async def generate(request: GenerateRequest, model: ChatModel) -> GenerateSummary:
    """Ask ``model`` for ``request.count`` drafts, keep those that earn their place in
    ``request.out`` and write its ``summary.json``. A permanent model error is raised (it would
    fail every draft alike); a model that answered no draft at all is an ``InfraError``."""
    from simlab.graders.judge import judge_pin

    calls: list[ModelCall] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="simlab-drafts-") as staging:
        drafting = Drafting(request, Path(staging))
        context = DraftContext(
            domain=request.domain,
            personas={pid: p.spec for pid, p in request.personas.items()},
            existing=[scenario_line(e) for e in request.suite],
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
        roles=role_spend(model, calls, drafting.plays, request.reference),
    )
    return write_summary(request.out, summary)


async def _draft(
    drafting: Drafting,
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


def _seed(domain: str, number: int) -> int:
    key = f"simlab-generate/{domain}/{number}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") >> 1
