"""The test suite's own setup: the long drills are marked slow and left out of `pytest`, every one
of them still exists, and CI runs the README's command and then the slow drills."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from tests.conftest import SLOW

REPO = Path(__file__).resolve().parents[1]


def test_the_default_run_leaves_out_the_slow_drills_and_declares_the_marker() -> None:
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not slow'" in options["addopts"]
    assert any(m.startswith("slow:") for m in options["markers"])


def test_every_slow_drill_named_exists() -> None:
    assert sum(len(names) for names in SLOW.values()) >= 40
    for path, names in SLOW.items():
        tree = ast.parse((REPO / path).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert names <= defined, f"{path}: {sorted(names - defined)}"


def test_ci_runs_the_readme_test_command_then_the_slow_drills() -> None:
    readme = (REPO / "README.md").read_text()
    block = re.search(r"Run the tests.*?```bash\n(.*?)```", readme, re.S)
    assert block is not None
    command = " ".join(block.group(1).replace("\\\n", " ").split())
    ci = " ".join((REPO / ".ci" / "run").read_text().replace("\\\n", " ").split())
    assert command.replace("pip install -e", "pip install -q -e") in ci
    assert ci.index(command.split("&&")[-1].strip()) < ci.index(".venv/bin/pytest -m slow")
