"""Safe YAML loading: every broken or hostile file becomes one message naming file and line."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Any

FIXTURES = str(Path(__file__).parent / "fixtures" / "specs")
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

import pytest  # noqa: E402
from spec_helpers import SCENARIO, one_problem, write  # noqa: E402

from simlab.specs import (  # noqa: E402
    Persona,
    Scenario,
    load_model,
    yamlio,
)
from simlab.specs.yamlio import MAX_BYTES, MAX_DEPTH, line_for, load_yaml_file, load_yaml_text  # noqa: E402


def test_values_and_their_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", """\
        # a comment
        id: s1
        user:
          goal: g
          known_facts: {order_id: A123}
        tags:
          - a
          - b
        """)
    data, lines = load_yaml_file(path)
    assert data == {"id": "s1", "user": {"goal": "g", "known_facts": {"order_id": "A123"}}, "tags": ["a", "b"]}
    assert lines[("id",)] == 2
    assert lines[("user", "goal")] == 4
    assert lines[("user", "known_facts", "order_id")] == 5
    assert lines[("tags", 1)] == 8
    assert line_for(lines, ("user", "known_facts", "order_id", "deeper", 3)) == 5
    assert line_for(lines, ("nowhere",)) == 2  # the document itself


def test_keys_keep_their_yaml_type_so_error_paths_find_their_line() -> None:
    data, lines = load_yaml_text("m:\n  1: a\n  '1': b\n", "f.yaml")
    assert data == {"m": {1: "a", "1": "b"}}  # different keys, not duplicates
    assert lines[("m", 1)] == 2 and lines[("m", "1")] == 3


def test_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "id: s1\ntitle: t\nuser: {goal: [unclosed\nmore: 1\n")
    msg = one_problem(load_yaml_file, path)
    assert msg.startswith(f"{path}:")
    assert "YAML syntax error" in msg
    line = int(msg.split(":")[1])
    assert 3 <= line <= 5


def test_mapping_value_in_the_wrong_place_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "id: s1\ntitle: a: b\n")
    msg = one_problem(load_yaml_file, path)
    assert msg.startswith(f"{path}:2: YAML syntax error:")


def test_two_documents_in_one_file(tmp_path: Path) -> None:
    path = write(tmp_path, "two.yaml", "id: a\n---\nid: b\n")
    msg = one_problem(load_yaml_file, path)
    assert msg.startswith(f"{path}:2: YAML syntax error:") and "single document" in msg


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "empty.yaml", text)
    assert one_problem(load_model, path, Scenario) == f"{path}: the file is empty; expected a mapping of fields"


@pytest.mark.parametrize(
    ("text", "kind"),
    [("- a\n- b\n", "a list"), ("just words\n", "a string ('just words')"), ("~\n", "nothing (null)"),
     ("42\n", "int")],
)
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str, kind: str) -> None:
    path = write(tmp_path, "top.yaml", text)
    assert one_problem(load_model, path, Persona) == f"{path}:1: expected a mapping of fields, got {kind}"


def test_top_level_mapping_error_names_the_documents_line(tmp_path: Path) -> None:
    path = write(tmp_path, "top.yaml", "# yaml-language-server: $schema=../schemas/persona.json\n\n- a\n")
    assert one_problem(load_model, path, Persona).startswith(f"{path}:3: expected a mapping")


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", SCENARIO + "title: again\n")
    assert one_problem(load_model, path, Scenario) == (
        f"{path}:7: title: duplicate key (first at line 2); remove one"
    )


def test_nested_duplicate_key_names_the_path(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", "user:\n  goal: a\n  known_facts:\n    x: 1\n    x: 2\n")
    assert one_problem(load_yaml_file, path) == (
        f"{path}:5: user.known_facts.x: duplicate key (first at line 4); remove one"
    )


def test_duplicate_key_in_a_list_item(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", "expect:\n  state:\n    - {path: a, equals: 1, equals: 2}\n")
    assert one_problem(load_yaml_file, path) == (
        f"{path}:3: expect.state.0.equals: duplicate key (first at line 3); remove one"
    )


def test_binary_file_is_not_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "image.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    msg = one_problem(load_yaml_file, path)
    assert msg.startswith(f"{path}:1: not UTF-8 text (byte 0)")
    assert "is this a YAML file?" in msg


def test_latin1_file_names_the_byte(tmp_path: Path) -> None:
    path = write(tmp_path, "latin1.yaml", "id: s1\ntitle: Caf\xe9\n".encode("latin-1"))
    assert one_problem(load_yaml_file, path) == f"{path}:2: not UTF-8 text (byte 17); is this a YAML file?"


def test_nul_bytes_name_their_line(tmp_path: Path) -> None:
    path = write(tmp_path, "nul.yaml", b"id: s1\ntitle: a\x00b\n")
    assert one_problem(load_yaml_file, path) == f"{path}:2: contains NUL bytes; is this a YAML file?"


def test_control_character_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bell.yaml", b"id: s1\ntitle: ring\x07\n")
    msg = one_problem(load_yaml_file, path)
    assert msg.startswith(f"{path}:2: character ") and "not allowed" in msg


def test_utf8_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = write(tmp_path, "bom.yaml", "\ufeffid: s1\ntitle: Café\n".encode())
    assert load_yaml_file(path)[0] == {"id": "s1", "title": "Café"}


def test_unreadable_path(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.yaml"
    folder.mkdir()
    assert one_problem(load_yaml_file, folder).startswith(f"{folder}: cannot read: ")


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!python/object/apply:os.system ['touch {marker}']", "!!python/object/apply:os.system"),
        ("!!python/object/new:os.system ['touch {marker}']", "!!python/object/new:os.system"),
        ("!!python/name:os.system", "!!python/name:os.system"),
        ("!!python/module:os", "!!python/module:os"),
        ("!Ref other", "!Ref"),
    ],
)
def test_python_and_custom_tags_are_refused_and_never_run(tmp_path: Path, value: str, tag: str) -> None:
    marker = tmp_path / "pwned"
    path = write(tmp_path, "evil.yaml", f"id: s1\nuser:\n  goal: {value.format(marker=marker)}\n")
    msg = one_problem(load_model, path, Scenario)
    assert msg == (
        f"{path}:3: user.goal: YAML tag {tag!r} is not allowed; specs are plain data (no Python objects or custom tags)"
    )
    assert not marker.exists()


def test_python_tag_on_a_key_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write(tmp_path, "evil.yaml", f"? !!python/object/apply:os.system ['touch {marker}']\n: 1\n")
    assert "!!python/object/apply:os.system" in one_problem(load_yaml_file, path)
    assert not marker.exists()


def never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("this step should never be reached")


def test_billion_laughs_is_refused_quickly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Quickly: before any alias is expanded (the walker and the constructor never run), so the
    test holds on any machine."""
    rows = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        rows.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    path = write(tmp_path, "bomb.yaml", "\n".join(rows) + "\n")
    monkeypatch.setattr(yamlio._Walker, "walk", never)
    monkeypatch.setattr(yamlio._Loader, "construct_document", never)
    msg = one_problem(load_yaml_file, path)
    assert msg == f"{path}: YAML expands to more than 200,000 values (alias bomb?)"


