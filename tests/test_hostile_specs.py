"""Hostile input: every broken spec in tests/fixtures/hostile/specs gives exit code 2 from both
`simlab validate` and `simlab run`, with a message naming the file and the field (or line), never a
traceback, and no YAML tag ever runs code. Hypothesis generates more: random YAML-ish text and
random mutations of a valid scenario always give 0 or 2."""

from __future__ import annotations

import contextlib
import copy
import io
import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simlab.cli.main import main
from tests.support import write_project

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "specs"
SCENARIOS = sorted((CORPUS / "scenarios").iterdir())
PERSONAS = sorted((CORPUS / "personas").iterdir())
CONFIGS = sorted((CORPUS / "config").iterdir())

# What the message must name besides the file: the field, or for whole-file problems the reason.
NAMES = {
    "alias_bomb.yaml": "alias bomb",
    "binary.yaml": "not UTF-8",
    "binary_tag.yaml": "agent_context",
    "bool_as_id.yaml": ":1: id:",
    "config_alias_bomb.yaml": "alias bomb",
    "config_unknown_key.yaml": "concurency",
    "config_wrong_type.yaml": "model_concurrency",
    "control_characters.yaml": ":2:",
    "custom_tag.yaml": "agent_context",
    "date_as_id.yaml": ":1: id:",
    "deeply_nested_block.yaml": "nested deeper",
    "deeply_nested_flow.yaml": "nested deeper",
    "domain_not_a_domain.yaml": "domain",
    "duplicate_key.yaml": "id: duplicate key",
    "duplicate_nested_key.yaml": "user.goal: duplicate key",
    "empty.yaml": "empty",
    "expect_unknown_tool.yaml": "expect.forbidden.0",
    "huge_float.yaml": "max_turns",
    "huge_integer.yaml": "max_turns",
    "huge_max_turns.yaml": "max_turns",
    "id_with_path.yaml": "id:",
    "initial_state_unknown_key.yaml": "initial_state.itemz",
    "initial_state_wrong_shape.yaml": "initial_state.items",
    "integer_key.yaml": ":10: 1:",
    "list_as_key.yaml": ":10:",
    "long_line_garbage.yaml": "agent_context",
    "mapping_as_key.yaml": ":10:",
    "merge_of_scalar.yaml": "agent_context",
    "missing_required_field.yaml": "title",
    "nan_value.yaml": "max_turns",
    "negative_trials.yaml": "trials",
    "not_utf8.yaml": "not UTF-8",
    "null_required_field.yaml": "title",
    "only_comments.yaml": "empty",
    "only_document_marker.yaml": "empty",
    "persona_python_tag.yaml": "description",
    "persona_wrong_types.yaml": "give_up_after",
    "python_tag_apply.yaml": "agent_context",
    "python_tag_in_key.yaml": "!!python",
    "python_tag_name.yaml": "agent_context",
    "python_tag_object_new.yaml": "title",
    "recursive_alias.yaml": "nested deeper",
    "set_tag.yaml": "tags",
    "syntax_bad_indent.yaml": "user.goal",
    "syntax_stray_colon.yaml": "expect",
    "syntax_tab_indent.yaml": "user.goal",
    "syntax_unclosed_flow.yaml": "title",
    "too_many_trials.yaml": "trials",
    "top_level_list.yaml": "a list",
    "top_level_scalar.yaml": "a string",
    "two_documents.yaml": "single document",
    "unknown_domain.yaml": "domain",
    "unknown_key_typo.yaml": "maxturns",
    "unknown_nested_key.yaml": "user.openin",
    "unknown_persona.yaml": "persona",
    "utf16.yaml": "not UTF-8",
    "wrong_type_expect_state.yaml": "expect.state",
    "wrong_type_max_turns.yaml": "max_turns",
    "wrong_type_success_phrases.yaml": "user.success_phrases",
    "wrong_type_user.yaml": "user:",
}
MARKER = "PWNED_BY_YAML"


@pytest.fixture
def project(tmp_path, monkeypatch):
    write_project(tmp_path, scenarios=1, trials=1)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


