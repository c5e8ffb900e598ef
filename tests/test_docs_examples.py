"""The abridged `console` examples of the how-to guides are real: every `$ command` of a ```console
block runs in a copy of the demo project (with the example agent service of the guide on
127.0.0.1 as `$BASE`), in the page's order, and every line the page shows is a line of the real
output, in order. A line `…` stands for lines left out; durations are the only figures that may
differ. (The tutorial is held closer still, whole: tests/test_docs_tutorial.py.)

`SIMLAB_DOCS_SHOW=1 pytest tests/test_docs_examples.py -n 0 -m slow -s` prints the real outputs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_docs_tutorial import steps

REPO = Path(__file__).resolve().parents[1]
PAGES = ["docs/how-to/faults.md", "docs/how-to/frameworks.md", "docs/how-to/http-agent.md",
         "docs/how-to/nightly-ci.md", "docs/concepts/statistics.md", "docs/how-to/coverage.md",
         "docs/how-to/lint.md"]


def norm(line: str) -> str:
    return re.sub(r"\b\d+\.\d+s\b", "N.NNs", line.rstrip())


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    from tests.agent_service import AgentService

    with AgentService() as service:
        yield service.base


@pytest.mark.parametrize("page", PAGES)
def test_every_line_shown_is_real(page: str, base: str, tmp_path: Path) -> None:
    for name in ("scenarios", "personas", "examples", "suites"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("GITHUB_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(REPO),
               PYTHONUNBUFFERED="1", NO_COLOR="1", BASE=base, SIMLAB_BACKOFF_SCALE="0")
    commands = [s for s in steps((REPO / page).read_text(encoding="utf-8")) if s.kind == "command"]
    assert commands, f"{page} has no console block"
    last = 0
    for step in commands:
        done = subprocess.run(["bash", "-c", f"(exit {last}); {step.text}"], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        last = done.returncode
        if os.environ.get("SIMLAB_DOCS_SHOW") == "1":
            print(f"\n$ {step.text}\n{done.stdout}")
            continue
        real = [norm(line) for line in done.stdout.splitlines()]
        at = 0
        for shown in map(norm, step.shown.splitlines()):
            if shown.strip() in ("…", ""):
                continue
            assert shown in real[at:], f"{page}: $ {step.text}\nnot in the real output (in order): {shown}"
            at = real.index(shown, at) + 1
