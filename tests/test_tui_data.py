"""Lazy loading: line scanning, the incremental index, run discovery, figures, filters, search."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from simlab.runner.lines import line_value
from simlab.runner.store import encode_record, read_head
from simlab.transcript import TrialRecord
from simlab.transcript.row import record_head
from simlab.tui.data import RunIndex, RunInfo, discover_runs, find_run
from simlab.tui.filters import TrialFilter, apply, check_counts, termination_counts, verdict_counts
from simlab.tui.rows import TrialRow
from simlab.tui.search import count_hits, search_rows
from simlab.tui.summary import k_columns, summarize, summarize_run
from tests.sample_runs import sample_record, write_sample_run


@pytest.fixture
def run(tmp_path: Path) -> RunInfo:
    return RunInfo.load(write_sample_run(tmp_path / "fixture"))


def lines(run: RunInfo) -> list[bytes]:
    return (run.folder / "trials.jsonl").read_bytes().splitlines()


def row_of(line: bytes) -> TrialRow:
    """The viewer's row of one line, read as the index reads it (the storage layer's one reader)."""
    line = line.rstrip(b"\n")
    return TrialRow.of(line_value(line, 0, len(line), Path("t.jsonl"), 1, "head")[1], 0, len(line))


def full_parse_row(line: bytes) -> TrialRow:
    return TrialRow.of(record_head(TrialRecord.model_validate_json(line)), 0, len(line))


def test_the_head_gives_the_row_of_a_full_parse(run: RunInfo) -> None:
    for line in lines(run):
        assert read_head(line) is not None  # simlab writes the head first
        assert row_of(line) == full_parse_row(line)


def test_lines_without_a_head_are_parsed_whole_and_agree_with_the_head(run: RunInfo) -> None:
    for line in lines(run):
        record = json.loads(line)
        del record["head"]  # a line as simlab wrote it before record schema 2
        old = json.dumps(record, separators=(",", ":")).encode()
        assert read_head(old) is None
        assert row_of(old) == replace(row_of(line), length=len(old))


def test_look_alikes_inside_data_do_not_fool_the_reader() -> None:
    record = sample_record("r", "s", 3)
    # a tool result that contains the very keys a byte-level reader might look for
    record.transcript.events[3].result = {
        "x": [1], "termination": {"reason": "max_turns", "detail": "", "turn": 9}, "final_state": None,
        "checks": [{"name": "fake", "status": "fail"}], "verdict": "pass", "head": {"v": 3}}
    for line in (encode_record(record), record.model_dump_json().encode()):  # with its head, and without
        assert (read_head(line.rstrip(b"\n")) is None) == (b'"head":null' in line)
        row = row_of(line)
        assert row.termination == "goal_reached" and row.verdict == "fail"
        assert "fake" not in row.hard_failed and "expected_state" in row.hard_failed


def test_other_key_orders_are_parsed_whole() -> None:
    record = json.loads(encode_record(sample_record("r", "s", 1)))
    shuffled = {"verdict": record["verdict"], "checks": record["checks"], "transcript": record["transcript"],
                "unit_id": record["unit_id"], "head": record["head"]}
    line = json.dumps(shuffled).encode()
    assert read_head(line) is None
    row = row_of(line)
    assert row.unit_id == "s#1" and row.verdict == "pass" and row.user_turns == 2 and row.tool_calls == 2


def test_row_counts_turns_tools_and_cost() -> None:
    row = row_of(encode_record(sample_record("r", "s", 1)))
    assert (row.user_turns, row.tool_calls) == (2, 2)
    assert row.cost_usd == pytest.approx(0.0021 * 2 + 0.0002)


def test_index_reads_only_appended_lines_and_waits_for_a_torn_tail(run: RunInfo) -> None:
    run.manifest["pins"]["scenarios"]["refund-damaged"]["trials"] = 4  # a fourth trial is still to come
    index = RunIndex(run)
    assert len(index.read_all()) == 6 and index.complete
    path = run.folder / "trials.jsonl"
    extra = sample_record("fixture", "refund-damaged", 4).model_dump_json().encode()
    with open(path, "ab") as fh:
        fh.write(extra[:100])  # a writer mid-line
    assert index.changed()
    assert list(index.read_new()) == [] and len(index.rows) == 6
    with open(path, "ab") as fh:
        fh.write(extra[100:] + b"\n")
    batches = list(index.read_new())
    assert [len(b) for b in batches] == [1] and index.rows[-1].unit_id == "refund-damaged#4"
    assert index.record(index.rows[-1]).transcript.trial == 4
    assert not index.changed()


def test_index_starts_over_when_the_file_shrinks(run: RunInfo) -> None:
    index = RunIndex(run)
    index.read_all()
    path = run.folder / "trials.jsonl"
    path.write_bytes(b"\n".join(lines(run)[:2]) + b"\n")
    index.read_all()
    assert [r.unit_id for r in index.rows] == ["refund-damaged#1", "refund-damaged#2"]


def test_an_unreadable_line_is_the_error_every_reader_gives_and_the_rest_stays_browsable(run: RunInfo) -> None:
    with open(run.folder / "trials.jsonl", "ab") as fh:
        fh.write(b"{not json}\n")
    index = RunIndex(run)
    assert len(index.read_all()) == 6 and index.bad_lines == 1
    assert index.problem is not None and "trials.jsonl:7: not valid JSON" in index.problem


def test_small_batches_give_the_same_rows(run: RunInfo) -> None:
    index = RunIndex(run)
    batches = list(index.read_new(batch=4))
    assert [len(b) for b in batches] == [4, 2] and index.rows == RunIndex(run).read_all()


def test_runs_are_found_newest_first(tmp_path: Path) -> None:
    write_sample_run(tmp_path / "old", "old", created_at="2025-01-01T00:00:00+00:00")
    write_sample_run(tmp_path / "new", "new", created_at="2026-05-01T00:00:00+00:00")
    (tmp_path / "not-a-run").mkdir()
    assert [r.run_id for r in discover_runs(tmp_path)] == ["new", "old"]
    assert find_run(tmp_path, None).run_id == "new"  # type: ignore[union-attr]
    assert find_run(tmp_path, "old").run_id == "old"  # type: ignore[union-attr]
    assert find_run(tmp_path, str(tmp_path / "old")).run_id == "old"  # type: ignore[union-attr]
    assert find_run(tmp_path, "nope") is None
    assert find_run(tmp_path / "missing", None) is None
    info = find_run(tmp_path, "new")
    assert info is not None and info.pin("agent") == "openai/gpt-4o-2024-08-06"
    assert info.planned() == {"refund-damaged": 3, "final-sale": 2, "literal-markup": 1}


def test_scenario_figures_keep_invalid_and_error_apart(run: RunInfo) -> None:
    summaries = summarize(RunIndex(run).read_all(), run.planned())
    refund, final = summaries["refund-damaged"], summaries["final-sale"]
    figures = refund.figures([1, 3])
    assert figures is not None and (refund.passed, refund.valid_n) == (2, 3) and figures.verdicts["fail"] == 1
    assert figures.valid.pass_k[1].pass_hat_k == pytest.approx(2 / 3) and figures.valid.pass_k[3].pass_hat_k == 0.0
    assert figures.flake_class == "flaky"
    last = final.figures([1])
    assert last is not None and (last.invalid, last.errors, final.valid_n, last.flake_class) == (1, 1, 0, None)
    assert last.valid.pass_k[1].pass_hat_k is None
    suite = summarize_run(summaries)
    assert suite.k == 1 and suite.raw_pass_1 == pytest.approx(3 / 6)
    assert suite.pass_1 == pytest.approx((2 / 3 + 1) / 2) and (suite.invalid, suite.error) == (1, 1)
    assert k_columns(summaries.values()) == [1, 2, 3]


def test_ungraded_runs_have_no_pass_k(tmp_path: Path) -> None:
    run = RunInfo.load(write_sample_run(tmp_path / "u", graded=False))
    summaries = summarize(RunIndex(run).read_all())
    suite = summarize_run(summaries)
    assert suite.graded == 0 and suite.pass_1 is None and suite.pass_k is None
    assert summaries["refund-damaged"].goal_reached == 3


def test_filters(run: RunInfo) -> None:
    rows = RunIndex(run).read_all()
    assert [r.unit_id for r in apply(rows, TrialFilter(failed_only=True))] == [
        "final-sale#1", "final-sale#2", "refund-damaged#3"]
    assert [r.unit_id for r in apply(rows, TrialFilter(verdict="invalid"))] == ["final-sale#1"]
    assert [r.unit_id for r in apply(rows, TrialFilter(termination="error"))] == ["final-sale#2"]
    assert [r.unit_id for r in apply(rows, TrialFilter(check="expected_state"))] == ["refund-damaged#3"]
    only = TrialFilter(scenario="refund-damaged", failed_only=True)
    assert only.active and not only.cleared().active and only.describe() == ["failed only"]
    assert verdict_counts(rows) == {"pass": 3, "fail": 1, "invalid": 1, "error": 1}
    assert termination_counts(rows)["error"] == 1 and check_counts(rows)["drift:invented_identifier"] == 1


def test_search_counts_visible_text_not_json_keys(run: RunInfo) -> None:
    index = RunIndex(run)
    rows = index.read_all()
    assert count_hits(index.raw(rows[0]), "ARRIVED BROKEN") == 1
    assert count_hits(index.raw(rows[0]), "unit_id") == 0
    assert count_hits(index.raw(rows[-1]), "[link=https://evil.example]") == 1
    assert count_hits(index.raw(rows[0]), '(refund-damaged)') == 1
    found = search_rows(rows, index.raw, "store credit")
    assert set(found) == {"refund-damaged#3"}
    assert search_rows(rows, index.raw, "x", cancelled=lambda: True) == {}


def test_file_growth_is_seen_by_size(run: RunInfo) -> None:
    index = RunIndex(run)
    index.read_all()
    assert not index.changed()
    os.truncate(run.folder / "trials.jsonl", index.offset - 1)
    assert index.changed()


def test_a_line_with_an_empty_head_is_parsed_whole() -> None:
    line = sample_record("r", "s", 1).model_dump_json().encode()  # a record dumped directly: "head":null
    assert b'"head":null' in line and read_head(line) is None
    assert row_of(line) == full_parse_row(line)


def test_live_progress_adds_only_new_rows_and_equals_a_full_count(run: RunInfo) -> None:
    from simlab.tui.summary import LiveProgress

    rows = RunIndex(run).read_all()
    live, grown = LiveProgress(run.planned()), []
    for row in rows:  # a refresh after every row, as a run being written is followed
        grown.append(row)
        progress = live.update(grown)
        figures = progress[row.scenario_id].figures([1, 2])
        assert figures is None or figures.n == progress[row.scenario_id].graded  # never a stale figure
    whole = summarize(rows, run.planned())
    assert {sid: (p.trials, p.figures([1, 2])) for sid, p in progress.items()} == {
        sid: (p.trials, p.figures([1, 2])) for sid, p in whole.items()}
    again = live.update(list(rows[:2]))  # the index read the file again from the start: a new list
    assert sum(p.trials for p in again.values()) == 2


def test_the_failed_checks_room_of_an_empty_list_is_the_headers_room() -> None:
    """A filter that matches no trial leaves the trials table empty: its layout must still work."""
    from simlab.tui.widgets.trials_table import failed_checks_room

    assert failed_checks_room([], False, 80) == 80 - (5 + 7 + 4 + 3 * 2) - 2 - 2
    assert failed_checks_room([], True, 80) < failed_checks_room([], False, 80)


def _row(unit: str, verdict: str | None, kinds: tuple[str, ...] = (), termination: str = "goal_reached"
         ) -> TrialRow:
    return TrialRow(offset=0, length=0, unit_id=unit, scenario_id="s", trial=int(unit[-1]), verdict=verdict,
                    termination=termination, unjudged_kinds=frozenset(kinds))


def test_failed_only_lists_what_did_not_pass_by_the_one_rule() -> None:
    """An unjudged trial that the run's allow_unjudged counts as a pass is not "failed" (the report
    counts it as a pass); one with a kind the run does not allow is, as are invalid and error trials."""
    rows = [_row("s#1", "unjudged", ("rubric",)), _row("s#2", "unjudged", ("rubric", "budget")), _row("s#3", "pass"),
            _row("s#4", "invalid"), _row("s#5", "error"), _row("s#6", None, termination="max_turns")]
    allowed = TrialFilter(failed_only=True, allowed=frozenset({"rubric"}))
    assert [r.unit_id for r in apply(rows, allowed)] == ["s#2", "s#4", "s#5", "s#6"]
    assert [r.unit_id for r in apply(rows, TrialFilter(failed_only=True))] == ["s#1", "s#2", "s#4", "s#5", "s#6"]
    assert allowed.cleared().allowed == frozenset({"rubric"}) and not allowed.cleared().active


def test_the_trials_screen_filters_with_the_runs_allow_unjudged(tmp_path: Path) -> None:
    from simlab.tui.screens.trials import TrialsScreen

    folder = write_sample_run(tmp_path / "allowed")
    manifest = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**manifest, "allow_unjudged": ["rubric"]}))
    assert TrialsScreen(RunInfo.load(folder), None).filter.allowed == frozenset({"rubric"})


def test_every_verdict_has_a_label_in_the_viewer_and_its_legend() -> None:
    from simlab.transcript.verdicts import VERDICT_INFO
    from simlab.tui.render import verdict_text
    from simlab.tui.screens.help import LEGEND

    for name, info in VERDICT_INFO.items():
        assert verdict_text(name).plain == info.label and info.label in LEGEND and info.meaning in LEGEND
