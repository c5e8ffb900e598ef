"""``simlab serve DOMAIN``: a domain's tools over MCP for one hand-driven session, so a developer
can point an agent at them. The state is the domain's seed data, or a scenario's initial state
(``--scenario``); every call is printed as it is recorded in a trial. Ctrl-C or SIGTERM stops it.
Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what serving needs is
imported in ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from simlab.errors import UsageError

SHOWN = 200  # characters of a tool's arguments or result printed per call

DESCRIPTION = (
    "Serve DOMAIN's tools over MCP (streamable HTTP) for one hand-driven session: prints the URL, "
    "then every call. Needs the serve extra."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "domain", metavar="DOMAIN", help="a built-in domain (retail) or module[:attr] defining one"
    )
    parser.add_argument("--scenario", metavar="FILE", help="start from this scenario's initial state")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free one)")


def run(args: argparse.Namespace) -> int:
    import asyncio

    from pydantic import ValidationError

    from simlab.env.domain import Environment, load_domain
    from simlab.serve import require_serve_extra
    from simlab.specs.loader import load_model
    from simlab.specs.scenario import Scenario

    require_serve_extra("simlab serve")
    domain = load_domain(args.domain, source="simlab serve")
    overrides: dict[str, Any] = {}
    where = "its seed data"
    if args.scenario:
        if not Path(args.scenario).is_file():
            raise UsageError(f"{args.scenario}: no such scenario file")
        scenario = load_model(Path(args.scenario), Scenario).spec
        if scenario.domain != args.domain:
            raise UsageError(
                f"{args.scenario}: the scenario's domain is {scenario.domain!r}, not {args.domain!r}; "
                f"run simlab serve {scenario.domain} --scenario {args.scenario}"
            )
        overrides, where = scenario.initial_state, f"the initial state of scenario {scenario.id}"
    try:
        state = domain.build_state(overrides)
    except ValidationError as exc:
        raise UsageError(f"{args.scenario or args.domain}: the initial state is invalid: {exc}") from None
    calls: list[Any] = []
    try:
        asyncio.run(_serve(Environment(domain, state), where, args.host, args.port, calls))
    except KeyboardInterrupt:
        pass
    print(f"stopped after {len(calls)} tool call{'s' if len(calls) != 1 else ''}", file=sys.stderr)
    return 0


async def _serve(env: Any, where: str, host: str, port: int, calls: list[Any]) -> None:
    import asyncio
    import contextlib
    import signal

    from simlab.serve.server import ToolServer
    from simlab.sim.tool_handle import ToolHandle
    from simlab.transcript import ToolCall

    def record(event: Any) -> None:
        if isinstance(event, ToolCall):
            calls.append(event)
        print(_line(event), flush=True)

    handle = ToolHandle(env, record, turn=1)
    stop = asyncio.Event()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # main thread, POSIX
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with ToolServer(host=host, port=port) as server:
        token = server.sessions.new_token()
        with server.sessions.turn(
            token, handle, stops_trial=False, notice=lambda text: print(text, flush=True)
        ):
            tools = env.domain.tools
            reads = sum(1 for t in tools if t.access.value == "read")
            if host not in ("127.0.0.1", "localhost", "::1"):
                print(
                    f"warning: listening on {host}: whoever reaches it and has the URL can call the tools",
                    file=sys.stderr,
                )
            print(
                f"serving {len(tools)} {env.domain.name} tools ({reads} read, {len(tools) - reads} write) on "
                f"{where}, one session, at:\n{server.url(token)}\nCtrl-C stops it.",
                flush=True,
            )
            await stop.wait()  # until SIGTERM, or Ctrl-C (KeyboardInterrupt)


def _line(event: Any) -> str:
    import json

    kind = event.type
    if kind == "tool_call":
        return f"tool_call   {event.name} {_cut(event.raw_arguments or '{}')}"
    if kind == "tool_result":
        shown = (
            _cut(json.dumps(event.result, ensure_ascii=False))
            if event.ok
            else f"error: {_cut(event.error or '')}"
        )
        return f"tool_result {event.name} {shown}"
    if kind == "invalid_call":
        return f"invalid     {event.name}: {_cut(event.reason)}"
    return f"{kind} {_cut(getattr(event, 'message', ''))}"


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[:SHOWN] + "…"
