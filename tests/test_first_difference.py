"""One first difference: ``simlab compare`` and the viewer's compare screen name the same turn and
step for every pair of trials (``report/first_difference`` finds it; the viewer only phrases it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.runner.store import RunStore, encode_record
from simlab.transcript import (
    ReplayInfo,
    Signal,
    Termination,
    TerminationReason,
    ToolCall,
    TrialRecord,
    Usage,
)
from simlab.tui.trial_diff import first_divergence
from tests.sample_runs import sample_manifest, sample_record
from tests.support import copy_demo

# The base trial (tests/sample_runs.sample_record), step by step:
#   turn 1: 1 user, 2 lookup_order, 3 issue_refund, 4 agent reply; turn 2: 1 user, 2 stop; 3 the end.
Edit = Callable[[TrialRecord], None]


def _events(edit: Callable[[list], list]) -> Edit:
    def apply(r: TrialRecord) -> None:
        r.transcript.events = edit(list(r.transcript.events))
    return apply


def _replace(kind: str, turn: int, **fields: object) -> Edit:
    """The first event of ``kind`` in ``turn`` with ``fields`` changed."""
    def edit(events: list) -> list:
        i = next(i for i, e in enumerate(events) if e.type == kind and e.turn == turn)
        events[i] = events[i].model_copy(update=fields)
        return events
    return _events(edit)


def _second_call(**fields: object) -> Edit:
    def edit(events: list) -> list:
        i = [i for i, e in enumerate(events) if isinstance(e, ToolCall)][1]
        events[i] = events[i].model_copy(update=fields)
        return events
    return _events(edit)


def _ended(reason: TerminationReason, turn: int = 2) -> Edit:
    def apply(r: TrialRecord) -> None:
        r.transcript.termination = Termination(reason=reason, detail="", turn=turn)
    return apply


def _both(*edits: Edit) -> Edit:
    def apply(r: TrialRecord) -> None:
        for edit in edits:
            edit(r)
    return apply


def _costlier(r: TrialRecord) -> None:  # usage and time are not conversation steps
    r.transcript.events = [e.model_copy(update={"usage": Usage(cost_usd=9.0)}) if e.type == "model_call" else e
                           for e in r.transcript.events]
    r.transcript.duration_s = 99.0


def _replayed(r: TrialRecord) -> None:  # the replay's own record: where it left *its* recording
    r.transcript.replay = ReplayInfo(run="elsewhere", unit_id=r.unit_id, divergence="tools", then="stop",
                                     diverged_turn=1, reason="tool call 1 was lookup_order({}), now x()")


EXTRA = ToolCall(turn=1, call_id="c9", name="lookup_order", arguments={"order_id": "A101"}, access="read")

# name: (how the candidate differs from the base, (turn, step) both must name, or None: no difference)
PAIRS: dict[str, tuple[Edit, tuple[int, int] | None]] = {
    "equal": (_costlier, None),
    "replayed-equal": (_replayed, None),  # compare once named the replay's turn 1 here
    "tool-call": (_second_call(name="issue_store_credit"), (1, 3)),
    "tool-argument": (_second_call(arguments={"order_id": "A100", "amount": 39.9}), (1, 3)),
    "extra-tool-call": (_events(lambda ev: ev[:4] + [EXTRA] + ev[4:]), (1, 3)),
    "agent-text": (_replace("agent", 1, text="Refunded."), (1, 4)),
    "user-text": (_replace("user", 2, text="Thanks."), (2, 1)),
    "signal": (_events(lambda ev: [Signal(turn=2, role="user", signal="give_up") if e.type == "signal" else e
                                   for e in ev]), (2, 2)),
    "termination": (_ended(TerminationReason.MAX_TURNS), (2, 3)),
    "shorter": (_both(_events(lambda ev: [e for e in ev if e.turn == 1]),
                      _ended(TerminationReason.ERROR, turn=1)), (1, 5)),
}


def _write(folder: Path, run_id: str, records: list[TrialRecord]) -> None:
    folder.mkdir(parents=True)
    manifest = sample_manifest(run_id, {r.transcript.scenario_id: 1 for r in records})
    (folder / "run.json").write_text(json.dumps(manifest))
    (folder / "trials.jsonl").write_bytes(b"".join(encode_record(r) for r in records))


def _compare_says(base: str, candidate: str, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[int, int]]:
    """unit → (turn, step) as ``simlab compare`` prints it (every differing unit: fewer than 20 here)."""
    capsys.readouterr()
    assert main(["compare", base, candidate, "--allow-different-pins"]) == 0
    out = capsys.readouterr().out
    found = {m[1]: (int(m[2]), int(m[3]))
             for m in re.finditer(r"^ +(\S+): first differs at turn (\d+), step (\d+): ", out, re.M)}
    total = re.search(r"per trial: (\d+) of \d+ shared trials differ", out)
    assert total is not None and int(total[1]) == len(found)
    return found


def _viewer_says(a: TrialRecord, b: TrialRecord) -> tuple[int, int] | None:
    said = first_divergence(a, b)
    if said == "same messages, tool calls, signals and ending":
        return None
    m = re.match(r"first difference at turn (\d+), step (\d+): ", said)
    assert m is not None, said
    return int(m[1]), int(m[2])


def test_compare_and_the_viewer_name_the_same_step(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    base, candidate = [], []
    for name, (edit, _) in PAIRS.items():
        base.append(sample_record("base", name, 1))
        changed = sample_record("cand", name, 1)
        edit(changed)
        candidate.append(changed)
    _write(tmp_path / "transcripts" / "base", "base", base)
    _write(tmp_path / "transcripts" / "cand", "cand", candidate)
    compared = _compare_says("base", "cand", capsys)
    read_a = {r.unit_id: r for r in RunStore(tmp_path / "transcripts" / "base").records()}
    read_b = {r.unit_id: r for r in RunStore(tmp_path / "transcripts" / "cand").records()}
    for name, (_, expected) in PAIRS.items():
        unit = f"{name}#1"
        assert _viewer_says(read_a[unit], read_b[unit]) == compared.get(unit) == expected, name


def test_the_viewer_phrases_what_each_side_did_there() -> None:
    a = sample_record("r", "s", 1)
    shorter = sample_record("r", "s", 2)
    PAIRS["shorter"][0](shorter)
    assert first_divergence(a, shorter) == ('first difference at turn 1, step 5: #1 went on to turn 2: user said '
                                            '"Thanks, that works."; #2 ended error')
    ended = sample_record("r", "s", 2)
    PAIRS["termination"][0](ended)
    assert first_divergence(a, ended).endswith(": #1 ended goal_reached; #2 ended max_turns")


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline demo (flaky agent, 3 trials), the careful agent on it, and a replay of its users
    with the careful agent (each stops where its recording's tool calls are left)."""
    root = copy_demo(tmp_path_factory.mktemp("demo"))
    careful = "python:examples.retail_agents:careful_agent"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        assert main(["run", "--run-id", "demo", "--trials", "3", "--no-progress"]) in (0, 1)
        assert main(["run", "--run-id", "careful", "--trials", "3", "--no-progress", "--agent", careful]) in (0, 1)
        assert main(["run", "--replay", "demo", "--run-id", "rep", "--no-progress", "--agent", careful]) in (0, 1)
    return root


