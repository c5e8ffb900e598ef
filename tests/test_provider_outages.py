"""A provider outage inside a framework agent is infrastructure, never the agent's regression.

Each framework's agent (``tests/provider_agents.py``) reaches a real OpenAI-compatible server on
127.0.0.1 (``tests/strict_server.py``) through its own client. The server answers 429, 503, cuts the
connection, refuses the key, or is not there at all: the trial is an ``error`` naming the provider's
error (or the run stops, exit 3), and the suite's gate says INCONCLUSIVE (exit 3), never "regressed"
(exit 1). An agent that raises its own ``ValueError`` still fails."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.llm.agent_errors import provider_failure
from simlab.llm.types import ModelErrorKind
from tests.strict_server import DROP, StrictServer, free_port

REPO = Path(__file__).resolve().parents[1]
SCENARIO = "scenarios/retail/refund-damaged-card.yaml"
FREE = {"input": 0, "output": 0}
AGENTS = {
    "openai_agents": {"openai_agents": "tests.provider_agents:openai_agents_agent", "price": FREE},
    "openai_agents_litellm": {"openai_agents": "tests.provider_agents:openai_agents_litellm_agent", "price": FREE},
    "pydantic_ai": {"pydantic_ai": "tests.provider_agents:pydantic_ai_agent", "price": FREE},
    "langgraph": {"langgraph": "tests.provider_agents:langgraph_graph", "price": FREE},
}
SUITE = "id: nightly\nscenarios: [scenarios/retail/refund-damaged-card.yaml]\ntrials: 1\ngates: ['pass^1 >= 0.9']\n"


@pytest.fixture(scope="module")
def provider() -> Iterator[StrictServer]:
    with StrictServer({"team-model": lambda request: "Let me look into that for you."},
                      api_key="sk-team-provider-key") as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: StrictServer) -> Path:
    for name in ("scenarios", "personas"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    (tmp_path / "suite.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMLAB_T_PROVIDER_URL", provider.base)
    monkeypatch.setenv("SIMLAB_T_PROVIDER_KEY", "sk-team-provider-key")
    provider.fail_next.clear()
    return tmp_path


def run(run_id: str, agent: Any) -> int:
    return main(["run", "--run-id", run_id, "--agent", json.dumps(agent), "--no-progress", "--trials", "1",
                 SCENARIO])


def records(run_id: str) -> list[dict[str, Any]]:
    path = Path("transcripts") / run_id / "trials.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("kind", sorted(AGENTS))
@pytest.mark.parametrize(("answer", "said"), [(429, "RateLimitError"), (503, "InternalServerError"),
                                              (DROP, "APIConnectionError")])
def test_a_provider_outage_makes_the_trial_an_error_and_the_gate_inconclusive(
        project: Path, provider: StrictServer, capsys: pytest.CaptureFixture[str], kind: str, answer: int,
        said: str) -> None:
    provider.fail_next.extend([answer] * 4)
    assert run("outage", AGENTS[kind]) == 3
    [record] = records("outage")
    assert record["verdict"] == "error" and record["transcript"]["termination"]["reason"] == "error"
    errors = [e for e in record["transcript"]["events"] if e["type"] == "error"]
    assert errors and errors[-1]["source"] == "agent" and "the agent's own model client failed" in errors[-1]["message"]
    assert said in json.dumps(record["transcript"]["events"])
    row = record["head"]["row"]  # a framework agent's provider outage is the provider's fault, at its error
    assert row["blame"] == "provider" and record["transcript"]["events"][row["first_fault_event"]]["type"] == "error"
    capsys.readouterr()
    assert main(["gate", "outage", "--suite", "suite.yaml"]) == 3
    assert main(["report", "outage", "--format", "json"]) in (0, 3)
    assert said in capsys.readouterr().out  # error_causes name the provider's error


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_a_refused_key_stops_the_run_naming_the_variable(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], kind: str) -> None:
    monkeypatch.setenv("SIMLAB_T_PROVIDER_KEY", "sk-wrong-key-0000")
    assert run("refused", AGENTS[kind]) == 3
    err = capsys.readouterr().err
    assert "auth" in err and "OPENAI_API_KEY" in err and "sk-wrong-key-0000" not in err
    assert records("refused") == []  # no trial is blamed: a resume plays it
    assert main(["gate", "refused", "--suite", "suite.yaml"]) == 3


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_a_missing_key_stops_the_run_naming_the_variable(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], kind: str) -> None:
    """No key given and none in the client's variable: the openai client raises its bare
    ``OpenAIError``, LiteLLM a 500 saying "Missing credentials". Before, the first was the agent's
    fail (a gate said "regressed") and the second a transient error played in every trial."""
    monkeypatch.setenv("SIMLAB_T_PROVIDER_KEY", "")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert run("keyless", AGENTS[kind]) == 3
    err = capsys.readouterr().err
    assert "auth" in err and "OPENAI_API_KEY" in err
    assert records("keyless") == []


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_a_dead_provider_stops_the_run(project: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str], kind: str) -> None:
    monkeypatch.setenv("SIMLAB_T_PROVIDER_URL", f"http://127.0.0.1:{free_port()}/v1")
    assert run("dead", AGENTS[kind]) == 3
    assert "unreachable" in capsys.readouterr().err and records("dead") == []


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_a_provider_that_answers_is_the_agents_own_result(project: Path, provider: StrictServer, kind: str) -> None:
    """The same agents, the provider up: the trial is judged (this agent never refunds: a fail)."""
    assert run("up", AGENTS[kind]) == 0  # played to the end (a run without gates judges nothing)
    [record] = records("up")
    assert record["verdict"] == "fail" and record["transcript"]["termination"]["reason"] != "error"
    assert main(["gate", "up", "--suite", "suite.yaml"]) == 1


def test_an_agent_that_raises_its_own_error_still_fails(project: Path) -> None:
    assert run("own", {"python": "tests.provider_agents:raises_its_own"}) == 0
    [record] = records("own")
    assert record["verdict"] == "fail" and record["transcript"]["termination"]["reason"] == "agent_error"
    assert main(["gate", "own", "--suite", "suite.yaml"]) == 1


def _status_error(cls_name: str, status: int) -> BaseException:
    import httpx
    import openai

    response = httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))
    return getattr(openai, cls_name)(f"HTTP {status}", response=response, body=None)


def test_the_cause_chain_is_read_and_anything_else_is_the_agents() -> None:
    import httpx
    import openai

    try:
        try:
            raise _status_error("RateLimitError", 429)
        except openai.RateLimitError as inner:
            raise RuntimeError("graph node failed") from inner  # a framework's own wrapper
    except RuntimeError as outer:
        wrapped = outer
    found = provider_failure(wrapped)
    assert found is not None and found.kind is ModelErrorKind.TRANSIENT and "HTTP 429" in str(found)
    assert provider_failure(_status_error("AuthenticationError", 401)).kind is ModelErrorKind.AUTH  # type: ignore[union-attr]
    assert provider_failure(_status_error("InternalServerError", 529)).kind is ModelErrorKind.TRANSIENT  # type: ignore[union-attr]
    refused = openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:1/v1"))
    refused.__cause__ = httpx.ConnectError("connection refused")
    assert provider_failure(refused).kind is ModelErrorKind.UNREACHABLE  # type: ignore[union-attr]
    timeout = openai.APITimeoutError(request=httpx.Request("POST", "http://127.0.0.1:1/v1"))
    assert provider_failure(timeout).kind is ModelErrorKind.TIMEOUT  # type: ignore[union-attr]
    assert provider_failure(_status_error("BadRequestError", 400)) is None  # the agent's request was bad
    assert provider_failure(_status_error("NotFoundError", 404)) is None
    assert provider_failure(ValueError("bad order id")) is None
    assert provider_failure(ConnectionError("the agent's own socket code")) is None

    class ConnectionTrouble(Exception):  # a class of the team's own code, whatever its name
        pass

    assert provider_failure(ConnectionTrouble("x")) is None


def test_a_framework_agent_without_a_price_is_told_once_its_cost_budget_cannot_be_judged(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = {"langgraph": "examples.langgraph_retail:careful_graph"}
    budgeted = "scenarios/retail/policy-question-no-refund.yaml"
    assert main(["run", "--run-id", "unpriced", "--agent", json.dumps(agent), "--no-progress", "--trials", "2",
                 budgeted, SCENARIO]) == 0
    err = capsys.readouterr().err
    assert err.count("has no price") == 1
    assert "max_cost_usd budget of 2 scenario(s)" in err and "give the agent a price" in err
    assert main(["run", "--run-id", "priced", "--agent", json.dumps({**agent, "price": FREE}), "--no-progress",
                 "--trials", "1", budgeted]) == 0
    assert "has no price" not in capsys.readouterr().err
