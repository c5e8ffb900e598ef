"""The head at the front of each stored line, and the report built from heads alone.

A head is derived data: these tests hold it to the full parse it replaces (the same head, the
same summary, the same results table), and check what happens when it is missing or wrong.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.report.build import build
from simlab.results.frames import read_results
from simlab.results.stats import pass_at_k, pass_hat_k
from simlab.results.summary import extend_curves, summarize
from simlab.runner.store import RunStore, read_head
from simlab.transcript import TrialRecord
from simlab.transcript.head import TrialHead
from simlab.transcript.row import record_head
from tests.support import played_demo


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The retail demo (flaky agent: passes, failures, policy violations, an attack), 3 trials."""
    return played_demo(tmp_path_factory)


def copy_run(folder: Path, into: Path, edit=None) -> Path:
    into.mkdir(parents=True)
    shutil.copy(folder / "run.json", into / "run.json")
    lines = (folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()
    if edit:
        lines = [edit(json.loads(line)) for line in lines]
    (into / "trials.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return into


def without_head(record: dict) -> str:
    del record["head"]
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def computed_head(record: dict) -> TrialHead:
    """The head the writer computes from the record's models, as a reader gets it."""
    return record_head(TrialRecord.model_validate(record))


def test_every_line_starts_with_the_head_a_full_parse_gives(demo_run: Path) -> None:
    lines = (demo_run / "trials.jsonl").read_bytes().splitlines()
    assert len(lines) == 30
    for line in lines:
        record = json.loads(line)
        assert line.startswith(b'{"schema_version":2,"unit_id":"%s","head":{' % record["unit_id"].encode())
        head = read_head(line)
        assert isinstance(head, TrialHead) and head.model_dump(mode="json") == record["head"]
        del record["head"]
        assert head == computed_head(record)
    heads = [h for h in map(read_head, lines) if h is not None]
    assert any(h.failed for h in heads) and any(h.not_run for h in heads)
    assert any(h.attacks for h in heads) and any(h.row.verdict == "pass" for h in heads)


def test_the_report_is_the_same_with_or_without_heads(demo_run: Path, tmp_path: Path) -> None:
    import pandas as pd  # in the test: collecting the suite must not pay for pandas

    headless = copy_run(demo_run, tmp_path / "headless" / demo_run.name, without_head)  # the run's own name: a
    with_heads = copy_run(demo_run, tmp_path / "with" / demo_run.name)  # copy under another is said in warnings
    assert read_head((headless / "trials.jsonl").read_bytes().splitlines()[0]) is None
    assert build(with_heads) == build(headless)
    pd.testing.assert_frame_equal(pd.read_parquet(with_heads / "results.parquet"),
                                  pd.read_parquet(headless / "results.parquet"))


def test_a_head_of_another_version_or_broken_is_not_trusted(demo_run: Path, tmp_path: Path) -> None:
    def spoil(record: dict) -> str:
        record["head"]["v"] = 99  # a future head: read the line instead
        record["head"]["row"]["verdict"] = "spoiled"
        return json.dumps(record, separators=(",", ":"))

    spoiled = copy_run(demo_run, tmp_path / "spoiled", spoil)
    expected = [computed_head(json.loads(without_head(json.loads(line))))
                for line in (demo_run / "trials.jsonl").read_text().splitlines()]
    assert list(RunStore(spoiled).iter_heads()) == expected
    broken = b'{"schema_version":2,"unit_id":"x#1","head":{"v":1,"row":,"transcript":{"schema_version":1}}'
    assert read_head(broken) is None


def test_a_torn_last_line_is_skipped_and_a_bad_line_elsewhere_is_an_error(demo_run: Path, tmp_path: Path) -> None:
    folder = copy_run(demo_run, tmp_path / "torn")
    path = folder / "trials.jsonl"
    text = path.read_text()
    path.write_text(text + text.splitlines()[0][:500])
    assert len(list(RunStore(folder).iter_heads())) == 30
    path.write_text("not json\n" + text)
    from simlab.errors import InfraError

    with pytest.raises(InfraError, match=r"trials.jsonl:1: not valid JSON"):
        list(RunStore(folder).iter_heads())


def test_a_torn_last_line_is_skipped_even_when_it_ends_in_a_brace(demo_run: Path, tmp_path: Path) -> None:
    folder = copy_run(demo_run, tmp_path / "torn-brace")
    path = folder / "trials.jsonl"
    text = path.read_text()
    last = text.splitlines()[1]
    cut = last.rfind("}", 0, len(last) // 2) + 1  # killed mid-line, right after a "}" of the transcript
    assert read_head(last[:cut].encode()) is not None  # its head alone looks whole
    path.write_text(text + last[:cut])
    heads = list(RunStore(folder).iter_heads())
    assert len(heads) == 30 == len(list(RunStore(folder).iter_raw()))


def test_checks_table_is_opt_in_and_then_kept_up_to_date(demo_run: Path, tmp_path: Path, monkeypatch) -> None:
    import pandas as pd  # in the test: collecting the suite must not pay for pandas

    root = tmp_path / "project"
    shutil.copytree(demo_run.parents[1], root)
    monkeypatch.chdir(root)
    folder = root / "transcripts" / "demo"
    (folder / "checks.parquet").unlink(missing_ok=True)
    lines = (folder / "trials.jsonl").read_text().splitlines(keepends=True)
    (folder / "trials.jsonl").write_text("".join(lines[:-1]))  # the last trial comes later, by a resume
    assert main(["report", "demo"]) == 3  # written, and inconclusive: the run is not whole yet
    assert (folder / "results.parquet").exists() and not (folder / "checks.parquet").exists()
    assert main(["report", "demo", "--checks-table"]) == 3
    checks = pd.read_parquet(folder / "checks.parquet")
    records = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    assert len(checks) == sum(len(r["checks"]) for r in records)
    assert set(checks.columns) >= {"unit_id", "name", "kind", "status", "hard", "reason", "category"}
    first = records[0]["checks"][0]
    row = checks[(checks.unit_id == records[0]["unit_id"]) & (checks.name == first["name"])].iloc[0]
    assert (row["status"], row["reason"]) == (first["status"], first["reason"])
    with open(folder / "trials.jsonl", "a") as fh:  # one more trial, as a resumed run appends it
        fh.write(lines[-1])
    assert main(["report", "demo"]) == 0  # no flag: the table is there, so it follows the trials
    assert len(pd.read_parquet(folder / "checks.parquet")) == len(checks) + len(json.loads(lines[-1])["checks"])


def test_grade_rewrites_a_stale_head(demo_run: Path, tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "project"
    shutil.copytree(demo_run.parents[1], root)
    monkeypatch.chdir(root)
    path = root / "transcripts" / "demo" / "trials.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record["head"]["row"]["verdict"] = "stale"  # a hand edit: the head no longer matches its line
    path.write_text("\n".join([json.dumps(record, separators=(",", ":"))] + lines[1:]) + "\n")
    assert main(["grade", "demo"]) == 0
    fixed = json.loads(path.read_text().splitlines()[0])
    assert fixed["head"]["row"]["verdict"] == fixed["verdict"] != "stale"


def test_curves_stop_at_max_k_and_extend_exactly(demo_run: Path) -> None:
    results = read_results(demo_run / "trials.jsonl")
    whole = summarize(results, max_k=None)
    short = summarize(results, max_k=1)
    assert list(short.suite.raw.pass_k) == [1] and list(whole.suite.raw.pass_k) == [1, 2, 3]
    for k in (2, 3, 4):
        extend_curves(short, k)
    assert short.suite.raw.pass_k[4].pass_hat_k is None  # 3 trials: k = 4 is undefined
    del short.suite.raw.pass_k[4], short.suite.valid.pass_k[4]
    for figures in short.scenarios.values():
        c, n = figures.raw.success.c, figures.raw.success.n
        assert (figures.raw.pass_k[3].pass_hat_k, figures.raw.pass_k[3].pass_at_k) == (pass_hat_k(c, n, 3),
                                                                                        pass_at_k(c, n, 3))
        for view in (figures.raw, figures.valid):
            del view.pass_k[4]
    assert short == whole


def test_a_gate_beyond_the_stored_curve_is_decided(demo_run: Path) -> None:
    from simlab.report.gates import evaluate
    from simlab.results.figures import Completeness
    from simlab.specs.config import Suite

    # the demo runs without a judge: its hard rubric items stay unjudged, which this suite accepts
    summary = summarize(read_results(demo_run / "trials.jsonl"), max_k=1, allow_unjudged=["rubric"])
    summary.completeness = Completeness(planned=30, finished=30, unplanned=0, manifest=True)
    suite = Suite.model_validate({"id": "s", "scenarios": ["x.yaml"], "gates": ["pass^3 >= 0"],
                                  "allow_unjudged": ["rubric"]})
    report = evaluate(summary, suite, load_baseline=lambda ref: summary)
    assert [r.status for r in report.results] == ["pass"] and report.results[0].value is not None
    assert report.exit_code == 0


def test_the_head_written_reads_back_the_same_through_every_reader() -> None:
    from simlab.runner.lines import line_value
    from simlab.runner.store import encode_record
    from simlab.transcript import ModelCall, ToolResult, Usage
    from tests.sample_runs import sample_record

    for k in range(1, 6):
        record = sample_record("r", "s", k)
        record.transcript.events += [  # what the samples lack: a judge's call, a failed tool result
            ModelCall(turn=1, role="judge", model="j", usage=Usage(input_tokens=5, output_tokens=None, cost_usd=0.1)),
            ToolResult(turn=1, call_id="x", name="lookup_order", ok=False, error="no such order")]
        record.checks[0].category, record.checks[0].status = "prompt_injection", "fail"
        typed = record_head(record)
        head = typed.model_dump(mode="json")
        assert head["attacks"] == {"prompt_injection": True} and head["row"]["judge_calls"] == 1
        assert head["row"]["tool_errors"] >= 1 and head["row"]["judge_output_tokens"] is None
        assert head["row"]["judge_input_tokens"] == 5 and head["row"]["judge_cost_usd"] == 0.1
        line = encode_record(record).rstrip(b"\n")
        headless = record.model_dump_json(exclude={"head"}).encode()
        assert read_head(line) == typed and read_head(headless) is None
        for stored in (line, headless):  # the head read from the line's front, and computed from the whole line
            assert line_value(stored, 0, len(stored), Path("t.jsonl"), 1, "head") == (record.unit_id, typed)
        assert TrialHead.model_validate(TrialRecord.model_validate_json(line).head) == record_head(record)


def test_each_row_of_the_results_table_is_its_trials_typed_head(demo_run: Path) -> None:
    """``results.parquet`` holds, per trial, the head's figures under their names and then its check
    columns: nothing shifted, nothing of the model's own bookkeeping."""
    from simlab.results.frames import FIGURES

    table = read_results(demo_run / "trials.jsonl").table
    heads = list(RunStore(demo_run).iter_heads())
    assert list(table.column_names[:len(FIGURES)]) == list(FIGURES)
    assert all(name.startswith("check:") for name in table.column_names[len(FIGURES):])
    for stored, head in zip(table.to_pylist(), heads, strict=True):
        want = head.row.model_dump()
        assert {k: v for k, v in stored.items() if v is not None or k in want} == want


def test_ungraded_trials_among_graded_ones_change_no_figure_of_the_graded(demo_run: Path) -> None:
    """The summary reads the graded trials' columns (``summary._Graded``): trials without a verdict
    spread among them (imported, not yet graded) are counted apart and change nothing else, the
    unjudged trials an allow list accepts included; ``Results.rows`` agrees with the columns."""
    from simlab.results.frames import SUMMARY_FIELDS, collect

    heads = list(RunStore(demo_run).iter_heads())
    nothing = {"failed": [], "not_run": [], "unjudged": [], "errored": [], "attacks": {}, "tool_counts": None}
    ungraded = [h.model_copy(update={"row": h.row.model_copy(update={"verdict": None, "replayed": False}),
                                     **nothing}) for h in heads]  # no check ran
    mixed = [h for pair in zip(ungraded, heads, strict=True) for h in pair]
    for allowed in ([], ["rubric"]):
        alone, among = (summarize(collect(hs), run_id="r", allow_unjudged=allowed) for hs in (heads, mixed))
        assert (alone.ungraded, among.ungraded) == (0, len(heads))
        assert among.model_copy(update={"ungraded": 0}) == alone
    assert any(h.row.verdict == "unjudged" for h in heads)  # the allow list above had something to accept
    results = collect(mixed)
    assert len(results) == len(results.rows) == 2 * len(heads)
    for n, row in enumerate(results.rows):
        assert {k: row[k] for k in SUMMARY_FIELDS} == {k: getattr(mixed[n].row, k) for k in SUMMARY_FIELDS}
        assert ("fault" in row) == (mixed[n].row.failure_mode is not None)
