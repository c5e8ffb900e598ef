"""A written cause for one failure mode: the judge reads the mode's representative trial and the
deterministic evidence, and answers a fault type (``transcript/causes.FAULT_TYPES``) and one
sentence (``simlab triage``; ``simlab calibrate`` asks the very same prompt).

Why these rules:
- The evidence (the mode, its blame, the first faulty step, the failing checks with their reasons)
  is simlab's own, but its text quotes the transcript (a tool's name, a value the agent wrote, a
  rubric judge's reason), so it is fenced as data (``<data id=…>``) like the transcript itself
  (``<transcript id=…>``, ``judge_prompt.py``); the instructions and the taxonomy live in the
  system message.
- The answer is a JSON object validated by pydantic (``TriageAnswer``): a fault type outside the
  taxonomy, a missing or placeholder cause, or prose are malformed and asked again, at most
  ``max_attempts`` times in all (``judge.ask_json``); then the mode is undecided, never guessed.
- A permanent model error (auth, unknown model) is raised: it would fail every mode alike.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from simlab.graders.judge import ask_json, derive_seed, judge_turn, one_line
from simlab.graders.judge_prompt import data_rules, delimit, event_line, nonce_for, transcript_as_data
from simlab.llm.types import ChatModel, Message
from simlab.transcript import ModelCall, TrialRecord
from simlab.transcript.blame import diagnose
from simlab.transcript.causes import FAULT_TYPES, FaultType, ModeCause

__all__ = ["CAUSE_PLACEHOLDER", "TriageAnswer", "ask_cause", "evidence_text", "triage_messages"]

CAUSE_PLACEHOLDER = "one sentence: what went wrong and why, citing the event #index"
MAX_CHECKS = 12  # failing checks shown as evidence; the rest are counted


class TriageAnswer(BaseModel):
    """The judge's answer for one failure mode."""

    model_config = ConfigDict(extra="ignore")
    fault_type: FaultType
    cause: str = Field(min_length=1)

    @field_validator("fault_type", mode="before")
    @classmethod
    def _fold(cls, value: Any) -> Any:  # "Wrong decision", "wrong-decision" → wrong_decision
        return re.sub(r"[\s-]+", "_", value.strip().lower()) if isinstance(value, str) else value

    @field_validator("cause")
    @classmethod
    def _a_real_sentence(cls, value: str) -> str:
        words = " ".join(re.findall(r"[a-z0-9#]+", value.casefold()))
        if not words or "citing the event #index" in value or words == "one sentence":
            raise ValueError("the cause repeats the instructions' placeholder; give the real cause")
        return one_line(value, 400)


TRIAGE_SYSTEM = """You analyse why one conversation between a customer (a simulated user) and a support \
agent that can call tools failed its checks. simlab has already found, by fixed rules, whose fault it is \
(the blame), the first faulty step and the failing checks; they are given as evidence. Read the \
transcript, starting at the first faulty step, and say what went wrong.

{rules}

Classify the failure with exactly one fault type:
{taxonomy}

A blame of "user" is usually user_side_error; a blame of "provider", "tool", "judge" or "lab" is usually \
tool_or_provider_failure; a blame of "agent" is one of the first four.

Reply with only a JSON object, no other text:
{{"fault_type": one of {names}, "cause": "{placeholder}"}}"""


def evidence_text(record: TrialRecord) -> str:
    """The deterministic evidence of a trial that did not pass, as plain lines (to be fenced)."""
    transcript = record.transcript
    fault = diagnose(transcript, record.checks, record.verdict)
    if fault is None:
        raise ValueError(f"trial {record.unit_id} passed: there is no failure to triage")
    lines = [
        f"failure mode: {one_line(fault.mode)}",
        f"blame: {fault.blame}",
        f"verdict: {record.verdict}",
        f"termination: {transcript.termination.reason.value}"
        + (f" ({one_line(transcript.termination.detail, 200)})" if transcript.termination.detail else ""),
    ]
    where = f"turn {fault.turn}" + (f", event #{fault.event}" if fault.event is not None else "")
    lines.append(f"first faulty step: {where}")
    if fault.event is not None:
        step = event_line(fault.event, transcript.events[fault.event], max_result_chars=300)
        if step is not None:
            lines.append(f"  {step}")
    failing = [c for c in record.checks if c.status in ("fail", "error", "not_run")]
    failing.sort(key=lambda c: not c.hard)
    lines.append("failing checks:" if failing else "failing checks: none")
    for check in failing[:MAX_CHECKS]:
        at = f", event #{check.event}" if check.event is not None else ""
        how = f"{check.kind}, {'hard' if check.hard else 'soft'}, {check.status}{at}"
        lines.append(f"- {one_line(check.name, 200)} ({how}): {one_line(check.reason, 300)}")
    if len(failing) > MAX_CHECKS:
        lines.append(f"- … and {len(failing) - MAX_CHECKS} more")
    return "\n".join(lines)


def triage_messages(record: TrialRecord) -> list[Message]:
    """The judge's messages for the failure mode of ``record`` (its representative trial)."""
    transcript = record.transcript
    nonce = nonce_for(transcript, "triage")
    taxonomy = "\n".join(f"- {name}: {text}" for name, text in FAULT_TYPES.items())
    system = TRIAGE_SYSTEM.format(
        rules=data_rules(nonce, ("data", "transcript")),
        taxonomy=taxonomy,
        names=", ".join(f'"{n}"' for n in FAULT_TYPES),
        placeholder=CAUSE_PLACEHOLDER,
    )
    user = (
        f"Evidence:\n{delimit('data', evidence_text(record), nonce)}\n\n"
        f"Transcript:\n{transcript_as_data(transcript, nonce=nonce)}\n\n"
        "What fault type is this failure, and what is its cause? Reply with the JSON object only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def ask_cause(
    judge: ChatModel, record: TrialRecord, *, trials: int = 1, max_attempts: int = 3, calls: list[ModelCall]
) -> ModeCause:
    """Ask the judge for the cause of the failure mode whose representative trial is ``record``;
    every call made is appended to ``calls``."""
    fault = diagnose(record.transcript, record.checks, record.verdict)
    if fault is None:
        raise ValueError(f"trial {record.unit_id} passed: there is no failure to triage")
    asked = await ask_json(
        judge,
        triage_messages(record),
        TriageAnswer,
        max_attempts=max_attempts,
        turn=judge_turn(record.transcript),
        calls=calls,
        seed=derive_seed(record.transcript, "triage"),
    )
    cause = ModeCause(
        mode=fault.mode,
        blame=fault.blame,
        trials=trials,
        representative=record.unit_id,
        attempts=asked.attempts,
    )
    if asked.answer is None:
        cause.undecided = asked.error or "no answer"
    else:
        cause.fault_type, cause.cause = asked.answer.fault_type, asked.answer.cause
    return cause
