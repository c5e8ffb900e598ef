"""Framework agents meet a provider that misbehaves as real ones do (``tests/rough_provider.py``, a
real HTTP server on 127.0.0.1), through their own clients or LiteLLM (``tests/rough_agents.py``).

A provider's fault (429 with Retry-After, a 500/503 burst, a body cut mid-response, a stream cut
mid-stream, no answer within the agent's turn bound) is infrastructure: the trial is an ``error``
blamed on the provider, never the agent's fail. The model's own mistakes (arguments that are not
JSON, a tool that does not exist, an empty answer cut at its token limit, a refusal, a reply over
the byte bound) are the agent's: a fail. Parallel tool calls all land in the trial. The agent's
key, in the environment, never reaches a transcript, a log or a report."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.graders.base import GradeContext
from simlab.graders.grade import grade
from simlab.sim.loop import Trial, run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs import Limits
from simlab.transcript.blame import diagnose
from tests.framework_play import BY_ID, DOMAINS, agent_of
from tests.rough_provider import RoughServer, Step

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-rough-team-secret-0123456789"
FREE = {"input": 0, "output": 0}
AGENTS = {
    "agents_sdk": {"openai_agents": "tests.rough_agents:agents_sdk", "price": FREE},
    "agents_sdk_litellm": {"openai_agents": "tests.rough_agents:agents_sdk_litellm", "price": FREE},
    "pydantic_ai": {"pydantic_ai": "tests.rough_agents:pydantic_ai", "price": FREE},
    "langgraph": {"langgraph": "tests.rough_agents:langgraph", "price": FREE},
    "langgraph_stream": {"langgraph": "tests.rough_agents:langgraph_stream", "price": FREE},
}
LOOKUP = {"name": "lookup_order", "arguments": {"order_id": "A123"}}
POLICY = {"name": "check_refund_policy", "arguments": {"order_id": "A123"}}
TURN_S = 30.0  # the agent's turn bound in these trials (virtual time: a hang reaches it at once)


@pytest.fixture(scope="module")
def rough() -> Iterator[RoughServer]:
    with RoughServer() as server:
        yield server


@pytest.fixture
def provider(rough: RoughServer, monkeypatch: pytest.MonkeyPatch) -> RoughServer:
    import simlab.llm.lazy  # noqa: F401  LiteLLM set up as simlab sets it up (no price fetch)

    rough.script.clear()
    rough.requests.clear()
    monkeypatch.setenv("SIMLAB_T_ROUGH_URL", rough.base)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return rough


async def play(kind: str, steps: list[Step], server: RoughServer, max_turns: int = 2
               ) -> tuple[Any, str, str | None]:
    """One trial of refund-damaged-card against the rough provider: (transcript, verdict, blame)."""
    server.script[:] = steps
    entry = BY_ID["refund-damaged-card"]
    spec = entry.spec.model_copy(update={"max_turns": max_turns})
    domain = DOMAINS[spec.id]
    transcript = await run_trial(Trial(
        run_id="rough", unit_id=f"{spec.id}#1", trial=1, seed=1, scenario=spec, persona=entry.persona,
        domain=domain, initial_state=domain.build_state(spec.initial_state), agent=agent_of(AGENTS[kind]),
        simulator=RulesSimulator(), limits=Limits(max_turn_seconds=TURN_S)))
    graded = await grade(GradeContext(transcript, spec, domain, persona=entry.persona), use_judges=False)
    assert KEY not in transcript.model_dump_json()
    return transcript, graded.verdict, diagnose(transcript, graded.checks, graded.verdict).blame


PROVIDER_FAULTS = {
    "429 with Retry-After": [Step("status", status=429, headers={"Retry-After": "7"})],
    "a 503 burst": [Step("status", status=503)] * 3,
    "a 500": [Step("status", status=500)],
    "a body cut mid-response": [Step("cut")],
}


@pytest.mark.parametrize("kind", sorted(AGENTS))
@pytest.mark.parametrize("fault", sorted(PROVIDER_FAULTS))
async def test_a_provider_fault_is_an_error_blamed_on_the_provider(provider: RoughServer, kind: str,
                                                                   fault: str) -> None:
    transcript, verdict, blame = await play(kind, PROVIDER_FAULTS[fault], provider)
    assert (transcript.termination.reason.value, verdict) == ("error", "error"), transcript.termination
    assert blame == "provider"


JSON = {"Content-Type": "application/json"}
GARBAGE = {  # a 200 whose body is no completion: a proxy's page, an error payload, no choices at all
    "an error payload with 200": Step("raw", raw=b'{"object": "error", "message": "overloaded"}', headers=JSON),
    "a completion without choices": Step("raw", headers=JSON, raw=json.dumps(
        {"id": "c", "object": "chat.completion", "created": 1, "model": "team-model", "choices": []}).encode()),
    "an HTML page with 200": Step("raw", raw=b"<html><body>Upstream error</body></html>",
                                  headers={"Content-Type": "text/html"}),
}


@pytest.mark.parametrize(("kind", "garbage"), [
    ("agents_sdk", "an error payload with 200"), ("agents_sdk", "a completion without choices"),
    ("pydantic_ai", "an error payload with 200"), ("pydantic_ai", "a completion without choices"),
    ("pydantic_ai", "an HTML page with 200"), ("agents_sdk_litellm", "an error payload with 200"),
    ("agents_sdk", "an HTML page with 200"), ("agents_sdk_litellm", "an HTML page with 200"),
    ("langgraph", "an error payload with 200"), ("langgraph", "an HTML page with 200"),
    ("agents_sdk_litellm", "a completion without choices"), ("langgraph", "a completion without choices")])
async def test_a_body_that_is_no_completion_is_the_providers_error(provider: RoughServer, kind: str,
                                                                   garbage: str) -> None:
    transcript, verdict, blame = await play(kind, [GARBAGE[garbage]], provider)
    assert (transcript.termination.reason.value, verdict, blame) == ("error", "error", "provider"), \
        transcript.termination
    calls = [e for e in transcript.events if e.type == "model_call"]  # the call is in the transcript
    if garbage == "a completion without choices" and kind == "agents_sdk_litellm":  # the SDK read it, as 0 tokens
        assert [(c.role, c.usage.input_tokens) for c in calls] == [("agent", 0)], calls
        assert "a completion without choices (openai/team-model)" in transcript.termination.detail
    else:
        assert [(c.role, c.usage.input_tokens) for c in calls] == [("agent", None)], calls


async def test_a_stream_cut_mid_stream_is_an_error(provider: RoughServer) -> None:
    transcript, verdict, blame = await play("langgraph_stream", [Step("cut", text="Let me check that order.")],
                                     provider)
    assert (transcript.termination.reason.value, verdict) == ("error", "error"), transcript.termination
    assert blame == "provider"


@pytest.mark.usefixtures("virtual_time")
@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_a_provider_that_never_answers_is_an_error_not_the_agents_timeout(provider: RoughServer, kind: str) -> None:
    transcript, verdict, blame = asyncio.run(play(kind, [Step("hang")], provider))
    assert (transcript.termination.reason.value, verdict) == ("error", "error"), transcript.termination
    [error] = [e for e in transcript.events if e.type == "error"]
    assert error.source == "agent" and error.kind == "timeout"
    assert "max_turn_seconds" in error.message and "did not answer" in error.message
    assert blame == "provider"


@pytest.mark.usefixtures("virtual_time")
def test_a_retry_after_longer_than_the_turn_waited_out_by_the_sdk_is_an_error(provider: RoughServer) -> None:
    AGENTS["retrying"] = {"openai_agents": "tests.rough_agents:agents_sdk_retrying", "price": FREE}
    try:
        steps = [Step("status", status=429, headers={"Retry-After": "120"})]

        async def answered_then_waited() -> tuple[Any, str, str | None]:
            # the 429 arrives before the virtual clock may jump (a job in a thread holds it)
            held = asyncio.get_running_loop().run_in_executor(None, provider.wait_sent, provider.sent + 1)
            played = await play("retrying", steps, provider)
            assert await held
            return played

        transcript, verdict, blame = asyncio.run(answered_then_waited())
    finally:
        del AGENTS["retrying"]
    assert (transcript.termination.reason.value, verdict, blame) == ("error", "error", "provider"), \
        transcript.termination
    # the 429 was sent (the SDK then waits out its Retry-After); how many retries the SDK made before
    # the virtual clock reached the bound depends on the scheduling of the server's thread: not asserted
    assert len(provider.requests) >= 1 and provider.requests[0] is not None
    assert "max_turn_seconds" in transcript.termination.detail, transcript.termination


@pytest.mark.usefixtures("virtual_time")
def test_an_agent_that_hangs_in_its_own_code_after_its_model_answered_fails(provider: RoughServer) -> None:
    AGENTS["own_hang"] = {"python": "tests.rough_agents:hangs_on_its_own"}
    try:
        transcript, verdict, blame = asyncio.run(play("own_hang", [], provider))
    finally:
        del AGENTS["own_hang"]
    assert (transcript.termination.reason.value, verdict, blame) == ("budget_exceeded", "fail", "agent")
    assert "max_turn_seconds" in transcript.termination.detail and len(provider.requests) == 2


AGENT_MISTAKES = {
    "arguments that are not JSON": [Step(text=None, tool_calls=[
        {"name": "lookup_order", "arguments": '{"order_id": "A1'}])],
    "a tool that does not exist": [Step(text=None, tool_calls=[{"name": "teleport", "arguments": {"to": "x"}}])],
    "an empty answer cut at its token limit": [Step(text="", finish_reason="length")],
    "a content filter": [Step(text=None, finish_reason="content_filter")],
    "a refusal": [Step(text=None, refusal="I can't help with that.")],
}


@pytest.mark.parametrize("kind", sorted(AGENTS))
@pytest.mark.parametrize("mistake", sorted(AGENT_MISTAKES))
async def test_the_models_own_mistake_is_the_agents_fail(provider: RoughServer, kind: str, mistake: str) -> None:
    transcript, verdict, blame = await play(kind, AGENT_MISTAKES[mistake], provider)
    assert verdict == "fail" and transcript.termination.reason.value != "error", transcript.termination
    assert blame == "agent"
    assert not [e for e in transcript.events if e.type == "tool_result" and e.ok]  # no tool ran
    if mistake == "arguments that are not JSON":  # the refused call is in the trial, whoever refused it
        assert [e for e in transcript.events if e.type == "invalid_call" or (e.type == "tool_result" and not e.ok)]
    if mistake == "a tool that does not exist" and kind != "langgraph":  # the call is in the trial
        assert [e.name for e in transcript.events if e.type == "invalid_call"][:1] == ["teleport"], kind
    if kind.startswith("agents_sdk"):  # the model's call, with its usage, though the SDK raised
        calls = [e for e in transcript.events if e.type == "model_call"]
        raised_in_the_model = (kind, mistake) == ("agents_sdk", "an empty answer cut at its token limit")
        assert [(c.role, c.usage.input_tokens) for c in calls][:1] == [
            ("agent", None if raised_in_the_model else 10)], calls  # its usage, when the SDK gave it


@pytest.mark.parametrize("kind", sorted(AGENTS))
@pytest.mark.parametrize("arguments", ['"A123"', "null", "[1, 2]"])
async def test_arguments_that_are_json_but_no_object_are_an_invalid_call_not_a_crash(provider: RoughServer,
                                                                                   kind: str, arguments: str
                                                                                   ) -> None:
    steps = [Step(text=None, tool_calls=[{"name": "lookup_order", "arguments": arguments}])]
    transcript, verdict, blame = await play(kind, steps, provider)
    assert (verdict, blame) == ("fail", "agent") and transcript.termination.reason.value != "agent_error", \
        transcript.termination
    assert not [e for e in transcript.events if e.type == "tool_result" and e.ok]
    refused = [e for e in transcript.events if e.type == "invalid_call" or (e.type == "tool_result" and not e.ok)]
    assert refused, [e.type for e in transcript.events]  # the refused call is in the trial


@pytest.mark.parametrize("kind", sorted(AGENTS))
async def test_parallel_tool_calls_all_land_in_the_trial(provider: RoughServer, kind: str) -> None:
    transcript, _, _ = await play(kind, [Step(text=None, tool_calls=[LOOKUP, POLICY])], provider, max_turns=1)
    calls = [(e.name, e.arguments) for e in transcript.events if e.type == "tool_call"]
    assert calls == [("lookup_order", {"order_id": "A123"}), ("check_refund_policy", {"order_id": "A123"})]
    results = [e for e in transcript.events if e.type == "tool_result"]
    assert len(results) == 2 and all(r.ok for r in results)


@pytest.mark.parametrize("kind", sorted(AGENTS))
async def test_a_reply_over_the_byte_bound_is_the_agents_fail_and_is_not_kept_whole(provider: RoughServer,
                                                                                  kind: str) -> None:
    transcript, verdict, blame = await play(kind, [Step("huge", size=3_000_000)], provider)
    assert (transcript.termination.reason.value, verdict) == ("agent_error", "fail"), transcript.termination
    assert "max_reply_bytes" in transcript.termination.detail
    assert len(transcript.model_dump_json()) < 100_000


# --- through the command line: the run, its gate, its report and its log ----------------------------

SUITE = "id: nightly\nscenarios: [scenarios/retail/refund-damaged-card.yaml]\ntrials: 1\ngates: ['pass^1 >= 0.9']\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: RoughServer) -> Path:
    for name in ("scenarios", "personas"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    (tmp_path / "suite.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("kind", ["agents_sdk_litellm", "pydantic_ai"])
def test_a_rate_limited_run_is_inconclusive_and_the_key_is_nowhere(project: Path, provider: RoughServer,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   kind: str) -> None:
    provider.script[:] = [Step("status", status=429, headers={"Retry-After": "7"},
                               body={"error": {"message": f"Rate limit reached for key {KEY}", "type": "rate"}})]
    assert main(["run", "--run-id", "rl", "--agent", json.dumps(AGENTS[kind]), "--no-progress", "--trials", "1",
                 "scenarios/retail/refund-damaged-card.yaml"]) == 3
    [line] = (project / "transcripts" / "rl" / "trials.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["verdict"] == "error" and record["head"]["row"]["blame"] == "provider"
    assert main(["gate", "rl", "--suite", "suite.yaml"]) == 3
    assert main(["report", "rl", "--format", "json"]) in (0, 3)
    said = capsys.readouterr()
    assert "RateLimitError" in said.out
    stored = "".join(p.read_text(errors="replace") for p in (project / "transcripts").rglob("*") if p.is_file())
    assert KEY not in stored and KEY not in said.out and KEY not in said.err
    assert provider.requests and {k.lower(): v for k, v in provider.requests[0]["headers"].items()}["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("kind", sorted(AGENTS))
async def test_a_model_not_found_that_echoes_the_key_keeps_it_out_of_the_trial(provider: RoughServer,
                                                                              kind: str) -> None:
    """A 404 for a model the agent names is the agent's own configuration (a crash, its fail); the
    key the provider echoes in it is masked in the trial's ending and its error (``play`` asserts)."""
    said = {"error": {"message": f"The model `team-model` does not exist or key {KEY} has no access to it",
                      "type": "invalid_request_error", "code": "model_not_found", "param": None}}
    transcript, verdict, blame = await play(kind, [Step("status", status=404, body=said)], provider)
    assert (transcript.termination.reason.value, verdict, blame) == ("agent_error", "fail", "agent"), \
        transcript.termination
    assert "does not exist" in transcript.termination.detail and "***" in transcript.termination.detail


