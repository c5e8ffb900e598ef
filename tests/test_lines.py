"""The storage layer's one reader of raw bytes (``runner/lines.py``) reads what its own writer
frames: a record written by ``encode_record`` reads back the same through every fast path and
through the full parse, whatever the record's field order and whatever its strings hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import create_model

from simlab.runner.lines import encode_record, line_value, read_head, read_unit, scan
from simlab.transcript import TrialRecord
from simlab.transcript.row import record_head
from tests.sample_runs import sample_record


def hostile(unit: str) -> TrialRecord:
    """A record whose strings imitate the framing: a second record's start, the head's end, a head."""
    record = sample_record("r", "s", 3).model_copy(update={"unit_id": unit})
    record.transcript.events[3].result = {  # a tool result
        "a": '{"schema_version":2,"unit_id":"x#1","head":{"v":3}', "b": ',"transcript":{"schema_version":1',
        "head": {"v": 3, "row": {"verdict": "pass"}}, "verdict": "pass"}
    record.checks[0].name = 'quote " and ,"transcript":{"x":1} and \\ backslash'
    return record


UNITS = ["s#3", "s ü 雪#3", 's"quoted#3', "s\\back#3"]


@pytest.mark.parametrize("unit", UNITS)
def test_a_written_record_reads_back_through_every_fast_path_and_the_full_parse(unit: str, tmp_path: Path) -> None:
    record = hostile(unit)
    line = encode_record(record)
    body = line.rstrip(b"\n")
    assert list(json.loads(line))[:4] == ["schema_version", "unit_id", "head", "transcript"]
    head = record_head(record)
    assert read_head(body) == head  # the fast path, whatever the id holds (it is skipped, not parsed)
    plain = '"' not in unit and "\\" not in unit
    assert read_unit(body, 0, len(body)) == (unit if plain else None)  # an escaped id: the full parse reads it
    full = TrialRecord.model_validate_json(line)
    assert full.unit_id == unit and full.head == head.model_dump(mode="json")
    path = tmp_path / "trials.jsonl"
    path.write_bytes(line + encode_record(sample_record("r", "s", 1)))
    assert [(u, v) for _, u, v in scan(path, "unit")] == [(unit, unit), ("s#1", "s#1")]
    assert [v for _, _, v in scan(path, "head")][0] == head
    assert [v for _, _, v in scan(path, "raw")][0] == json.loads(line)
    assert [v for _, _, v in scan(path, "line")][0] == line
    for parse in ("unit", "head"):  # the same value when the fast path gives up and the line is parsed whole
        spaced = json.dumps(json.loads(line)).encode()
        assert line_value(spaced, 0, len(spaced), path, 1, parse) == line_value(body, 0, len(body), path, 1, parse)


def test_the_writer_frames_the_line_whatever_the_order_of_the_record_fields() -> None:
    fields: dict[str, Any] = {name: (info.annotation, info) for name, info in TrialRecord.model_fields.items()}
    reordered = create_model("Reordered", **dict(reversed(list(fields.items()))))  # verdict … schema_version
    record = sample_record("r", "s", 2)
    other = reordered(**{name: getattr(record, name) for name in fields})
    assert list(other.model_dump())[0] != "schema_version"
    line = encode_record(other).rstrip(b"\n")  # type: ignore[arg-type]
    assert read_unit(line, 0, len(line)) == "s#2"
    assert read_head(line) == record_head(record)
    assert TrialRecord.model_validate_json(line) == record.model_copy(
        update={"head": record_head(record).model_dump(mode="json")})
