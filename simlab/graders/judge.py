"""Rubric judges: an LLM answers one yes/no question per ``expect.rubric`` item.

Why these rules:
- The answer must be a JSON object validated by pydantic (``{"verdict": "yes"|"no", "reason": …}``;
  a ```json fence around it is tolerated, prose around it is not). A malformed answer is retried
  up to ``max_attempts`` times, telling the judge what was wrong; after that the check is an
  ``error`` (judge error), never a pass.
- The transcript reaches the judge as delimited data (``judge_prompt.py``); the instructions and the
  criterion (written by the scenario author, so trusted) live in the system message.
- ``samples > 1`` asks the same question several times (different seeds) and takes a majority
  over *all* samples asked: ``yes`` needs more than half of them, ``no`` needs at least half (a
  tie is ``no``: a criterion holds only when most samples say so); otherwise, when errors leave
  neither, the check is an ``error``. Votes are kept in ``details["votes"]``.
- No judge model configured: every item is ``not_run`` ("no judge model configured").
- A judge ``ModelError`` makes the check an ``error``; a permanent one (auth, unknown model, bad
  request) is re-raised so the run stops instead of blaming every trial.
- Every judge call (also failed ones) becomes a ``ModelCall`` with role ``judge`` in
  ``JudgeOutcome.calls``; the caller appends them to the transcript so usage and cost are counted.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from simlab.graders.base import GradeContext, check_at
from simlab.graders.judge_prompt import data_rules, nonce_for, transcript_as_data
from simlab.graders.registry import grader
from simlab.llm.types import ChatModel, Message, ModelError
from simlab.transcript import AgentMessage, Check, InvalidCall, ModelCall, ToolCall, Transcript, UserMessage
from simlab.transcript.checks import CheckStatus
from simlab.transcript.model import Role

__all__ = [
    "NO_JUDGE",
    "JudgeOutcome",
    "Malformed",
    "YesNo",
    "ask_json",
    "at_least_one",
    "cited_event",
    "grade_rubric",
    "judge_criterion",
    "judge_pin",
    "majority",
    "not_run",
    "parse_answer",
    "rubric_grader",
]

NO_JUDGE = "no judge model configured"
AGENT_EVENTS = (AgentMessage, ToolCall, InvalidCall)  # what the agent did, as a judge may cite it
_CITED = re.compile(r"#(\d{1,9})\b")  # "#7", as the transcript's lines are numbered for a judge
M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n?(.*?)\n?[ \t]*```$", re.DOTALL | re.IGNORECASE)


@dataclass
class JudgeOutcome:
    """What an async judge grader returns: its checks and every judge call it made."""

    checks: list[Check]
    calls: list[ModelCall] = field(default_factory=list)


REASON_PLACEHOLDER = "one sentence, citing the event #index that decides it"


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9#]+", text.casefold()))


class YesNo(BaseModel):
    """A judge's answer to one yes/no question. A reason that only repeats the prompt's placeholder
    (weak models copy the example object) says nothing: it is malformed, and asked again."""

    model_config = ConfigDict(extra="ignore")
    verdict: Literal["yes", "no"]
    reason: str = Field(min_length=1)

    @field_validator("verdict", mode="before")
    @classmethod
    def _fold(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("reason")
    @classmethod
    def _not_the_placeholder(cls, value: str) -> str:
        if (
            _words(value) in (_words(REASON_PLACEHOLDER), "one sentence", "")
            or "citing the event #index" in value
        ):
            raise ValueError("the reason repeats the instructions' placeholder; give the real reason")
        return value


class Malformed(ValueError):
    """The judge's answer is not the JSON object asked for; the message says why, in one line."""


