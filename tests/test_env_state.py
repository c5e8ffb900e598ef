"""The environment starts from the caller's initial state without copying it (the trials of a
scenario share one); tools never change it in place, and ``env.state`` is always the
environment's own."""

from __future__ import annotations

from simlab.env import Environment
from tests.fixtures.hostile.helpers import BAD


def test_reading_state_before_any_tool_call_gives_a_private_copy():
    initial = BAD.build_state({"items": {"a": "1"}})
    e = Environment(BAD, initial)
    e.state.items["a"] = "changed"
    assert initial.items == {"a": "1"}
    assert e.snapshot() == {"items": {"a": "changed"}}
    assert Environment(BAD, initial).snapshot() == {"items": {"a": "1"}}


def test_tools_never_change_the_shared_initial_state():
    initial = BAD.build_state({"items": {"a": "1"}})
    first, second = Environment(BAD, initial), Environment(BAD, initial)
    assert first.execute("peek", {"key": "a"}).extra["fault"] == "read_wrote"
    assert first.execute("explode", {"key": "a"}).extra["fault"] == "crash"
    assert first.execute("set_item", {"key": "b", "value": "2"}).ok
    assert initial.items == {"a": "1"}
    assert second.snapshot() == {"items": {"a": "1"}}
    assert first.snapshot() == {"items": {"a": "1", "b": "2"}}