def test_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "loop.yaml", "a: &a [*a]\n")
    assert "nested deeper than" in one_problem(load_yaml_file, path)


def test_plain_aliases_and_merge_keys_still_work(tmp_path: Path) -> None:
    path = write(tmp_path, "merge.yaml", """\
        base: &base {customer: C-17, total: 10}
        orders:
          A1: *base
          A2:
            <<: *base
            total: 20
        """)
    data, lines = load_yaml_file(path)
    assert data["orders"] == {"A1": {"customer": "C-17", "total": 10}, "A2": {"customer": "C-17", "total": 20}}
    assert lines[("orders", "A2", "total")] == 6
    assert lines[("orders", "A2", "customer")] == 1  # where the merged value is written


@pytest.mark.parametrize("style", ["block", "flow"])
def test_deep_nesting_is_refused_with_its_line(tmp_path: Path, style: str) -> None:
    depth = 500
    if style == "block":
        text = "".join(f"{'  ' * i}k{i}:\n" for i in range(depth)) + f"{'  ' * depth}leaf\n"
    else:
        text = "a: " + "[" * depth + "]" * depth + "\n"
    path = write(tmp_path, "deep.yaml", text)
    msg = one_problem(load_yaml_file, path)
    assert msg.startswith(f"{path}:") and f"nested deeper than {MAX_DEPTH} levels" in msg
    if style == "block":
        assert msg.startswith(f"{path}:{MAX_DEPTH + 1}:")


