"""Model limits hold for the run, not per process: the workers of one machine divide its part of
``model_concurrency`` and ``model_rpm``, and the shards of ``--shard i/N`` each keep 1/N of the
run's limits (``model_limits_scope: run``, the default) or all of them (``machine``). Counted at a
real server on 127.0.0.1 that every worker process calls over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.llm.limits import ModelLimiter, share
from tests.fixtures.hostile.helpers import read_lines
from tests.strict_server import StrictServer
from tests.support import write_project
from tests.test_real_server import AGENT, KEY, agent_reply


def test_parts_of_a_limit_add_up_to_it():
    assert [share(8, 3, i) for i in range(3)] == [3, 3, 2]
    assert [share(1, 2, i) for i in range(2)] == [1, 1]  # a part is never 0: smallest_cap tells
    parts = []
    for index in range(3):
        limiter = ModelLimiter({"a": 7, "b": 3}, rpm={"a": 100}, default=5, default_rpm=10)
        limiter.divide(3, index)
        parts.append(limiter)
    assert sum(p.caps["a"] for p in parts) == 7 and sum(p.caps["b"] for p in parts) == 3
    assert sum(p.rpm["a"] for p in parts) == pytest.approx(100)  # a rate is divided exactly
    assert sum(p.default or 0 for p in parts) == 5
    assert sum(p.default_rpm or 0 for p in parts) == pytest.approx(10)
    assert parts[0].smallest_cap() == ("b", 1)


def test_a_fraction_of_a_request_per_minute_still_lets_one_through():
    clock = [0.0]
    limiter = ModelLimiter(rpm={"m": 1}, clock=lambda: clock[0])
    limiter.divide(4, 0)  # 0.25 requests a minute: one now, the next in four minutes
    bucket_wait = []

    async def two_calls() -> None:
        for _ in range(2):
            async with limiter.slot("m") as queued:
                bucket_wait.append(queued)

    async def sleep(seconds: float) -> None:
        clock[0] += seconds

    limiter.sleep = sleep
    asyncio.run(two_calls())
    assert bucket_wait[0] == 0 and bucket_wait[1] == pytest.approx(240)


def project(root: Path, base: str, extra: str) -> None:
    write_project(root, scenarios=2, trials=6)
    (root / "simlab.yaml").write_text(
        f"agent:\n  model: {AGENT}\n  api_base: {base}\n  api_key_env: LOCAL_KEY\n"
        f"simulator: rules\ntrials: 6\nconcurrency: 4\nmax_retries: 0\n{extra}")


def played(root: Path, run_id: str) -> int:
    return len(read_lines(root / "transcripts" / run_id / "trials.jsonl"))


def peak_of(tmp_path, monkeypatch, extra: str, *args: str, gather_s: float = 0.3) -> int:
    """The most agent calls in flight at once at the server; it holds every call until three are in
    flight (or ``gather_s`` passed), so a run that lets three through reaches three."""
    monkeypatch.setenv("LOCAL_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    with StrictServer({AGENT.split("/", 1)[1]: agent_reply}, gather=3, gather_s=gather_s) as server:
        project(tmp_path, server.base, extra)
        assert main(["run", "--run-id", "r", "--no-progress", *args]) == 0
    assert played(tmp_path, "r") > 0
    return server.peak


def test_workers_divide_the_cap_of_their_machine(tmp_path, monkeypatch, capsys):
    assert peak_of(tmp_path, monkeypatch, f"model_concurrency: {{{AGENT}: 2}}\n", "--workers", "2") <= 2
    assert played(tmp_path, "r") == 12


def test_no_more_workers_than_the_tightest_cap(tmp_path, monkeypatch, capsys):
    assert peak_of(tmp_path, monkeypatch, f"model_concurrency: {{{AGENT}: 1}}\n", "--workers", "2") == 1
    assert f"note: 1 workers, not 2: model_concurrency of {AGENT} is 1" in capsys.readouterr().err


def test_a_shard_keeps_its_part_of_the_run_cap(tmp_path, monkeypatch):
    assert peak_of(tmp_path, monkeypatch, f"model_concurrency: {{{AGENT}: 4}}\n", "--shard", "1/2") <= 2


def test_the_control_a_machine_scope_keeps_the_whole_cap_per_shard(tmp_path, monkeypatch):
    extra = f"model_concurrency: {{{AGENT}: 4}}\nmodel_limits_scope: machine\n"
    assert peak_of(tmp_path, monkeypatch, extra, "--shard", "1/2", gather_s=30) == 3