def assert_refused(code: int, err: str, file: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    assert file in err and NAMES[Path(file).name] in err, err


def test_every_corpus_file_has_an_expectation():
    assert {p.name for p in SCENARIOS + PERSONAS + CONFIGS} == set(NAMES)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_broken_scenarios_give_exit_2_naming_file_and_field(project, path):
    target = project / "scenarios" / path.name
    shutil.copy(path, target)
    rel = f"scenarios/{path.name}"
    assert_refused(*cli("validate", rel), rel)
    assert_refused(*cli("run", rel, "--run-id", "h", "--no-progress"), rel)
    assert not (project / "transcripts" / "h" / "trials.jsonl").exists()
    assert not list(project.rglob(MARKER)) and not Path(MARKER).exists()


@pytest.mark.parametrize("path", PERSONAS, ids=lambda p: p.name)
def test_broken_personas_give_exit_2(project, path):
    shutil.copy(path, project / "personas" / path.name)
    rel = f"personas/{path.name}"
    assert_refused(*cli("validate"), rel)
    assert_refused(*cli("run", "--run-id", "h", "--no-progress"), rel)
    assert not list(project.rglob(MARKER))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_broken_project_config_gives_exit_2(project, path):
    shutil.copy(path, project / "simlab.yaml")
    code, err = cli("validate")
    assert code == 2 and "simlab.yaml" in err and NAMES[path.name] in err and "Traceback" not in err
    code, err = cli("run", "--run-id", "h", "--no-progress")
    assert code == 2 and "simlab.yaml" in err and NAMES[path.name] in err and "Traceback" not in err


def test_a_file_too_big_is_refused_before_parsing(project):
    (project / "scenarios" / "huge.yaml").write_text("title: " + "x" * 5_000_001 + "\n")
    code, err = cli("validate", "scenarios/huge.yaml")
    assert code == 2 and "scenarios/huge.yaml: file is 5,000,009 bytes; specs are limited to 5,000,000" in err


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_link_to_an_endless_device_is_refused(project):
    (project / "scenarios" / "zero.yaml").symlink_to("/dev/zero")
    code, err = cli("validate", "scenarios/zero.yaml")
    assert code == 2 and "scenarios/zero.yaml: not a regular file" in err
    code, err = cli("run", "scenarios/zero.yaml", "--no-progress")
    assert code == 2 and "not a regular file" in err


@pytest.mark.parametrize("content", ["GITHUB_PAT=tok9f8e7d6c5b4a3921\nDB_URL=postgres://u:pw@h/db\n",
                                     "export SUPPORT_BOT_PAT=tok9f8e7d6c5b4a3921\n", "PAT = tok9f8e7d6c5b4a3921"])
def test_an_environment_file_reached_as_a_spec_never_has_its_values_shown(project, content: str):
    (project / "secrets.env").write_text(content)
    (project / "scenarios" / "linked.yaml").symlink_to(project / "secrets.env")
    code, err = cli("validate", "scenarios/linked.yaml")
    assert code == 2 and "scenarios/linked.yaml" in err and "NAME=value lines" in err
    assert "tok9f8e7d6c5b4a3921" not in err and "pw@" not in err


def test_a_fifo_is_refused_without_blocking(project):
    os.mkfifo(project / "scenarios" / "pipe.yaml")
    code, err = cli("validate", "scenarios/pipe.yaml")
    assert code == 2 and "not a regular file" in err


def test_a_folder_named_like_a_spec_is_not_read_as_one(project):
    (project / "scenarios" / "folder.yaml").mkdir()
    code, err = cli("validate")
    assert code == 0, err  # a folder is expanded, not parsed


# ------------------------------------------------------------------------------------ properties

VALID = (CORPUS.parent / "valid_scenario.yaml").read_text()
HYPOTHESIS = settings(max_examples=60, deadline=None, database=None, derandomize=True,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
YAMLISH = st.lists(st.sampled_from([
    "id", "title", "user", "goal", "domain", "persona", "max_turns", "expect", "state", ":", ": ", "-", "- ", "[",
    "]", "{", "}", ",", "&a", "*a", "<<", "!!python/object/apply:os.system", "!!str", "!include", "?", "|", ">",
    "'", '"', "#", "---", "...", "%YAML 1.2", "\n", "\n  ", "\n    ", "\t", " ", "0", "1e999", ".nan", "~", "null",
    "yes", "2024-13-45", "\x00", "\x07", "\x1b[31m", "é", "\u202e", "\ufeff", "\ud800", "tests.support:KV",
    "tester", "Please store b=2.", "9" * 5000,
]), max_size=60).map("".join)


def write_bytes(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogatepass"))  # a lone surrogate becomes invalid UTF-8


@HYPOTHESIS
@given(text=YAMLISH)
def test_random_yamlish_text_never_crashes(project, text):
    path = project / "scenarios" / "random.yaml"
    write_bytes(path, text)
    code, err = cli("validate", "scenarios/random.yaml")
    assert code in (0, 2) and "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert "random.yaml" in err
    assert not list(project.rglob(MARKER))


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def paths_of(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths_of(child, (*prefix, index))


@st.composite
def mutated_scenarios(draw):
    data = yaml.safe_load(VALID)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in paths_of(data) if p]
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add", "rename"]))
        last = path[-1]
        if action == "replace":
            parent[last] = draw(VALUES)
        elif action == "delete":
            del parent[last]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=12))] = draw(VALUES)
        elif action == "rename" and isinstance(parent, dict):
            parent[str(last) + draw(st.sampled_from(["s", "_", "x", ""]))] = parent.pop(last)
        data = copy.deepcopy(data)
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=draw(st.booleans()))


@HYPOTHESIS
@given(text=mutated_scenarios())
def test_mutated_scenarios_give_0_or_2(project, text):
    (project / "scenarios" / "mutant.yaml").write_text(text, encoding="utf-8")
    code, err = cli("validate", "scenarios/mutant.yaml")
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert "mutant.yaml" in err


@settings(max_examples=25, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=mutated_scenarios())
def test_mutated_scenarios_run_or_are_refused(project, text):
    (project / "scenarios" / "mutant.yaml").write_text(text, encoding="utf-8")
    shutil.rmtree(project / "transcripts", ignore_errors=True)
    code, err = cli("run", "scenarios/mutant.yaml", "--run-id", "mut", "--no-progress")
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err


@HYPOTHESIS
@given(position=st.integers(0, 10_000), junk=st.text(min_size=1, max_size=8), cut=st.integers(0, 20))
def test_a_valid_scenario_with_random_damage_gives_0_or_2(project, position, junk, cut):
    at = position % (len(VALID) + 1)
    text = VALID[:at] + junk + VALID[at + cut:]
    write_bytes(project / "scenarios" / "damaged.yaml", text)
    code, err = cli("validate", "scenarios/damaged.yaml")
    assert code in (0, 2) and "Traceback" not in err and "internal error" not in err
