"""``simlab grade --rejudge --judge MODEL`` reads the judge as ``simlab run --judge`` does
(``prepare.judge_flag``): a bare model string keeps the endpoint settings simlab.yaml gives the
judge (api_base, api_key_env, …), so a judge that simlab.yaml points at a local server is asked
there, with its key, never at the provider's public address."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simlab.cli.main import main
from tests.rough_provider import RoughServer

CARD = "scenarios/retail/refund-damaged-card.yaml"


def test_a_rejudge_with_a_bare_judge_model_keeps_its_endpoint_from_simlab_yaml(
    pinned_demo_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = pinned_demo_project
    careful = ["--agent", "python:examples.retail_agents:careful_agent"]
    assert main(["run", CARD, "--run-id", "r", "--trials", "1", "--no-progress", *careful]) == 0
    with RoughServer() as judge, RoughServer() as public:
        # where a bare openai/ model goes without an endpoint: the provider's default, here a local decoy
        monkeypatch.setenv("OPENAI_API_BASE", public.base)
        monkeypatch.setenv("OPENAI_BASE_URL", public.base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-public-default")
        monkeypatch.setenv("JUDGE_KEY", "sk-judge-local")
        with (project / "simlab.yaml").open("a") as f:
            f.write(f"judge: {{model: openai/judge-1, api_base: '{judge.base}', api_key_env: JUDGE_KEY}}\n")
        capsys.readouterr()
        main(["grade", "r", "--rejudge", "--judge", "openai/judge-2", "--json"])
        out, err = capsys.readouterr()
        assert public.requests == [], err
        assert judge.requests, err  # the rubric judge was asked where simlab.yaml says
        assert {r["body"]["model"] for r in judge.requests} == {"judge-2"}
        assert {_auth(r["headers"]) for r in judge.requests} == {"Bearer sk-judge-local"}
        assert "keeping api_base" in err and "sk-judge-local" not in out + err, err
    pin = json.loads((project / "transcripts/r/run.json").read_text())["pins"]["judge"]
    assert pin["model"] == "openai/judge-2" and pin["api_base"] == judge.base, pin


def _auth(headers: dict[str, str]) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == "authorization"), None)
