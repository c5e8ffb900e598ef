"""Faults from providers, through `simlab run` and the real LiteLLM path (the fault-injecting fake).

Transient faults are retried and recorded; permanent ones stop the run with exit 3; context window
ends a trial with its own reason; malformed replies are recorded faithfully; hangs are cut off.
"""

from __future__ import annotations

import json
import re

import pytest

from simlab.cli.main import main
from simlab.llm.fakes import unregister_fake
from simlab.llm.faults import (
    MALFORMED,
    PERMANENT,
    TRANSIENT,
    UNKNOWN_TOOL_NAME,
    Fault,
    FaultPlan,
    FaultyModel,
)
from simlab.runner.store import RunStore
from tests.fixtures.hostile.helpers import agent_reply, judge_reply, read_lines, user_reply, write_llm_project


@pytest.fixture
def fakes():
    names: list[str] = []

    def make(name: str, reply, plan: FaultPlan) -> tuple[str, FaultyModel]:
        model = FaultyModel(reply, plan)
        names.append(name)
        return model.register(name), model

    yield make
    for name in names:
        unregister_fake(name)


def model_calls(records: list[dict]) -> list[dict]:
    return [e for r in records for e in r["transcript"]["events"] if e["type"] == "model_call"]


def test_thirty_percent_transient_faults_complete_every_trial(tmp_path, monkeypatch, capsys, fakes, llm_sleeps):
    agent, agent_faults = fakes("t-agent", agent_reply, FaultPlan.spread(0.3, TRANSIENT, seed=3, retry_after_s=2))
    user, user_faults = fakes("t-user", user_reply, FaultPlan.spread(0.3, TRANSIENT, seed=4, retry_after_s=2))
    write_llm_project(tmp_path, agent=agent, scenarios=2, trials=20, success_phrases=False)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "t", "--no-progress", "--simulator", user, "--allow-same-family"]) == 0

    records = read_lines(tmp_path / "transcripts/t/trials.jsonl")
    assert len(records) == 40
    assert {r["transcript"]["termination"]["reason"] for r in records} == {"goal_reached"}
    assert {r["verdict"] for r in records} == {"pass"}
    injected = agent_faults.log.count(TRANSIENT) + user_faults.log.count(TRANSIENT)
    attempts = agent_faults.log.attempts + user_faults.log.attempts
    assert 0.2 < injected / attempts < 0.4
    assert all(agent_faults.log.injected[f] + user_faults.log.injected[f] for f in TRANSIENT), "every kind seen"
    calls = model_calls(records)
    assert all(c["error"] is None for c in calls)
    assert sum(c["usage"]["retries"] for c in calls) == injected  # each retry is in the call's usage
    waited = sum(c["usage"]["retry_wait_s"] for c in calls)
    assert waited == pytest.approx(sum(llm_sleeps)) and waited > 0
    retry_after = agent_faults.log.injected[Fault.RATE_LIMIT_RETRY_AFTER] + user_faults.log.injected[
        Fault.RATE_LIMIT_RETRY_AFTER]
    assert llm_sleeps.count(2.0) >= retry_after  # Retry-After honoured
    out = capsys.readouterr().out
    shown = re.search(r"retries (\d+) \(([\d.]+)s waiting\)", out)
    assert shown and int(shown.group(1)) == injected and float(shown.group(2)) == pytest.approx(waited, abs=0.06)
    assert main(["report", "t"]) == 0  # the stored run tells the same story
    assert f"retries {injected} (" in capsys.readouterr().out


ROLES = ["agent", "simulator", "judge"]


@pytest.mark.parametrize("fault", PERMANENT)
@pytest.mark.parametrize("role", ROLES)
def test_permanent_failure_stops_the_run_with_exit_3(tmp_path, monkeypatch, capsys, fakes, role, fault):
    bad = FaultPlan({fault: 0.15}, seed=11)
    fine = FaultPlan({})
    agent, agent_faults = fakes("p-agent", agent_reply, bad if role == "agent" else fine)
    user, user_faults = fakes("p-user", user_reply, bad if role == "simulator" else fine)
    judge, judge_faults = fakes("p-judge", judge_reply, bad if role == "judge" else fine)
    write_llm_project(tmp_path, agent=agent, scenarios=1, trials=30, concurrency=2, rubric=True,
                      success_phrases=False)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--run-id", "p", "--no-progress", "--simulator", user, "--judge", judge,
                 "--allow-same-family"])
    assert code == 3
    log = {"agent": agent_faults, "simulator": user_faults, "judge": judge_faults}[role].log
    assert log.injected[fault] >= 1
    err = capsys.readouterr().err
    model = {"agent": agent, "simulator": user, "judge": judge}[role]
    kind = {Fault.AUTH: "auth", Fault.FORBIDDEN: "auth", Fault.NOT_FOUND: "not_found",
            Fault.BAD_REQUEST: "bad_request"}[fault]
    assert err.count("run stopped") == 1 and f"{role} model {model}: {kind}" in err
    assert "Traceback" not in err
    path = tmp_path / "transcripts/p/trials.jsonl"
    records = read_lines(path) if path.exists() else []
    assert 0 < len(records) < 30  # trials finished before the refusal are kept; the run stopped early
    for record in records:  # nothing recorded is blamed on the provider's refusal
        assert record["verdict"] == "pass"
        assert not [e for e in record["transcript"]["events"] if e["type"] == "error"]


