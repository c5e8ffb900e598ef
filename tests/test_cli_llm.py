"""`simlab run` with an LLM agent and an LLM simulator, through the real LiteLLM call path.

The models are simlab's fake LiteLLM provider: real ``litellm.acompletion``, no network.
"""

from __future__ import annotations

import json

from simlab.cli.main import main
from simlab.llm.fakes import register_fake, unregister_fake
from tests.support import kv_llm_agent, write_project


def user_fn(messages, tools=None, **_):
    if len(messages) == 2:  # system prompt and the "chat opened" nudge
        return "Please store k0=v0."
    return "Thanks! ###STOP###"


def test_llm_agent_and_llm_simulator_through_litellm(tmp_path, monkeypatch, capsys):
    agent = register_fake("cli-agent", kv_llm_agent)
    user = register_fake("cli-user", user_fn)
    try:
        write_project(tmp_path, scenarios=1, trials=2, agent=agent)
        (tmp_path / "scenarios" / "s0.yaml").write_text(
            (tmp_path / "scenarios" / "s0.yaml").read_text().replace("  opening: Please store k0=v0.\n", ""))
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--run-id", "llm", "--no-progress", "--simulator", user, "--allow-same-family"]) == 0
    finally:
        unregister_fake("cli-agent")
        unregister_fake("cli-user")
    records = [json.loads(x) for x in (tmp_path / "transcripts/llm/trials.jsonl").read_text().splitlines()]
    assert len(records) == 2
    transcript = records[0]["transcript"]
    assert transcript["termination"]["reason"] == "goal_reached"
    assert transcript["final_state"]["items"]["k0"] == "v0"
    roles = [e["role"] for e in transcript["events"] if e["type"] == "model_call"]
    # the simulator's model wrote the opening; the agent's "stored" met a success phrase, which ends the
    # trial without asking the simulator's model again (its backstop: see test_simulators)
    assert roles.count("agent") == 2 and roles.count("simulator") == 1
    assert "success phrase" in transcript["termination"]["detail"]
    assert all(e["usage"]["input_tokens"] for e in transcript["events"] if e["type"] == "model_call")
    assert transcript["agent"]["kind"] == "llm" and transcript["simulator"]["ref"] == user


def test_auth_failure_stops_the_run_with_exit_3_and_records_nothing(tmp_path, monkeypatch, capsys):
    import litellm  # here, not at the top: collecting the suite must not pay for LiteLLM (tests/conftest.py)

    def refuse(messages, tools=None, **_):
        raise litellm.AuthenticationError(message="invalid api key sk-test-1234567890", llm_provider="openai",
                                          model="gpt-x")

    agent = register_fake("cli-auth", refuse)
    try:
        write_project(tmp_path, scenarios=1, trials=3, agent=agent)
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--run-id", "auth", "--no-progress"]) == 3
    finally:
        unregister_fake("cli-auth")
    err = capsys.readouterr().err
    assert "agent model simlab-fake/cli-auth: auth" in err and "sk-test-1234567890" not in err
    trials = tmp_path / "transcripts/auth/trials.jsonl"
    assert not trials.exists() or trials.read_text() == ""
