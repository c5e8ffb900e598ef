"""README.md's *Verdicts* section is what ``transcript/verdicts.py`` defines: the two cannot drift apart."""

from __future__ import annotations

from pathlib import Path

from simlab.transcript.verdicts import CLASSES, PRECEDENCE, VERDICT_INFO, readme_section

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- verdicts: generated from simlab/transcript/verdicts.py -->\n", "<!-- /verdicts -->"


def test_the_readme_section_is_generated_from_the_module() -> None:
    text = README.read_text(encoding="utf-8")
    assert "### Verdicts" in text and START in text and END in text
    section = text[text.index(START) + len(START):text.index(END)]
    assert section == readme_section(), "README's Verdicts section is stale: paste `python -m simlab.transcript.verdicts`"


def test_the_section_names_every_verdict_class_and_rule() -> None:
    section = readme_section()
    for info in VERDICT_INFO.values():
        assert f"| {info.name} | {info.symbol} | {info.meaning} |" in section
    for c in CLASSES.values():
        assert f"| {c.label} | {c.meaning} |" in section
    for n, (verdict, when, _) in enumerate(PRECEDENCE, 1):
        assert f"{n}. **{verdict}** when {when}" in section
