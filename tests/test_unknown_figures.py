"""One word for a figure nobody knows, on every surface: a cost without a price, a duration or a
token count nobody recorded reads ``unknown`` (``report/fmt.UNKNOWN``) in the terminal, markdown,
HTML and JUnit reports and in the viewer; never 0, never the dash (that is a figure not defined)."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from simlab.report.build import build
from simlab.report.digest import digest
from simlab.report.fmt import DASH, UNKNOWN, money, per_success, seconds
from simlab.report.formats import render
from simlab.report.gates import GateReport
from simlab.report.html import html_report
from simlab.report.junit import junit_xml
from simlab.report.terminal import print_report
from simlab.results.figures import RunSummary
from simlab.runner.store import encode_record
from simlab.transcript import ModelCall, TrialRecord, Usage
from simlab.tui.data import RunIndex, RunInfo
from simlab.tui.export import transcript_markdown
from simlab.tui.render import event_text
from simlab.tui.screens.scenarios import run_summary_text
from simlab.tui.summary import summarize as view_figures
from simlab.tui.summary import summarize_run
from simlab.tui.widgets.trial_header import trial_summary
from tests.sample_runs import sample_manifest, sample_record


def _unknown(record: TrialRecord) -> TrialRecord:
    """The trial with its cost, token counts and duration unknown (an unpriced model, a provider
    that said nothing, an import without times)."""
    t = record.transcript
    t.events = [e.model_copy(update={"usage": Usage(latency_s=0.5)}) if isinstance(e, ModelCall) else e
                for e in t.events]
    t.duration_s = None
    return record


def _run(folder: Path) -> tuple[Path, RunSummary, list[TrialRecord]]:
    records = [_unknown(sample_record("unknown", "s", trial)) for trial in (1, 2, 3)]
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(sample_manifest("unknown", {"s": 3})))
    (folder / "trials.jsonl").write_bytes(b"".join(encode_record(r) for r in records))
    summary = build(folder, write=False)
    assert isinstance(summary, RunSummary)
    return folder, summary, records


def _terminal(summary: RunSummary) -> str:
    out = io.StringIO()
    print_report(summary, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_every_surface_says_unknown_for_an_unknown_figure(tmp_path: Path) -> None:
    folder, summary, records = _run(tmp_path / "transcripts" / "unknown")
    assert summary.suite.cost_usd is None and summary.suite.latency_s.p50 is None
    terminal, markdown = _terminal(summary), render(summary, "markdown")
    page = html_report(summary, digest(folder, allow_unjudged=[], records=True))
    xml = ET.fromstring(junit_xml(summary, GateReport(), "s"))
    props = {p.get("name"): p.get("value") for p in xml.iter("property")}
    run = RunInfo.load(folder)
    overview = summarize_run(view_figures(RunIndex(run).read_all(), run.planned(), run.allow_unjudged()))
    calls = [e for e in records[0].transcript.events if isinstance(e, ModelCall)]
    usage_line = event_text(calls[0]).plain
    # (surface, figure, the text it rendered, where the figure stands in it)
    table = [
        ("terminal report", "cost", terminal, r"\bcost (\S+)"),
        ("terminal report", "cost per success", terminal, r"per success (\S+)"),
        ("terminal report", "tokens", terminal, r"tokens p50 (\S+)"),
        ("terminal report", "duration", terminal, r"latency p50 (\S+)"),
        ("markdown report", "cost per success", markdown, r"cost per success (\S+)"),
        ("HTML report", "cost", page, r"<th>cost</th><td>(\S+)"),
        ("HTML report", "cost per success", page, r"per success (\S+?)</td>"),
        ("HTML report", "duration", page, r"p50 (\S+)"),
        ("HTML report", "scenario cost (next to last)", page,
         r"<tr><td>s</td>.*<td>([^<]*)</td><td>[^<]*</td></tr>"),
        ("JUnit", "cost", f"cost_usd={props['cost_usd']}", r"cost_usd=(\S+)"),
        ("viewer: trial header", "cost", trial_summary(records[0]).plain, r"\bcost (\S+) ·"),
        ("viewer: trial header", "duration", trial_summary(records[0]).plain, r"duration (\S+)"),
        ("viewer: model call", "tokens", usage_line, r"\bin (\S+) ·"),
        ("viewer: model call", "cost", usage_line, r"\bcost (\S+) ·"),
        ("viewer: run summary", "cost", run_summary_text(overview, "a", "s").plain, r"\bcost (\S+)"),
        ("viewer: markdown export", "cost", transcript_markdown(records[0]), r"\bcost (\S+),"),
        ("viewer: markdown export", "tokens", transcript_markdown(records[0]), r"\bout (\S+),"),
    ]
    said = {}
    for surface, figure, text, where in table:
        found = re.search(where, text)
        assert found is not None, (surface, figure)
        said[(surface, figure)] = found.group(1)
    assert said == {key: UNKNOWN for key in said}


def _cost_said(folder: Path, records: list[TrialRecord]) -> dict[str, str]:
    """The run's cost as the terminal report, the HTML report and the viewer's run line say it."""
    (folder / "run.json").write_text(json.dumps(sample_manifest(folder.name, {"s": 3})))
    (folder / "trials.jsonl").write_bytes(b"".join(encode_record(r) for r in records))
    summary = build(folder, write=False)
    assert isinstance(summary, RunSummary)
    run = RunInfo.load(folder)
    overview = summarize_run(view_figures(RunIndex(run).read_all(), run.planned(), run.allow_unjudged()))
    page = html_report(summary, digest(folder, allow_unjudged=[], records=True))
    texts = {
        "terminal": (_terminal(summary), r"\bcost (\S+)"),
        "html": (page, r"<th>cost</th><td>(\S+)"),
        "viewer": (run_summary_text(overview, "a", "s").plain, r"\bcost (\S+)"),
    }
    said = {}
    for surface, (text, where) in texts.items():
        found = re.search(where, text)
        assert found is not None, surface
        said[surface] = found.group(1).removesuffix("</td></tr>")
    return said


def test_a_total_with_an_unknown_part_is_unknown_on_every_surface(tmp_path: Path) -> None:
    known = [sample_record("mixed", "s", trial) for trial in (1, 2)]
    assert all(r.transcript.events for r in known)
    folder = tmp_path / "transcripts" / "mixed"
    folder.mkdir(parents=True)
    said = _cost_said(folder, [*known, _unknown(sample_record("mixed", "s", 3))])
    assert said == {"terminal": UNKNOWN, "html": UNKNOWN, "viewer": UNKNOWN}  # never "≥$…" on one only


def test_a_run_without_trials_cost_nothing_on_every_surface(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts" / "empty"
    folder.mkdir(parents=True)
    said = _cost_said(folder, [])
    assert said == {"terminal": "$0.0000", "html": "$0.0000", "viewer": "$0.0000"}


def test_not_known_is_not_not_defined() -> None:
    assert (money(None), seconds(None)) == (UNKNOWN, UNKNOWN)
    assert per_success(None, 0) == DASH  # no success: a cost per success is not defined
    assert per_success(None, 2) == UNKNOWN and per_success(0.5, 2) == "$0.5000"
    assert money(0.0) == "$0.0000" and seconds(0.0) == "0.00s"  # a known zero stays a zero
