"""Shared test fixtures. Keep this small; append, do not rewrite."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM must never fetch prices


@pytest.fixture(autouse=True)
def llm_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Back-off waits cost nothing in tests: each requested sleep is recorded here instead."""
    from simlab.llm import retry

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(retry, "backoff_sleep", fake_sleep)
    return waits
