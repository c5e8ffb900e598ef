"""The per-trial tool server (``simlab.serve``): a real MCP server on 127.0.0.1, reached with the
official SDK's clients (the 2025-11-25 handshake through ``ClientSession``, the stateless
2026-07-28 protocol through ``mcp.Client``). No mocked transport."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest

from simlab.domains.retail import DOMAIN as RETAIL
from simlab.env import Environment
from simlab.serve.sessions import ServedTurn
from simlab.sim.tool_handle import LOOP_REPEATS, ToolHandle
from simlab.transcript import InvalidCall, ToolCall, ToolResult
from tests.support import KV, LazyModule

mcp: Any = LazyModule("mcp")  # the official SDK (seconds to import): imported by the first test, not at collection
streamable_http: Any = LazyModule("mcp.client.streamable_http")
serve: Any = LazyModule("simlab.serve.server")  # imports mcp and uvicorn

if TYPE_CHECKING:
    from mcp import Client


def leaf(exc: BaseException) -> BaseException:
    """The error inside the task groups' ExceptionGroups."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def trial(domain: Any = KV, **overrides: Any) -> tuple[ToolHandle, list[Any]]:
    events: list[Any] = []
    return ToolHandle(Environment(domain, domain.build_state(overrides or None)), events.append), events


@asynccontextmanager
async def served(handle: ToolHandle) -> AsyncIterator[tuple[ServedTurn, Client]]:
    """A tool server with one trial's turn open, and an agent's MCP client on its URL."""
    async with serve.ToolServer() as server:
        token = server.sessions.new_token()
        with server.sessions.turn(token, handle) as turn:
            async with mcp.Client(server.url(token)) as client:
                yield turn, client


async def test_tools_are_listed_with_the_domains_schemas_and_read_write_hints() -> None:
    handle, _ = trial(RETAIL)
    async with serve.ToolServer() as server:
        token = server.sessions.new_token()
        with server.sessions.turn(token, handle):
            async with streamable_http.streamable_http_client(server.url(token)) as (read, write):
                async with mcp.ClientSession(read, write) as session:
                    init = await session.initialize()
                    listed = (await session.list_tools()).tools
            async with mcp.Client(server.url(token)) as client:
                modern = (await client.list_tools()).tools
    assert init.protocol_version == "2025-11-25"
    expected = {s["function"]["name"]: s["function"] for s in RETAIL.tool_schemas()}
    for tools in (listed, modern):
        assert [t.name for t in tools] == RETAIL.tool_names
        for t in tools:
            assert t.input_schema == expected[t.name]["parameters"]
            assert t.description == expected[t.name]["description"]
            read = RETAIL.tool(t.name).access.value == "read"
            assert t.annotations is not None and t.annotations.read_only_hint is read
    hints = {t.name: t.annotations.read_only_hint for t in listed if t.annotations}
    assert hints["lookup_order"] is True and hints["issue_refund"] is False


async def test_a_served_call_records_the_same_events_as_a_direct_call() -> None:
    remote, served_events = trial()
    direct, direct_events = trial()
    async with served(remote) as (_, client):
        ok = await client.call_tool("set_item", {"key": "b", "value": "2"})
        read = await client.call_tool("get_item", {"key": "b"})
    direct.call("set_item", key="b", value="2")
    direct.call("get_item", key="b")
    assert served_events == direct_events  # tool_call and tool_result, call ids and all
    assert [type(e) for e in served_events] == [ToolCall, ToolResult, ToolCall, ToolResult]
    assert not ok.is_error and json.loads(read.content[0].text) == {"key": "b", "value": "2"}
    assert read.structured_content == {"key": "b", "value": "2"}
    assert served_events[0].access == "write" and served_events[2].access == "read"


async def test_bad_arguments_unknown_tools_and_tool_errors_are_tool_errors_the_agent_sees() -> None:
    handle, events = trial()
    async with served(handle) as (_, client):
        wrong_type = await client.call_tool("set_item", {"key": "b", "value": 5})
        extra = await client.call_tool("get_item", {"key": "a", "shoe": 1})
        unknown = await client.call_tool("delete_everything", {})
        refused = await client.call_tool("get_item", {"key": "zz"})  # the tool raises ToolError
        fine = await client.call_tool("get_item", {"key": "a"})  # the session goes on
    assert [r.is_error for r in (wrong_type, extra, unknown, refused, fine)] == [True, True, True, True, False]
    assert "value: Input should be a valid string" in wrong_type.content[0].text
    assert "shoe: Extra inputs are not permitted" in extra.content[0].text
    assert "unknown tool 'delete_everything'" in unknown.content[0].text
    assert refused.content[0].text == "no item 'zz'"
    invalid = [e.name for e in events if isinstance(e, InvalidCall)]
    assert invalid == ["set_item", "get_item", "delete_everything"]  # recorded as a built-in agent's would be
    assert handle._env.state.items == {"a": "1"}  # nothing ran with bad arguments


