"""An OpenAI-compatible chat-completions server on 127.0.0.1 that misbehaves as real providers do.

A real HTTP server (the standard library's, a thread per connection). Each request takes the next
step of ``script`` (then ``default``); a step is a ``Step``:

- ``reply``: a completion (``text``, ``tool_calls`` as ``{"name", "arguments"}`` with arguments a
  dict or a raw string, ``finish_reason``, ``refusal``), streamed as server-sent events when the
  request asks for a stream;
- ``status``: an error answer with this status and these headers (429 with ``Retry-After``);
- ``cut``: the answer's headers promise the whole body, half of it is sent, then the connection is
  closed (a stream cut mid-response: with a stream, two chunks and no ``[DONE]``);
- ``hang``: no answer until the test ends (``stop`` releases it): a provider slower than any bound;
- ``huge``: a valid completion whose text is ``size`` bytes long;
- ``raw``: ``raw`` as the body, with ``status`` and ``headers`` (a proxy's HTML page).

Every request is kept in ``requests`` (headers included), to check what the agent sent.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    kind: str = "reply"  # reply | status | cut | hang | huge | raw
    text: str | None = "How can I help?"
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    refusal: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    size: int = 0
    raw: bytes = b""  # kind raw: this body as it is (``headers`` give its type)


@dataclass
class RoughServer:
    script: list[Step] = field(default_factory=list)
    default: Step = field(default_factory=Step)
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self.answered = 0
        self.sent = 0  # answers written whole (flushed to the socket)
        self._sent = threading.Condition(self._lock)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_step(self) -> tuple[Step, int]:
        with self._lock:
            self.answered += 1
            return (self.script.pop(0) if self.script else self.default), self.answered

    def wait_sent(self, count: int, timeout: float = 30.0) -> bool:
        """Block until ``count`` answers were written (for a thread: on a virtual clock, a job in a
        thread holds the clock, so a test can let an answer arrive before time jumps)."""
        with self._sent:
            return self._sent.wait_for(lambda: self.sent >= count, timeout)

    def release(self) -> None:
        """Answer every ``hang`` now waiting (their connections are closed); later ones hang again."""
        released, self._released = self._released, threading.Event()
        released.set()

    def start(self) -> RoughServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw.decode("utf-8"))
                with server._lock:
                    server.requests.append({"body": body, "headers": dict(self.headers)})
                step, number = server.next_step()
                server._serve(self, body, step, number)
                with server._sent:
                    server.sent += 1
                    server._sent.notify_all()

        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        self._server = httpd
        threading.Thread(target=httpd.serve_forever, name="rough-openai", daemon=True).start()
        return self

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> RoughServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ----------------------------------------------------------------------------- answers

    def _serve(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], step: Step, number: int) -> None:
        if step.kind == "hang":
            self._released.wait()  # the event of when it came: release() swaps in a new one
            _close(handler)
            return
        if step.kind == "raw":
            _send(handler, step.status, step.raw, step.headers, "")
            return
        if step.kind == "status":
            payload = step.body or {"error": {"message": f"injected {step.status}", "type": "server_error",
                                              "code": None, "param": None}}
            _send(handler, step.status, json.dumps(payload).encode(), step.headers)
            return
        if step.kind == "huge":
            step = Step(text="x" * step.size)
        if body.get("stream"):
            self._stream(handler, body, step, number)
            return
        data = json.dumps(completion(body, step, number)).encode()
        if step.kind == "cut":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            _close(handler)
            return
        _send(handler, 200, data, {})

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], step: Step, number: int) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunks = stream_chunks(body, step, number)
        if step.kind == "cut":
            chunks = chunks[:2]
        for chunk in chunks:
            _chunk(handler, f"data: {json.dumps(chunk)}\n\n".encode())
        if step.kind == "cut":
            _close(handler)  # no last chunk, no [DONE]: the body ends mid-stream
            return
        _chunk(handler, b"data: [DONE]\n\n")
        _chunk(handler, b"")


def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str],
          kind: str = "application/json") -> None:
    handler.send_response(status)
    if kind:
        handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def _chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    handler.wfile.flush()


def _close(handler: BaseHTTPRequestHandler) -> None:
    handler.close_connection = True
    try:
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _calls(step: Step, number: int) -> list[dict[str, Any]]:
    return [{"id": f"call_{number}_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                          else json.dumps(c["arguments"])}}
            for i, c in enumerate(step.tool_calls)]


def _finish(step: Step) -> str:
    return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")


def completion(body: dict[str, Any], step: Step, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text, "refusal": step.refusal}
    calls = _calls(step, number)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 1_700_000_000 + number,
        "model": body.get("model", "team-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(step), "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def stream_chunks(body: dict[str, Any], step: Step, number: int) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk", "created": 1_700_000_000,
                "model": body.get("model", "team-model"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    out = [chunk({"role": "assistant", "content": ""})]
    text = step.text or ""
    for i in range(0, len(text), max(1, len(text) // 3 or 1)):
        out.append(chunk({"content": text[i: i + max(1, len(text) // 3 or 1)]}))
    for i, call in enumerate(_calls(step, number)):
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}))
    out.append(chunk({}, _finish(step)))
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    out.append({**chunk({}), "choices": [], "usage": usage})
    return out
