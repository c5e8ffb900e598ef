"""An integer beyond 64 bits in a stored trial (issue 29): every column of ``results.parquet`` that
holds an integer is int64, so such a number is corrupt input. A head holding one does not validate
(``transcript/head.Int64``) and is not trusted: its line is read whole and its head computed. A
line whose own record gives one (a token count of 2**70) is an error naming file, line and field:
exit 3, no traceback (it crashed the report with pyarrow's overflow before).

A token count follows the same rule with the bound every count has (``transcript/model.TokenCount``,
the one ``token_count`` applies to a provider's figure): a stored call's count that is negative,
beyond ``MAX_TOKENS``, a bool, a float or a string makes its line an error naming file, line and
field on every reader (report, summary.json, the viewer); a head holding one is recomputed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.report.build import build
from simlab.runner.heads_index import HEADS
from simlab.runner.heads_tail import scan_heads
from simlab.runner.lines import parse_head
from simlab.transcript.head import INT64
from simlab.transcript.model import MAX_COST_USD, MAX_TOKENS, Usage
from simlab.transcript.row import record_head
from tests.support import played_demo

BIG = 2**70


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return played_demo(tmp_path_factory)


def edited(demo_run: Path, into: Path, edit) -> Path:
    """A copy of the demo's project with the first line of its trials edited, without the files
    derived from them (the index of heads is rebuilt)."""
    shutil.copytree(demo_run.parents[1], into)
    folder = into / "transcripts" / demo_run.name
    for derived in (HEADS, "results.parquet", "summary.json"):
        (folder / derived).unlink(missing_ok=True)
    path = folder / "trials.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps(edit(json.loads(lines[0])), ensure_ascii=False, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_an_integer_beyond_64_bits_is_not_a_valid_head() -> None:
    assert INT64 == (-(2**63), 2**63 - 1)
    head = {"v": 3, "row": {"run_id": "r", "unit_id": "s#1", "scenario_id": "s", "persona_id": "p",
                            "trial": 1, "seed": INT64[1], "agent": "a", "simulator": "rules",
                            "termination": "goal_reached"}}
    assert parse_head(json.dumps(head).encode()) is not None  # the largest int64 is a seed
    for field in ("agent_input_tokens", "tool_calls", "seed", "first_fault_event"):
        for value in (BIG, INT64[1] + 1, INT64[0] - 1):
            spoiled = {**head, "row": {**head["row"], field: value}}
            assert parse_head(json.dumps(spoiled).encode()) is None, (field, value)
    for field, value in [("agent_input_tokens", -1), ("judge_cached_tokens", MAX_TOKENS + 1),
                         ("simulator_output_tokens", True), ("agent_output_tokens", 5.0),
                         ("agent_input_tokens", "7"), ("tool_calls", True), ("trial", "1")]:
        spoiled = {**head, "row": {**head["row"], field: value}}  # lax pydantic read true as 1, "7" as 7
        assert parse_head(json.dumps(spoiled).encode()) is None, (field, value)
    assert parse_head(json.dumps({**head, "tool_counts": [1, BIG, 0]}).encode()) is None
    assert parse_head(json.dumps({**head, "tool_counts": [1, 2, 0]}).encode()) is not None


def test_a_head_with_a_huge_count_is_recomputed_from_its_line(demo_run: Path, tmp_path: Path) -> None:
    def spoil(record: dict) -> dict:
        record["head"]["row"]["agent_input_tokens"] = BIG  # the head alone: its transcript is fine
        return record

    folder = edited(demo_run, tmp_path / "head", spoil)
    summary = build(folder)
    assert summary == build(demo_run, write=False)
    import pyarrow.parquet as pq

    assert BIG not in pq.read_table(folder / "results.parquet").column("agent_input_tokens").to_pylist()


@pytest.mark.parametrize(
    ("count", "shown"),
    [(BIG, "1180591620717411303424"), (MAX_TOKENS + 1, "1000000000001"), (-5, "-5"), (True, "true"),
     (5.0, "5.0"), ("7", "")],
)
@pytest.mark.parametrize("head", ["dropped", "kept"])
def test_a_record_with_a_token_count_no_call_can_have_is_a_clear_error(
    demo_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    count: object, shown: str, head: str,
) -> None:
    """Before, -5, 10**12 + 1, true (as 1), 5.0 and "7" reached the head and every total; 2**70
    failed only when the head was computed."""
    def spoil(record: dict) -> dict:
        events = record["transcript"]["events"]
        usage = {"input_tokens": count, "output_tokens": 1, "cost_usd": 0.5}
        events.append({"type": "model_call", "turn": 1, "role": "agent", "model": "m", "usage": usage})
        if head == "dropped":
            del record["head"]  # read whole: the head is computed from the record
        else:  # a head that agrees with the edit is no more valid than the record it stands for
            record["head"]["row"]["agent_input_tokens"] = count
        return record

    folder = edited(demo_run, tmp_path / "record", spoil)
    monkeypatch.chdir(folder.parents[1])
    first = json.loads((folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()[0])
    field = f"transcript.events.{len(first['transcript']['events']) - 1}"
    for args in ([], ["--format", "json"]):
        assert main(["report", demo_run.name, *args]) == 3
        err = capsys.readouterr().err
        assert "trials.jsonl:1:" in err and f"{field}.model_call.usage.input_tokens" in err, err
        assert shown in err and "Traceback" not in err
    assert not (folder / "results.parquet").exists() and not (folder / "summary.json").exists()
    from simlab.tui.data import RunIndex, RunInfo

    index = RunIndex(RunInfo.load(folder))  # the viewer leaves the line out and says why, as the report does
    rows = index.read_all()
    assert index.bad_lines == 1 and "trials.jsonl:1:" in (index.problem or "")
    assert f"{field}.model_call.usage.input_tokens" in (index.problem or "")
    assert all(row.unit_id != first["unit_id"] for row in rows)


@pytest.mark.parametrize("count", [-5, MAX_TOKENS + 1, True, "7", 5.0])
def test_a_head_with_a_token_count_no_call_can_have_is_recomputed(
    demo_run: Path, tmp_path: Path, count: object
) -> None:
    def spoil(record: dict) -> dict:
        record["head"]["row"]["agent_input_tokens"] = count  # the head alone: its transcript is fine
        return record

    folder = edited(demo_run, tmp_path / "head", spoil)
    [(_, _, head, _, _), *_] = scan_heads(folder / "trials.jsonl")
    [(_, _, want, _, _), *_] = scan_heads(demo_run / "trials.jsonl")
    assert head == want and head.row.agent_input_tokens == 0  # the demo's python agent calls no model
    assert build(folder) == build(demo_run, write=False)


def test_a_sum_of_counts_beyond_the_bound_is_unknown(demo_run: Path) -> None:
    """Each call's count is plausible, their sum is not: unknown (as a provider's figure would be),
    never a head that cannot be stored nor a figure past what any report should sum."""
    assert (Usage(input_tokens=MAX_TOKENS) + Usage(input_tokens=1)).input_tokens is None
    assert (Usage(input_tokens=MAX_TOKENS - 1) + Usage(input_tokens=1)).input_tokens == MAX_TOKENS
    from simlab.runner.lines import scan
    from simlab.transcript.model import ModelCall, TrialRecord

    _, _, raw = next(iter(scan(demo_run / "trials.jsonl", "record")))
    record = TrialRecord.model_validate(raw)
    big = Usage(input_tokens=MAX_TOKENS, output_tokens=2, cost_usd=0.0)
    record.transcript.events += [ModelCall(turn=1, role="agent", model="m", usage=big)] * 2
    row = record_head(record).row
    assert row.agent_input_tokens is None and row.agent_output_tokens == 4


@pytest.mark.parametrize(("cost", "shown"), [(-100.0, "-100.0"), (float("nan"), "NaN"), (1e300, "1e+300"),
                                             (True, "true"), ("5", "")])
def test_a_record_with_a_cost_no_call_can_have_is_a_clear_error(
    demo_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    cost: object, shown: str,
) -> None:
    """The same rule for a call's cost (transcript/model.CostUsd): before, -100 was a total of
    $-100.0000, 1e300 a figure of 300 digits, true $1.00 and "5" $5.00."""
    def spoil(record: dict) -> dict:
        usage = {"input_tokens": 5, "output_tokens": 1, "cost_usd": cost}
        record["transcript"]["events"].append({"type": "model_call", "turn": 1, "role": "agent", "model": "m",
                                               "usage": usage})
        del record["head"]
        return record

    folder = edited(demo_run, tmp_path / "record", spoil)
    monkeypatch.chdir(folder.parents[1])
    assert main(["report", demo_run.name]) == 3
    err = capsys.readouterr().err
    assert "trials.jsonl:1:" in err and "model_call.usage.cost_usd" in err and shown in err, err
    assert not (folder / "summary.json").exists()


@pytest.mark.parametrize("cost", [-100.0, 1e300, True, "5", MAX_COST_USD * 2])
def test_a_head_with_a_cost_no_call_can_have_is_recomputed(demo_run: Path, tmp_path: Path, cost: object) -> None:
    def spoil(record: dict) -> dict:
        record["head"]["row"]["agent_cost_usd"] = record["head"]["row"]["cost_usd"] = cost
        return record

    folder = edited(demo_run, tmp_path / "head", spoil)
    [(_, _, head, _, _), *_] = scan_heads(folder / "trials.jsonl")
    [(_, _, want, _, _), *_] = scan_heads(demo_run / "trials.jsonl")
    assert head == want and head.row.cost_usd == 0.0
    assert build(folder) == build(demo_run, write=False)
    assert (Usage(cost_usd=MAX_COST_USD) + Usage(cost_usd=1.0)).cost_usd is None  # a sum beyond: unknown
