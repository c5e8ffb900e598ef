"""ROUGE-1 (``rouge-score``, imported when first used): ``expect.response_match``, and ADK's
response_match_score (``simlab/adk/grader.py``) with ADK's settings: Porter stemming only when both
texts are mostly Latin script."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from simlab.graders.base import Check, GradeContext, check_at, last_agent_message
from simlab.graders.registry import grader

__all__ = ["RougeMissing", "response_match_grader", "rouge1_f", "scorer"]


class RougeMissing(RuntimeError):
    """rouge-score is not installed."""


def _latin(text: str) -> bool:
    letters = [c for c in text if unicodedata.category(c).startswith("L")]
    return not letters or sum("LATIN" in unicodedata.name(c, "") for c in letters) / len(letters) > 0.5


@lru_cache(maxsize=8)
def scorer(rouge_types: tuple[str, ...], use_stemmer: bool) -> Any:
    """One ``RougeScorer`` per set of ROUGE types and stemming, built once: building one loads its
    tokenizer and stemmer, which costs more than scoring a pair of answers."""
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:
        raise RougeMissing("ROUGE-1 needs the 'rouge' extra (rouge-score), which is not installed: "
                           "pip install 'simlab[rouge]'") from exc
    return rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=use_stemmer)


def rouge1_f(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``."""
    found = scorer(("rouge1",), _latin(candidate) and _latin(reference))
    return float(found.score(reference, candidate)["rouge1"].fmeasure)


@grader("response_match", kind="custom")
def response_match_grader() -> Callable[[GradeContext], list[Check]]:
    """``expect.response_match``: the agent's last message against the reference, by ROUGE-1."""

    def grade(ctx: GradeContext) -> list[Check]:
        spec = ctx.scenario.expect.response_match
        if spec is None:
            return []
        last = last_agent_message(ctx.transcript)
        text = ctx.transcript.events[last].text if last is not None else ""  # type: ignore[union-attr]
        try:
            score = rouge1_f(text, spec.reference)
        except RougeMissing as exc:
            return [Check(name="response_match", kind="custom", status="error", hard=spec.hard, reason=str(exc))]
        met = score >= spec.threshold
        where = check_at(ctx.transcript, last) if last is not None and not met else {}
        return [Check(name="response_match", kind="custom", status="pass" if met else "fail", hard=spec.hard,
                      score=score, reason=f"ROUGE-1 F {score:.3f} against the reference "
                                          f"{'meets' if met else 'is below'} {spec.threshold:g}"
                                          + ("" if last is not None else " (the agent wrote no message)"),
                      details={"threshold": spec.threshold}, **where)]

    return grade
