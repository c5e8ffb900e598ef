"""ADK's ``final_response_match_v2`` through simlab's judge: per invocation, is the agent's final
response semantically equivalent to the reference (worded differently is fine)? The score is the
share of invocations judged equivalent (ADK: judge verdicts valid/invalid, averaged); the check
``adk:final_response_match_v2`` passes when it meets the threshold. Without a judge model it is
not run; an invocation the judge could not answer makes the check an error, never a pass. The
texts go to the judge between nonce-tagged delimiters, as every simlab judge prompt does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from simlab.adk.grader import actual_invocations
from simlab.graders.base import Check, GradeContext
from simlab.graders.judge import REASON_PLACEHOLDER, JudgeOutcome, judge_criterion, not_run
from simlab.graders.judge_prompt import data_rules, delimit, nonce_for
from simlab.graders.registry import grader
from simlab.llm.types import Message
from simlab.transcript import ModelCall, Transcript

NAME = "final_response_match_v2"

SYSTEM = """You compare an agent's final response with a reference response to the same user message.

{rules}

Answer one yes/no question: is the agent's response semantically equivalent to the reference, that is, \
does it give the user the same facts, decisions and outcome (wording, length and politeness may differ)? \
Answer "no" if it contradicts the reference, leaves out something the reference tells the user, or adds \
a claim the reference does not support.

Reply with only a JSON object, no other text:
{{"verdict": "yes" or "no", "reason": "{placeholder}"}}"""


def match_messages(
    transcript: Transcript, index: int, user: str, response: str, reference: str
) -> list[Message]:
    nonce = nonce_for(transcript, f"adk-v2/{index}")
    system = SYSTEM.format(
        rules=data_rules(nonce, ("data", "agent_message")),
        placeholder=REASON_PLACEHOLDER.replace("event #index", "part of the response"),
    )
    body = "\n\n".join(
        [
            delimit("data", f"user message: {user}\nreference response: {reference}", nonce),
            delimit("agent_message", response, nonce),
            "Is the agent's response semantically equivalent to the reference? Reply with the JSON "
            "object only.",
        ]
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


@grader("adk_judge", judge=True, kind="custom")
def adk_judge(
    threshold: float, invocations: list[dict[str, Any]], samples: int = 1
) -> Callable[[GradeContext], Awaitable[JudgeOutcome]]:
    """``final_response_match_v2`` on one trial, against the case's expected invocations."""

    async def grade(ctx: GradeContext) -> JudgeOutcome:
        name = f"adk:{NAME}"
        if ctx.judge is None:
            return JudgeOutcome([not_run(name, "custom", True)])
        calls: list[ModelCall] = []
        actual = actual_invocations(ctx.transcript)
        votes: list[dict[str, Any]] = []
        for i, expected in enumerate(invocations):
            reference = expected.get("final_response") or ""
            response = actual[i].final_response if i < len(actual) else ""
            if i >= len(actual):
                votes.append({"verdict": "no", "reason": "the trial never reached this invocation"})
                continue
            messages = match_messages(ctx.transcript, i, expected.get("user") or "", response, reference)
            verdict, reason, _ = await judge_criterion(
                ctx.judge, ctx.transcript, messages, key=f"adk-v2/{i}", samples=samples, calls=calls
            )
            votes.append({"verdict": verdict, "reason": reason})
        if not votes:
            return JudgeOutcome(
                [not_run(name, "custom", False, why="the case has no expected invocations")], calls
            )
        if any(v["verdict"] is None for v in votes):
            first = next(v for v in votes if v["verdict"] is None)
            return JudgeOutcome(
                [
                    Check(
                        name=name,
                        kind="custom",
                        status="error",
                        reason=f"the judge could not answer: {first['reason']}",
                        details={"invocations": votes},
                    )
                ],
                calls,
            )
        score = sum(v["verdict"] == "yes" for v in votes) / len(votes)
        met = score >= threshold
        return JudgeOutcome(
            [
                Check(
                    name=name,
                    kind="custom",
                    status="pass" if met else "fail",
                    score=score,
                    reason=f"{score:.3f} of {len(votes)} invocations judged equivalent "
                    f"{'meets' if met else 'is below'} the threshold {threshold:g}",
                    details={"threshold": threshold, "invocations": votes},
                )
            ],
            calls,
        )

    return grade
