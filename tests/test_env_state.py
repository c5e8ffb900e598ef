"""The trials of a scenario share one initial state: no environment, tool or reader of
``env.state`` may change it, even through a field of an arbitrary Python type."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from simlab.env import WRITE, Domain, Environment, tool
from tests.fixtures.hostile.helpers import BAD
from tests.support import KV, KVState

pytestmark = pytest.mark.usefixtures("tool_timeouts_without_a_clock")  # BAD's tools run under a 0.2 s limit


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


class Ledger:
    """Not JSON data: re-validating a dump passes the same object through."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ledger) and self.entries == other.entries


class LedgerState(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    ledger: Ledger


@tool(WRITE)
def add(state: LedgerState, x: str) -> str:
    """Add an entry.

    Args:
        x: The entry.
    """
    state.ledger.entries.append(x)
    return "ok"


LEDGER = Domain(name="ledger", state_model=LedgerState, tools=[add], policy="p")


def test_an_arbitrary_typed_field_written_in_one_trial_stays_in_that_trial():
    shared = LedgerState(ledger=Ledger())
    for trial in range(3):  # as the runner does: one environment per trial, one initial state
        env = Environment(LEDGER, shared)
        assert env.execute("add", {"x": f"t{trial}"}).ok
        assert env.state.ledger.entries == [f"t{trial}"]
    assert shared.ledger.entries == []


def test_a_call_still_running_when_the_trial_ends_changes_nothing():
    """A sync agent's thread abandoned at its bound may be inside a tool when the trial's final
    state is read: once the environment is frozen, that call commits nothing (it did before, after
    the handle's last refusal)."""
    import threading

    entered, release = threading.Event(), threading.Event()

    @tool(WRITE)
    def slow_set(state: KVState, key: str) -> dict:
        """Store ``key`` once the test lets it.

        Args:
            key: The item's key.
        """
        entered.set()
        release.wait()
        state.items[key] = "late"
        return {"ok": True}

    domain = Domain(name="kv-slow", state_model=KVState, tools=[slow_set], policy=KV.policy)
    env = Environment(domain, domain.build_state({}))
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(env.execute("slow_set", {"key": "x"})))
    worker.start()
    entered.wait()
    env.freeze()  # the trial ends while the call runs
    release.set()
    worker.join()
    assert "x" not in env.state.items
    assert not outcome[0].ok and "the trial is over" in outcome[0].error
