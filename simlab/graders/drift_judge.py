"""The optional LLM drift judge: did the simulated user play its part?

The deterministic drift checks (leaked secrets, invented identifiers, premature stop, …) run
first elsewhere; this judge looks at what code cannot: whether the user stayed in persona and in
the customer role, disclosed information progressively, did not invent facts, and (when the
scenario has secrets) did not reveal them even in paraphrase. Each aspect is one yes/no question
(``yes`` = the user behaved) answered as validated JSON, reported as a hard ``drift`` check
``drift_llm:<aspect>``: a ``fail`` makes the trial ``invalid``, an unanswerable judge an ``error``.

The judge gets the persona, the goal and the known facts (with values: it needs them to spot
invented ones) in its system message, because they come from the scenario author; of the
never-reveal facts it gets the NAMES only — the values would be one more copy of a secret, and a
name ("the card number") is enough to recognise a disclosure. The conversation goes as delimited
data without tool traffic: the judge sees what the user could see.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from simlab.graders.base import GradeContext, check_at
from simlab.graders.judge import JudgeOutcome, at_least_one, cited_event, judge_criterion, not_run
from simlab.graders.judge_prompt import data_rules, nonce_for, transcript_as_data
from simlab.graders.registry import grader
from simlab.llm.types import Message
from simlab.specs import Persona
from simlab.transcript import Check, ModelCall, UserMessage

__all__ = ["ASPECTS", "drift_messages", "grade_drift_llm"]


ASPECTS: dict[str, str] = {
    "persona": "Did the simulated user stay in its role as the customer and in its persona (character, "
    "speaking style, behaviours) throughout — never speaking as the support assistant, never mentioning "
    "being an "
    "AI, a model or a simulation?",
    "progressive_disclosure": "Did the simulated user disclose its information progressively — giving facts "
    "when asked or when needed — rather than dumping its goal and all its facts at once (unless "
    "the persona is described as volunteering facts)?",
    "no_invented_facts": "Did the simulated user avoid inventing facts — identifiers, numbers, names, dates, "
    "order details — that are neither among its known facts nor said earlier by the agent?",
    "kept_secrets": "Did the simulated user avoid revealing any of the never-reveal facts listed in your "
    "instructions, in any wording?",
}

SYSTEM = """You audit a simulated customer (played by a language model) in a conversation \
with a support agent. \
The customer was given a persona, a hidden goal and facts; judge only the USER lines, \
the agent is not on trial.

{rules}

The customer's brief (trusted):
{brief}

Answer one yes/no question about the customer: {question}
Answer "yes" if the customer behaved as asked, "no" if the transcript shows a clear violation.
Reply with only a JSON object, no other text:
{{"verdict": "yes" or "no", "reason": "one sentence, citing the event #index that decides it"}}"""


def _persona_text(persona: Persona | str | None) -> str:
    if persona is None:
        return "(no persona given)"
    if isinstance(persona, str):
        return f"persona id {persona!r} (no description available)"
    lines = [persona.description]
    if persona.traits:
        lines.append("traits: " + ", ".join(persona.traits))
    if persona.speaking_style:
        lines.append("speaking style: " + persona.speaking_style)
    lines += [f"behaviour: {b}" for b in persona.behaviours]
    lines.append("volunteers facts unprompted: " + ("yes" if persona.volunteers_facts else "no"))
    return "\n  ".join(lines)


def _brief(ctx: GradeContext, persona: Persona | str | None) -> str:
    user = ctx.scenario.user
    lines = [
        f"- persona: {_persona_text(persona)}",
        f"- hidden goal: {user.goal}",
        "- known facts (may be shared when asked): "
        + (json.dumps(user.known_facts, ensure_ascii=False, default=str) if user.known_facts else "none"),
    ]
    if user.never_reveal:
        lines.append("- never reveal (names only): " + "; ".join(sorted(map(str, user.never_reveal))))
    if user.reject_phrases:
        lines.append("- offers to refuse: " + "; ".join(user.reject_phrases))
    return "\n".join(lines)


def drift_messages(ctx: GradeContext, question: str, persona: Persona | str | None) -> list[Message]:
    nonce = nonce_for(ctx.transcript, "drift")
    system = SYSTEM.format(rules=data_rules(nonce), brief=_brief(ctx, persona), question=question)
    user = (
        f"{transcript_as_data(ctx.transcript, include_tools=False, nonce=nonce)}\n\nAnswer the question in "
        "your instructions about the customer in the conversation above. Reply with the JSON object only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _persona(ctx: GradeContext, persona: Persona | str | None) -> Persona | str | None:
    if persona is not None:
        return persona
    return ctx.persona or ctx.scenario.persona


async def grade_drift_llm(
    ctx: GradeContext,
    *,
    persona: Persona | str | None = None,
    samples: int = 1,
    max_attempts: int = 3,
    aspects: list[str] | None = None,
) -> JudgeOutcome:
    """Hard ``drift_llm:<aspect>`` checks; ``not_run`` for each aspect when no judge is configured.

    ``persona`` (the resolved Persona) defaults to ``ctx.persona`` if present, else the scenario's
    persona (an inline one, or just its id). ``kept_secrets`` is asked only when there are secrets.
    """
    wanted = aspects or [a for a in ASPECTS if a != "kept_secrets" or ctx.scenario.user.never_reveal]
    unknown = sorted(set(wanted) - set(ASPECTS))
    if unknown:
        raise ValueError(f"unknown drift aspects {unknown}; known: {', '.join(ASPECTS)}")
    persona = _persona(ctx, persona)
    checks: list[Check] = []
    calls: list[ModelCall] = []
    for aspect in wanted:
        name = f"drift_llm:{aspect}"
        if ctx.judge is None:
            checks.append(not_run(name, "drift", True, question=ASPECTS[aspect]))
            continue
        verdict, reason, details = await judge_criterion(
            ctx.judge,
            ctx.transcript,
            drift_messages(ctx, ASPECTS[aspect], persona),
            key=f"drift/{aspect}",
            samples=samples,
            max_attempts=max_attempts,
            calls=calls,
        )
        status: Any = "error" if verdict is None else "pass" if verdict == "yes" else "fail"
        # placed at the user message its reason cites, so an agent's breach before it still counts
        place = cited_event(ctx.transcript, reason, (UserMessage,)) if status == "fail" else None
        checks.append(
            Check(
                name=name,
                kind="drift",
                status=status,
                hard=True,
                reason=reason,
                details={"question": ASPECTS[aspect], **details},
                **check_at(ctx.transcript, place),
            )
        )
    return JudgeOutcome(checks, calls)


@grader("drift_llm", judge=True, kind="drift")
def drift_llm_grader(
    samples: int = 1, max_attempts: int = 3, aspects: list[str] | None = None
) -> Callable[[GradeContext], Awaitable[JudgeOutcome]]:
    """With ``expect.drift_judge``: the judge reads the simulated user's messages, one check per aspect."""
    at_least_one(samples=samples, max_attempts=max_attempts)
    unknown = sorted(set(aspects or []) - set(ASPECTS))
    if unknown:
        raise ValueError(f"unknown drift aspects {unknown}; known: {', '.join(ASPECTS)}")

    async def grade(ctx: GradeContext) -> JudgeOutcome:
        if not ctx.scenario.expect.drift_judge:
            return JudgeOutcome([])
        return await grade_drift_llm(ctx, samples=samples, max_attempts=max_attempts, aspects=aspects)

    return grade
