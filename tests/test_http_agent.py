"""HTTP agents (``agent: {http: ...}``) end to end: ``simlab run`` against a real agent service on
127.0.0.1 (``tests/agent_service.py``: the retail demo agent as a service, calling the trial's
tools with the official MCP client). No mocked transport: every request crosses a socket."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from simlab.cli.main import main
from tests.strict_server import free_port

if TYPE_CHECKING:  # the service (MCP, uvicorn: seconds to import) is imported by the fixture, not at collection
    from tests.agent_service import AgentService

REPO = Path(__file__).resolve().parents[1]
SCENARIO = "scenarios/retail/refund-damaged-card.yaml"
CAREFUL_CALLS = ["lookup_order", "check_refund_policy", "issue_refund"]


@pytest.fixture(scope="module")
def service() -> Iterator[AgentService]:
    from tests.agent_service import AgentService

    with AgentService() as svc:
        yield svc


@pytest.fixture
def svc(service: AgentService) -> AgentService:
    """The module's service, its records cleared for this test."""
    service.requests.clear()
    service.tool_log.clear()
    service.refused.clear()
    service.fail_next.clear()
    service.usage.clear()
    service.hold_for_servers = 0
    service.servers.clear()
    return service


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("scenarios", "personas"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def http_agent(url: str, **settings: Any) -> str:
    """An ``--agent`` value: ``{http: {url: ..., uses_models: false, ...}}`` (the demo agent calls no model)."""
    return json.dumps({"http": {"url": url, "uses_models": False, **settings}})


def run(run_id: str, agent: str, *args: str, trials: int = 1) -> int:
    return main(["run", "--run-id", run_id, "--agent", agent, "--no-progress", "--trials", str(trials),
                 "--concurrency", str(trials), *args, SCENARIO])


def records(run_id: str) -> list[dict[str, Any]]:
    path = Path("transcripts") / run_id / "trials.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return sorted((json.loads(line) for line in lines if line.strip()), key=lambda r: r["unit_id"])


def calls(record: dict[str, Any]) -> list[str]:
    return [e["name"] for e in record["transcript"]["events"] if e["type"] == "tool_call"]


def failed(record: dict[str, Any]) -> set[str]:
    return {c["name"] for c in record["checks"] if c["hard"] and c["status"] == "fail"}


def conversation(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["type"], e.get("text") or e.get("name")) for e in record["transcript"]["events"]
            if e["type"] in ("user", "agent", "tool_call")]


def judged_pass(record: dict[str, Any]) -> bool:
    """Every hard check ran and held, apart from the rubric items no judge model could judge offline."""
    hard = [c for c in record["checks"] if c["hard"] and c["kind"] != "rubric"]
    return bool(hard) and all(c["status"] == "pass" for c in hard) and record["verdict"] in ("pass", "unjudged")


# --- the same scenario, graded the same way: the careful agent passes, the planted defect fails ----

def test_a_careful_agent_service_passes_and_the_planted_defect_fails(svc: AgentService, project: Path) -> None:
    trials = 6
    assert run("careful", http_agent(f"{svc.base}/careful/v1"), trials=trials) == 0
    assert run("defect", http_agent(f"{svc.base}/skip-policy/v1"), trials=trials) == 0
    assert run("python", "python:examples.retail_agents:careful_agent", trials=trials) == 0
    careful, defect, python = records("careful"), records("defect"), records("python")
    assert len(careful) == len(defect) == len(python) == trials
    for record in careful:
        assert judged_pass(record), [(c["name"], c["status"], c["reason"]) for c in record["checks"]]
        assert calls(record) == CAREFUL_CALLS
        assert record["transcript"]["agent"]["kind"] == "http"
        refunds = [r for r in record["transcript"]["final_state"]["refunds"] if r["order_id"] == "A123"]
        assert len(refunds) == 1  # six trials at once, each refunded A123 once in a state of its own
    for record, reference in zip(careful, python):  # what the service did is what the Python callable does
        assert conversation(record) == conversation(reference)
    for record in defect:
        assert record["verdict"] == "fail"
        assert {"before(check_refund_policy, issue_refund)", "trajectory:in_order"} <= failed(record)
        assert "check_refund_policy" not in calls(record) and "issue_refund" in calls(record)
    assert svc.refused == []  # every request was one a strict OpenAI-compatible server accepts


