"""One meaning on every surface: the demo's unjudged trials (counted as passes by its
``allow_unjudged: [rubric]``) and its scenario classes read the same in the terminal, markdown,
HTML, JUnit, the digest of trials that did not pass and the viewer, all from
``transcript/verdicts.py``."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from simlab.report.build import build
from simlab.report.digest import digest
from simlab.report.formats import render
from simlab.report.gates import GateReport
from simlab.report.html import html_report
from simlab.report.junit import junit_xml
from simlab.report.terminal import print_report
from simlab.results.figures import RunSummary
from simlab.transcript.verdicts import CLASSES, class_label, passes, unjudged_text
from tests.support import played_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunSummary]:
    folder = played_demo(tmp_path_factory)
    summary = build(folder, write=False)
    assert isinstance(summary, RunSummary)
    return folder, summary


def terminal(summary: RunSummary) -> str:
    out = io.StringIO()
    print_report(summary, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_the_demo_has_unjudged_trials_counted_as_passes(demo: tuple[Path, RunSummary]) -> None:
    _, summary = demo
    assert summary.unjudged.trials and summary.unjudged.counted_as_pass == summary.unjudged.trials
    assert sum(s.unjudged + s.unjudged_counted_as_pass for s in summary.scenarios.values()) == summary.unjudged.trials


def test_every_surface_counts_the_same_unjudged_trials(demo: tuple[Path, RunSummary]) -> None:
    folder, summary = demo
    text, markdown = terminal(summary), render(summary, "markdown")
    page = html_report(summary, digest(folder, allow_unjudged=summary.unjudged.allowed_kinds, records=True))
    xml = ET.fromstring(junit_xml(summary, GateReport(), "demo"))
    for sid, s in summary.scenarios.items():
        shown = unjudged_text(s.unjudged, s.unjudged_counted_as_pass)
        html_row = re.search(rf"<tr><td>{re.escape(sid)}</td>(.*?)</tr>", page)
        assert html_row and f"<td>{shown}</td>" in html_row.group(1), sid  # was 0 where the terminal said 26
        md_row = next(line for line in markdown.splitlines() if line.startswith(f"| {sid} |"))
        assert f"| {shown} |" in md_row, sid
        term_row = next(line for line in text.splitlines() if sid in line)
        assert f"/{shown}" in term_row, sid
        case = next(c for c in xml.iter("testcase") if c.get("name") == sid)
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["unjudged"] == str(s.unjudged + s.unjudged_counted_as_pass)
        assert props["unjudged_counted_as_pass"] == str(s.unjudged_counted_as_pass)


def test_every_surface_names_the_classes_alike(demo: tuple[Path, RunSummary]) -> None:
    from simlab.tui.widgets.scenarios_table import flake_text

    folder, summary = demo
    text, markdown = terminal(summary), render(summary, "markdown")
    page = html_report(summary, digest(folder, allow_unjudged=summary.unjudged.allowed_kinds, records=True))
    assert {s.flake_class for s in summary.scenarios.values()} >= {"stable_pass", "flaky"}
    for sid, s in summary.scenarios.items():
        label = class_label(s.flake_class)
        assert label in next(line for line in text.splitlines() if sid in line)
        assert f"| {label} |" in next(line for line in markdown.splitlines() if line.startswith(f"| {sid} |"))
        assert f"<td>{label}</td>" in page
        assert flake_text(s.flake_class).plain == label
    assert "all ✓" not in text + markdown + page and "stable pass" not in text + markdown + page
    assert [c.label for c in CLASSES.values()] == ["all pass", "flaky", "all fail"]


def test_trials_that_did_not_pass_are_the_same_everywhere(demo: tuple[Path, RunSummary]) -> None:
    """The digest (JUnit, HTML) names exactly the trials the figures count as not passed."""
    folder, summary = demo
    named = digest(folder, allow_unjudged=summary.unjudged.allowed_kinds)
    for sid, s in summary.scenarios.items():
        assert named.not_passed.get(sid, 0) == s.n - s.passes, sid
    from simlab.runner.store import RunStore

    heads = list(RunStore(folder).iter_heads())
    assert sum(not passes(h.row.verdict, [k for _, k in h.unjudged],
                          summary.unjudged.allowed_kinds) for h in heads) == summary.trials - sum(
        s.passes for s in summary.scenarios.values())
