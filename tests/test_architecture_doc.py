"""ARCHITECTURE.md is the map of the code: every module of the package is named in it, so a module
added without a place on the map fails here (issue 27: the map had gone stale)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_module_is_named_in_the_architecture() -> None:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    spans = re.findall(r"`([^`]+)`", text)  # a module is named in code: `heads_tail`, `report/{fmt,why}`
    named = {word for span in spans for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span)}
    modules = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "simlab").rglob("*.py")
                     if p.name != "__init__.py" and p.stem not in named)
    assert modules == [], f"name these modules in ARCHITECTURE.md: {modules}"
