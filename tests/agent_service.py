"""A real agent service on 127.0.0.1, for tests of HTTP agents: an ASGI app (Starlette on uvicorn,
in a thread with its own event loop) that answers like a team's agent server would.

It is the retail demo agent (``examples.retail_agents.RetailBot``), but its tools are the trial's
served tools: each request opens an MCP client (the official SDK's ``mcp.Client``) on the URL
simlab sent in the ``X-Simlab-Tools-Url`` header, and the bot's tool calls go over it. Two shapes:

- ``POST /<behaviour>/v1/chat/completions``: OpenAI chat completions; the request is validated
  against the ``openai`` package's own request schema (as ``tests/strict_server.py`` does), so
  simlab's request is one a strict OpenAI-compatible server accepts; the MCP URL must also be in
  ``metadata.simlab_tools_url``.
- ``POST /<behaviour>/rest``: ``{"input": {"text"}, "conversation", "tools", "who"}`` (a test's
  body template), answering ``{"output": {"text"}}``. It gets only the newest message and keeps
  the conversation itself, per conversation id.

Behaviours: ``careful`` (the demo's careful agent), ``skip-policy`` (the flaky agent's planted
defect: no ``check_refund_policy``), ``loop`` (retries a failing lookup until stopped), ``silent``
(answers without any tool), ``lookup-then-503`` (calls one tool, then answers 503), ``echo-headers``
(answers with the request's headers, as a careless debug endpoint would), ``flood`` (an answer
that goes on for 200 MB unless the client stops reading), and the odd answers of ``_odd``
(a gzip bomb, a body that is not the gzip it says, a redirect, a lone surrogate, content as a
list of strings, error pages that quote the key or forge output lines, a large 502). ``fail_next``
makes the next requests fail with those statuses.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from examples.retail_agents import Faults, RetailBot
from simlab.sim.agent_io import AgentInput, AgentReply
from tests.strict_server import _Validator

FAULTS = {"careful": Faults(), "skip-policy": Faults(skip_policy_check=True), "loop": Faults(loop_on_lookup=True)}


@functools.cache
def _bomb() -> bytes:
    """A completion of 200 MB, gzipped twice, made a megabyte at a time (the service keeps none of it)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip
    parts = [deflate.compress(b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "')]
    parts += [deflate.compress(b"x" * (1 << 20)) for _ in range(200)]
    parts += [deflate.compress(b'"}}]}'), deflate.flush()]
    return gzip.compress(b"".join(parts), 9)


@dataclass
class Reply:
    """What the bot's ``tools.call`` returns (the shape it reads: ok, result, error)."""

    ok: bool
    result: Any = None
    error: str | None = None


class McpTools:
    """The bot's tools: each call goes over MCP, on the service's event loop (the bot runs in a thread)."""

    def __init__(self, client: Client, loop: asyncio.AbstractEventLoop, log: list[Any]):
        self.client, self.loop, self.log = client, loop, log

    def call(self, name: str, **arguments: Any) -> Reply:
        future = asyncio.run_coroutine_threadsafe(self.client.call_tool(name, arguments), self.loop)
        result = future.result(timeout=60)
        text = "".join(getattr(part, "text", "") for part in result.content)
        self.log.append((name, arguments, result.is_error, text))
        if result.is_error:
            return Reply(False, error=text)
        return Reply(True, result.structured_content if result.structured_content is not None else json.loads(text))


@dataclass
class AgentService:
    """``with AgentService() as svc:`` serves at ``svc.base`` (``http://127.0.0.1:PORT``)."""

    fail_next: list[int] = field(default_factory=list)  # statuses of the next answers, one per request
    requests: list[dict[str, Any]] = field(default_factory=list)  # {path, headers, body}
    tool_log: list[Any] = field(default_factory=list)  # (tool, arguments, is_error, text) as the agent saw them
    refused: list[str] = field(default_factory=list)
    conversations: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # rest: per conversation id
    usage: dict[str, Any] = field(default_factory=dict)  # the chat answers' usage, over the zero counts
    hold_for_servers: int = 0  # hold each answer until requests came with this many tool servers' URLs
    servers: set[str] = field(default_factory=set)  # the tool servers requests named (hold_for_servers)

    def __post_init__(self) -> None:
        self._validator = _Validator()
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._held: asyncio.Condition | None = None
        self._server: uvicorn.Server | None = None
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- the agent ----------------------------------------------------------------------------

    async def _respond(self, behaviour: str, messages: list[dict[str, str]], context: dict[str, Any],
                       tools_url: str) -> str:
        if behaviour == "silent":
            return "I have looked into it and everything is in order. Is there anything else I can help you with?"
        loop = asyncio.get_running_loop()
        async with Client(tools_url) as client:
            tools = McpTools(client, loop, self.tool_log)
            inp = AgentInput(messages, context, tools, policy="", seed=0, turn=len(messages))  # type: ignore[arg-type]
            reply: AgentReply = await asyncio.to_thread(lambda: RetailBot(inp, FAULTS[behaviour]).respond())
        return reply.text

    async def _hold(self, server: str) -> None:
        """Answer once requests came from ``hold_for_servers`` tool servers (so from that many worker
        processes: a worker of one trial at a time cannot send a second while its first is held)."""
        self._held = self._held or asyncio.Condition()
        async with self._held:
            self.servers.add(server)
            self._held.notify_all()
            await self._held.wait_for(lambda: len(self.servers) >= self.hold_for_servers)

    def _failing(self) -> int | None:
        with self._lock:
            return self.fail_next.pop(0) if self.fail_next else None

    async def _chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append({"path": request.url.path, "headers": headers, "body": body})
        status = self._failing()
        if status is not None:
            return JSONResponse({"error": {"message": f"injected {status}"}}, status_code=status)
        problem = self._validator.problems(body)
        if problem is not None:
            self.refused.append(problem[1])
            return JSONResponse({"error": {"message": problem[1]}}, status_code=problem[0])
        tools_url = headers.get("x-simlab-tools-url")
        if not tools_url or body.get("metadata", {}).get("simlab_tools_url") != tools_url:
            self.refused.append("no tools URL")
            return JSONResponse({"error": {"message": "no MCP URL in header and metadata"}}, status_code=400)
        if self.hold_for_servers:
            await self._hold(tools_url.split("/t/")[0])
        context = json.loads(body["metadata"].get("simlab_context") or "{}")
        messages = [{"role": m["role"], "content": m["content"]} for m in body["messages"]]
        if request.path_params["behaviour"] == "lookup-then-503":  # acts, then fails like an overloaded server
            async with Client(tools_url) as client:
                await client.call_tool("lookup_order", {"order_id": "A123"})
            return JSONResponse({"error": {"message": "overloaded"}}, status_code=503)
        if request.path_params["behaviour"] == "flood":
            async def endless() -> Any:
                yield b'{"choices": [{"message": {"role": "assistant", "content": "'
                for _ in range(200 * 16):
                    yield b"x" * 65536

            return StreamingResponse(endless(), media_type="application/json")  # type: ignore[return-value]
        odd = self._odd(request.path_params["behaviour"], headers)
        if odd is not None:
            return odd  # type: ignore[return-value]
        if request.path_params["behaviour"] == "echo-headers":
            text = "You sent: " + json.dumps(headers)
        else:
            text = await self._respond(request.path_params["behaviour"], messages, context, tools_url)
        return JSONResponse({
            "id": "chatcmpl-svc", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, **self.usage},
        })

    @staticmethod
    def _odd(behaviour: str, headers: dict[str, str]) -> Response | None:
        """The answers of a service that misbehaves in its own way (``ODD``), or None."""
        def completion(content: Any) -> bytes:
            return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}).encode()

        if behaviour == "gzip-bomb":  # a few KB on the wire, 200 MB once inflated (gzip of gzip)
            return Response(_bomb(), headers={"Content-Encoding": "gzip, gzip"}, media_type="application/json")
        if behaviour == "bad-gzip":  # says gzip, is not
            return Response(completion("plain"), headers={"Content-Encoding": "gzip"}, media_type="application/json")
        if behaviour == "redirect":
            return Response(b"", status_code=307, headers={"Location": "/careful/v1/chat/completions/"})
        if behaviour == "surrogate":  # a JavaScript service that cut a string mid-emoji
            return Response(b'{"choices": [{"message": {"role": "assistant", "content": "Hi \\ud83d there"}}]}',
                            media_type="application/json")
        if behaviour == "content-strings":
            return Response(completion(["Let me look ", "into that."]), media_type="application/json")
        if behaviour == "echo-key-500":  # a long error page that quotes the request's key near its end
            page = "x" * 250 + " auth=" + headers.get("authorization", "") + " " + "y" * 400
            return Response(page.encode(), status_code=500, media_type="text/plain")
        if behaviour == "forged-500":  # an error body whose lines look like simlab's own output
            return Response(b"oops\nresult: all gates held (exit 0)\n", status_code=500, media_type="text/plain")
        if behaviour == "big-502":  # a CDN's error page, larger than a small reply cap
            return Response(b"<html>" + b"<p>bad gateway</p>" * 400 + b"</html>", status_code=502,
                            media_type="text/html")
        return None

    async def _rest(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append({"path": request.url.path, "headers": dict(request.headers), "body": body})
        status = self._failing()
        if status is not None:
            return JSONResponse({"error": f"injected {status}"}, status_code=status)
        history = self.conversations.setdefault(body["conversation"], [])
        history.append({"role": "user", "content": body["input"]["text"]})
        text = await self._respond(request.path_params["behaviour"], list(history), body["who"], body["tools"])
        history.append({"role": "assistant", "content": text})
        return JSONResponse({"output": {"text": text}, "conversation": body["conversation"]})

    # --- serving ------------------------------------------------------------------------------

    def start(self) -> AgentService:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(512)
        self.port = sock.getsockname()[1]
        app = Starlette(routes=[Route("/{behaviour}/v1/chat/completions", self._chat, methods=["POST"]),
                                Route("/{behaviour}/rest", self._rest, methods=["POST"])])
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="off",
                                ws="none")
        service = self

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                service._ready.set()

        self._server = Server(config)

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            assert self._server is not None
            self._loop.run_until_complete(self._server.serve(sockets=[sock]))
            self._loop.close()

        self._thread = threading.Thread(target=run, name="agent-service", daemon=True)
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("the agent service did not start")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(30)
            self._server = None

    def __enter__(self) -> AgentService:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
