"""The docs site holds together: every page is in the nav and every nav entry is a page, every
relative link and image of the pages and of README.md resolves (anchors included), the README stays
short and its demo report is the real one, and `mkdocs build --strict` passes (slow)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def nav_pages(entries: Any) -> list[str]:
    """The files the nav names, in order."""
    found: list[str] = []
    for entry in entries if isinstance(entries, list) else [entries]:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                found += nav_pages(value)
    return found


def config() -> dict[str, Any]:
    return yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))


def slug(heading: str) -> str:
    """Python-Markdown's toc slug: lowercase, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*\*|\*", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[-\s]+", "-", text).strip("-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.M)}


def links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of every relative link and image outside code."""
    text = page.read_text(encoding="utf-8")
    blanked = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    blanked = re.sub(r"`[^`\n]*`", "", blanked)
    found = []
    for m in LINK.finditer(blanked):
        target = m.group(1)
        if not re.match(r"[a-z]+:", target):
            found.append((blanked.count("\n", 0, m.start()) + 1, target))
    return found


def problems_of(page: Path, root: Path = REPO) -> list[str]:
    problems = []
    for line, target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(root)}:{line}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: no heading #{anchor} in {dest.relative_to(root)}")
    return problems


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    named = nav_pages(config()["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(set(named)) == pages, "pages and nav differ (mkdocs.yml's nav)"
    assert len(named) == len(set(named)), "a page is named twice in the nav"


def test_the_nav_has_the_four_kinds_of_documentation_and_troubleshooting() -> None:
    top = [next(iter(entry)) for entry in config()["nav"]]
    for section in ("Tutorial", "How-to guides", "Concepts", "Reference", "Troubleshooting"):
        assert section in top


def test_every_relative_link_and_image_resolves() -> None:
    problems = []
    for page in sorted(DOCS.rglob("*.md")) + [REPO / "README.md"]:
        problems += problems_of(page)
    assert problems == []


def test_the_link_checker_sees_a_broken_link_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Two `words`\n\nSee [b](b.md), [x](a.md#two-words), [y](#nope).\n"
                                   "```\n[not a link](nowhere.md)\n```\n`[nor this](nowhere.md)`\n")
    found = problems_of(tmp_path / "a.md", tmp_path)
    assert found == ["a.md:5: b.md: no such file", "a.md:5: #nope: no heading #nope in a.md"]


def test_the_readme_is_short_and_points_into_the_docs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    targets = {target for _, target in links(REPO / "README.md")}
    for page in ("docs/tutorial.md", "docs/how-to/frameworks.md", "docs/how-to/nightly-ci.md",
                 "docs/concepts/verdicts.md", "docs/troubleshooting.md"):
        assert page in targets
    assert "tests/" not in re.sub(r"\.venv/bin/ruff check simlab tests", "", readme).replace("pytest", "")


def test_the_demo_reports_shown_are_the_real_one(tmp_path: Path) -> None:
    """Every line of the demo report the README (abridged) and *How to read a report* show is a line of
    the real report, in order; durations are the only figures allowed to differ."""
    shown_blocks = []
    for page in (REPO / "README.md", DOCS / "concepts" / "reading-a-report.md"):
        block = re.search(r"real output of `simlab run --run-id readme-demo`.*?```\n(.*?)```", page.read_text(), re.S)
        assert block is not None, page
        shown_blocks.append((page.name, block.group(1)))
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("GITHUB_")}
    done = subprocess.run([sys.executable, "-m", "simlab.cli.main", "run", "--run-id", "readme-demo"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env={**env, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr

    def norm(line: str) -> str:
        return re.sub(r"\b\d+\.\d+s\b", "N.NNs", line.rstrip())

    real = [norm(line) for line in done.stdout.splitlines()]
    for page, block in shown_blocks:
        at = 0
        for shown in map(norm, block.splitlines()):
            if shown.strip() == "…":
                continue
            assert shown in real[at:], f"{page}: not in the real report (in order): {shown}"
            at = real.index(shown, at) + 1


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """`mkdocs build --strict`: no broken link or anchor, no page outside the nav, every API object resolved."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "tutorial" / "index.html").is_file()
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("load_run", "Domain", "grader", "AgentInput"):
        assert name in api
