"""Secrets never reach disk or screen: a run whose agent, simulator and judge carry API keys (by
environment variable), bearer tokens and key headers (in params), against providers that echo
them back in errors, writes none of those values anywhere: run.json, trials.jsonl, results.parquet,
summary.json, reports, JUnit, stdout, stderr or the log."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.llm.fakes import unregister_fake
from simlab.llm.faults import TRANSIENT, Fault, FaultPlan, FaultyModel
from tests.fixtures.hostile.helpers import agent_reply, judge_reply, read_lines, user_reply, write_llm_project

AGENT_KEY = "sk-FAKEagent-1b2c3d4e5f60718293a4"
SIM_KEY = "FAKEsim-cred-9f8e7d6c5b4a39281706"  # not key-shaped: it must be masked because it is the key
JUDGE_KEY = "FAKEjudge-0a1b2c3d4e5f6a7b8c9d"
AGENT_BEARER = "tok-FAKEbearer-5a6b7c8d9e0f1a2b"
SIM_HEADER = "xk-FAKEheader-3c4d5e6f7a8b9c0d"
SECRETS = [AGENT_KEY, SIM_KEY, JUDGE_KEY, AGENT_BEARER, SIM_HEADER]


@pytest.fixture
def keyed(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMLAB_T_AGENT_API_KEY", AGENT_KEY)
    monkeypatch.setenv("SIMLAB_T_SIM_CRED", SIM_KEY)
    monkeypatch.setenv("SIMLAB_T_JUDGE_API_KEY", JUDGE_KEY)  # a judge has no api_key_env yet: the provider's env
    log_path = tmp_path / "simlab.log"
    handler = logging.FileHandler(log_path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    names: list[str] = []
    yield names, log_path
    root.removeHandler(handler)
    root.setLevel(old_level)
    handler.close()
    for name in names:
        unregister_fake(name)


def judge_echoing(messages, tools=None):
    return judge_reply(messages, tools)


class EchoingJudge(FaultyModel):
    """A judge provider that puts the key it was configured with into its error messages."""

    async def __call__(self, messages, tools=None, seed=None, api_key=None, headers=None):
        return await super().__call__(messages, tools, seed=seed, api_key=os.environ["SIMLAB_T_JUDGE_API_KEY"],
                                      headers={"Authorization": f"Bearer {os.environ['SIMLAB_T_JUDGE_API_KEY']}"})


def project(tmp_path: Path, names: list[str], agent_plan: FaultPlan) -> tuple[str, str, str]:
    echo = {"echo_secrets": True}
    agent = FaultyModel(agent_reply, agent_plan).register("sec-agent")
    user = FaultyModel(user_reply, FaultPlan.spread(0.3, TRANSIENT, seed=2, **echo)).register("sec-user")
    judge = EchoingJudge(judge_echoing, FaultPlan.spread(0.3, TRANSIENT, seed=3, **echo)).register("sec-judge")
    names += ["sec-agent", "sec-user", "sec-judge"]
    write_llm_project(tmp_path, agent="placeholder", scenarios=1, trials=8, rubric=True, success_phrases=False)
    (tmp_path / "simlab.yaml").write_text(f"""\
agent:
  model: {agent}
  api_key_env: SIMLAB_T_AGENT_API_KEY
  params:
    extra_headers: {{Authorization: "Bearer {AGENT_BEARER}"}}
simulator:
  model: {user}
  api_key_env: SIMLAB_T_SIM_CRED
  allow_same_family: true
  params:
    extra_headers: {{X-Api-Key: "{SIM_HEADER}"}}