def test_very_deep_nesting_does_not_crash(tmp_path: Path) -> None:
    path = write(tmp_path, "deeper.yaml", "a: " + "[" * 200_000 + "]" * 200_000 + "\n")
    assert "YAML" in one_problem(load_yaml_file, path)


def test_nesting_at_the_limit_is_fine(tmp_path: Path) -> None:
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(MAX_DEPTH - 1)) + f"{'  ' * (MAX_DEPTH - 1)}leaf\n"
    data, _ = load_yaml_file(write(tmp_path, "ok.yaml", text))
    assert data["k0"]["k1"]


def test_huge_file_is_refused_before_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "huge.yaml", "x: " + "a" * MAX_BYTES + "\n")
    monkeypatch.setattr(yamlio, "load_yaml_text", never)  # refused before any parsing
    assert one_problem(load_yaml_file, path) == (
        f"{path}: file is {MAX_BYTES + 4:,} bytes; specs are limited to {MAX_BYTES:,}"
    )


def test_too_many_values_are_refused_quickly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "many.yaml", "items:\n" + "".join(f"  - {i}\n" for i in range(250_000)))
    assert path.stat().st_size < MAX_BYTES
    monkeypatch.setattr(yamlio._Loader, "get_single_node", never)  # refused on the event stream, before composing
    assert one_problem(load_yaml_file, path) == f"{path}: more than 200,000 YAML values; is this a spec file?"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\na: 2\n", "f.yaml:2: a: duplicate key (first at line 1); remove one"),
        ("a: !!python/object/apply:os.system ['true']\n", "f.yaml:1: a: YAML tag '!!python/object/apply:os.system'"),
        ("a: " + "[" * 100 + "]" * 100 + "\n", "f.yaml:1: YAML nested deeper than 64 levels"),
        ("a: [1\n", "f.yaml:2: YAML syntax error"),
        ("a: &a [*a]\n", "f.yaml:1: YAML nested deeper than 64 levels"),
    ],
)
def test_same_answers_without_libyaml(monkeypatch: pytest.MonkeyPatch, text: str, expected: str) -> None:
    import yaml

    from simlab.specs import yamlio

    monkeypatch.setattr(yamlio, "_Loader", yaml.SafeLoader)
    assert one_problem(load_yaml_text, text, "f.yaml").startswith(expected)
    monkeypatch.undo()
    assert one_problem(load_yaml_text, text, "f.yaml").startswith(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: s1\ndue: 2024-13-45\n", "f.yaml:2: due: cannot read '2024-13-45' as !!timestamp (month must be in "
                                      "1..12); put it in quotes to keep it as text"),
        ("facts:\n  2024-02-30: x\n", "f.yaml:2: facts.2024-02-30: cannot read '2024-02-30' as !!timestamp (day is "
                                      "out of range for month); put it in quotes to keep it as text"),
        ("n: !!int abc\n", "f.yaml:1: n: cannot read 'abc' as !!int (invalid literal for int() with base 10: 'abc'); "
                           "put it in quotes to keep it as text"),
        ("b: !!bool maybe\n", "f.yaml:1: b: cannot read 'maybe' as !!bool; put it in quotes to keep it as text"),
    ],
)
def test_values_that_cannot_be_read_as_their_type_name_their_line(text: str, expected: str) -> None:
    assert one_problem(load_yaml_text, text, "f.yaml") == expected


@pytest.mark.parametrize("tag", ["!!binary", "!!set", "!!omap", "!!pairs"])
def test_non_json_types_are_refused(tag: str) -> None:
    value = {"!!binary": "aGk=", "!!set": "{a, b}", "!!omap": "[{a: 1}]", "!!pairs": "[{a: 1}]"}[tag]
    assert one_problem(load_yaml_text, f"a: {tag} {value}\n", "f.yaml") == (
        f"f.yaml:1: a: YAML tag {tag!r} is not allowed; specs are plain data (no Python objects or custom tags)"
    )


def test_plain_scalars_keep_their_yaml_types() -> None:
    data, _ = load_yaml_text("a: 2024-01-02\nb: !!str 3\nc: 0x1F\nd: ~\ne: yes\nf: 1.5\n", "f.yaml")
    assert data == {"a": datetime.date(2024, 1, 2), "b": "3", "c": 31, "d": None, "e": True, "f": 1.5}
