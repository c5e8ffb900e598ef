"""``import simlab.llm`` stays cheap: LiteLLM is loaded only for a real call."""

from __future__ import annotations

import subprocess
import sys


def test_importing_simlab_llm_does_not_import_litellm() -> None:
    code = ("import simlab.llm, sys; from simlab.llm import *; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('litellm', 'openai')]; "
            "assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_load_litellm_sets_local_cost_map() -> None:
    code = ("import os; os.environ.pop('LITELLM_LOCAL_MODEL_COST_MAP', None); "
            "from simlab.llm import load_litellm; m = load_litellm(); "
            "assert os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] == 'True'; assert m.suppress_debug_info")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
