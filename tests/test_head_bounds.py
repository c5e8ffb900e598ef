"""An integer beyond 64 bits in a stored trial (issue 29): every column of ``results.parquet`` that
holds an integer is int64, so such a number is corrupt input. A head holding one does not validate
(``transcript/head.Int64``) and is not trusted: its line is read whole and its head computed. A
line whose own record gives one (a token count of 2**70) is an error naming file, line and field:
exit 3, no traceback (it crashed the report with pyarrow's overflow before)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.report.build import build
from simlab.runner.heads_index import HEADS
from simlab.runner.lines import parse_head
from simlab.transcript.head import INT64
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


def test_a_record_with_a_huge_token_count_is_a_clear_error(
    demo_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def spoil(record: dict) -> dict:
        events = record["transcript"]["events"]
        usage = {"input_tokens": BIG, "output_tokens": 1}
        events.append({"type": "model_call", "turn": 1, "role": "agent", "model": "m", "usage": usage})
        del record["head"]  # read whole: the head is computed from the record
        return record

    folder = edited(demo_run, tmp_path / "record", spoil)
    monkeypatch.chdir(folder.parents[1])
    assert main(["report", demo_run.name]) == 3
    err = capsys.readouterr().err
    assert "trials.jsonl:1:" in err and "head.row.agent_input_tokens" in err, err
    assert "1180591620717411303424" in err and "Traceback" not in err
    assert not (folder / "results.parquet").exists() and not (folder / "summary.json").exists()