def test_each_worker_process_serves_its_own_trials_tools(svc: AgentService, project: Path) -> None:
    # a child process: forking this one would fork the agent service's thread too. Units go to the
    # worker that is free: one trial at a time each (--concurrency 2 over 2 workers), and the service
    # holds its answers until both workers' tool servers called, so neither plays them all
    svc.hold_for_servers = 2
    done = subprocess.run([sys.executable, "-m", "simlab.cli.main", "run", "--run-id", "workers", "--agent",
                           http_agent(f"{svc.base}/careful/v1"), "--no-progress", "--trials", "4", "--workers", "2",
                           "--concurrency", "2", SCENARIO], cwd=project, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    played = records("workers")
    assert len(played) == 4 and all(judged_pass(r) and calls(r) == CAREFUL_CALLS for r in played)
    ports = {r["body"]["metadata"]["simlab_tools_url"].split("/t/")[0] for r in svc.requests}
    assert len(ports) == 2  # one tool server per worker process


def test_each_trial_gets_its_own_tools_url_passed_in_a_header_and_the_metadata(svc: AgentService,
                                                                               project: Path) -> None:
    assert run("urls", http_agent(f"{svc.base}/careful/v1/chat/completions"), trials=3) == 0
    by_session: dict[str, set[str]] = {}
    for request in svc.requests:
        metadata = request["body"]["metadata"]
        assert request["headers"]["x-simlab-tools-url"] == metadata["simlab_tools_url"]
        assert request["headers"]["x-simlab-session-id"] == metadata["simlab_session_id"]
        assert json.loads(metadata["simlab_context"]) == {"signed_in_customer": "C-17", "channel": "chat"}
        by_session.setdefault(metadata["simlab_session_id"], set()).add(metadata["simlab_tools_url"])
    assert len(by_session) == 3 and all(len(urls) == 1 for urls in by_session.values())  # one URL per trial
    urls = [next(iter(u)) for u in by_session.values()]
    assert len(set(urls)) == 3 and all(u.startswith("http://127.0.0.1:") and u.endswith("/mcp") for u in urls)


def test_the_rest_form_fills_its_template_and_reads_the_reply_path(svc: AgentService, project: Path) -> None:
    body = {"input": {"text": "{message}"}, "conversation": "{session_id}", "tools": "{tools_url}", "who": "{context}"}
    agent = http_agent(f"{svc.base}/careful/rest", format="rest", body=body, reply_path="output.text")
    assert run("rest", agent, trials=2) == 0
    for record in records("rest"):
        assert judged_pass(record) and calls(record) == CAREFUL_CALLS
    sent = [r["body"] for r in svc.requests]
    assert all(set(b) == {"input", "conversation", "tools", "who"} for b in sent)
    assert all(b["who"] == {"signed_in_customer": "C-17", "channel": "chat"} for b in sent)  # a value, not text
    sessions = {b["conversation"] for b in sent}
    assert len(sessions) == 2  # one session per trial, kept across its turns
    for session in sessions:
        turns = [b for b in sent if b["conversation"] == session]
        assert len(turns) >= 3 and len({b["tools"] for b in turns}) == 1
        assert turns[0]["input"]["text"] == "my order arrived broken. want my money back."  # the newest message only
        assert svc.conversations[session][-1]["role"] == "assistant"  # the service kept the conversation itself


def test_a_transfer_through_the_served_tools_ends_the_trial_as_a_transfer(svc: AgentService, project: Path) -> None:
    assert main(["run", "--run-id", "transfer", "--agent", http_agent(f"{svc.base}/careful/v1"), "--no-progress",
                 "--trials", "1", "scenarios/retail/final-sale-transfer.yaml"]) == 0
    [record] = records("transfer")
    assert record["transcript"]["termination"]["reason"] == "agent_transferred"
    assert calls(record)[-1] == "transfer_to_human" and judged_pass(record)


# --- failures: classified as model calls are -------------------------------------------------------

def test_a_dead_agent_endpoint_stops_the_run_with_exit_3(project: Path, capsys: pytest.CaptureFixture[str],
                                                          llm_sleeps: list[float]) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    assert run("dead", http_agent(dead)) == 3
    err = capsys.readouterr().err
    assert f"agent model {dead}/chat/completions: unreachable: the agent service never answered" in err
    assert records("dead") == []  # no trial is blamed for it: a resume plays them all
    assert len(llm_sleeps) == 4  # retried like a model call first (the default 4 retries)


class AnswersThenDies:
    """An OpenAI-shaped service that answers ``n`` requests and closes its listening socket before it
    sends the last answer: from then on a connection is refused (no timing involved)."""

    def __init__(self, n: int):
        import socket
        import threading

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.thread = threading.Thread(target=self._serve, args=(n,), daemon=True)
        self.thread.start()

    def _serve(self, n: int) -> None:
        for i in range(n):
            conn, _ = self.sock.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                while len(body) < length:
                    body += conn.recv(65536)
                if i == n - 1:
                    self.sock.close()
                answer = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                     "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                         "role": "assistant", "content": "Let me look into that."}}]}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer))


def test_a_service_that_dies_mid_trial_is_said_to_have_stopped_answering(
        project: Path, capsys: pytest.CaptureFixture[str], llm_sleeps: list[float]) -> None:
    service = AnswersThenDies(1)
    assert run("died", http_agent(service.url)) == 3
    err = capsys.readouterr().err
    assert "the agent service stopped answering after turn 1 of this trial" in err and "never answered" not in err
    service.thread.join(5)


def test_a_rejected_credential_stops_the_run_with_exit_3(svc: AgentService, project: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    svc.fail_next.extend([401])
    assert run("auth", http_agent(f"{svc.base}/careful/v1")) == 3
    err = capsys.readouterr().err
    assert "auth" in err and "HTTP 401" in err and records("auth") == []
    assert len(svc.requests) == 1  # not retried


def test_a_503_then_an_answer_is_retried(svc: AgentService, project: Path, llm_sleeps: list[float]) -> None:
    svc.fail_next.extend([503])
    assert run("retry", http_agent(f"{svc.base}/careful/v1")) == 0
    [record] = records("retry")
    assert judged_pass(record) and len(llm_sleeps) == 1
    first = next(e for e in record["transcript"]["events"] if e["type"] == "model_call")
    assert first["role"] == "agent" and first["usage"]["retries"] == 1 and first["error"] is None


@pytest.mark.parametrize("prompt", [2**70, -3, True, 5.0, "12"])
def test_a_token_count_no_call_can_have_is_unknown(svc: AgentService, project: Path, prompt: Any) -> None:
    """An agent service's usage goes through transcript/model.token_count, as a provider's does:
    2**70 stopped the run with an internal error (the head's int64 bound), -3 and true were kept."""
    svc.usage.update(prompt_tokens=prompt, completion_tokens=7)
    assert run("tokens", http_agent(f"{svc.base}/careful/v1", uses_models=True)) == 0
    [record] = records("tokens")
    usage = [e["usage"] for e in record["transcript"]["events"] if e["type"] == "model_call"]
    assert usage and all(u["input_tokens"] is None and u["output_tokens"] == 7 for u in usage), usage
    assert record["head"]["row"]["agent_input_tokens"] is None


def test_a_transient_failure_after_the_agent_acted_is_not_retried(svc: AgentService, project: Path,
                                                                 llm_sleeps: list[float]) -> None:
    run("acted", http_agent(f"{svc.base}/lookup-then-503/v1"))  # exit 3: the only trial is an error
    [record] = records("acted")
    assert record["verdict"] == "error" and record["transcript"]["termination"]["reason"] == "error"
    assert calls(record) == ["lookup_order"] and llm_sleeps == []  # a retry would have looked up twice
    error = next(e for e in record["transcript"]["events"] if e["type"] == "model_call")["error"]
    assert "HTTP 503" in error and "not retried: the agent had already called 1 tool(s) in this attempt" in error


def test_an_agent_that_calls_no_served_tool_is_not_judged_on_state_or_trajectory(
        svc: AgentService, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run("silent", http_agent(f"{svc.base}/silent/v1"))
    report = " ".join(capsys.readouterr().out.split())  # as printed, but for the terminal's line breaks
    assert "state was not run: the agent service called none of the served tools" in report
    [record] = records("silent")
    assert calls(record) == []
    blind = [c for c in record["checks"] if c["kind"] in ("state", "trajectory", "policy")]
    assert {c["kind"] for c in blind} == {"state", "trajectory", "policy"}  # forbidden calls unseen: no pass
    assert len(blind) >= 9 and all(c["status"] == "not_run" for c in blind), blind
    assert all("called none of the tools simlab served it" in c["reason"] for c in blind)
    assert record["verdict"] != "pass"
    # a Python agent that calls no tool is still judged: the state says what it did
    assert run("py-silent", "python:tests.support:kv_agent") in (0, 3)
    [py] = records("py-silent")
    assert any(c["kind"] == "state" and c["status"] == "fail" for c in py["checks"])


def test_a_loop_inside_served_calls_ends_the_trial_as_a_loop(svc: AgentService, project: Path) -> None:
    run("loop", http_agent(f"{svc.base}/loop/v1"))
    [record] = records("loop")
    termination = record["transcript"]["termination"]
    assert termination["reason"] == "agent_loop" and "lookup_order called 3 times in a row" in termination["detail"]
    assert calls(record) == ["lookup_order"] * 3  # recorded up to the call that tripped it
    told = [text for name, _, is_error, text in svc.tool_log if is_error]
    assert told and told[-1].startswith("simlab ended this trial (agent_loop)")


def test_the_key_and_headers_are_sent_and_never_stored(svc: AgentService, project: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    key = "team-agent-secret-0123456789"
    monkeypatch.setenv("TEAM_AGENT_KEY", key)
    monkeypatch.setenv("TEAM_NAME", "checkout")
    agent = http_agent(f"{svc.base}/careful/v1", api_key_env="TEAM_AGENT_KEY", headers={"X-Team": "${TEAM_NAME}"})
    assert run("keyed", agent) == 0
    assert all(r["headers"]["authorization"] == f"Bearer {key}" for r in svc.requests)
    assert all(r["headers"]["x-team"] == "checkout" for r in svc.requests)
    stored = "".join(p.read_text() for p in Path("transcripts/keyed").rglob("*") if p.suffix in (".json", ".jsonl"))
    assert key not in stored and "TEAM_AGENT_KEY" not in stored


def test_a_service_that_echoes_its_headers_never_gets_the_key_stored(svc: AgentService, project: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables a spec names are secrets whatever they are called (no _KEY or _TOKEN in the name)."""
    pat, team = "ghx-support-bot-pat-0123456789", "team-checkout-internal-42"
    monkeypatch.setenv("SUPPORT_BOT_PAT", pat)
    monkeypatch.setenv("TEAM_ROUTE", team)
    agent = http_agent(f"{svc.base}/echo-headers/v1", api_key_env="SUPPORT_BOT_PAT", headers={"X-Route": "${TEAM_ROUTE}"})
    run("echoed", agent)
    assert svc.requests and all(r["headers"]["authorization"] == f"Bearer {pat}" for r in svc.requests)
    replies = [t for r in records("echoed") for kind, t in conversation(r) if kind == "agent"]
    assert replies and all("You sent:" in t and "authorization" in t for t in replies)
    assert main(["report", "echoed", "--html", "echoed.html"]) in (0, 1, 3)
    stored = "".join(p.read_text() for p in Path("transcripts/echoed").rglob("*") if p.suffix in (".json", ".jsonl"))
    stored += Path("echoed.html").read_text()
    assert pat not in stored and team not in stored


@pytest.mark.parametrize("cap", [None, 100_000])
def test_an_endless_answer_is_cut_at_the_reply_cap_and_is_the_agents_failure(svc: AgentService, project: Path,
                                                                              cap: int | None) -> None:
    settings = {"max_reply_bytes": cap} if cap else {}
    run("flood", http_agent(f"{svc.base}/flood/v1", **settings))
    [record] = records("flood")
    termination = record["transcript"]["termination"]
    assert record["verdict"] == "fail" and termination["reason"] == "agent_error"
    assert f"over {cap or 2_000_000:,} bytes (max_reply_bytes)" in termination["detail"]  # read no further


def test_a_missing_key_variable_stops_the_run_before_any_request(svc: AgentService, project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("TEAM_AGENT_KEY", raising=False)
    assert run("no-key", http_agent(f"{svc.base}/careful/v1", api_key_env="TEAM_AGENT_KEY")) == 3
    assert "environment variable TEAM_AGENT_KEY is not set" in capsys.readouterr().err
    assert svc.requests == [] and records("no-key") == []


def test_an_answer_that_is_no_reply_is_the_agents_error(svc: AgentService, project: Path) -> None:
    body = {"input": {"text": "{message}"}, "conversation": "{session_id}", "tools": "{tools_url}", "who": "{context}"}
    run("no-reply", http_agent(f"{svc.base}/careful/rest", format="rest", body=body, reply_path="output.answer"))
    [record] = records("no-reply")
    termination = record["transcript"]["termination"]
    assert termination["reason"] == "agent_error" and record["verdict"] == "fail"
    assert "the agent's answer has no text at output.answer ('answer' not found)" in termination["detail"]


def test_without_the_serve_extra_an_http_agent_is_a_clear_error(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if it were not installed
    assert run("no-extra", "http://127.0.0.1:9/v1") == 2
    assert "needs mcp (the serve extra), which is not installed: pip install 'simlab[serve]'" in capsys.readouterr().err


def test_a_gzip_bomb_is_cut_at_the_reply_cap_while_it_inflates(svc: AgentService, project: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """2 KB on the wire, 200 MB inflated: simlab inflates within max_reply_bytes, never asking zlib
    for more than the cap in one step (httpx inflated a chunk whole: a 1.8 KB body took simlab's
    memory to 2 GB before the cap was checked)."""
    import zlib

    made: list[int] = []  # the size of every piece zlib inflated in this process
    inflater = zlib.decompressobj

    class Counted:
        def __init__(self, *args: Any) -> None:
            self.inner = inflater(*args)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            out = self.inner.decompress(data, max_length)
            made.append(len(out))
            return out

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    monkeypatch.setattr(zlib, "decompressobj", Counted)  # whoever inflates it: simlab, or httpx before
    run("bomb", http_agent(f"{svc.base}/gzip-bomb/v1"))
    [record] = records("bomb")
    termination = record["transcript"]["termination"]
    assert termination["reason"] == "agent_error" and "over 2,000,000 bytes (max_reply_bytes)" in termination["detail"]
    assert made and max(made) <= 2_000_001, max(made)  # never the 200 MB it inflates to


@pytest.mark.parametrize(("behaviour", "reason", "said"), [
    ("bad-gzip", "agent_error", "the agent service's answer is not the gzip it says it is"),
    ("surrogate", None, None),
    ("content-strings", None, None),
])
def test_odd_answers_are_read_or_are_the_agents_error(svc: AgentService, project: Path, behaviour: str,
                                                      reason: str | None, said: str | None) -> None:
    """A body that is not its Content-Encoding stopped the run as a refused request; a lone
    surrogate crashed the simulated user (blamed on it); content as a list of strings was dropped."""
    run(behaviour, http_agent(f"{svc.base}/{behaviour}/v1"))
    [record] = records(behaviour)
    termination = record["transcript"]["termination"]
    assert termination["reason"] == reason if reason else termination["reason"] not in ("agent_error", "error")
    if said:
        assert said in termination["detail"]
    replies = [t for kind, t in conversation(record) if kind == "agent"]
    if behaviour == "surrogate":
        assert replies and all(t == "Hi \ufffd there" for t in replies)
    if behaviour == "content-strings":
        assert replies and all(t == "Let me look into that." for t in replies)


def test_a_redirect_stops_the_run_naming_where_it_points(svc: AgentService, project: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert run("moved", http_agent(f"{svc.base}/redirect/v1")) == 3
    err = capsys.readouterr().err
    assert "answered 307 (a redirect to /careful/v1/chat/completions/)" in err and "does not follow redirects" in err
    assert records("moved") == []


def test_an_error_page_is_masked_before_it_is_cut_and_said_on_one_line(svc: AgentService, project: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The key sat past the 300 characters kept of an error body: cut first, 25 of its 28
    characters were left to print and store. A body's newlines forged lines of simlab's output."""
    key = "s3cr3tV4lu3-abcdefghijKLMNOP"
    monkeypatch.setenv("TEAM_AGENT_KEY", key)
    run("echo-500", http_agent(f"{svc.base}/echo-key-500/v1", api_key_env="TEAM_AGENT_KEY"))
    out = capsys.readouterr()
    stored = "".join(p.read_text() for p in Path("transcripts/echo-500").rglob("*") if p.suffix in (".json", ".jsonl"))
    assert key[:10] not in out.out + out.err and key[:10] not in stored
    [record] = records("echo-500")  # the page was kept, its key masked (not left out)
    assert "auth=Bearer ***" in record["transcript"]["termination"]["detail"]
    run("forged", http_agent(f"{svc.base}/forged-500/v1"))
    out = capsys.readouterr()
    assert "\nresult: all gates held (exit 0)" not in out.out + out.err
    [record] = records("forged")
    assert "oops\\nresult: all gates held" in record["transcript"]["termination"]["detail"]


def test_an_error_status_decides_whatever_the_size_of_its_page(svc: AgentService, project: Path,
                                                              llm_sleeps: list[float]) -> None:
    """A CDN's 6 KB 502 page with a 4 KB reply cap was the agent's failure (the cap was read first)."""
    run("cdn", http_agent(f"{svc.base}/big-502/v1", max_reply_bytes=4096))
    [record] = records("cdn")
    assert record["verdict"] == "error" and record["head"]["row"]["blame"] == "provider"
    assert "HTTP 502" in record["transcript"]["termination"]["detail"]


def test_an_openai_format_pin_reads_back_so_its_trials_agent_is_checked(svc: AgentService, project: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """run.json pinned the default reply_path, which the spec refused for format openai: every
    such run warned that its trials' agent could not be checked."""
    assert run("pinned", http_agent(f"{svc.base}/careful/v1")) == 0
    assert "cannot be checked" not in capsys.readouterr().out
    assert main(["report", "pinned"]) == 0
    assert "cannot be checked" not in capsys.readouterr().out


def test_header_values_are_never_pinned(svc: AgentService, project: Path) -> None:
    """A literal header value may be a credential by any name (X-Signature): it was pinned in
    run.json and in every transcript's agent pin."""
    signature = "sig-4f9a8b7c6d5e"
    assert run("signed", http_agent(f"{svc.base}/careful/v1", headers={"X-Signature": signature})) == 0
    assert all(r["headers"]["x-signature"] == signature for r in svc.requests)  # sent
    stored = "".join(p.read_text() for p in Path("transcripts/signed").rglob("*") if p.suffix in (".json", ".jsonl"))
    assert signature not in stored and "X-Signature" in stored  # which headers were sent is pinned