STREAM_ERROR = Step("raw", headers={"Content-Type": "text/event-stream"}, raw=(  # OpenAI's own error event
    b'data: {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "team-model", "choices": '
    b'[{"index": 0, "delta": {"role": "assistant", "content": "Let me"}, "finish_reason": null}]}\n\n'
    b'data: {"error": {"message": "The server had an error while processing your request. Sorry about that!", '
    b'"type": "server_error", "param": null, "code": null}}\n\n'))


@pytest.mark.parametrize("kind", ["openai_stream", "langgraph_stream"])
async def test_an_error_event_mid_stream_is_the_providers_error(provider: RoughServer, kind: str) -> None:
    """A stream that answers 200, then sends the provider's error event: the provider's failure
    (openai's client raises its bare ``APIError``, with no status), not the agent's crash."""
    AGENTS["openai_stream"] = {"python": "tests.rough_agents:streams_with_openai"}
    try:
        transcript, verdict, blame = await play(kind, [STREAM_ERROR], provider)
    finally:
        del AGENTS["openai_stream"]
    assert (transcript.termination.reason.value, verdict, blame) == ("error", "error", "provider"), \
        transcript.termination
    assert "Sorry about that" in transcript.termination.detail


@pytest.mark.parametrize("garbage", ["an error payload with 200", "an HTML page with 200"])
async def test_a_body_the_clients_stream_helper_cannot_read_is_the_providers_error(provider: RoughServer,
                                                                                   garbage: str) -> None:
    """openai's stream helper, given no chunk, fails its own assertion (a bare, empty
    ``AssertionError`` from its code): before, "the agent raised AssertionError: ", the agent's fail."""
    AGENTS["openai_stream_helper"] = {"python": "tests.rough_agents:streams_with_openai_helper"}
    try:
        transcript, verdict, blame = await play("openai_stream_helper", [GARBAGE[garbage]], provider)
    finally:
        del AGENTS["openai_stream_helper"]
    assert (transcript.termination.reason.value, verdict, blame) == ("error", "error", "provider"), \
        transcript.termination
    assert "could not read the answer as a completion" in transcript.termination.detail
