"""The command line end to end: the demo suite, validate, schema, exit codes, no LiteLLM import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def simlab(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simlab.cli.main", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    return tmp_path


def test_demo_suite_runs_offline_through_the_cli(project: Path):
    result = simlab("run", "--run-id", "demo", cwd=project)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (project / "transcripts/demo/trials.jsonl").read_text().splitlines()]
    manifest = json.loads((project / "transcripts/demo/run.json").read_text())
    assert len(records) == manifest["units"] >= 8 * 4
    reasons = {r["transcript"]["termination"]["reason"] for r in records}
    assert "goal_reached" in reasons and len(reasons) > 1  # the flaky demo agent passes and fails
    assert "refund-damaged-card" in result.stdout and "pass^1 [95% CI]" in result.stdout
    again = simlab("run", "--run-id", "demo", cwd=project)
    assert again.returncode == 0 and "already done" in again.stderr


def test_demo_is_deterministic(project: Path):
    simlab("run", "--run-id", "a", "scenarios/retail/refund-damaged-card.yaml", cwd=project)
    simlab("run", "--run-id", "b", "scenarios/retail/refund-damaged-card.yaml", cwd=project)

    def events(run: str) -> list:
        lines = (project / f"transcripts/{run}/trials.jsonl").read_text().splitlines()
        return sorted((r["unit_id"], r["transcript"]["events"]) for r in map(json.loads, lines))

    assert events("a") == events("b")


def test_validate_ok_and_broken(project: Path):
    ok = simlab("validate", cwd=project)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: ")
    bad = project / "scenarios/retail/broken.yaml"
    bad.write_text("id: broken\ntitle: x\ndomain: retail\npersona: nobody\nuser: {goall: x}\n")
    result = simlab("validate", cwd=project)
    assert result.returncode == 2
    assert "broken.yaml:5: user.goall: unknown field" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_with_a_bad_spec_runs_nothing(project: Path):
    (project / "scenarios/retail/broken.yaml").write_text("id: [unclosed\n")
    result = simlab("run", "--run-id", "x", cwd=project)
    assert result.returncode == 2 and "broken.yaml:" in result.stderr and "YAML syntax error" in result.stderr
    assert not (project / "transcripts/x").exists()


def test_unknown_agent_reference_is_a_usage_error(project: Path):
    result = simlab("run", "--agent", "python:examples.retail_agents:nope", cwd=project)
    assert result.returncode == 2 and "has no callable 'nope'" in result.stderr


def test_same_family_simulator_is_refused(project: Path):
    result = simlab("run", "--agent", "openai/gpt-4o-2024-08-06", "--simulator", "openai/gpt-4o-mini-2024-07-18",
                    cwd=project)
    assert result.returncode == 2 and "same model family" in result.stderr


def test_help_and_validate_do_not_import_litellm(project: Path):
    code = ("import sys; from simlab.cli.main import main\n"
            "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as done:\n    rc = done.code\n"  # --help exits
            "assert 'litellm' not in sys.modules, 'litellm imported'; sys.exit(rc)")
    for args in (["validate"], ["schema", "--out", "out"]):
        result = subprocess.run([sys.executable, "-c", code, *args], cwd=project, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        assert result.returncode == 0, result.stderr
    helped = subprocess.run([sys.executable, "-c", code, "--help"], cwd=project, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert helped.returncode == 0, helped.stderr
    assert "litellm imported" not in helped.stderr and "usage: simlab" in helped.stdout


def test_the_resume_hint_is_the_command_that_was_run_with_its_run_id():
    from simlab.cli.run_cmd import resume_command

    assert resume_command(["simlab", "run", "scenarios/a b.yaml", "--agent", "python:m:f", "--trials", "8"],
                          "20261201-220300") == \
        "simlab run 'scenarios/a b.yaml' --agent python:m:f --trials 8 --run-id 20261201-220300"
    assert resume_command(["simlab", "run", "--run-id", "big", "--suite", "s.yaml"], "big") == \
        "simlab run --run-id big --suite s.yaml"


def test_a_report_neither_imports_pandas_nor_keeps_a_nan(tmp_path: Path) -> None:
    """pyarrow's ``from_pandas=True`` imported pandas (0.4 s of every report) to read NaN as null:
    the report reads it as null itself."""
    import pyarrow as pa

    from simlab.results.frames import _array

    assert _array(pa, "agent_cost_usd", [1.5, float("nan"), None]).to_pylist() == [1.5, None, None]
    assert _array(pa, "some_score", [0.5, float("nan")]).to_pylist() == [0.5, None]
    assert _array(pa, "verdict", ["pass", None]).to_pylist() == ["pass", None]
    from tests.sample_runs import write_sample_run

    write_sample_run(tmp_path / "transcripts" / "s")
    code = ("import sys; from simlab.cli.main import main\nrc = main(['report', 's'])\n"
            "assert 'pandas' not in sys.modules, 'pandas imported'; sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode in (0, 1), done.stderr
    assert (tmp_path / "transcripts" / "s" / "results.parquet").exists()
