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


@pytest.fixture
def virtual_time():
    """Every ``asyncio.run`` of the test runs on a loop whose clock only moves when nothing can run
    (``tests/virtual_time.py``): timeouts then depend on what waits, never on the machine's speed."""
    import asyncio

    from tests.virtual_time import VirtualTimePolicy

    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(VirtualTimePolicy())
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(previous)


@pytest.fixture
def tool_timeouts_without_a_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A domain tool times out exactly when it is the one that hangs (``helpers.spin``), never
    because a loaded machine ran a healthy tool past its ``tool_timeout_s``."""
    import simlab.env.domain
    from tests.fixtures.hostile import helpers

    monkeypatch.setattr(simlab.env.domain, "wait_for_tool", helpers.wait_for_tool_without_a_clock)
    helpers.SPINNING.clear()


@pytest.fixture
def demo_project(tmp_path, monkeypatch):
    """A copy of the demo project (scenarios, personas, examples, suites, simlab.yaml), as cwd."""
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    for name in ("scenarios", "personas", "examples", "suites"):
        shutil.copytree(repo / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(repo / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path
