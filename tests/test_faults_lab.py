"""Faults in the lab itself: SIGKILL and SIGINT at random moments, a full or read-only disk, two
writers on one run. After a resume every planned unit is there exactly once and the results equal
those of a run that was never interrupted."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simlab.cli.main import main
from tests.fixtures.hostile.helpers import REPO, comparable, read_lines
from tests.support import TrialGate, write_project

AGENT = "python:tests.fixtures.hostile.helpers:slow_agent"


def project(root: Path, scenarios: int = 6, trials: int = 10, concurrency: int = 2) -> set[str]:
    write_project(root, scenarios=scenarios, trials=trials, agent=AGENT)
    config = root / "simlab.yaml"
    config.write_text(config.read_text().replace("concurrency: 4", f"concurrency: {concurrency}"))
    return {f"kv-{s}#{t}" for s in range(scenarios) for t in range(1, trials + 1)}


def start(root: Path, run_id: str, gate: TrialGate | None = None) -> subprocess.Popen:
    """A ``simlab run`` child; with a ``gate`` it plays only the trials the gate allows."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(gate.env() if gate else {})}
    return subprocess.Popen([sys.executable, "-m", "simlab.cli.main", "run", "--run-id", run_id, "--no-progress"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for_lines(proc: subprocess.Popen, path: Path, target: int, at_most_s: float = 60.0) -> None:
    """Until ``target`` lines are written, the child exits, or ``at_most_s`` passed (also a guard
    against a stuck child; never a speed assertion)."""
    deadline = time.monotonic() + at_most_s
    while proc.poll() is None and count_lines(path) < target and time.monotonic() < deadline:
        time.sleep(0.002)


def reference(root: Path, monkeypatch) -> dict:
    monkeypatch.chdir(root)
    assert main(["run", "--run-id", "ref", "--no-progress"]) == 0
    return comparable(read_lines(root / "transcripts/ref/trials.jsonl"))


def finish_and_compare(root: Path, run_id: str, planned: set[str], expected: dict) -> list[dict]:
    proc = start(root, run_id)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    records = read_lines(root / "transcripts" / run_id / "trials.jsonl")
    ids = [r["unit_id"] for r in records]
    assert len(ids) == len(set(ids)) and set(ids) == planned  # every unit exactly once
    assert comparable(records) == expected  # as if never interrupted
    json.loads((root / "transcripts" / run_id / "run.json").read_text())
    return records


def test_twenty_sigkills_then_resume_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    planned = project(tmp_path, scenarios=5)
    expected = reference(tmp_path, monkeypatch)
    path = tmp_path / "transcripts/k/trials.jsonl"
    gate = TrialGate(tmp_path / "gate")  # one more trial per round: the run can never finish first
    rng = random.Random(20)
    torn = 0
    for _ in range(20):
        before = count_lines(path)
        proc = start(tmp_path, "k", gate)
        gate.allow(1)
        if rng.random() < 0.25:  # anywhere: imports, planning, the lock, the manifest, the first trial
            wait_for_lines(proc, path, before + 1, at_most_s=rng.uniform(0.0, 0.6))
        else:  # just after a trial was written: often while the next one is being written
            wait_for_lines(proc, path, before + 1)
            time.sleep(rng.uniform(0.0, 0.01))
        assert proc.poll() is None, proc.communicate()[1].decode()  # it waits for the next trial's turn
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        torn += path.exists() and not path.read_bytes().endswith(b"\n") and path.stat().st_size > 0
    print(f"20 kills, {torn} torn tails")
    assert count_lines(path) <= 20 < len(planned)
    finish_and_compare(tmp_path, "k", planned, expected)


def test_sigint_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    planned = project(tmp_path, scenarios=4)
    expected = reference(tmp_path, monkeypatch)
    path = tmp_path / "transcripts/i/trials.jsonl"
    rng = random.Random(2)
    gate = TrialGate(tmp_path / "gate")
    for double in (False, False, True):
        proc = start(tmp_path, "i", gate)
        more = rng.randint(1, 3)
        gate.allow(more)  # exactly these play; the next waits, so the Ctrl-C lands mid-run
        wait_for_lines(proc, path, count_lines(path) + more)
        time.sleep(rng.uniform(0.0, 0.02))
        proc.send_signal(signal.SIGINT)
        if double:  # an impatient second Ctrl-C
            time.sleep(0.005)
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err.decode()
        assert b"Traceback" not in err
        assert b"Resume with: simlab run --run-id i" in err or double
    assert count_lines(path) < len(planned)
    finish_and_compare(tmp_path, "i", planned, expected)


def test_a_second_run_on_the_same_id_is_refused(tmp_path):
    planned = project(tmp_path, scenarios=4)
    path = tmp_path / "transcripts/l/trials.jsonl"
    gate = TrialGate(tmp_path / "gate")
    gate.allow(2)  # the first run plays two trials, then waits: it is still going when the second starts
    first = start(tmp_path, "l", gate)
    wait_for_lines(first, path, 2)
    second = start(tmp_path, "l")
    _, err = second.communicate(timeout=60)
    assert first.poll() is None, "the first run should still be going"
    assert second.returncode == 3
    assert b"another simlab process is writing this run" in err and b"Traceback" not in err
    gate.allow(len(planned))
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err.decode()
    ids = [r["unit_id"] for r in read_lines(path)]
    assert len(ids) == len(set(ids)) and set(ids) == planned


# ---------------------------------------------------------------------------- disk full, read-only


def failing_fsync(after: int):
    real = os.fsync
    calls = {"n": 0}

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    return fsync


def full_from_line(lines: int):
    """An fsync that fails once ``trials.jsonl`` holds ``lines`` lines: the disk is full during the
    group that reached it, however the writer grouped the trials before (that depends on timing)."""
    real = os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.endswith("trials.jsonl"):
            with open(path, "rb") as fh:
                if fh.read().count(b"\n") >= lines:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    return fsync


def test_disk_full_while_appending_stops_with_exit_3_and_a_clean_file(tmp_path, monkeypatch, capsys):
    planned = project(tmp_path, scenarios=2, trials=5)
    expected = reference(tmp_path, monkeypatch)
    monkeypatch.setattr(os, "fsync", full_from_line(3))
    assert main(["run", "--run-id", "full", "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "cannot write trial (No space left on device); the run stopped" in err and "Traceback" not in err
    path = tmp_path / "transcripts/full/trials.jsonl"
    assert path.read_bytes().count(b"\n") < 3  # the failed group was cut back: whole lines only
    assert len(read_lines(path)) == path.read_bytes().count(b"\n")
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "full", "--no-progress"]) == 0
    records = read_lines(path)
    assert {r["unit_id"] for r in records} == planned and len(records) == len(planned)
    assert comparable(records) == expected


def test_disk_full_while_writing_the_manifest_leaves_nothing(tmp_path, monkeypatch, capsys):
    project(tmp_path, scenarios=1, trials=2)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "fsync", failing_fsync(after=0))
    assert main(["run", "--run-id", "m", "--no-progress"]) == 3
    assert "run.json: cannot write (No space left on device)" in capsys.readouterr().err
    folder = tmp_path / "transcripts/m"
    assert sorted(p.name for p in folder.iterdir()) == [".lock"]


def test_disk_full_while_writing_the_report_files_is_exit_3(tmp_path, monkeypatch, capsys):
    project(tmp_path, scenarios=1, trials=2)
    monkeypatch.chdir(tmp_path)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "results.parquet")

    monkeypatch.setattr("simlab.report.build.write_table", full)
    assert main(["run", "--run-id", "p", "--no-progress"]) == 3


