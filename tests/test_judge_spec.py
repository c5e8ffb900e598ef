"""The judge is configured like the agent: a model string, or a mapping with its endpoint, the
environment variable holding its key, and extra parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from simlab.cli.main import main
from simlab.errors import UsageError
from simlab.llm.fakes import register_fake, unregister_fake
from simlab.runner.factory import build_judge
from simlab.specs import JudgeSpec
from tests.fixtures.hostile.helpers import write_llm_project
from tests.support import kv_llm_agent


def test_a_judge_is_a_model_string_or_a_mapping() -> None:
    assert JudgeSpec.model_validate("openai/gpt-4o-2024-08-06").model == "openai/gpt-4o-2024-08-06"
    spec = JudgeSpec.model_validate({"model": "openai/m", "api_base": "http://localhost:8080/v1",
                                     "api_key_env": "JUDGE_KEY", "params": {"top_p": 0.5}})
    assert (spec.api_base, spec.api_key_env, spec.params) == ("http://localhost:8080/v1", "JUDGE_KEY", {"top_p": 0.5})
    for bad in ("python:mod:fn", "  ", {"model": "m", "temprature": 0}):
        with pytest.raises(ValidationError):
            JudgeSpec.model_validate(bad)


def test_the_pin_is_the_model_string_unless_more_is_set() -> None:
    assert JudgeSpec(model="openai/m").pin() == "openai/m"  # as run.json has always pinned a judge
    assert JudgeSpec(model="openai/m", api_base="http://h/v1").pin() == {"model": "openai/m", "api_base": "http://h/v1",
                                                                         "params": {}}


def test_build_judge_passes_endpoint_key_variable_and_params_on() -> None:
    judge = build_judge({"model": "openai/m", "api_base": "http://h/v1", "api_key_env": "JUDGE_KEY",
                         "params": {"top_p": 0.5}})
    assert (judge.model, judge.api_base, judge.api_key_env, judge.params, judge.temperature) == (
        "openai/m", "http://h/v1", "JUDGE_KEY", {"top_p": 0.5}, 0.0)
    assert build_judge(None) is None and build_judge("openai/m").api_base is None
    with pytest.raises(UsageError, match="judge 'python:m:f'"):
        build_judge("python:m:f")


def test_a_run_uses_the_configured_judge_with_its_key(tmp_path: Path, monkeypatch, capsys) -> None:
    keys: list[Any] = []

    def judge_fn(messages: list[dict[str, Any]], tools: Any = None, api_key: Any = None) -> str:
        keys.append(api_key)
        return '{"verdict": "yes", "reason": "polite"}'

    agent, judge = register_fake("js-agent", kv_llm_agent), register_fake("js-judge", judge_fn)
    try:
        extra = f"judge:\n  model: {judge}\n  api_key_env: SIMLAB_TEST_JUDGE_KEY\n  params: {{top_p: 0.9}}\n"
        write_llm_project(tmp_path, agent=agent, scenarios=1, trials=2, rubric=True, extra=extra)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("SIMLAB_TEST_JUDGE_KEY", "sk-judge-secret-123")
        assert main(["run", "--run-id", "j", "--no-progress"]) == 0
    finally:
        unregister_fake("js-agent")
        unregister_fake("js-judge")
    assert keys and set(keys) == {"sk-judge-secret-123"}  # read from the variable at call time
    records = [json.loads(x) for x in (tmp_path / "transcripts/j/trials.jsonl").read_text().splitlines()]
    rubric = [c for r in records for c in r["checks"] if c["name"] == "rubric:polite"]
    assert [c["status"] for c in rubric] == ["pass", "pass"]
    manifest = (tmp_path / "transcripts/j/run.json").read_text()
    assert json.loads(manifest)["pins"]["judge"] == {"model": judge, "params": {"top_p": 0.9}}
    assert "sk-judge-secret-123" not in manifest + (tmp_path / "transcripts/j/trials.jsonl").read_text()


def test_a_bad_judge_flag_is_a_usage_error(tmp_path: Path, monkeypatch, capsys) -> None:
    write_llm_project(tmp_path, agent="python:tests.support:kv_agent", scenarios=1, trials=1)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "b", "--no-progress", "--judge", "python:m:f"]) == 2
    assert "--judge 'python:m:f': Value error, a judge is a LiteLLM model" in capsys.readouterr().err


def test_one_response_format_schema_for_every_judge_kind_is_refused() -> None:
    """The rubric, groundedness and drift judges answer different JSON shapes: a json_schema set in
    the judge's params would break all but one of them."""
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    with pytest.raises(ValidationError, match="different JSON shapes"):
        JudgeSpec.model_validate({"model": "openai/m", "params": {"response_format": schema}})
    ok = JudgeSpec.model_validate({"model": "openai/m", "params": {"response_format": {"type": "json_object"}}})
    assert ok.params["response_format"] == {"type": "json_object"}
