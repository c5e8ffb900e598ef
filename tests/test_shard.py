"""Shares of the work units: deterministic, disjoint, covering, balanced; `--shard i/N`; merging."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.errors import UsageError
from simlab.runner.plan import plan_units
from simlab.runner.shard import AUTO_SOURCES, parse_shard, resolve_shard, shard_of, shard_units
from tests.support import write_project

TIMING = {"started_at", "duration_s", "latency_s", "time_to_first_action_s", "model_call_latency_s"}


def normal(value):
    """A record without its clock readings: what must be equal between two runs of the same units."""
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def records(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        raw = json.loads(line)
        assert raw["unit_id"] not in out, f"{raw['unit_id']} twice"
        out[raw["unit_id"]] = normal(raw)
    return out


AUTO_VARIABLES = {name for _, index, count, _ in AUTO_SOURCES for name in (index, count)}
UNITS = plan_units({f"scenario-{i}": 100 for i in range(10)}, 0)


def test_assignment_is_sha256_of_the_unit_id():
    number = int.from_bytes(hashlib.sha256(b"scenario-1#7").digest()[:8], "big")
    assert shard_of("scenario-1#7", 4) == number % 4 + 1  # guards against a change that would break resumes


@pytest.mark.parametrize("count", [2, 3, 4, 8])
def test_shards_are_disjoint_cover_everything_and_are_balanced(count):
    shares = [shard_units(UNITS, i, count) for i in range(1, count + 1)]
    ids = [u.unit_id for share in shares for u in share]
    assert sorted(ids) == sorted(u.unit_id for u in UNITS)  # every unit, none twice
    assert shares == [shard_units(UNITS, i, count) for i in range(1, count + 1)]  # the same every time
    expected = len(UNITS) / count
    assert all(abs(len(s) - expected) < 0.2 * expected for s in shares)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", ""])
def test_bad_shard_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


def test_shard_flag_runs_only_its_share(tmp_path, monkeypatch):
    write_project(tmp_path, scenarios=3, trials=4)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "s", "--no-progress", "--shard", "2/3"]) == 0
    got = set(records(tmp_path / "transcripts/s/trials.jsonl"))
    expected = {u.unit_id for u in plan_units({f"kv-{i}": 4 for i in range(3)}, 0) if shard_of(u.unit_id, 3) == 2}
    assert got == expected and got
    assert main(["run", "--run-id", "s", "--no-progress", "--shard", "2/3"]) == 0  # resume: nothing left
    assert set(records(tmp_path / "transcripts/s/trials.jsonl")) == expected


def test_concatenated_shards_are_exactly_the_full_run_and_report_and_grade_work(tmp_path, monkeypatch, capsys):
    folders = {}
    for name, extra in [("full", []), ("one", ["--shard", "1/2"]), ("two", ["--shard", "2/2"])]:
        root = tmp_path / name  # one machine each: same suite, same run id
        root.mkdir()
        write_project(root, scenarios=3, trials=4)
        monkeypatch.chdir(root)
        assert main(["run", "--run-id", "nightly", "--no-progress", *extra]) == 0
        folders[name] = root / "transcripts" / "nightly"
    merged = tmp_path / "full" / "transcripts" / "merged"
    merged.mkdir()
    shutil.copy(folders["one"] / "run.json", merged / "run.json")  # the pins are the same on every shard
    merged_text = (folders["one"] / "trials.jsonl").read_text() + (folders["two"] / "trials.jsonl").read_text()
    (merged / "trials.jsonl").write_text(merged_text)
    assert records(merged / "trials.jsonl") == records(folders["full"] / "trials.jsonl")

    monkeypatch.chdir(tmp_path / "full")
    capsys.readouterr()
    assert main(["report", "merged", "--json"]) == 0
    merged_summary = json.loads(capsys.readouterr().out)
    assert main(["report", "nightly", "--json"]) == 0
    full_summary = json.loads(capsys.readouterr().out)
    assert merged_summary["trials"] == full_summary["trials"] == 12
    assert merged_summary["suite"]["raw"] == full_summary["suite"]["raw"]
    assert merged_summary["scenarios"].keys() == full_summary["scenarios"].keys()
    assert main(["grade", "merged", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trials"] == 12


@pytest.mark.parametrize(("environ", "expected"), [
    ({"SIMLAB_SHARD_INDEX": "0", "SIMLAB_SHARD_COUNT": "4"}, (1, 4)),
    ({"JOB_COMPLETION_INDEX": "3", "SIMLAB_SHARD_COUNT": "4"}, (4, 4)),  # a Kubernetes Indexed Job
    ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"}, (1, 2)),  # GitLab counts from 1
    ({"CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "3"}, (2, 3)),
    ({"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "1"}, (1, 1)),
])
def test_shard_auto_reads_the_engines_variables(environ, expected):
    assert resolve_shard("auto", environ) == expected
    assert resolve_shard("2/5", environ) == (2, 5)  # written out, the flag wins over the environment
    assert resolve_shard(None, environ) == (1, 1)


@pytest.mark.parametrize(("environ", "says"), [
    ({}, "none of SIMLAB_SHARD_INDEX, JOB_COMPLETION_INDEX"),
    ({"JOB_COMPLETION_INDEX": "2"}, "SIMLAB_SHARD_COUNT is not"),
    ({"JOB_COMPLETION_INDEX": "4", "SIMLAB_SHARD_COUNT": "4"},
     r"JOB_COMPLETION_INDEX=4 is not one of 4 shares \(a Kubernetes Indexed Job counts them from 0, so it runs "
     r"from 0 to 3; SIMLAB_SHARD_COUNT=4\)"),  # the variable, as the user set it: never an I/N they did not write
    ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "3"}, r"CI_NODE_INDEX=0 is not one of 3 shares \(GitLab CI parallel "
     r"counts them from 1, so it runs from 1 to 3"),
    ({"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "2"}, "whole numbers"),
])
def test_shard_auto_without_a_usable_environment_is_a_usage_error(environ, says):
    with pytest.raises(UsageError, match=says):
        resolve_shard("auto", environ)


def test_shard_processes_of_an_indexed_job_merge_into_exactly_one_runs_units_and_verdicts(tmp_path):
    """Three machines of a Kubernetes Indexed Job (`--shard auto` from JOB_COMPLETION_INDEX) play one
    suite, `simlab merge` joins their folders, and the merged run is the unsharded run: the same units,
    the same records and the same gate result."""
    def simlab(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if k not in AUTO_VARIABLES} | env
        return subprocess.run([sys.executable, "-m", "simlab", *args], cwd=cwd, env=environ,
                              capture_output=True, text=True, timeout=300)

    assert simlab(tmp_path, "init", "project").returncode == 0
    project = tmp_path / "project"
    suite = project / "suites" / "smoke.yaml"
    suite.write_text(suite.read_text().replace("trials: 4", "trials: 9"))
    count = 3
    machines = []
    for index in range(count):  # a copy of the checkout per pod
        pod = tmp_path / f"pod-{index}"
        shutil.copytree(project, pod)
        done = simlab(pod, "run", "--suite", "suites/smoke.yaml", "--run-id", "nightly", "--shard", "auto",
                      "--no-progress", JOB_COMPLETION_INDEX=str(index), SIMLAB_SHARD_COUNT=str(count))
        assert done.returncode == 0, done.stderr
        assert f"shard {index + 1}/{count} done" in done.stderr
        machines.append(pod / "transcripts" / "nightly")
    full = simlab(project, "run", "--suite", "suites/smoke.yaml", "--run-id", "nightly", "--no-progress")
    merged = simlab(project, "merge", "merged", *map(str, machines))
    assert merged.returncode == 0, merged.stderr
    runs = project / "transcripts"
    assert records(runs / "merged" / "trials.jsonl") == records(runs / "nightly" / "trials.jsonl")
    assert len(records(runs / "nightly" / "trials.jsonl")) == 2 * 9
    gate = simlab(project, "gate", "merged", "--suite", "suites/smoke.yaml")
    assert gate.returncode == full.returncode == 0
    assert gate.stdout.splitlines()[-1] == full.stdout.splitlines()[-1]