judge: {judge}
trials: 8
concurrency: 4
""")
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "s.yaml").write_text("id: s\nscenarios: ['../scenarios/*.yaml']\ngates: ['pass^1 >= 0.5']\n")
    return agent, user, judge


def scan(tmp_path: Path, text: str) -> list[str]:
    """Where any secret appears: every file the run left (raw bytes, parquet decoded too) and ``text``."""
    found = []
    for path in tmp_path.rglob("*"):
        if not path.is_file() or path.name == "simlab.yaml":  # the user's own config: the input, not output
            continue
        data = path.read_bytes()
        for secret in SECRETS:
            if secret.encode() in data:
                found.append(f"{path.relative_to(tmp_path)}: {secret}")
        if path.suffix == ".parquet":
            import pandas as pd  # here: collecting the suite must not pay for pandas

            frame = pd.read_parquet(path).astype(str).to_string()
            found += [f"{path.name} (decoded): {s}" for s in SECRETS if s in frame]
    found += [f"output: {s}" for s in SECRETS if s in text]
    return found


def test_no_secret_reaches_any_file_or_the_screen(tmp_path, monkeypatch, capfd, keyed, llm_sleeps):
    names, log_path = keyed
    agent_plan = FaultPlan.spread(0.3, TRANSIENT, seed=1, echo_secrets=True)
    project(tmp_path, names, agent_plan)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "sec", "--no-progress"]) == 0
    records = read_lines(tmp_path / "transcripts/sec/trials.jsonl")
    assert len(records) == 8 and sum(c["usage"]["retries"] for r in records for c in r["transcript"]["events"]
                                     if c["type"] == "model_call") > 0  # errors echoing keys did happen
    assert main(["report", "sec", "--format", "markdown", "--out", "report.md"]) == 0
    assert main(["report", "sec", "--json"]) == 0
    assert main(["gate", "sec", "--suite", "suites/s.yaml", "--junit", "junit.xml"]) in (0, 1, 3)
    out, err = capfd.readouterr()
    log = log_path.read_text(encoding="utf-8")
    assert "retry" in log and "***" in log  # the log saw the echoing errors, masked
    assert scan(tmp_path, out + err + log) == []


@pytest.mark.parametrize("fault", [Fault.AUTH, Fault.FORBIDDEN, Fault.BAD_REQUEST])
def test_a_refusal_that_echoes_the_key_is_reported_without_it(tmp_path, monkeypatch, capfd, keyed, fault):
    names, log_path = keyed
    project(tmp_path, names, FaultPlan({fault: 1.0}, echo_secrets=True))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "refused", "--no-progress"]) == 3
    out, err = capfd.readouterr()
    assert "agent model simlab-fake/sec-agent" in err and "***" in err
    assert scan(tmp_path, out + err + log_path.read_text(encoding="utf-8")) == []


def test_the_scan_would_see_a_leak(tmp_path):
    (tmp_path / "leak.txt").write_text(f"oops {SIM_KEY}")
    assert scan(tmp_path, AGENT_BEARER) == [f"leak.txt: {SIM_KEY}", f"output: {AGENT_BEARER}"]


@pytest.mark.parametrize("url, masked", [
    ("http://user:pass@host:8000/v1", "http://user:***@host:8000/v1"),
    ("https://tok3n@host/v1", "https://***@host/v1"),
    ("http://host/v1?api_key=abc123&x=1", "http://host/v1?api_key=***&x=1"),
    ("http://localhost:8000/v1", "http://localhost:8000/v1"),
])
def test_mask_url_hides_credentials_and_keeps_the_rest(url, masked):
    from simlab.redact import mask_url

    assert mask_url(url) == masked


def test_a_secret_is_masked_as_json_escapes_it(monkeypatch):
    """A base64 key echoed by an encoder that writes / as \\/ (PHP's, some Java libraries') was
    printed and stored as it came; escaped as JSON holds it (a quote in it), it was stored too."""
    from simlab.redact import holds_secret, mask_values

    key = 'Zm9v/YmFy+cXV4/"quoted"=='
    monkeypatch.setenv("TEAM_SERVICE_KEY", key)
    slashed, json_form = key.replace("/", "\\/"), key.replace('"', '\\"')
    both = json_form.replace("/", "\\/")
    for text in (f"echo: {key}", f'{{"auth": "{slashed}"}}', f'{{"auth": "{json_form}"}}', f'{{"auth": "{both}"}}'):
        assert holds_secret(text.encode()), text
        masked = mask_values(text)
        assert "YmFy" not in masked and "***" in masked, masked