def test_context_window_ends_the_trial_with_its_own_reason(tmp_path, monkeypatch, fakes):
    agent, faults = fakes("cw-agent", agent_reply, FaultPlan({Fault.CONTEXT_WINDOW: 0.3}, seed=5))
    write_llm_project(tmp_path, agent=agent, scenarios=1, trials=20)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "cw", "--no-progress"]) == 0
    records = read_lines(tmp_path / "transcripts/cw/trials.jsonl")
    assert len(records) == 20
    ended = [r for r in records if r["transcript"]["termination"]["reason"] == "context_window"]
    assert len(ended) == faults.log.injected[Fault.CONTEXT_WINDOW] >= 2
    for record in ended:
        failed = [c for c in model_calls([record]) if c["error"]]
        assert len(failed) == 1 and failed[0]["error"].startswith("context_window")
        assert failed[0]["usage"]["retries"] == 0  # not a retry loop
        assert record["verdict"] != "error"
    retried = [(key, n) for key, n, fault in faults.log.events if n > 0]
    assert not retried  # no request was ever sent twice
    assert {r["transcript"]["termination"]["reason"] for r in records} == {"context_window", "goal_reached"}


def test_malformed_replies_are_recorded_faithfully(tmp_path, monkeypatch, capsys, fakes):
    seen_tool_messages: list[str] = []

    def agent(messages, tools=None):
        if messages[-1]["role"] == "tool":
            seen_tool_messages.append(messages[-1]["content"])
        return agent_reply(messages, tools)

    model, faults = fakes("m-agent", agent, FaultPlan.spread(0.3, MALFORMED, seed=3))
    write_llm_project(tmp_path, agent=model, scenarios=2, trials=20, success_phrases=False)
    monkeypatch.chdir(tmp_path)
    user, _ = fakes("m-user", user_reply, FaultPlan({}))
    assert main(["run", "--run-id", "m", "--no-progress", "--simulator", user, "--allow-same-family"]) == 0
    assert all(faults.log.injected[f] for f in MALFORMED)

    path = tmp_path / "transcripts/m/trials.jsonl"
    path.read_bytes().decode("utf-8")  # strict UTF-8 throughout
    records = read_lines(path)
    assert len(records) == 40
    events = [e for r in records for e in r["transcript"]["events"]]
    invalid = [e for e in events if e["type"] == "invalid_call"]
    not_json = [e for e in invalid if e["reason"].startswith("arguments are not valid JSON")]
    unknown = [e for e in invalid if e["reason"] == f"unknown tool {UNKNOWN_TOOL_NAME!r}"]
    assert len(not_json) == faults.log.injected[Fault.NON_JSON_ARGS]
    assert len(unknown) == faults.log.injected[Fault.UNKNOWN_TOOL]
    for record in records:  # every invalid call got an error result, and never ran
        trial = record["transcript"]["events"]
        results = {e["call_id"]: e for e in trial if e["type"] == "tool_result"}
        assert all(not results[e["call_id"]]["ok"] for e in trial if e["type"] == "invalid_call")
    assert sum('"error"' in m for m in seen_tool_messages) >= len(invalid)  # and the agent was told
    texts = [e["text"] for e in events if e["type"] == "agent"]
    assert texts.count("") >= faults.log.injected[Fault.EMPTY]
    assert sum(len(t) >= 1_000_000 for t in texts) == faults.log.injected[Fault.HUGE]
    assert sum("\x00" in t for t in texts) >= faults.log.injected[Fault.NUL_TEXT]
    assert sum("\ufffd" in t for t in texts) == faults.log.injected[Fault.INVALID_UTF8]

    reloaded = {r.unit_id: r for r in RunStore(path.parent).records()}  # the file reloads as it was written
    assert [e.text for r in reloaded.values() for e in r.transcript.events if e.type == "agent"] == texts
    assert main(["report", "m", "--format", "markdown"]) == 0


def test_hung_model_calls_are_cut_off_and_retried(tmp_path, monkeypatch, fakes, virtual_time):
    """On a virtual clock (tests/virtual_time.py): a healthy call takes no time however slow the
    machine, so only the hung ones reach the 0.05 s cut-off."""
    agent, faults = fakes("h-agent", agent_reply, FaultPlan({Fault.HANG: 0.3}, seed=8, max_consecutive=1))
    write_llm_project(tmp_path, agent=agent, scenarios=1, trials=12, extra="call_timeout_s: 0.05\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "h", "--no-progress"]) == 0
    records = read_lines(tmp_path / "transcripts/h/trials.jsonl")
    assert {r["transcript"]["termination"]["reason"] for r in records} == {"goal_reached"}
    assert sum(c["usage"]["retries"] for c in model_calls(records)) == faults.log.injected[Fault.HANG] >= 2


def test_a_model_that_always_hangs_hits_the_trial_wall_clock(tmp_path, monkeypatch, fakes, virtual_time):
    agent, _ = fakes("hh-agent", agent_reply, FaultPlan({Fault.HANG: 1.0}, max_consecutive=1000))
    write_llm_project(tmp_path, agent=agent, scenarios=1, trials=3,
                      extra="call_timeout_s: 30\nlimits: {max_seconds: 0.2}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "hh", "--no-progress"]) == 0
    records = read_lines(tmp_path / "transcripts/hh/trials.jsonl")
    assert len(records) == 3
    for record in records:
        termination = record["transcript"]["termination"]
        assert termination["reason"] == "budget_exceeded" and "wall time" in termination["detail"]


def test_report_json_counts_retries_like_the_transcripts(tmp_path, monkeypatch, capsys, fakes, llm_sleeps):
    agent, faults = fakes("j-agent", agent_reply, FaultPlan.spread(0.3, TRANSIENT, seed=9))
    write_llm_project(tmp_path, agent=agent, scenarios=1, trials=10)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "j", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["report", "j", "--json"]) == 0
    suite = json.loads(capsys.readouterr().out)["suite"]
    assert suite["retries"] == faults.log.count(TRANSIENT) and suite["retry_wait_s"] == pytest.approx(sum(llm_sleeps))
