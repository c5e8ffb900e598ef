"""Which trial a served tool call belongs to, and what it does there. No MCP here: the server
(``serve.server``) only hands each call's token, tool name and arguments to ``Sessions.call``.

A trial's token opens its tools only while simlab waits for that trial's agent to answer a turn
(``Sessions.turn``). Every call then goes through the trial's own ``ToolHandle``, so it lands in
that trial's environment and transcript as the same ``tool_call``/``tool_result`` events a
built-in agent's calls make, and loop detection holds. A call with a token that names no open
turn is refused: an unknown token, a call between two turns, a call after the trial ended.
When a served call trips the loop detector (or a budget), the call is recorded, the agent gets a
tool error saying the trial is over, and ``ServedTurn.stopped`` is set: the agent adapter then
stops waiting for the agent's reply and ends the trial with that reason.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from simlab.env.domain import Domain
from simlab.sim.tool_handle import StopTrial, ToolHandle

__all__ = ["Answer", "ServedTurn", "Sessions"]


@dataclass
class ServedTurn:
    """One agent turn of one trial, open to tool calls."""

    token: str
    handle: ToolHandle
    domain: Domain
    stops_trial: bool = (
        True  # False for `simlab serve`: a loop is reported (to ``notice``), and the session goes on
    )
    notice: Callable[[str], None] | None = None
    calls: int = 0
    transferred: bool = False  # a transfer tool succeeded: the agent handed the user to a human
    stop: tuple[str, str] | None = None  # (reason, detail) of a StopTrial raised by a served call
    stopped: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Answer:
    """What a served call gives back: the tool's result, or an error the agent sees."""

    ok: bool
    text: str
    result: Any = None


class Sessions:
    """The open turns of a run's trials, by token."""

    CLOSED_KEPT = 4096  # tokens of recently closed turns, remembered only to word a refusal

    def __init__(self) -> None:
        self._open: dict[str, ServedTurn] = {}
        self._closed: OrderedDict[str, str] = OrderedDict()

    @staticmethod
    def new_token() -> str:
        """An unguessable token: the URL that holds it is the trial's only key to its tools."""
        return secrets.token_urlsafe(18)

    @contextmanager
    def turn(
        self,
        token: str,
        handle: ToolHandle,
        *,
        stops_trial: bool = True,
        notice: Callable[[str], None] | None = None,
    ) -> Iterator[ServedTurn]:
        """Open ``token``'s tools for one turn; they close when the block ends."""
        if token in self._open:
            raise RuntimeError("a trial's turn is already open")  # one turn at a time per trial: a lab bug
        served = ServedTurn(token, handle, handle.domain, stops_trial=stops_trial, notice=notice)
        self._open[token] = served
        self._closed.pop(token, None)
        try:
            yield served
        finally:
            del self._open[token]
            self._closed[token] = "over"
            while len(self._closed) > self.CLOSED_KEPT:
                self._closed.popitem(last=False)

    def open_turn(self, token: str) -> ServedTurn | None:
        return self._open.get(token)

    def refusal(self, token: str) -> str:
        """Why a call with ``token`` is refused, in words the agent's developer can act on."""
        if token in self._closed:
            return (
                "this trial takes no tool calls now: its agent turn is over or the trial has ended "
                "(simlab serves a trial's tools only while it waits for the agent's reply)"
            )
        return "unknown trial token: this URL names no trial of this run"

    def call(self, token: str, name: str, arguments: dict[str, Any] | None) -> Answer | None:
        """Run one served call; None when the token names no open turn (refuse it)."""
        served = self._open.get(token)
        if served is None:
            return None
        if served.stop is not None:
            return Answer(False, f"simlab ended this trial ({served.stop[0]}): {served.stop[1]}")
        served.calls += 1
        try:
            reply = served.handle.call(name, arguments)
        except StopTrial as stop:  # recorded by the handle; the trial ends here
            if served.stops_trial:
                served.stop = (stop.reason, stop.detail)
                served.stopped.set()
                return Answer(False, f"simlab ended this trial ({stop.reason}): {stop.detail}")
            served.handle.start_turn(served.handle.turn + 1)  # stand-alone: report it, start afresh
            said = f"simlab would end a trial here ({stop.reason}): {stop.detail}"
            if served.notice is not None:
                served.notice(said)
            return Answer(False, said)
        if reply.ok and name in served.domain.transfer_tools:
            served.transferred = True
        if not reply.ok:
            return Answer(False, reply.error or "the tool failed")
        return Answer(True, reply.as_text(), reply.result)