def can_mount(tmp_path: Path) -> bool:
    if os.geteuid() != 0:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)]
    ok = subprocess.run(mount, capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", str(probe)], check=True)
    return ok


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a tiny tmpfs on ``tmp_path/transcripts`` (root only; skipped elsewhere)."""
    if not can_mount(tmp_path):
        pytest.skip("needs root and tmpfs to simulate a full or read-only disk for real")
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        target = tmp_path / "transcripts"
        target.mkdir(exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], check=True)
        mounted.append(target)
        return target

    def remount(options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(mounted[-1])], check=True)

    yield mount, remount
    for target in mounted:
        subprocess.run(["umount", "-l", str(target)], check=False)


def test_a_real_full_disk(tmp_path, monkeypatch, capsys, tmpfs):
    mount, remount = tmpfs
    planned = project(tmp_path, scenarios=2, trials=10)
    mount("size=40k")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "full", "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    path = tmp_path / "transcripts/full/trials.jsonl"
    kept = read_lines(path) if path.exists() else []
    assert len(kept) < len(planned)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    remount("size=10m")  # space again: the resume trusts only whole lines
    assert main(["run", "--run-id", "full", "--no-progress"]) == 0
    ids = [r["unit_id"] for r in read_lines(path)]
    assert len(ids) == len(set(ids)) and set(ids) == planned


def test_a_read_only_transcripts_folder(tmp_path, monkeypatch, capsys, tmpfs):
    mount, remount = tmpfs
    project(tmp_path, scenarios=1, trials=2)
    mount("size=1m")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "a", "--no-progress"]) == 0
    remount("ro")
    for run_id in ("a", "b"):  # resuming an existing run, and starting a new one
        assert main(["run", "--run-id", run_id, "--no-progress"]) == 3
        err = capsys.readouterr().err
        assert "Read-only file system" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions; the tmpfs test covers it")
def test_a_read_only_transcripts_folder_by_permissions(tmp_path, monkeypatch, capsys):
    project(tmp_path, scenarios=1, trials=2)
    (tmp_path / "transcripts").mkdir()
    (tmp_path / "transcripts").chmod(0o555)
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["run", "--run-id", "a", "--no-progress"]) == 3
    finally:
        (tmp_path / "transcripts").chmod(0o755)
    assert "Permission denied" in capsys.readouterr().err
