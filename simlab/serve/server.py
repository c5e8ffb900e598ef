"""The MCP tool server: every trial's tools at ``http://127.0.0.1:PORT/t/<token>/mcp``.

One low-level MCP ``Server`` (the official SDK, 2.x) and one stateless streamable-HTTP session
manager answer every trial: each request is routed by the token in its path, so isolation never
depends on MCP sessions. A request whose token names no open turn is refused before the MCP
layer sees it (HTTP 404 with a JSON-RPC error). Tools are listed with the domain's own JSON
schemas and READ/WRITE as ``readOnlyHint``. Argument problems and tool errors come back as tool
results with ``isError`` (the agent sees them and may recover), never as protocol errors.

The HTTP server (uvicorn) runs on the caller's event loop and leaves its signal handlers alone, so
a run's Ctrl-C and its worker processes' SIGTERM handling stay as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import mcp.types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from simlab.env.domain import Domain
from simlab.env.tools import Access
from simlab.errors import UsageError
from simlab.serve.sessions import Sessions

__all__ = ["ToolServer", "mcp_tools"]

INVALID_REQUEST = -32600


def mcp_tools(domain: Domain) -> list[types.Tool]:
    """The domain's tools as MCP tools: the same JSON schemas an LLM agent gets, READ/WRITE as hints."""
    tools = []
    for spec, schema in zip(domain.tools, domain.tool_schemas()):
        function = schema["function"]
        read = spec.access is Access.READ
        tools.append(
            types.Tool(
                name=spec.name,
                description=function.get("description") or None,
                input_schema=function["parameters"],
                annotations=types.ToolAnnotations(
                    read_only_hint=read, destructive_hint=None if read else True
                ),
            )
        )
    return tools


def _token(ctx: ServerRequestContext[Any]) -> str:
    request = ctx.request
    return str(request.path_params.get("token", "")) if request is not None else ""


def build_mcp_app(sessions: Sessions, *, host: str) -> Starlette:
    """The ASGI app: ``/t/{token}/mcp`` for every trial of ``sessions``."""
    listed: dict[int, tuple[Domain, list[types.Tool]]] = {}  # per domain object, built once

    def tools_of(domain: Domain) -> list[types.Tool]:
        entry = listed.get(id(domain))
        if entry is None or entry[0] is not domain:
            entry = listed[id(domain)] = (domain, mcp_tools(domain))
        return entry[1]

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        token = _token(ctx)
        served = sessions.open_turn(token)
        if served is None:  # closed between the route's check and here
            raise MCPError(INVALID_REQUEST, sessions.refusal(token))
        return types.ListToolsResult(tools=tools_of(served.domain))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        token = _token(ctx)
        answer = sessions.call(token, params.name, params.arguments)
        if answer is None:
            raise MCPError(INVALID_REQUEST, sessions.refusal(token))
        structured = answer.result if answer.ok and isinstance(answer.result, dict) else None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=answer.text)],
            structured_content=structured,
            is_error=not answer.ok,
        )

    # get_tool_input_schema: our schemas map no argument to an Mcp-Param header, so there is nothing for
    # the SDK to check; without it, the SDK would run tools/list before every call to find out.
    server: Server[Any] = Server(
        "simlab-tools",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=lambda name: None,
    )
    manager = StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, security_settings=_security(host)
    )

    class TrialEndpoint:
        """A raw ASGI app (an instance, so Starlette's Route passes scope/receive/send through)."""

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            token = str(scope.get("path_params", {}).get("token", ""))
            if sessions.open_turn(token) is None:
                refused = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": INVALID_REQUEST, "message": sessions.refusal(token)},
                }
                await JSONResponse(refused, status_code=404)(scope, receive, send)
                return
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with manager.run():
            yield

    return Starlette(
        routes=[Route("/t/{token}/mcp", endpoint=TrialEndpoint(), methods=["GET", "POST", "DELETE"])],
        lifespan=lifespan,
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback server (the default); a server bound elsewhere is
    reached under names simlab cannot know, so it checks none."""
    if not _loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )


class _Uvicorn(uvicorn.Server):
    """uvicorn that says when it listens and leaves the host program's signal handlers alone."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.ready = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


class ToolServer:
    """``async with ToolServer() as server:`` serves ``server.sessions`` at ``server.url(token)``."""

    def __init__(self, sessions: Sessions | None = None, *, host: str = "127.0.0.1", port: int = 0):
        self.sessions = sessions or Sessions()
        self.host, self.port = host, port
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def url(self, token: str) -> str:
        return f"{self.base_url}/t/{token}/mcp"

    async def start(self) -> None:
        sock = _listen(self.host, self.port)
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            build_mcp_app(self.sessions, host=self.host),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="on",
            ws="none",
            timeout_graceful_shutdown=5,
        )
        self._server = _Uvicorn(config)
        self._task = asyncio.ensure_future(self._server.serve(sockets=[sock]))
        ready = asyncio.ensure_future(self._server.ready.wait())
        await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            self._task.result()  # its error, if it has one
            raise RuntimeError("the tool server stopped while starting")

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
        self._server = self._task = None

    async def __aenter__(self) -> ToolServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket made here, so a busy port is a clear error (uvicorn would exit the
    process). ``IPPROTO_TCP`` given explicitly: with proto 0, asyncio skips ``TCP_NODELAY`` on the
    accepted connections, and every response waits about 40 ms for a delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot serve the tools on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
