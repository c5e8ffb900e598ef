"""``results.parquet`` is written in a thread while the report makes its summary
(``results/frames.table_writer``): the same file as before, put in place only when the whole
report succeeds, and never a temporary file left behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from simlab.errors import InfraError
from simlab.report.build import build
from simlab.results.frames import table_writer, write_table
from tests.support import played_demo


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return played_demo(tmp_path_factory)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != ".lock")


def test_the_thread_writes_the_bytes_write_table_writes(tmp_path: Path) -> None:
    table = pa.table({"a": [1, None, 3], "b": ["x", "y", None]})
    finish = table_writer(tmp_path / "threaded.parquet", table)
    finish(True)
    write_table(tmp_path / "direct.parquet", table)
    assert (tmp_path / "threaded.parquet").read_bytes() == (tmp_path / "direct.parquet").read_bytes()
    dropped = table_writer(tmp_path / "dropped.parquet", table)
    dropped(False)
    assert not (tmp_path / "dropped.parquet").exists() and leftovers(tmp_path) == []


def test_the_writer_s_error_is_raised_by_finish_and_leaves_nothing(tmp_path: Path) -> None:
    finish = table_writer(tmp_path / "gone" / "results.parquet", pa.table({"a": [1]}))
    with pytest.raises(OSError):
        finish(True)
    assert list(tmp_path.iterdir()) == []


def test_a_report_that_fails_after_the_table_writes_nothing(demo_run: Path, tmp_path: Path) -> None:
    """A line whose head is good but whose record is not: the heads make the table, then the
    summary functions read every record and stop at that line."""
    folder = tmp_path / demo_run.name
    shutil.copytree(demo_run, folder)
    for derived in ("results.parquet", "summary.json", "heads.jsonl"):
        (folder / derived).unlink(missing_ok=True)
    path = folder / "trials.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["transcript"]["events"].append({"type": "no such event"})
    lines[0] = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert build(folder, write=False).trials == 30  # the heads alone: the line's head is good
    with pytest.raises(InfraError, match=r"trials.jsonl:1: .* not a valid trial record"):
        build(folder, summary_evaluators=["json:dumps"])
    assert not (folder / "results.parquet").exists() and not (folder / "summary.json").exists()
    assert leftovers(folder) == []
    build(folder)
    assert (folder / "results.parquet").exists() and leftovers(folder) == []