@dataclass
class Asked(Generic[M]):
    answer: M | None
    attempts: int
    error: str | None = None  # why there is no answer: malformed, or a model error


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_answer(text: str | None, schema: type[M]) -> M:
    """``text`` as ``schema``: a JSON object, optionally in a ```json fence; anything else is Malformed."""
    body = (text or "").strip()
    if not body:
        raise Malformed("the answer was empty")
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise Malformed(f"not a JSON object ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise Malformed(f"expected a JSON object, got {type(data).__name__}")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors())
        raise Malformed(one_line(problems, 200)) from None


def judge_turn(transcript: Transcript) -> int:
    """The turn judge calls are filed under: the transcript's last one."""
    return max((event.turn for event in transcript.events), default=transcript.termination.turn)


def judge_pin(judge: ChatModel) -> dict[str, Any]:
    try:
        return judge.pin().model_dump(mode="json")
    except Exception:  # a minimal double without pin(): still say which model judged
        return {"kind": "llm", "ref": getattr(judge, "model", "?"), "settings": {}}


def derive_seed(transcript: Transcript, *parts: Any) -> int:
    key = "/".join(map(str, ("simlab-judge", transcript.seed, *parts)))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") >> 1


async def ask_json(
    judge: ChatModel,
    messages: list[Message],
    schema: type[M],
    *,
    max_attempts: int,
    turn: int,
    calls: list[ModelCall],
    seed: int | None = None,
    role: Role = "judge",
) -> Asked[M]:
    """Ask until the answer parses as ``schema`` or ``max_attempts`` are used; record every call
    under ``role`` (``judge``; ``author`` for ``simlab generate``'s drafts)."""
    messages = list(messages)
    why = "no attempt made"
    for attempt in range(1, max(1, max_attempts) + 1):
        try:
            result = await judge.chat(messages, seed=seed)
        except ModelError as exc:
            calls.append(
                ModelCall(
                    turn=turn,
                    role=role,
                    model=exc.model or judge.model,
                    usage=exc.usage,
                    error=f"{exc.kind.value}: {exc}",
                )
            )
            if exc.kind.permanent:
                raise
            return Asked(None, attempt, f"{role} model error: {one_line(exc.describe())}")
        calls.append(ModelCall(turn=turn, role=role, model=judge.model, usage=result.usage))
        try:
            return Asked(parse_answer(result.text, schema), attempt)
        except Malformed as exc:
            why = str(exc)
        messages += [
            {"role": "assistant", "content": result.text or ""},
            {
                "role": "user",
                "content": f"That answer was not valid: {why}. Reply again with only the JSON "
                "object described in the instructions, nothing else.",
            },
        ]
    return Asked(
        None, max(1, max_attempts), f"malformed {role} answer after {max(1, max_attempts)} attempts: {why}"
    )


def majority(votes: list[str | None], samples: int) -> str | None:
    """yes if more than half of ``samples`` say yes; no if at least half say no (ties: no); else None."""
    yes, no = votes.count("yes"), votes.count("no")
    if yes * 2 > samples:
        return "yes"
    if no * 2 >= samples:
        return "no"
    return None


RUBRIC_SYSTEM = """You are a careful, strict evaluator of a conversation between a customer \
(a simulated user) \
and a support agent that can call tools.

{rules}

Answer one yes/no question: does the conversation satisfy the criterion below? Answer "yes" only if the \
transcript clearly shows that it holds; if it is violated, or the evidence is missing, answer "no".

Criterion: {criterion}
{scope}{policy}
Reply with only a JSON object, no other text:
{{"verdict": "yes" or "no", "reason": "{placeholder}"}}"""


TURN_SCOPE = (
    "The criterion is about turn {turn} only: the user's message of turn {turn} and the agent's answer "
    "to it. The transcript ends with that turn; the turns before it are given for context. Judge turn "
    "{turn} against the criterion.\n"
)


def turn_end(transcript: Transcript, turn: int) -> int | None:
    """The index just past the last event of ``turn``, or None when the trial never reached it (no
    user message of that turn)."""
    if not any(isinstance(e, UserMessage) and e.turn == turn for e in transcript.events):
        return None
    return next((i for i, e in enumerate(transcript.events) if e.turn > turn), len(transcript.events))


def rubric_messages(
    transcript: Transcript, criterion: str, policy: str = "", *, turn: int | None = None
) -> list[Message]:
    """The judge's messages for one rubric item; with ``turn``, the transcript up to the end of that
    turn and an instruction to judge that turn."""
    nonce = nonce_for(transcript, "rubric")
    policy_text = (
        f"\nThe policy the agent was given (trusted, for reference):\n{policy.strip()[:4000]}\n"
        if policy.strip()
        else ""
    )
    scope, end = "", None
    if turn is not None:
        scope, end = TURN_SCOPE.format(turn=turn), turn_end(transcript, turn)
    system = RUBRIC_SYSTEM.format(
        rules=data_rules(nonce),
        criterion=criterion,
        policy=policy_text,
        scope=scope,
        placeholder=REASON_PLACEHOLDER,
    )
    asked = "turn " + str(turn) + " of the conversation" if turn is not None else "the conversation"
    user = (
        f"{transcript_as_data(transcript, nonce=nonce, end=end)}\n\nDoes {asked} above satisfy the "
        "criterion given in your instructions? Reply with the JSON object only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def judge_criterion(
    judge: ChatModel,
    transcript: Transcript,
    messages: list[Message],
    *,
    key: str,
    samples: int = 1,
    max_attempts: int = 3,
    calls: list[ModelCall],
) -> tuple[str | None, str, dict[str, Any]]:
    """Ask one yes/no question ``samples`` times: (majority verdict or None, reason, details)."""
    samples = max(1, samples)
    turn = judge_turn(transcript)
    votes: list[dict[str, Any]] = []
    for sample in range(samples):
        seed = derive_seed(transcript, key, sample)
        asked = await ask_json(
            judge, messages, YesNo, max_attempts=max_attempts, turn=turn, calls=calls, seed=seed
        )
        if asked.answer is None:
            votes.append({"verdict": None, "error": asked.error, "attempts": asked.attempts})
        else:
            votes.append(
                {
                    "verdict": asked.answer.verdict,
                    "reason": one_line(asked.answer.reason),
                    "attempts": asked.attempts,
                }
            )
    verdict = majority([v["verdict"] for v in votes], samples)
    details: dict[str, Any] = {
        "judge": judge_pin(judge),
        "samples": samples,
        "votes": votes,
        "attempts": sum(v["attempts"] for v in votes),
    }
    if verdict is None:
        errors = [v["error"] for v in votes if v["verdict"] is None]
        reason = (
            errors[0]
            if samples == 1
            else f"no majority: {len(errors)} of {samples} samples failed ({errors[0]})"
        )
    else:
        agreeing = [v for v in votes if v["verdict"] == verdict]
        tally = "" if samples == 1 else f" ({len(agreeing)} of {samples} samples)"
        reason = f"judge: {verdict}{tally} — {agreeing[0]['reason'] if agreeing else 'tie counts as no'}"
    return verdict, one_line(reason), details


def not_run(name: str, kind: Any, hard: bool, why: str = NO_JUDGE, **details: Any) -> Check:
    return Check(name=name, kind=kind, status="not_run", hard=hard, reason=why, details=details)


def _soft_score(items: list[Check]) -> Check:
    decided = [c for c in items if c.status in ("pass", "fail")]
    base: dict[str, Any] = {"items": {c.name: c.status for c in items}}
    if len(decided) < len(items):
        undecided = [c for c in items if c not in decided]
        status: CheckStatus = "error" if any(c.status == "error" for c in undecided) else "not_run"
        partial = sum(c.status == "pass" for c in decided) / len(decided) if decided else None
        reason = (
            undecided[0].reason
            if not decided and len({c.reason for c in undecided}) == 1
            else f"{len(undecided)} of {len(items)} soft rubric items were not decided; no score"
        )
        return Check(
            name="rubric_score",
            kind="rubric",
            status=status,
            hard=False,
            reason=reason,
            details={**base, "partial_score": partial},
        )
    score = sum(c.status == "pass" for c in decided) / len(decided)
    return Check(
        name="rubric_score",
        kind="rubric",
        status="pass" if score == 1 else "fail",
        hard=False,
        score=score,
        reason=f"{sum(c.status == 'pass' for c in decided)} of {len(decided)} soft rubric items hold",
        details=base,
    )


async def grade_rubric(ctx: GradeContext, *, samples: int = 1, max_attempts: int = 3) -> JudgeOutcome:
    """One check ``rubric:<id>`` per rubric item, plus ``rubric_score`` over the soft items."""
    items = ctx.scenario.expect.rubric
    if not items:
        return JudgeOutcome([])
    checks: list[Check] = []
    calls: list[ModelCall] = []
    for item in items:
        name = f"rubric:{item.id}"
        scope: dict[str, Any] = {"turn": item.turn} if item.turn is not None else {}
        if item.turn is not None and turn_end(ctx.transcript, item.turn) is None:
            checks.append(
                Check(
                    name=name,
                    kind="rubric",
                    status="fail",
                    hard=item.hard,
                    score=0.0,
                    reason=f"the conversation ended before turn {item.turn}, which this item judges",
                    details={"question": item.text, **scope},
                )
            )
            continue
        if ctx.judge is None:
            checks.append(not_run(name, "rubric", item.hard, question=item.text, **scope))
            continue
        messages = rubric_messages(
            ctx.transcript, item.text, getattr(ctx.domain, "policy", "") or "", turn=item.turn
        )
        verdict, reason, details = await judge_criterion(
            ctx.judge,
            ctx.transcript,
            messages,
            key=f"rubric/{item.id}",
            samples=samples,
            max_attempts=max_attempts,
            calls=calls,
        )
        status: CheckStatus = "error" if verdict is None else "pass" if verdict == "yes" else "fail"
        score = None if verdict is None else float(verdict == "yes")
        place = cited_event(ctx.transcript, reason, AGENT_EVENTS) if status == "fail" else None
        checks.append(
            Check(
                name=name,
                kind="rubric",
                status=status,
                hard=item.hard,
                score=score,
                reason=reason,
                details={"question": item.text, **scope, **details},
                **check_at(ctx.transcript, place),
            )
        )
    soft = [c for c, item in zip(checks, items) if not item.hard]
    if soft:
        checks.append(_soft_score(soft))
    return JudgeOutcome(checks, calls)


def cited_event(transcript: Transcript, reason: str | None, kinds: tuple[type, ...]) -> int | None:
    """The earliest event of ``kinds`` that a judge's reason cites by its ``#index``, or None (none
    cited, or none of those kinds): where a failing answer points, so that the verdict's precedence
    can tell what came first (an unplaced check counts as the whole conversation's)."""
    cited = (int(n) for n in _CITED.findall(reason or ""))
    events = transcript.events
    return min((i for i in cited if i < len(events) and isinstance(events[i], kinds)), default=None)


def at_least_one(**counts: int) -> None:
    for name, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")


@grader("rubric", judge=True, kind="rubric")
def rubric_grader(
    samples: int = 1, max_attempts: int = 3
) -> Callable[[GradeContext], Awaitable[JudgeOutcome]]:
    """One yes/no question to the judge per ``expect.rubric`` item; ``samples`` > 1 takes a majority."""
    at_least_one(samples=samples, max_attempts=max_attempts)

    async def grade(ctx: GradeContext) -> JudgeOutcome:
        return await grade_rubric(ctx, samples=samples, max_attempts=max_attempts)

    return grade
