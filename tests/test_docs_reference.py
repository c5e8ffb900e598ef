"""The reference pages of the docs site are generated (docs/gen_ref.py), never hand-copied: the
committed pages equal what the generator writes from the code, and they name what the code has."""

from __future__ import annotations

import importlib.util
import typing
from pathlib import Path
from types import ModuleType

from simlab.errors import EXIT_GATE_FAILED, EXIT_INFRA, EXIT_OK, EXIT_USAGE
from simlab.graders.registry import BUILTINS
from simlab.specs.base import CheckKind
from simlab.specs.persona import Persona
from simlab.specs.scenario import Scenario

REPO = Path(__file__).resolve().parents[1]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_ref", REPO / "docs" / "gen_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_pages_are_the_generated_ones() -> None:
    pages = generator().pages()
    assert {p.name for p in pages} == {"scenario.md", "persona.md", "suite.md", "config.md", "checks.md",
                                       "exit-codes.md", "cli.md"}
    stale = [p.name for p, text in pages.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    assert stale == [], f"stale reference pages {stale}: run `python docs/gen_ref.py`"


def test_the_pages_name_every_field_kind_grader_and_exit_code() -> None:
    pages = {p.name: text for p, text in generator().pages().items()}
    for model, page in ((Scenario, "scenario.md"), (Persona, "persona.md")):
        for name, info in model.model_fields.items():
            assert f"| `{info.alias or name}` |" in pages[page], f"{page}: {name}"
    assert "## Expect" in pages["scenario.md"] and "## Rule" in pages["scenario.md"]
    for kind in typing.get_args(CheckKind):
        assert f"- `{kind}`" in pages["checks.md"]
    for name in BUILTINS:
        assert f"| `{name}` |" in pages["checks.md"]
    assert "| `expect.rubric` (RubricItem) | `false` |" in pages["checks.md"]
    assert "| `expect.response_match` (ResponseMatch) | `true` |" in pages["checks.md"]
    for code in (EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE, EXIT_INFRA, 70, 130):
        assert f"\n| {code} | " in pages["exit-codes.md"]


def test_a_hand_edit_is_seen(tmp_path: Path) -> None:
    module = generator()
    module.OUT = tmp_path
    for path, text in module.pages().items():
        path.write_text(text, encoding="utf-8")
    assert module.main(["--check"]) == 0
    (tmp_path / "checks.md").write_text((tmp_path / "checks.md").read_text() + "hand edit\n")
    assert module.main(["--check"]) == 1
