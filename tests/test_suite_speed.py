"""The default test run stays fast: collecting the suite imports none of the libraries that take
seconds to import. Each pytest-xdist worker collects the whole suite, so a test module that imports
LiteLLM or an agent framework at module level makes every worker pay for it, whether or not it runs
one of that module's tests (tests/conftest.py: the convention)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# seconds each on this 2-core machine; a test imports them in its body, a fixture or via
# tests.support.LazyModule
HEAVY = ("litellm", "agents", "pydantic_ai", "pandas", "mcp", "uvicorn")

PROBE = r"""
import json, sys, traceback
import pytest

heavy, by = set(sys.argv[1].split(",")), {}


class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in heavy and name not in by:
            frames = [f for f in traceback.extract_stack() if "/tests/" in f.filename]
            by[name] = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "a pytest plugin"
        return None


sys.meta_path.insert(0, Watch())
rc = pytest.main(["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", "tests"])
print(json.dumps({"rc": int(rc), "imported_by": by}))
"""


def test_collecting_the_suite_imports_no_heavy_library() -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, ",".join(HEAVY)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0, done.stdout[-2000:]
    imported_by = {name: str(Path(where).relative_to(REPO)) if where.startswith(str(REPO)) else where
                   for name, where in result["imported_by"].items()}
    assert imported_by == {}, f"collecting the suite imported {imported_by}: import these in the test or a fixture"
