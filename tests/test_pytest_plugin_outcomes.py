"""The pytest plugin keeps a regression and a scenario it could not judge apart, as CI needs them
(issue 24): a gate that failed is a pytest *failure* (JUnit ``<failure>``); an infrastructure
error, an incomplete run or a gate undefined for the trials played (n < k) is a pytest *error*
(JUnit ``<error>``), whatever the figures. The plugin runs as CI runs it, in a pytest session of a
child process (pytester) on the demo project; ``evaluate`` runs in this one."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import copy_demo

pytest_plugins = ["pytester"]

SCENARIO = "refund-damaged-card"
SLOW = pytest.mark.slow  # a pytest session in a child process each (the plugin as CI runs it)

CONFTEST = """
import litellm

from simlab.llm import retry
from simlab.llm.fakes import register_fake


def refuse(messages, tools=None, **_):
    raise litellm.AuthenticationError(message="invalid api key", llm_provider="openai", model="x")


def down(messages, tools=None, **_):
    raise litellm.ServiceUnavailableError(message="overloaded", llm_provider="openai", model="x")


async def no_wait(seconds):
    return None


def pytest_configure(config):
    retry.backoff_sleep = no_wait  # retries, without their back-off
    register_fake("plugin-refuse", refuse)  # the provider refuses the key: simlab stops the run
    register_fake("plugin-down", down)  # the provider is down for every call: each trial is an error
"""


@pytest.fixture
def demo(pytester: pytest.Pytester) -> pytest.Pytester:
    """The demo project, with fake model agents registered by its conftest.py."""
    copy_demo(pytester.path)
    (pytester.path / "conftest.py").write_text(CONFTEST)
    return pytester


def _run(pytester: pytest.Pytester, agent: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("scenarios/retail", "-p", "no:randomly", "-p", "no:cacheprovider",
                                         "--simlab-agent", agent, "--simlab-trials", "2", "-k", SCENARIO,
                                         "--junitxml", "out.xml", *args, timeout=600)


def _outcome(path: Path) -> tuple[str, str]:
    """The JUnit testcase's one outcome element (failure, error, skipped or none) and its message."""
    case = ET.parse(path).getroot().find("testsuite/testcase")
    assert case is not None and case.get("name") == SCENARIO
    found = [child for child in case if child.tag in ("failure", "error", "skipped")]
    assert len(found) <= 1, [child.tag for child in found]
    return (found[0].tag, found[0].get("message") or "") if found else ("passed", "")


def _unavailable(messages, tools=None, **_):
    import litellm

    raise litellm.ServiceUnavailableError(message="overloaded", llm_provider="openai", model="x")


@pytest.fixture
def fake_agent():
    """``fake_agent(name, reply)``: a fake model agent on LiteLLM's real path, unregistered after the test."""
    from simlab.llm.fakes import register_fake, unregister_fake

    names: list[str] = []

    def make(name: str, reply) -> str:
        names.append(name)
        return register_fake(name, reply)

    yield make
    for name in names:
        unregister_fake(name)


@SLOW
def test_a_regression_is_a_failure(demo: pytest.Pytester) -> None:
    result = _run(demo, "python:examples.retail_agents:flaky_agent")
    result.assert_outcomes(failed=1)
    assert _outcome(demo.path / "out.xml")[0] == "failure"


@SLOW
def test_a_refusing_provider_is_a_pytest_error_not_a_failure(demo: pytest.Pytester) -> None:
    """The provider refuses the key: simlab stops the run (exit 3 on the command line)."""
    result = _run(demo, "simlab-fake/plugin-refuse")
    result.assert_outcomes(errors=1)
    tag, message = _outcome(demo.path / "out.xml")
    assert tag == "error", message
    text = result.stdout.str()
    assert f"ERROR scenarios/retail/{SCENARIO}.yaml::{SCENARIO}" in text
    assert f"scenario {SCENARIO}: not run (exit 3): run stopped: agent model" in text and "Traceback" not in text


@SLOW
def test_trials_ended_in_an_infrastructure_error_are_a_pytest_error_whatever_the_figures(
        demo: pytest.Pytester) -> None:
    """The provider is down for every call: the trials end as errors; their valid figures are empty
    and a gate on them could pass or fail by accident: inconclusive."""
    result = _run(demo, "simlab-fake/plugin-down", "--simlab-gate", "error_rate <= 1")
    result.assert_outcomes(errors=1)
    assert _outcome(demo.path / "out.xml")[0] == "error"
    text = result.stdout.str()
    assert f"scenario {SCENARIO}: inconclusive" in text
    assert "inconclusive: 2 of 2 trials ended in an infrastructure error" in text


@SLOW
def test_a_gate_undefined_for_the_trials_played_is_an_error(demo: pytest.Pytester) -> None:
    result = _run(demo, "python:examples.retail_agents:careful_agent", "--simlab-gate", "pass^3 >= 0.5")
    result.assert_outcomes(errors=1)
    assert _outcome(demo.path / "out.xml")[0] == "error"
    assert "gate pass^3 >= 0.5: inconclusive (pass^3 is undefined: 2 valid of 2 trials" in result.stdout.str()


@SLOW
def test_bad_input_is_an_error_not_a_failure(demo: pytest.Pytester) -> None:
    result = _run(demo, "python:examples.retail_agents:no_such_agent")
    result.assert_outcomes(errors=1)
    assert _outcome(demo.path / "out.xml")[0] == "error"
    text = result.stdout.str()
    assert f"scenario {SCENARIO}: not run (exit 2): " in text and "Traceback" not in text


def test_evaluate_raises_inconclusive_for_an_infrastructure_error(tmp_path: Path, fake_agent,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from simlab.errors import InfraError
    from simlab.testing import InconclusiveError, evaluate

    copy_demo(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InconclusiveError) as raised:
        evaluate([f"scenarios/retail/{SCENARIO}.yaml"], agent=fake_agent("evaluate-down", _unavailable), trials=2,
                 run_id="down", gates=["error_rate <= 1"])
    assert isinstance(raised.value, InfraError) and raised.value.exit_code == 3
    assert f"scenario {SCENARIO}: inconclusive" in str(raised.value)
    assert "inconclusive: 2 of 2 trials ended in an infrastructure error" in str(raised.value)