@pytest.mark.parametrize("candidate", ["careful", "rep"])
def test_on_real_demo_runs_compare_and_the_viewer_agree(demo_runs: Path, candidate: str, monkeypatch,
                                                         capsys) -> None:
    monkeypatch.chdir(demo_runs)
    compared = _compare_says("demo", candidate, capsys)
    base = {r.unit_id: r for r in RunStore(demo_runs / "transcripts" / "demo").records()}
    viewed = {r.unit_id: _viewer_says(base[r.unit_id], r)
              for r in RunStore(demo_runs / "transcripts" / candidate).records()}
    assert {u: v for u, v in viewed.items() if v is not None} == compared
    assert 0 < len(compared) < len(viewed)  # both kinds of pair were there


def test_two_equal_trials_of_a_replay_run_do_not_differ(demo_runs: Path) -> None:
    """Two trials of one replay run that did the same: the viewer (two trials of one run) once took
    the second trial's replay record for a difference from the first."""
    by: dict[str, list[TrialRecord]] = {}
    for r in RunStore(demo_runs / "transcripts" / "rep").records():
        by.setdefault(r.transcript.scenario_id, []).append(r)
    same = [(a, b) for rs in by.values() for a in rs for b in rs
            if a is not b and b.transcript.replay is not None and b.transcript.replay.diverged_turn is not None
            and a.transcript.events == b.transcript.events and a.transcript.termination == b.transcript.termination]
    assert same  # the replay run has such pairs
    for a, b in same:
        assert _viewer_says(a, b) is None
