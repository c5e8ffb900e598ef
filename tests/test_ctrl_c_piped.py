"""Ctrl-C while the output is piped (``simlab run … 2>&1 | tee log``) ends the run as it does in a
terminal: exit 130, and the resume command on stderr wherever stderr can still be read (issue 24).

A Ctrl-C typed in a terminal reaches every process of the pipeline, so ``tee`` ends with simlab and
the report meets a pipe without a reader. Rich's console then exited 1 on the spot, before the
resume command: these drills close the reader before the Ctrl-C, as a dead ``tee`` leaves it.
When stderr went into the same pipe, the resume command goes to the terminal itself (/dev/tty)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO, TrialGate, write_project

pytestmark = pytest.mark.slow  # child processes and Ctrl-Cs: the long drills (`pytest -m slow -n 0`)

RESUME = b"Resume with: simlab run --run-id k"


def _start(tmp_path: Path, gate: TrialGate, stderr: int, **popen: Any) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **gate.env()}
    return subprocess.Popen([sys.executable, "-m", "simlab.cli.main", "run", "--run-id", "k", "--no-progress"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=stderr, **popen)


def _mid_run(tmp_path: Path, stderr: int, **popen: Any) -> tuple[subprocess.Popen[bytes], Path]:
    """A run whose gate let 3 of its 40 trials play: the Ctrl-C lands mid-run by construction."""
    write_project(tmp_path, scenarios=4, trials=10, agent="python:tests.support:gated_kv_agent")
    path = tmp_path / "transcripts" / "k" / "trials.jsonl"
    gate = TrialGate(tmp_path / "gate")
    gate.allow(3)
    proc = _start(tmp_path, gate, stderr, **popen)
    deadline = time.monotonic() + 120  # guards a stuck child only: the wait ends on the 3rd line
    while proc.poll() is None and time.monotonic() < deadline:
        if path.exists() and len(path.read_bytes().splitlines()) >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None
    return proc, path


def test_ctrl_c_with_stdout_piped_to_a_reader_that_ended_exits_130_with_the_resume_command(tmp_path: Path) -> None:
    """`simlab run … | tee log`: stdout's reader ends with the Ctrl-C; stderr is still the terminal."""
    proc, path = _mid_run(tmp_path, subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()  # tee is gone
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err.decode()
    assert RESUME in err and b"Traceback" not in err and b"Exception ignored" not in err
    assert len(path.read_bytes().splitlines()) == 3


def test_ctrl_c_with_both_streams_piped_to_a_reader_that_ended_exits_130(tmp_path: Path) -> None:
    """`simlab run … 2>&1 | tee log`: nothing can be printed any more, and the exit code still says 130."""
    proc, path = _mid_run(tmp_path, subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.close()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert len(path.read_bytes().splitlines()) == 3


def test_ctrl_c_with_both_streams_piped_to_a_reader_that_ended_tells_the_terminal(tmp_path: Path) -> None:
    """`simlab run … 2>&1 | tee log` typed in a terminal: the resume command goes to that terminal
    (/dev/tty), the one place the person who typed the Ctrl-C can still read."""
    master, slave = os.openpty()
    terminal = os.ttyname(slave)

    def own_terminal() -> None:  # the child's new session gets the pty as its terminal, as a shell's job has one
        os.close(os.open(terminal, os.O_RDWR))

    try:
        proc, _ = _mid_run(tmp_path, subprocess.STDOUT, start_new_session=True, preexec_fn=own_terminal)
        assert proc.stdout is not None
        proc.stdout.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        os.set_blocking(master, False)  # the child has exited: what it wrote is all there
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
        os.close(slave)
    assert b"interrupted: finished trials are saved; 37 left. Resume with: simlab run --run-id k" in shown


def test_ctrl_c_with_both_streams_piped_to_a_reader_that_stays_prints_the_report_and_resume(tmp_path: Path) -> None:
    """`simlab run … 2>&1 | tee -i log` (or a Ctrl-C sent to simlab alone): as in a terminal."""
    proc, _ = _mid_run(tmp_path, subprocess.STDOUT)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, out.decode()
    assert out.decode().splitlines()[-1].startswith("interrupted: finished trials are saved; 37 left.")
    assert RESUME in out and b"incomplete: 3 of 40 planned trials" in out
