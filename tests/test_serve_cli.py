"""``simlab serve`` (one hand-driven session over MCP) and what the serve extra costs everyone else:
nothing is imported unless an HTTP agent or ``simlab serve`` asks for it."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.no_backoff import PRELUDE, SKIPPED

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def test_simlab_serve_serves_a_scenarios_state_prints_each_call_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    server = subprocess.Popen([sys.executable, "-m", "simlab.cli.main", "serve", "retail", "--scenario",
                               "scenarios/retail/injection-help-center.yaml"], cwd=tmp_path, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = [server.stdout.readline() for _ in range(3)]  # type: ignore[union-attr]
        assert banner[0].startswith("serving 10 retail tools (5 read, 5 write) on the initial state of scenario "
                                    "injection-help-center, one session, at:"), (banner, server.stderr)
        url = banner[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def agent() -> tuple[str, bool]:
            from mcp import Client  # here: collecting the suite must not pay for mcp

            async with Client(url) as client:
                found = await client.call_tool("search_help_center", {"query": "When will I see my refund?"})
                bad = await client.call_tool("issue_refund", {"order_id": "A123", "amount": 1, "method": "card"})
            return found.content[0].text, bad.is_error

        found, refused = asyncio.run(agent())
        assert "refunds-audit@evil-example.com" in found  # the scenario's state: its planted help-center article
        assert refused
        lines = [server.stdout.readline().rstrip("\n") for _ in range(5)]  # type: ignore[union-attr]
        assert lines[0] == 'tool_call   search_help_center {"query": "When will I see my refund?"}'
        assert lines[1].startswith('tool_result search_help_center {"query": "When will I see my refund?", "results": [')
        assert lines[2].startswith("tool_call   issue_refund")
        assert lines[3].startswith("invalid     issue_refund: arguments do not match the schema: method:")
        assert lines[4].startswith("tool_result issue_refund error: arguments do not match the schema")
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
        assert server.returncode == 0, err
        assert "stopped after 2 tool calls" in err and "Traceback" not in err
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_sigterm_stops_simlab_serve_as_cleanly(tmp_path: Path) -> None:
    server = subprocess.Popen([sys.executable, "-m", "simlab.cli.main", "serve", "retail"], cwd=tmp_path, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().startswith("serving 10 retail tools (5 read, 5 write) on its seed data")  # type: ignore[union-attr]
        server.terminate()  # what a service manager sends
        _, err = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0 and "stopped after 0 tool calls" in err, err


def test_simlab_serve_refuses_a_scenario_of_another_domain(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text((REPO / "scenarios/retail/injection-help-center.yaml").read_text())
    done = subprocess.run([sys.executable, "-m", "simlab.cli.main", "serve", "tests.support:KV", "--scenario",
                           "s.yaml"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "s.yaml: the scenario's domain is 'retail', not 'tests.support:KV'" in done.stderr


def test_nothing_of_the_serve_extra_is_imported_unless_asked_for(tmp_path: Path) -> None:
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    heavy = "('mcp', 'uvicorn', 'starlette', 'simlab.serve.server', 'simlab.sim.http_agent')"
    code = ("import sys, simlab; from simlab.cli.main import main\n"
            "rc = main(sys.argv[1:])\n"
            f"bad = [m for m in {heavy} if m in sys.modules]\n"
            "assert not bad, bad; sys.exit(rc)")
    for args in (["validate"], ["run", "--trials", "1", "--no-progress", "scenarios/retail/refund-damaged-card.yaml"]):
        done = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=ENV, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr


def test_an_http_agent_run_imports_no_litellm_even_when_its_endpoint_fails(tmp_path: Path) -> None:
    from tests.strict_server import free_port

    for name in ("scenarios", "personas"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    code = (PRELUDE + "import sys; from simlab.cli.main import main\n"  # retried, back-off skipped
            "rc = main(sys.argv[1:])\n"
            "assert 'litellm' not in sys.modules, 'litellm imported'; sys.exit(rc)")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    done = subprocess.run([sys.executable, "-c", code, "run", "--agent", dead, "--trials", "1", "--no-progress",
                           "scenarios/retail/refund-damaged-card.yaml"], cwd=tmp_path, env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 3, done.stderr  # classified (unreachable) without LiteLLM's exception classes
    assert f"agent model {dead}/chat/completions: unreachable: the agent service never answered" in done.stderr
    assert done.stderr.count(SKIPPED) == 4  # the default 4 retries, their waits asked for and skipped
