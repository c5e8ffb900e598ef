"""The agent, the simulator and the judge against a strict OpenAI-compatible server on 127.0.0.1,
through LiteLLM over HTTP, as a user points simlab at llama.cpp or vLLM: requests the server's
schema refuses, missing and rejected keys, a dead endpoint, a server that crashes and comes back,
errors played again on resume, and what each of these does to the exit code and the verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from tests.fixtures.hostile.helpers import read_lines
from tests.strict_server import StrictServer, free_port
from tests.support import kv_llm_agent, write_project

AGENT = "openai/qwen2.5-7b-instruct"  # two families (qwen, meta): the different-family rule holds
USER = "openai/llama-3.1-8b-instruct-2024-07-23"
JUDGE = "openai/mistral-small-2409"
KEY = "local-dummy-key-123"


def agent_reply(body: dict[str, Any]) -> Any:
    return kv_llm_agent(body["messages"], body.get("tools"))


def user_reply(body: dict[str, Any]) -> str:
    if len(body["messages"]) == 2:  # its instructions and "the chat has opened"
        return "Hi, please store k0=v0."
    return "Thanks, that is all. ###STOP###"


def judge_reply(body: dict[str, Any]) -> str:
    return '{"verdict": "yes", "reason": "the assistant stored the value (#3)"}'


REPLIES = {"qwen2.5-7b-instruct": agent_reply, "llama-3.1-8b-instruct-2024-07-23": user_reply,
           "mistral-small-2409": judge_reply}


def llm_project(root: Path, base: str, *, trials: int = 2, rubric: bool = True, extra: str = "",
                judge: bool = True, concurrency: int = 2) -> None:
    """A KV project whose agent, simulator and judge are all models behind ``base``."""
    write_project(root, scenarios=1, trials=trials)
    scenario = root / "scenarios" / "s0.yaml"
    text = scenario.read_text().replace("  opening: Please store k0=v0.\n", "").replace(
        "  success_phrases: [stored]\n", "")
    if rubric:
        text += "expect:\n  rubric:\n    - {id: stored, text: The assistant stored what was asked, hard: true}\n"
    scenario.write_text(text)
    endpoint = f"api_base: {base}\n  api_key_env: LOCAL_KEY\n  params: {{max_tokens: 256}}"
    (root / "simlab.yaml").write_text(
        f"agent:\n  model: {AGENT}\n  {endpoint}\n"
        f"simulator:\n  model: {USER}\n  {endpoint}\n"
        + (f"judge:\n  model: {JUDGE}\n  {endpoint}\n" if judge else "")
        + f"trials: {trials}\nconcurrency: {concurrency}\nmax_retries: 2\n{extra}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCAL_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str) -> int:
    return main(["run", "--no-progress", *args])


def records(root: Path, run_id: str) -> list[dict[str, Any]]:
    path = root / "transcripts" / run_id / "trials.jsonl"
    return read_lines(path) if path.exists() else []


def test_a_tool_round_trip_through_a_strict_server_passes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with StrictServer(REPLIES, api_key=KEY) as server:
        llm_project(project, server.base)
        assert run("--run-id", "ok") == 0, capsys.readouterr().err
    assert server.refused == []  # every request had a shape the strict server accepts
    found = records(project, "ok")
    assert [r["verdict"] for r in found] == ["pass", "pass"]
    assert all(r["transcript"]["final_state"]["items"]["k0"] == "v0" for r in found)
    with_tools = [b for b in server.requests if b.get("tools")]
    assert with_tools and all(b["tool_choice"] == "auto" for b in with_tools)
    follow_ups = [b for b in with_tools if any(m["role"] == "tool" for m in b["messages"])]
    assert follow_ups and all(m["content"] == "" for b in follow_ups for m in b["messages"] if m.get("tool_calls"))
    roles = {e["role"] for r in found for e in r["transcript"]["events"] if e["type"] == "model_call"}
    assert roles == {"agent", "simulator", "judge"}
    # no price for a model behind an api_base: its cost is unknown, never a price list's guess or 0
    calls = [e for r in found for e in r["transcript"]["events"] if e["type"] == "model_call"]
    assert all(c["usage"]["cost_usd"] is None and c["usage"]["input_tokens"] for c in calls)
    out = capsys.readouterr().out
    assert "cost unknown" in out and "judge unknown" in out


def test_a_stated_price_prices_a_model_behind_an_api_base(project: Path) -> None:
    with StrictServer(REPLIES, api_key=KEY) as server:
        llm_project(project, server.base, trials=1)
        config = (project / "simlab.yaml").read_text()
        (project / "simlab.yaml").write_text(config.replace(
            f"agent:\n  model: {AGENT}\n", f"agent:\n  model: {AGENT}\n  price: {{input: 1.0, output: 2.0}}\n"))
        assert run("--run-id", "priced") == 0
    calls = [e for r in records(project, "priced") for e in r["transcript"]["events"] if e["type"] == "model_call"]
    agent_calls = [c["usage"] for c in calls if c["role"] == "agent"]
    assert agent_calls and all(u["cost_usd"] == pytest.approx((u["input_tokens"] + 2 * u["output_tokens"]) / 1e6)
                               for u in agent_calls)
    assert all(c["usage"]["cost_usd"] is None for c in calls if c["role"] != "agent")


def test_a_missing_key_stops_the_run_naming_role_model_and_variable(project: Path, monkeypatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with StrictServer(REPLIES) as server:
        write_project(project, scenarios=2, trials=4)
        # no api_base: LiteLLM's OpenAI client refuses before connecting anywhere ("Missing credentials")
        assert run("--run-id", "nokey", "--agent", "openai/gpt-4o-2024-08-06") == 3
    err = capsys.readouterr().err
    assert "agent model openai/gpt-4o-2024-08-06: auth" in err and "set OPENAI_API_KEY" in err
    assert "gave up after" not in err  # not retried as if it were transient
    assert records(project, "nokey") == [] and server.requests == []


def test_a_rejected_key_stops_the_run_and_a_resume_after_the_fix_completes_it(project: Path, monkeypatch,
                                                                              capsys) -> None:
    with StrictServer(REPLIES, api_key="the-right-key") as server:
        llm_project(project, server.base, trials=3)
        assert run("--run-id", "badkey") == 3
        err = capsys.readouterr().err
        assert "auth" in err and "the key in LOCAL_KEY was rejected" in err and KEY not in err
        assert records(project, "badkey") == []
        monkeypatch.setenv("LOCAL_KEY", "the-right-key")
        assert run("--run-id", "badkey") == 0
    assert sorted(r["unit_id"] for r in records(project, "badkey")) == ["kv-0#1", "kv-0#2", "kv-0#3"]


def test_a_dead_endpoint_stops_the_run_with_its_url_then_resumes(project: Path, capsys, llm_sleeps) -> None:
    port = free_port()
    llm_project(project, f"http://127.0.0.1:{port}/v1", trials=2, concurrency=1)
    assert run("--run-id", "dead") == 3
    err = capsys.readouterr().err
    assert f"unreachable: http://127.0.0.1:{port}/v1 never answered (gave up after 2 retries" in err
    assert records(project, "dead") == [] and len(llm_sleeps) == 2  # a bounded few retries, then the stop
    with StrictServer(REPLIES, api_key=KEY, port=port):
        assert run("--run-id", "dead") == 0
    assert [r["verdict"] for r in records(project, "dead")] == ["pass", "pass"]


def test_credentials_in_an_endpoint_url_are_masked_in_the_stop_message(project: Path, capsys) -> None:
    llm_project(project, f"http://admin:hunter2@127.0.0.1:{free_port()}/v1", trials=1)
    assert run("--run-id", "userinfo") == 3  # the client cannot send a key beside them: a local bad request
    out, err = capsys.readouterr()
    assert "bad_request" in err and "gave up after" not in err  # never retried: it cannot succeed
    assert "hunter2" not in out + err and "admin:***@127.0.0.1" in err


def test_a_server_that_crashes_mid_run_stops_it_and_a_resume_after_the_restart_completes(project: Path,
                                                                                          capsys) -> None:
    server = StrictServer(REPLIES, api_key=KEY, stop_after=7).start()  # goes down after 7 answers
    try:
        llm_project(project, server.base, trials=6, concurrency=1)
        assert run("--run-id", "crash") == 3
        assert "never answered" in capsys.readouterr().err
        before = records(project, "crash")
        assert 0 < len(before) < 6 and "pass" in {r["verdict"] for r in before}
        assert {r["verdict"] for r in before} <= {"pass", "error"}  # a call cut mid-answer is an error
        server.stop_after = None
        server.start()  # the restart, on the same port
        assert run("--run-id", "crash") == 0
    finally:
        server.stop()
    after = records(project, "crash")
    assert sorted(r["unit_id"] for r in after) == [f"kv-0#{i}" for i in range(1, 7)]  # each unit once
    assert all(r["verdict"] == "pass" for r in after)


def test_errors_stop_a_plain_run_with_their_causes_and_a_resume_plays_them_again(project: Path, capsys) -> None:
    with StrictServer(REPLIES, api_key=KEY) as server:
        llm_project(project, server.base, trials=4, concurrency=1)
        server.fail_next = [503] * 6  # the first two calls exhaust their retries (1 + max_retries 2)
        assert run("--run-id", "flaky") == 3  # 2 of 4 trials are errors: over the 10 % budget
        err = capsys.readouterr().err
        assert "incomplete: infrastructure errors in 2 of 4 trials" in err
        assert f"2× simulator model {USER}: transient: gave up after 2 retries" in err
        first = records(project, "flaky")
        assert sorted(r["verdict"] for r in first) == ["error", "error", "pass", "pass"]
        assert main(["report", "flaky"]) == 3  # the report ends the run as the run did: no result
        assert "inconclusive (exit 3): incomplete: infrastructure errors in 2 of 4 trials" in capsys.readouterr().err
        assert run("--run-id", "flaky", "--keep-errors") == 3  # nothing to play: the errors are kept
        assert len(records(project, "flaky")) == 4
        assert run("--run-id", "flaky") == 0  # the errors are played again, and pass
    err = capsys.readouterr().err
    assert "2 trials that ended in an infrastructure error will be played again" in err
    final = records(project, "flaky")
    assert len(final) == 4 and {r["verdict"] for r in final} == {"pass"}
    assert main(["report", "flaky"]) == 0
    again = [r for r in final if r["attempt"] == 2]
    assert len(again) == 2 and all(r["earlier_attempts"][0]["verdict"] == "error" for r in again)
    retired = [json.loads(line) for line in (project / "transcripts/flaky/retired.jsonl").read_text().splitlines()]
    assert sorted(r["unit_id"] for r in retired) == sorted(r["unit_id"] for r in again)


def test_a_judge_without_a_key_stops_the_run(project: Path, monkeypatch, capsys) -> None:
    with StrictServer(REPLIES, api_key=KEY) as server:
        llm_project(project, server.base, trials=2)
        config = (project / "simlab.yaml").read_text()
        judge_block = config[config.index("judge:"):config.index("trials:")]
        (project / "simlab.yaml").write_text(config.replace(judge_block, judge_block.replace("LOCAL_KEY", "JUDGE_KEY")))
        monkeypatch.delenv("JUDGE_KEY", raising=False)
        assert run("--run-id", "nojudgekey") == 3
    err = capsys.readouterr().err
    assert f"judge model {JUDGE}: auth" in err and "set JUDGE_KEY" in err
    assert records(project, "nojudgekey") == []


def test_judge_failures_are_named_with_their_cause_in_every_report(project: Path, capsys) -> None:
    replies = {**REPLIES, "mistral-small-2409": lambda body: "I would say yes."}  # never the JSON asked for
    with StrictServer(replies, api_key=KEY) as server:
        llm_project(project, server.base, trials=2)
        text = (project / "scenarios/s0.yaml").read_text().replace("hard: true", "hard: false")
        (project / "scenarios/s0.yaml").write_text(text)
        assert run("--run-id", "judgebad") == 0
    out = " ".join(capsys.readouterr().out.split())  # as one line, whatever the terminal's width
    assert "check errors: rubric:stored (rubric, soft) could not be decided in 2 trials: malformed judge answer" in out
    assert main(["report", "judgebad", "--format", "markdown"]) == 0
    assert "check errors: rubric:stored" in capsys.readouterr().out
    assert main(["report", "judgebad", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["check_errors"][0]["name"] == "rubric:stored" and summary["check_errors"][0]["count"] == 2


def test_text_with_lone_surrogates_reaches_the_judge_encodable(project: Path) -> None:
    def agent(body: dict[str, Any]) -> Any:
        reply = agent_reply(body)
        return reply + " \udcff" if isinstance(reply, str) else reply  # undecodable bytes from the model

    with StrictServer({**REPLIES, "qwen2.5-7b-instruct": agent}, api_key=KEY) as server:
        llm_project(project, server.base, trials=1)
        assert run("--run-id", "surrogate") == 0
    assert server.refused == []
    assert [c["status"] for r in records(project, "surrogate") for c in r["checks"] if c["kind"] == "rubric"] == ["pass"]


def test_a_model_flag_keeps_the_configured_endpoint(project: Path, capsys) -> None:
    with StrictServer({**REPLIES, "qwen2.5-14b-instruct": agent_reply}, api_key=KEY) as server:
        llm_project(project, server.base, trials=1, rubric=False)
        assert run("--run-id", "flag", "--agent", "openai/qwen2.5-14b-instruct") == 0
    err = capsys.readouterr().err
    assert f"--agent openai/qwen2.5-14b-instruct: keeping api_base {server.base}" in err
    assert any(b["model"] == "qwen2.5-14b-instruct" for b in server.requests)  # sent to the local server


def test_a_model_mapping_flag_replaces_the_configured_agent(project: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with StrictServer(REPLIES, api_key=KEY) as server:
        llm_project(project, server.base, trials=1, rubric=False)
        assert run("--run-id", "mapping", "--agent", "{model: openai/gpt-4o-2024-08-06}") == 3
    assert "set OPENAI_API_KEY" in capsys.readouterr().err  # the configured api_base was replaced


def test_one_served_model_under_two_names_is_one_family(project: Path, capsys) -> None:
    with StrictServer(REPLIES, api_key=KEY) as server:
        llm_project(project, server.base, trials=1)
        config = (project / "simlab.yaml").read_text()
        (project / "simlab.yaml").write_text(config.replace(AGENT, "openai/smollm2").replace(USER, "openai/smollm2-user"))
        assert run("--run-id", "kin") == 2
    err = capsys.readouterr().err
    assert "served by the same endpoint" in err and "(None)" not in err and "--allow-same-family" in err


def test_a_judge_whose_provider_key_is_missing_stops_the_run(project: Path, monkeypatch, capsys) -> None:
    """The judge's own provider, no key in the environment: LiteLLM says "Missing credentials" inside an
    InternalServerError; that is the judge's auth failure, not a transient error for every trial."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with StrictServer(REPLIES, api_key=KEY) as server:
        llm_project(project, server.base, trials=2, judge=False)
        assert run("--run-id", "judgekey", "--judge", "openai/gpt-4o-mini-2024-07-18") == 3
    err = capsys.readouterr().err
    assert "judge model openai/gpt-4o-mini-2024-07-18: auth" in err and "set OPENAI_API_KEY" in err
    assert records(project, "judgekey") == []


