"""A strict OpenAI-compatible chat-completions server on 127.0.0.1, for tests of the real call path.

It is a real HTTP server (the standard library's, one thread per connection) that LiteLLM reaches
over TCP, as it would reach llama.cpp's, vLLM's or Ollama's server. Every request is validated
against the chat-completions request schema of the ``openai`` package itself
(``CompletionCreateParamsNonStreaming``: unknown top-level keys are refused as OpenAI refuses
them), plus what llama.cpp's chat templates need and the schema leaves optional: every message
carries a ``content`` string (an assistant message with tool calls included), and tool messages
name their call. A request that fails is answered 400 (schema) or 500 (template), as those servers
answer. Every answer is built as an ``openai.types.chat.ChatCompletion`` first, so its shape is a
real server's.

The replies come from a function per model (``(request) -> str | dict``, the shapes of
``simlab.llm.fakes``: text, or ``{"text", "tool_calls": [{"name", "arguments"}]}``). The server can
demand a key (401 otherwise), fail the next calls with a status, and stop and start again on the
same port (a crash and a restart).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], Any]
DROP = -1  # in ``fail_next``: cut the connection without answering (a dropped connection)


def free_port() -> int:
    """A port nothing listens on (bound, then closed): a dead endpoint until a server takes it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _materialize(value: Any) -> Any:
    """pydantic validates ``Iterable`` fields lazily: walk them, so every error is raised now."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        return [_materialize(v) for v in value]
    return value


class _Validator:
    def __init__(self) -> None:
        from openai.types.chat import completion_create_params as params
        from pydantic import TypeAdapter

        self.adapter = TypeAdapter(params.CompletionCreateParamsNonStreaming)
        self.keys = set()
        for cls in params.CompletionCreateParamsNonStreaming.__mro__:
            self.keys |= set(getattr(cls, "__annotations__", {}))

    def problems(self, body: dict[str, Any]) -> tuple[int, str] | None:
        """(status, message) of the first thing a strict server refuses, or None."""
        unknown = sorted(set(body) - self.keys)
        if unknown:
            return 400, f"Unrecognized request argument supplied: {', '.join(unknown)}"
        try:
            _materialize(self.adapter.validate_python(body))
        except Exception as exc:  # pydantic's ValidationError: the schema's word
            return 400, f"invalid request: {str(exc)[:400]}"
        for i, message in enumerate(body.get("messages") or []):
            content = message.get("content")
            if not isinstance(content, (str, list)):  # llama.cpp: the template reads message.content
                return 500, f"template error: messages[{i}] ({message.get('role')}) has no content string"
            if message.get("role") == "tool" and not message.get("tool_call_id"):
                return 400, f"messages[{i}]: a tool message needs tool_call_id"
        if body.get("tools") and "tool_choice" not in body:
            return None  # allowed by the schema; ``requests`` records whether it was sent
        return None


@dataclass
class StrictServer:
    """``with StrictServer(replies) as server:`` serves at ``server.base`` (``http://127.0.0.1:PORT/v1``)."""

    replies: dict[str, Reply]
    api_key: str | None = None  # demand ``Authorization: Bearer <api_key>``
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)  # statuses of the next answers (or DROP), one per call
    stop_after: int | None = None  # stop serving (a crash) once this many calls were answered
    gather: int | None = None  # hold each request until this many are in flight at once (then never again) ...
    gather_s: float = 0.5  # ... or for at most this long: a run that keeps a lower cap is slowed, never stuck

    def __post_init__(self) -> None:
        self._validator = _Validator()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()  # open keep-alive connections: a crash cuts them
        self.answered = 0
        self.in_flight = 0
        self.peak = 0  # the most requests in flight at once, from every process that calls it
        self._gathered = threading.Condition(self._lock)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StrictServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                try:
                    super().finish()
                except OSError:  # cut by stop()
                    pass

            def do_POST(self) -> None:  # the standard library's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                server._arrive()
                try:
                    status, payload = server._answer(self.path, dict(self.headers), raw)
                finally:
                    server._leave()
                if status == DROP:  # the connection is cut with no answer at all
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                if server.stop_after is not None and server.answered >= server.stop_after:
                    server.stop()  # the crash, once this answer is out (this is a handler's thread)

        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        self._server = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name="strict-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Go down as a crashed server does: stop listening (new connections are refused) and cut
        the open keep-alive connections."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> StrictServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ----------------------------------------------------------------------------- answers

    def _arrive(self) -> None:
        with self._gathered:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self._gathered.notify_all()
            if self.gather is not None:
                self._gathered.wait_for(lambda: self.peak >= (self.gather or 0), timeout=self.gather_s)

    def _leave(self) -> None:
        with self._gathered:
            self.in_flight -= 1

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, _error(f"no route {path}", "not_found")
        if self.api_key is not None:
            auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
            if auth != f"Bearer {self.api_key}":
                return 401, _error("Incorrect API key provided.", "invalid_api_key")
        try:
            body = json.loads(raw.decode("utf-8"))  # strict UTF-8: a lone surrogate never arrives
        except (UnicodeDecodeError, ValueError) as exc:
            return 400, _error(f"body is not UTF-8 JSON: {exc}", "invalid_request_error")
        with self._lock:
            self.requests.append(body)
            problem = self._validator.problems(body)
            if problem is not None:
                self.refused.append(problem)
                return problem[0], _error(problem[1], "invalid_request_error")
            if self.fail_next:
                status = self.fail_next.pop(0)
                return status, _error(f"injected failure {status}", "server_error")
            self.answered += 1
            number = self.answered
        return 200, _completion(body, self.replies[body["model"]](body), number)


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "code": code, "param": None}}


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _completion(body: dict[str, Any], reply: Any, number: int) -> dict[str, Any]:
    from openai.types.chat import ChatCompletion

    if isinstance(reply, str):
        reply = {"text": reply}
    calls = [{"id": f"call_{number}_{i}", "type": "function",
              "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                           else json.dumps(c["arguments"])}}
             for i, c in enumerate(reply.get("tool_calls") or [])]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text")}
    if calls:
        message["tool_calls"] = calls
    prompt = sum(_tokens(json.dumps(m.get("content") or "")) for m in body["messages"])
    completion = _tokens(json.dumps(message))
    answer = {
        "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 1_700_000_000 + number,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }
    answer["usage"].update(reply.get("usage") or {})  # a reply may report its own (e.g. absurd) counts
    return ChatCompletion.model_validate(answer).model_dump(mode="json")
