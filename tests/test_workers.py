"""`simlab run --workers N`: every unit once, the same results as one process, kills and resumes."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.runner.store import encode_record
from simlab.runner.workers import LockedAppender
from simlab.transcript import Termination, Transcript, TrialRecord
from tests.support import TrialGate, write_project
from tests.test_shard import records

REPO = Path(__file__).resolve().parents[1]
GATED = "python:tests.support:gated_kv_agent"
def demo_project(root: Path) -> Path:
    root.mkdir()
    for name in ("simlab.yaml", "scenarios", "personas", "examples"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    return root


def test_two_workers_play_every_unit_once_with_the_results_of_one_process(tmp_path, monkeypatch):
    for name, extra in [("one", []), ("two", ["--workers", "2", "--concurrency", "3"])]:
        monkeypatch.chdir(demo_project(tmp_path / name))
        assert main(["run", "--run-id", "demo", "--trials", "2", "--no-progress", *extra]) == 0
    one = records(tmp_path / "one/transcripts/demo/trials.jsonl")
    two = records(tmp_path / "two/transcripts/demo/trials.jsonl")  # raises on a unit written twice
    assert len(one) == 20 and one == two


def test_locked_appender_cuts_a_half_line_left_by_a_killed_writer(tmp_path):
    path = tmp_path / "trials.jsonl"
    path.write_bytes(b'{"unit_id": "a#1"}\n{"unit_id": "a#2", "transcr')
    record = TrialRecord(unit_id="a#3", transcript=Transcript(
        run_id="r", unit_id="a#3", scenario_id="a", persona_id="p", domain="kv", trial=3, seed=1,
        agent={"kind": "python", "ref": "x:y"}, simulator={"kind": "rules", "ref": "rules"},
        termination=Termination(reason="goal_reached")))
    appender = LockedAppender(path)
    appender.append_lines([encode_record(record)])
    appender.close()
    lines = path.read_bytes().splitlines(keepends=True)
    assert [json.loads(line)["unit_id"] for line in lines] == ["a#1", "a#3"]
    assert all(line.endswith(b"\n") for line in lines)


def _start(root: Path, gate: TrialGate | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{root}", **(gate.env() if gate else {})}
    return subprocess.Popen(
        [sys.executable, "-m", "simlab.cli.main", "run", "--run-id", "k", "--no-progress", "--workers", "2"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def _wait_for_lines(path: Path, at_least: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (path.exists() and len(path.read_bytes().splitlines()) >= at_least):
        time.sleep(0.01)


def _wait_for_lock_free(folder: Path) -> None:
    """Workers of a killed parent get SIGTERM and exit; until then they rightly keep the run's lock."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        fd = os.open(folder / ".lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            time.sleep(0.05)
        finally:
            os.close(fd)


def _workers_of(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


@pytest.mark.parametrize("victim", ["worker", "parent"])
def test_a_killed_run_resumes_with_every_unit_exactly_once(tmp_path, victim):
    if shutil.which("pgrep") is None:
        pytest.skip("needs pgrep")
    write_project(tmp_path, scenarios=4, trials=10, agent=GATED)
    path = tmp_path / "transcripts" / "k" / "trials.jsonl"
    gate = TrialGate(tmp_path / "gate")
    gate.allow(3)  # three trials may play; the rest wait, so the kill lands mid-run
    proc = _start(tmp_path, gate)
    _wait_for_lines(path, 3)
    workers = _workers_of(proc.pid)
    assert len(workers) == 2
    os.kill(workers[0] if victim == "worker" else proc.pid, signal.SIGKILL)
    gate.allow(40)  # a killed worker's partner plays every unit left (those it takes from the pipe)
    _, err = proc.communicate(timeout=60)
    if victim == "worker":
        assert proc.returncode == 3 and b"worker" in err and b"died" in err
    _wait_for_lock_free(path.parent)
    assert len(path.read_bytes().splitlines()) < 40  # the killed worker's trials in flight are not done
    proc = _start(tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert len(records(path)) == 40  # raises on a unit written twice
    assert path.read_bytes().endswith(b"\n")


def test_a_worker_held_by_a_slow_trial_leaves_the_other_units_to_the_others(tmp_path):
    """Units are handed out as workers free up, not dealt up front: while one trial holds its
    worker's only slot, the other worker plays every other unit (a fixed share would leave the
    held worker's share waiting behind it)."""
    write_project(tmp_path, scenarios=4, trials=5, agent="python:tests.support:held_kv_agent")
    (tmp_path / "simlab.yaml").write_text((tmp_path / "simlab.yaml").read_text().replace("concurrency: 4",
                                                                                         "concurrency: 2"))
    gate = TrialGate(tmp_path / "gate")
    (gate.folder / "hold").touch()
    path = tmp_path / "transcripts" / "k" / "trials.jsonl"
    proc = _start(tmp_path, gate)
    try:
        _wait_for_lines(path, 19)
        assert len(path.read_bytes().splitlines()) == 19  # every unit but the held one
    finally:
        (gate.folder / "release").touch()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert len(records(path)) == 20  # raises on a unit written twice


def test_ctrl_c_stops_every_worker_and_keeps_finished_trials(tmp_path):
    write_project(tmp_path, scenarios=4, trials=10, agent=GATED)
    path = tmp_path / "transcripts" / "k" / "trials.jsonl"
    gate = TrialGate(tmp_path / "gate")
    gate.allow(3)
    proc = _start(tmp_path, gate)
    _wait_for_lines(path, 3)
    workers = _workers_of(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert b"Resume with: simlab run --run-id k" in err and b"Traceback" not in err
    assert not [w for w in workers if _alive(w)]
    assert len(records(path)) == 3


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_permanent_provider_error_in_a_worker_stops_the_run_with_exit_3(tmp_path, monkeypatch, capsys):
    import litellm

    from simlab.llm.fakes import register_fake, unregister_fake

    def refuse(messages, tools=None, **_):
        raise litellm.AuthenticationError(message="invalid api key", llm_provider="openai", model="x")

    agent = register_fake("workers-refuse", refuse)
    try:
        write_project(tmp_path, scenarios=2, trials=4, agent=agent)
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--run-id", "a", "--no-progress", "--workers", "2"]) == 3
    finally:
        unregister_fake("workers-refuse")
    assert "auth" in capsys.readouterr().err
    trials = tmp_path / "transcripts" / "a" / "trials.jsonl"
    assert not trials.exists() or trials.read_text() == ""