def test_absurd_token_counts_from_a_provider_are_unknown_not_a_crash(project: Path, capsys) -> None:
    """A server that reports 2**70 prompt tokens and -3 completion tokens: counts no call can have.
    They are unknown (never stored: an int64 column could not hold them), the run and its report
    finish, and the figures say unknown."""
    def absurd_user(body: dict[str, Any]) -> Any:
        return {"text": user_reply(body), "usage": {"prompt_tokens": 2**70, "completion_tokens": -3}}

    with StrictServer({**REPLIES, "llama-3.1-8b-instruct-2024-07-23": absurd_user}, api_key=KEY) as server:
        llm_project(project, server.base, trials=1, judge=False, rubric=False)
        assert run("--run-id", "absurd") == 0, capsys.readouterr().err
    calls = [e for e in records(project, "absurd")[0]["transcript"]["events"] if e["type"] == "model_call"]
    user = [c["usage"] for c in calls if c["role"] == "simulator"]
    assert user and all(u["input_tokens"] is None and u["output_tokens"] is None for u in user)
    assert all(u["cost_usd"] is None for u in user)
    assert any(c["usage"]["input_tokens"] for c in calls if c["role"] == "agent")  # the agent's are real
    capsys.readouterr()
    assert main(["report", "absurd"]) == 0
    assert "tokens p50 unknown" in capsys.readouterr().out
