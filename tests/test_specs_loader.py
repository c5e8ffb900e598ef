"""Loading a project: personas, scenarios, references between them, and finding scenario files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

FIXTURES = str(Path(__file__).parent / "fixtures" / "specs")
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

import pytest  # noqa: E402
from spec_helpers import PROJECT, SCENARIO, one_problem, problems, write  # noqa: E402

from simlab.specs import (  # noqa: E402
    Persona,
    load_config,
    load_personas,
    load_scenarios,
    load_suite,
    scenario_files,
)

PERSONA = "id: {pid}\ndescription: Someone.\n"


def test_the_fixture_project_loads() -> None:
    config = load_config(PROJECT / "simlab.yaml")
    assert config.agent is not None and config.agent.model == "openai/gpt-4o-2024-08-06"
    assert config.simulator is not None and config.simulator.kind == "llm"
    personas = load_personas(PROJECT / config.personas)
    assert sorted(personas) == ["impatient-terse", "polite"]
    files = scenario_files(config.scenarios, base=PROJECT)
    assert [f.name for f in files] == ["inline-persona.yml", "damaged.yaml"]
    loaded = {s.spec.id: s for s in load_scenarios(files, personas)}
    damaged = loaded["refund-damaged-impatient"]
    assert damaged.persona.id == "impatient-terse"
    assert damaged.persona_path == PROJECT / "personas" / "impatient-terse.yaml"
    assert damaged.persona_sha256 == personas["impatient-terse"].sha256
    assert damaged.spec.user.never_reveal == {"the card number": "the card number"}
    inline = loaded["inline-persona"]
    assert inline.persona.id == "one-off" and inline.persona_path is None and inline.persona_sha256 is None
    suite = load_suite(PROJECT / "suites" / "nightly.yaml").spec
    assert suite.agent is not None and suite.agent.python == "examples.agents:careful_agent"


def test_missing_persona_folder_is_no_personas(tmp_path: Path) -> None:
    assert load_personas(tmp_path / "nope") == {}


def test_persona_folder_skips_other_files(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", PERSONA.format(pid="a"))
    write(tmp_path, "b.YML", PERSONA.format(pid="b"))
    write(tmp_path, "notes.md", "not yaml")
    write(tmp_path, ".c.yaml", "garbage: [")
    assert sorted(load_personas(tmp_path)) == ["a", "b"]


def test_duplicate_persona_ids_name_both_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", PERSONA.format(pid="same"))
    second = write(tmp_path, "b.yaml", "# another\n" + PERSONA.format(pid="same"))
    assert one_problem(load_personas, tmp_path) == (
        f"{second}:2: id: persona 'same' is also defined in {first}:1"
    )


def test_every_broken_persona_is_reported(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", "id: a\n")
    b = write(tmp_path, "b.yaml", "id: b\ndescription: x\ntraits: calm\n")
    assert problems(load_personas, tmp_path) == [
        f"{a}:1: description: required field is missing",
        f"{b}:3: traits: Input should be a valid list (got 'calm')",
    ]


def test_unknown_persona_lists_the_known_ones(tmp_path: Path) -> None:
    personas = load_personas(PROJECT / "personas")
    path = write(tmp_path, "s.yaml", SCENARIO.replace("persona: polite", "persona: grumpy"))
    assert one_problem(load_scenarios, [path], personas) == (
        f"{path}:4: persona: unknown persona 'grumpy' (known: impatient-terse, polite)"
    )


def test_unknown_persona_without_any_personas(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", SCENARIO)
    assert one_problem(load_scenarios, [path], {}) == f"{path}:4: persona: unknown persona 'polite' (known: none found)"


def test_inline_persona_needs_no_persona_files(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", SCENARIO.replace("persona: polite", "persona: {id: me, description: Me.}"))
    [loaded] = load_scenarios([path], {})
    assert isinstance(loaded.persona, Persona) and loaded.persona.id == "me"


def test_duplicate_scenario_ids_name_both_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", SCENARIO)
    second = write(tmp_path, "b.yaml", "# same id\n" + SCENARIO)
    personas = load_personas(PROJECT / "personas")
    assert one_problem(load_scenarios, [first, second], personas) == (
        f"{second}:2: id: scenario 's1' is also defined in {first}:1"
    )


def test_all_scenario_problems_at_once(tmp_path: Path) -> None:
    broken = write(tmp_path, "a.yaml", SCENARIO + "titel: x\n")
    unknown = write(tmp_path, "b.yaml", SCENARIO.replace("s1", "s2").replace("polite", "nobody"))
    syntax = write(tmp_path, "c.yaml", "id: [\n")
    found = problems(load_scenarios, [broken, unknown, syntax], load_personas(PROJECT / "personas"))
    assert len(found) == 3
    assert found[0].startswith(f"{broken}:7: titel: unknown field")
    assert found[1].startswith(f"{unknown}:4: persona: unknown persona 'nobody'")
    assert found[2].startswith(f"{syntax}:") and "YAML syntax error" in found[2]


# --- scenario_files -----------------------------------------------------------------------------


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    for name in ["b.yaml", "a.yml", "sub/c.yaml", "sub/deeper/d.YAML", "README.md", "sub/notes.txt",
                 ".hidden.yaml", ".git/config.yaml", "sub/.backup/e.yaml"]:
        write(tmp_path, name, "id: x\n")
    (tmp_path / "empty").mkdir()
    return tmp_path


def names(paths: list[Path], root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in paths]


def test_folder_is_searched_recursively_in_a_stable_order(tree: Path) -> None:
    assert names(scenario_files([tree]), tree) == ["a.yml", "b.yaml", "sub/c.yaml", "sub/deeper/d.YAML"]


def test_paths_are_relative_to_base(tree: Path) -> None:
    found = scenario_files(["sub", "b.yaml"], base=tree)
    assert found == [tree / "sub" / "c.yaml", tree / "sub" / "deeper" / "d.YAML", tree / "b.yaml"]


def test_absolute_paths_ignore_base(tree: Path, tmp_path: Path) -> None:
    assert scenario_files([str(tree / "b.yaml")], base=Path("/elsewhere")) == [tree / "b.yaml"]


def test_globs(tree: Path) -> None:
    assert names(scenario_files(["*.y*ml"], base=tree), tree) == ["a.yml", "b.yaml"]
    assert names(scenario_files(["**/*.yaml"], base=tree), tree) == ["b.yaml", "sub/c.yaml"]
    assert names(scenario_files(["sub/*"], base=tree), tree) == ["sub/c.yaml", "sub/deeper/d.YAML"]


def test_an_explicit_file_is_taken_whatever_its_suffix(tree: Path) -> None:
    assert scenario_files(["README.md"], base=tree) == [tree / "README.md"]


def test_the_same_file_twice_is_listed_once(tree: Path) -> None:
    found = scenario_files(["b.yaml", ".", "./b.yaml", "*.yaml"], base=tree)
    assert names(found, tree) == ["b.yaml", "a.yml", "sub/c.yaml", "sub/deeper/d.YAML"]


def test_missing_path(tree: Path) -> None:
    assert one_problem(scenario_files, ["nope.yaml"], base=tree) == f"{tree / 'nope.yaml'}: no such file or folder"


def test_glob_without_matches(tree: Path) -> None:
    assert one_problem(scenario_files, ["zzz*.yaml"], base=tree) == (
        f"{tree / 'zzz*.yaml'}: no scenario file matches this pattern"
    )


def test_glob_matching_only_other_files(tree: Path) -> None:
    assert one_problem(scenario_files, ["*.md"], base=tree) == f"{tree / '*.md'}: no scenario files (.yaml, .yml) here"


def test_empty_folder(tree: Path) -> None:
    assert one_problem(scenario_files, ["empty"], base=tree) == f"{tree / 'empty'}: no scenario files (.yaml, .yml) here"


def test_relative_paths_without_base_use_the_working_directory(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    assert scenario_files(["sub/c.yaml"]) == [Path("sub/c.yaml")]
    assert os.path.samefile(scenario_files(["sub/c.yaml"])[0], tree / "sub" / "c.yaml")
