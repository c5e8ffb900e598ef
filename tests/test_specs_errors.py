"""format_validation_error: paths without pydantic's union-member names, real keys kept."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from simlab.specs import Scenario
from simlab.specs.errors import format_validation_error
from simlab.specs.yamlio import load_yaml_text


class Order(BaseModel):
    customer: str
    total: float


class State(BaseModel):
    orders: dict[str, Order] = {}
    Name: str = "shop"  # a capitalised field: looks like a type name, is a field
    tags: dict[str, str | list[str]] = {}


def format_yaml(text: str, model: Any, *, with_model: bool = True, prefix: tuple[Any, ...] = ()) -> list[str]:
    data, lines = load_yaml_text(text, "f.yaml")
    for key in prefix:
        data = data[key]
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return format_validation_error(info.value, "f.yaml", lines, prefix=prefix, model=model if with_model else None)


SCENARIO = "id: s1\ntitle: t\ndomain: d\nuser: {goal: g}\n"


@pytest.mark.parametrize("with_model", [True, False])
def test_union_names_are_dropped_in_trajectory_calls(with_model: bool) -> None:
    text = SCENARIO + "persona: p\nexpect:\n  trajectory:\n    calls: [a, {tool: b, argz: 1}]\n"
    [msg] = format_yaml(text, Scenario, with_model=with_model)
    assert msg.startswith("f.yaml:8: expect.trajectory.calls.1.argz: unknown field")
    assert "CallSpec" not in msg and ".str" not in msg


@pytest.mark.parametrize("with_model", [True, False])
def test_union_names_are_dropped_in_forbidden(with_model: bool) -> None:
    text = SCENARIO + "persona: p\nexpect:\n  forbidden:\n    - {tool: b, compare: {amount: 3}}\n"
    assert format_yaml(text, Scenario, with_model=with_model) == [
        "f.yaml:8: expect.forbidden.0.compare.amount: Input should be a string or a mapping (got 3)"
    ]


@pytest.mark.parametrize("with_model", [True, False])
def test_union_names_are_dropped_for_an_inline_persona(with_model: bool) -> None:
    text = SCENARIO + "persona:\n  id: x\n  traits: nope\n"
    assert format_yaml(text, Scenario, with_model=with_model) == [
        "f.yaml:5: persona.description: required field is missing",
        "f.yaml:7: persona.traits: Input should be a valid list (got 'nope')",
    ]


def test_a_key_that_looks_like_a_type_name_is_kept() -> None:
    text = "orders:\n  A123: {customer: C-17, total: lots}\n  Persona: {customer: C-1}\n"
    assert format_yaml(text, State) == [
        "f.yaml:2: orders.A123.total: Input should be a valid number, unable to parse string as a number (got 'lots')",
        "f.yaml:3: orders.Persona.total: required field is missing",
    ]


def test_a_key_named_like_a_union_member_is_kept() -> None:
    text = "tags:\n  str: 3\n  list: [1]\n"
    found = format_yaml(text, State)
    assert found == [
        "f.yaml:2: tags.str: Input should be a string or a list (got 3)",
        "f.yaml:3: tags.list.0: Input should be a valid string (got 1)",
    ]


def test_a_capitalised_field_is_kept() -> None:
    assert format_yaml("Name: [x]\n", State) == ["f.yaml:1: Name: Input should be a valid string (got a list)"]


def test_without_the_model_a_key_with_a_line_is_kept() -> None:
    text = "orders:\n  A123: {customer: C-17, total: lots}\n"
    [msg] = format_yaml(text, State, with_model=False)
    assert msg.startswith("f.yaml:2: orders.A123.total: Input should be a valid number")


def test_prefix_places_a_nested_model_in_the_file() -> None:
    text = "id: s1\ninitial_state:\n  orders:\n    A123: {customer: 5, total: 1}\n"
    assert format_yaml(text, State, prefix=("initial_state",)) == [
        "f.yaml:4: initial_state.orders.A123.customer: Input should be a valid string (got 5)"
    ]


def test_without_lines_the_file_alone_is_named() -> None:
    with pytest.raises(ValidationError) as info:
        Order.model_validate({"customer": "c"})
    assert format_validation_error(info.value, "memory") == ["memory: total: required field is missing"]


def test_error_on_the_document_itself() -> None:
    class Strict(BaseModel):
        a: int

    with pytest.raises(ValidationError) as info:
        Strict.model_validate("text")
    [msg] = format_validation_error(info.value, "f.yaml", {(): 1}, model=Strict)
    assert msg == "f.yaml:1: (top level): Input should be a mapping of fields (got 'text')"


def test_long_values_are_shortened() -> None:
    with pytest.raises(ValidationError) as info:
        Order.model_validate({"customer": "c", "total": "x" * 500})
    [msg] = format_validation_error(info.value, "f.yaml", model=Order)
    assert msg.endswith("…)") and len(msg) < 200
