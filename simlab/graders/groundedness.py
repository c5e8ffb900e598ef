"""Groundedness: are the agent's final claims backed by the tool results it actually saw?

Choice: the claims checked are those of the agent's LAST message (its final answer, where it
reports what was done and what is true), and the evidence is every tool call and result *before*
that message — what the agent had seen when it spoke. Earlier agent messages are not checked;
user messages are not evidence. The judge splits the message into atomic factual claims and marks
each supported or unsupported; its JSON answer is validated by pydantic, malformed answers are
retried, then recorded as an error. The check ``groundedness`` is soft: score = supported / total,
unsupported claims listed in ``details``. A final message without factual claims passes with no
score (there is nothing to ground, which is not the same as 100 %).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from simlab.graders.base import GradeContext, check_at, last_agent_message
from simlab.graders.judge import (
    JudgeOutcome,
    ask_json,
    at_least_one,
    derive_seed,
    judge_pin,
    judge_turn,
    not_run,
    one_line,
)
from simlab.graders.judge_prompt import MAX_RESULT_CHARS, data_rules, delimit, event_line, nonce_for
from simlab.graders.registry import grader
from simlab.llm.types import Message
from simlab.transcript import Check, InvalidCall, ModelCall, ToolCall, ToolResult, Transcript

__all__ = ["Claim", "Claims", "grade_groundedness", "groundedness_messages"]


CLAIM_PLACEHOLDER = "…"


class Claim(BaseModel):
    model_config = ConfigDict(extra="ignore")
    claim: str = Field(
        min_length=1, description="Not the prompt's placeholder (a copied example is malformed)."
    )
    verdict: Literal["supported", "unsupported"]
    evidence: str = ""

    @field_validator("claim")
    @classmethod
    def _not_the_placeholder(cls, value: str) -> str:
        if value.strip() in (CLAIM_PLACEHOLDER, "...", ""):
            raise ValueError("the claim repeats the instructions' placeholder; quote the real claim")
        return value

    @field_validator("verdict", mode="before")
    @classmethod
    def _fold(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class Claims(BaseModel):
    model_config = ConfigDict(extra="ignore")
    claims: list[Claim]


SYSTEM = """You check whether a support agent's final message is grounded in the tool results it saw.

{rules}

Steps:
1. Split the agent's final message (the agent_message block) into atomic factual claims: single \
statements of fact about orders, accounts, amounts, dates, statuses, policies or actions taken \
("your refund of $49.90 was issued"). Skip greetings, questions, offers of further help, apologies, \
and promises about what will happen next.
2. For each claim, decide "supported" if the tool calls and results in the tool_results block state \
or directly imply it, otherwise "unsupported" (including when no tool result mentions it). Only the \
tool_results block is evidence; what the customer said is not.

Reply with only a JSON object, no other text:
{{"claims": [{{"claim": "…", "verdict": "supported" or "unsupported", \
"evidence": "#index of the result, or why not"}}]}}
Use an empty list if the message makes no factual claims."""


def groundedness_messages(transcript: Transcript, index: int) -> list[Message]:
    """System instructions; the evidence before event ``index`` and the message at ``index`` as data."""
    nonce = nonce_for(transcript, "groundedness")
    evidence = [
        line
        for i, event in enumerate(transcript.events[:index])
        if isinstance(event, (ToolCall, ToolResult, InvalidCall))
        and (line := event_line(i, event, max_result_chars=MAX_RESULT_CHARS * 3)) is not None
    ]
    final = event_line(index, transcript.events[index]) or ""
    system = SYSTEM.format(rules=data_rules(nonce, ("tool_results", "agent_message")))
    user = (
        f"{delimit('tool_results', chr(10).join(evidence) or '(the agent saw no tool results)', nonce)}\n\n"
        f"{delimit('agent_message', final, nonce)}\n\nList the claims of the agent message and judge each. "
        "Reply with the JSON object only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def grade_groundedness(ctx: GradeContext, *, max_attempts: int = 3, hard: bool = False) -> JudgeOutcome:
    """A ``groundedness`` check (soft unless ``hard``) when ``expect.groundedness`` is set; not_run
    without a judge."""
    if not ctx.scenario.expect.groundedness:
        return JudgeOutcome([])
    transcript = ctx.transcript
    index = last_agent_message(transcript)
    if ctx.judge is None:
        return JudgeOutcome([not_run("groundedness", "groundedness", hard)])
    if index is None:  # nothing claimed, nothing to ground (no score: that is not 100 %)
        return JudgeOutcome(
            [
                Check(
                    name="groundedness",
                    kind="groundedness",
                    status="pass",
                    hard=hard,
                    reason="the agent sent no message: no claim to ground",
                )
            ]
        )
    calls: list[ModelCall] = []
    asked = await ask_json(
        ctx.judge,
        groundedness_messages(transcript, index),
        Claims,
        max_attempts=max_attempts,
        turn=judge_turn(transcript),
        calls=calls,
        seed=derive_seed(transcript, "groundedness"),
    )
    where = check_at(transcript, index)
    details: dict[str, Any] = {"judge": judge_pin(ctx.judge), "attempts": asked.attempts}
    if asked.answer is None:
        check = Check(
            name="groundedness",
            kind="groundedness",
            status="error",
            hard=hard,
            reason=asked.error or "judge error",
            details=details,
            **where,
        )
        return JudgeOutcome([check], calls)
    claims = asked.answer.claims
    unsupported = [c.claim for c in claims if c.verdict == "unsupported"]
    details.update(
        claims=[c.model_dump() for c in claims],
        unsupported=unsupported,
        supported=len(claims) - len(unsupported),
        total=len(claims),
    )
    if not claims:
        check = Check(
            name="groundedness",
            kind="groundedness",
            status="pass",
            hard=hard,
            score=None,
            reason="the final agent message makes no factual claims",
            details=details,
            **where,
        )
    else:
        score = (len(claims) - len(unsupported)) / len(claims)
        reason = f"{len(claims) - len(unsupported)} of {len(claims)} claims supported by tool results"
        if unsupported:
            reason += f"; unsupported: {one_line(unsupported[0], 120)}" + (
                f" (+{len(unsupported) - 1} more)" if len(unsupported) > 1 else ""
            )
        check = Check(
            name="groundedness",
            kind="groundedness",
            status="fail" if unsupported else "pass",
            hard=hard,
            score=score,
            reason=reason,
            details=details,
            **where,
        )
    return JudgeOutcome([check], calls)


@grader("groundedness", judge=True, kind="groundedness")
def groundedness_grader(
    max_attempts: int = 3, hard: bool = False
) -> Callable[[GradeContext], Awaitable[JudgeOutcome]]:
    """With ``expect.groundedness``: the judge checks the claims of the agent's last message (soft
    unless ``hard``)."""
    at_least_one(max_attempts=max_attempts)

    async def grade(ctx: GradeContext) -> JudgeOutcome:
        return await grade_groundedness(ctx, max_attempts=max_attempts, hard=hard)

    return grade
