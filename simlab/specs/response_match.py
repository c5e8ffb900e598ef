"""``expect.response_match``: the agent's last reply against a reference text, by ROUGE-1."""

from __future__ import annotations

from pydantic import Field

from simlab.specs.base import SpecModel


class ResponseMatch(SpecModel):
    """ROUGE-1 F-measure of the agent's final message against ``reference`` (ADK's
    response_match_score). Word overlap punishes correct paraphrases and rewards fluent wrong
    answers that reuse the reference's words: a smoke test, not a judge of meaning."""

    reference: str = Field(min_length=1, description="The reference reply.")
    threshold: float = Field(0.8, ge=0, le=1, description="The F-measure it must reach (ADK's default 0.8).")
    hard: bool = Field(True, description="Hard: below the threshold fails the trial; soft: only scores.")