async def test_unknown_and_closed_tokens_are_refused_and_nothing_is_recorded() -> None:
    handle, events = trial()
    async with serve.ToolServer() as server:
        token = server.sessions.new_token()
        with server.sessions.turn(token, handle):
            pass  # the turn (or the whole trial) is over before the agent calls
        for url, words in ((server.url(token), "its agent turn is over or the trial has ended"),
                           (server.url("no-such-token"), "unknown trial token"),
                           (server.url(server.sessions.new_token()), "unknown trial token")):
            with pytest.raises(BaseException) as caught:
                async with mcp.Client(url) as client:
                    await client.call_tool("set_item", {"key": "b", "value": "2"})
            error = leaf(caught.value)
            assert isinstance(error, mcp.MCPError) and words in str(error), error
            with pytest.raises(BaseException) as caught:  # the 2025 handshake is refused as well
                async with streamable_http.streamable_http_client(url) as (read, write):
                    async with mcp.ClientSession(read, write) as session:
                        await session.initialize()
            assert words in str(leaf(caught.value))
    assert events == [] and handle._env.state.items == {"a": "1"}


async def test_concurrent_trials_each_see_only_their_own_state_and_events() -> None:
    n = 24
    trials = [trial(items={"who": f"t{i}"}) for i in range(n)]
    async with serve.ToolServer() as server:
        tokens = [server.sessions.new_token() for _ in range(n)]
        start = asyncio.Event()

        async def agent(i: int) -> list[Any]:
            async with mcp.Client(server.url(tokens[i])) as client:
                await start.wait()  # every trial's client is connected before any calls
                seen = [json.loads((await client.call_tool("get_item", {"key": "who"})).content[0].text)["value"]]
                await client.call_tool("set_item", {"key": "mine", "value": f"v{i}"})
                await asyncio.sleep(0)  # let the others write in between
                seen.append(json.loads((await client.call_tool("get_item", {"key": "mine"})).content[0].text)["value"])
                return seen

        with ExitStack() as turns:
            for (handle, _), token in zip(trials, tokens):
                turns.enter_context(server.sessions.turn(token, handle))
            tasks = [asyncio.ensure_future(agent(i)) for i in range(n)]
            await asyncio.sleep(0)
            start.set()
            seen = await asyncio.gather(*tasks)
    assert seen == [[f"t{i}", f"v{i}"] for i in range(n)]
    for i, (handle, events) in enumerate(trials):
        assert handle._env.state.items == {"a": "1", "who": f"t{i}", "mine": f"v{i}"}
        calls = [e for e in events if isinstance(e, ToolCall)]
        assert [c.name for c in calls] == ["get_item", "set_item", "get_item"]
        assert calls[1].arguments == {"key": "mine", "value": f"v{i}"}


async def test_a_loop_in_served_calls_stops_the_trial_and_the_agent_is_told() -> None:
    handle, events = trial()
    async with served(handle) as (turn, client):
        replies = [await client.call_tool("get_item", {"key": "zz"}) for _ in range(LOOP_REPEATS + 1)]
    assert turn.stopped.is_set()
    assert turn.stop == ("agent_loop", f"get_item called {LOOP_REPEATS} times in a row with the same arguments")
    assert all(r.is_error for r in replies)
    assert replies[LOOP_REPEATS - 1].content[0].text.startswith("simlab ended this trial (agent_loop): get_item called")
    assert replies[-1].content[0].text.startswith("simlab ended this trial (agent_loop)")
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == LOOP_REPEATS  # the call that tripped it is recorded; the one after it never ran


async def test_a_transfer_tool_that_succeeds_marks_the_turn() -> None:
    handle, _ = trial()
    async with served(handle) as (turn, client):
        await client.call_tool("get_item", {"key": "a"})
        assert not turn.transferred
        await client.call_tool("transfer_to_human", {"reason": "asked for a person"})
    assert turn.transferred


async def test_a_busy_port_is_a_clear_error() -> None:
    from simlab.errors import UsageError

    async with serve.ToolServer() as first:
        with pytest.raises(UsageError, match=rf"cannot serve the tools on 127.0.0.1:{first.port}: "):
            await serve.ToolServer(port=first.port).start()


async def test_a_stand_alone_session_reports_a_loop_and_goes_on() -> None:
    handle, events = trial()
    said: list[str] = []
    async with serve.ToolServer() as server:
        token = server.sessions.new_token()
        with server.sessions.turn(token, handle, stops_trial=False, notice=said.append) as turn:
            async with mcp.Client(server.url(token)) as client:
                replies = [await client.call_tool("get_item", {"key": "zz"}) for _ in range(LOOP_REPEATS)]
                after = await client.call_tool("get_item", {"key": "a"})
    assert replies[-1].content[0].text.startswith("simlab would end a trial here (agent_loop)")
    assert said == [replies[-1].content[0].text] and not turn.stopped.is_set() and not after.is_error
    assert sum(isinstance(e, ToolCall) for e in events) == LOOP_REPEATS + 1
