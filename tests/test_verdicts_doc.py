"""The docs' Verdicts page (docs/concepts/verdicts.md) holds what ``transcript/verdicts.py`` defines: the two cannot drift apart."""

from __future__ import annotations

from pathlib import Path

from simlab.transcript.verdicts import CLASSES, PRECEDENCE, VERDICT_INFO, readme_section

PAGE = Path(__file__).resolve().parents[1] / "docs" / "concepts" / "verdicts.md"
START, END = "<!-- verdicts: generated from simlab/transcript/verdicts.py -->\n", "<!-- /verdicts -->"


def test_the_docs_section_is_generated_from_the_module() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text.startswith("# Verdicts\n") and START in text and END in text
    section = text[text.index(START) + len(START):text.index(END)]
    assert section == readme_section(), "docs/concepts/verdicts.md is stale: paste `python -m simlab.transcript.verdicts`"


def test_the_section_names_every_verdict_class_and_rule() -> None:
    section = readme_section()
    for info in VERDICT_INFO.values():
        assert f"| {info.name} | {info.symbol} | {info.meaning} |" in section
    for c in CLASSES.values():
        assert f"| {c.label} | {c.meaning} |" in section
    for n, (verdict, when, _) in enumerate(PRECEDENCE, 1):
        assert f"{n}. **{verdict}** when {when}" in section
