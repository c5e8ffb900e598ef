"""The pytest plugin (scenario files as items) and simlab.testing.evaluate, run as a team would:
pytest on a folder of scenarios, in a project of its own, in a child process."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SELECT = ["-k", "refund-damaged-card or store-credit-refused"]


@pytest.fixture
def project(demo_project: Path) -> Path:
    return demo_project


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "scenarios/retail", "-q", "-p", "no:randomly",
                           "-p", "no:cacheprovider", "--simlab-trials", "2", *args],
                          cwd=project, capture_output=True, text=True, timeout=600)


def test_the_plugin_is_an_entry_point() -> None:
    assert any(ep.value == "simlab.pytest_plugin" for ep in entry_points(group="pytest11"))


def test_scenarios_pass_with_the_careful_agent_and_write_junit(project: Path) -> None:
    done = _pytest(project, "--simlab-agent", "python:examples.retail_agents:careful_agent", *SELECT,
                   "--junitxml", "out.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    cases = ET.parse(project / "out.xml").getroot().iter("testcase")
    assert sorted(c.get("name") for c in cases) == ["refund-damaged-card", "store-credit-refused"]


def test_the_flaky_agent_fails_naming_checks_and_transcripts(project: Path) -> None:
    done = _pytest(project, "--simlab-agent", "python:examples.retail_agents:flaky_agent", *SELECT)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "FAILED scenarios/retail/refund-damaged-card.yaml::refund-damaged-card" in out
    assert "gate pass^1 >= 1.0: pass^1 = " in out
    assert "before(check_refund_policy, issue_refund)" in out or "trajectory:in_order" in out
    assert "transcripts: " in out and "trials.jsonl" in out


def test_markers_from_tags_and_a_gate_of_ones_own(project: Path) -> None:
    done = _pytest(project, "--simlab-agent", "python:examples.retail_agents:flaky_agent", "-m", "damaged",
                   "--simlab-gate", "pass^1 >= 0.0", "--co")
    assert "refund-damaged-card" in done.stdout and "store-credit-refused" not in done.stdout
    done = _pytest(project, "--simlab-agent", "python:examples.retail_agents:flaky_agent", "-k",
                   "refund-damaged-card", "--simlab-gate", "pass^1 >= 0.0")
    assert done.returncode == 0, done.stdout


def test_without_an_agent_nothing_is_collected(project: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "scenarios/retail", "-q", "-p", "no:cacheprovider"],
                          cwd=project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 5  # no tests collected: YAML files stay YAML files


def test_evaluate_inside_a_test_function(project: Path) -> None:
    from simlab.testing import evaluate

    scenarios = ["scenarios/retail/refund-damaged-card.yaml"]
    run = evaluate(scenarios, agent="python:examples.retail_agents:careful_agent", trials=2, run_id="ok")
    assert run.summary.scenarios["refund-damaged-card"].passes == 2
    with pytest.raises(AssertionError) as failed:
        evaluate(scenarios, agent="python:examples.retail_agents:flaky_agent", trials=2, run_id="bad")
    text = str(failed.value)
    assert "scenario refund-damaged-card: failed" in text and "transcripts: " in text
    assert "fail " in text  # each failing check with its reason


def test_a_run_wide_gate_fails_the_scenario_with_a_reason_instead_of_crashing(project: Path) -> None:
    """tool_f1 and a summary function's key have no per-scenario value: the item says so (never a pass)."""
    from simlab.testing import evaluate, per_scenario

    assert per_scenario("pass^2 >= 0.5") and not per_scenario("tool_f1 >= 0.9")
    assert not per_scenario("my_key >= 0.5") and not per_scenario("attack_success <= 0")
    scenarios = ["scenarios/retail/refund-damaged-card.yaml"]
    for gate in ("tool_f1 >= 0.9", "my_key >= 0.5"):
        with pytest.raises(AssertionError) as failed:
            evaluate(scenarios, agent="python:examples.retail_agents:careful_agent", trials=1,
                     gates=[gate], run_id=f"wide-{gate.split()[0]}")
        assert f"gate {gate}: cannot be decided for one scenario" in str(failed.value)


def test_a_project_made_by_init_finds_its_own_agent_and_domain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """Outside this repository, as a new user has it: the plugin imports the project's own modules
    (library_agent, library_domain) from the project's root, as `simlab run` does."""
    import os

    from simlab.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["init", "mylab"]) == 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for cwd, path in ((tmp_path / "mylab", "scenarios"), (tmp_path, "mylab/scenarios")):
        done = subprocess.run([sys.executable, "-m", "pytest", path, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                               "-p", "no:langsmith_plugin", "--simlab-agent", "python:library_agent:librarian"],
                              cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
        assert "ModuleNotFoundError" not in done.stdout and "Traceback" not in done.stdout
