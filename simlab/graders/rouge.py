"""ROUGE-1 (``rouge-score``, imported when first used): ``expect.response_match``, and ADK's
response_match_score (``simlab/adk/grader.py``), scored as google-adk 2.13 scores it.

rouge-score's own tokenizer keeps only ``[a-z0-9]``: Russian or Thai replies score 0 and a Chinese
pair can score 1.0 on a lone digit. So the text is tokenized here, by the rule google-adk 2.13's
``response_match_score`` follows (its figures on a table of pairs in many scripts are checked in
``tests/test_rouge_multilingual.py``):

- the text is NFKC-normalised and lowercased;
- a CJK character (CJK unified ideographs, hiragana, katakana, Hangul syllables) is a token of
  its own;
- in scripts written without spaces (Thai, Lao, Khmer, Myanmar) each base character starts a
  token and the combining marks that follow it stay with it (a grapheme cluster);
- elsewhere a run of letters, digits and combining marks is a word; anything else separates;
- an all-ASCII word goes through rouge-score's tokenizer with Porter stemming (``refunds`` →
  ``refund``); any other word is kept as it is.

The F-measure is rouge-score's, on these tokens.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from simlab.graders.base import Check, GradeContext, check_at, last_agent_message
from simlab.graders.registry import grader

__all__ = ["RougeMissing", "response_match_grader", "rouge1_f", "rouge_tokens", "scorer"]

# (first, last) code points
_SPLIT_EACH = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_CLUSTERED = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


class RougeMissing(RuntimeError):
    """rouge-score is not installed."""


def _within(char: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in ranges)


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def _words(text: str) -> list[str]:
    """The text cut into words, CJK characters and clusters, before any stemming."""
    pieces: list[str] = []
    for char in unicodedata.normalize("NFKC", text).lower():
        if _within(char, _SPLIT_EACH):
            pieces += [" ", char, " "]
        elif _within(char, _CLUSTERED):
            pieces += [char] if _is_mark(char) else [" ", char]
        else:
            pieces.append(char if char.isalnum() or _is_mark(char) else " ")
    return "".join(pieces).split()


@lru_cache(maxsize=1)
def _ascii_tokenizer() -> Any:
    try:
        from rouge_score import tokenizers
    except ImportError as exc:
        raise RougeMissing(
            "ROUGE-1 needs the 'rouge' extra (rouge-score), which is not installed: "
            "pip install 'simlab[rouge]'"
        ) from exc
    return tokenizers.DefaultTokenizer(use_stemmer=True)


@lru_cache(maxsize=4096)
def _ascii_tokens(word: str) -> tuple[str, ...]:
    return tuple(_ascii_tokenizer().tokenize(word))


def rouge_tokens(text: str) -> list[str]:
    """The tokens ROUGE-1 counts in ``text`` (see the module's docstring)."""
    tokens: list[str] = []
    for word in _words(text):
        tokens.extend(_ascii_tokens(word) if word.isascii() else (word,))
    return tokens


class _Tokenizer:
    """rouge-score's tokenizer interface over ``rouge_tokens``."""

    def tokenize(self, text: str) -> list[str]:
        return rouge_tokens(text)


@lru_cache(maxsize=1)
def scorer() -> Any:
    """The one ``RougeScorer`` (ROUGE-1 on ``rouge_tokens``), built once: building one per pair costs
    more than scoring it."""
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:
        raise RougeMissing(
            "ROUGE-1 needs the 'rouge' extra (rouge-score), which is not installed: "
            "pip install 'simlab[rouge]'"
        ) from exc
    return rouge_scorer.RougeScorer(["rouge1"], tokenizer=_Tokenizer())


def rouge1_f(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``."""
    return float(scorer().score(reference, candidate)["rouge1"].fmeasure)


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
            return [
                Check(name="response_match", kind="custom", status="error", hard=spec.hard, reason=str(exc))
            ]
        met = score >= spec.threshold
        where = check_at(ctx.transcript, last) if last is not None and not met else {}
        return [
            Check(
                name="response_match",
                kind="custom",
                status="pass" if met else "fail",
                hard=spec.hard,
                score=score,
                reason=f"ROUGE-1 F {score:.3f} against the reference "
                f"{'meets' if met else 'is below'} {spec.threshold:g}"
                + ("" if last is not None else " (the agent wrote no message)"),
                details={"threshold": spec.threshold},
                **where,
            )
        ]

    return grade
