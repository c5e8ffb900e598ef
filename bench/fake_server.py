"""An OpenAI-compatible chat server on 127.0.0.1 for the benches: the real call path end to end.

Why: a fake *inside* LiteLLM (``simlab-fake/…``) skips the transport, the JSON on the wire and part
of LiteLLM's own work. Through this server a bench counts all of it, as a user's run pays it. Each
request waits ``--latency`` seconds (asynchronously: a provider's latency without its CPU), then
answers as ``fakes.py``'s agent (model ``bench-agent``) or user (``bench-user``) would. The agent's
tool call goes to ``search_help_center`` where the request offers it (simlab's retail demo); where it
does not (another framework's domain, e.g. τ²-bench's retail: ``bench_tau2.py``), to the first offered
tool that needs no arguments, so the conversation has the same shape whatever the domain. ``GET
/calls`` says how many chat completions the server has answered: a bench divides CPU by that count.

    python bench/fake_server.py --latency 0.2        # prints "port N", serves until killed

``start_server`` runs it as a child process and returns (process, base URL) for a bench or a test.
A small ASGI app served by uvicorn (a dev dependency); one process, one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import fakes  # noqa: E402  (beside this file)

_ids = itertools.count(1)
_answered = [0]  # chat completions answered (``GET /calls``)


def reply_for(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion a bench model gives to ``body``."""
    model = str(body.get("model", ""))
    messages = body.get("messages") or []
    answer = fakes.user_reply(messages) if "user" in model else fakes.agent_reply(messages)
    if not isinstance(answer, str):
        answer = {"tool_calls": [_offered(c, body.get("tools")) for c in answer["tool_calls"]]}
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if isinstance(answer, str):
        message["content"] = answer
    else:
        message["tool_calls"] = [{"id": f"call_{next(_ids)}", "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                                 for c in answer["tool_calls"]]
        finish = "tool_calls"
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
    completion = len(json.dumps(message)) // 4 + 1
    return {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


def _offered(call: dict[str, Any], tools: Any) -> dict[str, Any]:
    """``call`` if the request offers its tool (or offers none); else a call to the first offered
    tool without required parameters, with no arguments (unchanged if there is none)."""
    specs = [t.get("function") or {} for t in tools or [] if isinstance(t, dict)]
    if not specs or any(s.get("name") == call["name"] for s in specs):
        return call
    for spec in specs:
        if not (spec.get("parameters") or {}).get("required"):
            return {"name": spec.get("name"), "arguments": {}}
    return call


def make_app(latency_s: float) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        if scope["method"] == "GET" and scope["path"].rstrip("/").endswith("/calls"):
            await _send(send, 200, {"calls": _answered[0]})
            return
        if scope["method"] != "POST" or not scope["path"].endswith("/chat/completions"):
            await _send(send, 404, {"error": {"message": f"no route {scope['path']}"}})
            return
        try:
            body = json.loads(b"".join(chunks))
        except ValueError:
            await _send(send, 400, {"error": {"message": "the body is not JSON"}})
            return
        if latency_s:
            await asyncio.sleep(latency_s)
        reply = reply_for(body)
        _answered[0] += 1
        await _send(send, 200, reply)

    return app


async def _send(send: Any, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def serve(latency_s: float, port: int = 0) -> None:
    import uvicorn

    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP; without it each
    # answer (headers, then body) waited for the client's delayed ACK
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)  # before saying the port: a client may connect while uvicorn is still starting
    print(f"port {sock.getsockname()[1]}", flush=True)
    # keep-alive as a provider's (uvicorn's default of 5 s closes connections that the client's pool
    # still holds while it is busy: the next request on one fails with "Connection error")
    config = uvicorn.Config(make_app(latency_s), log_level="warning", lifespan="off", access_log=False,
                            backlog=4096, limit_concurrency=None, timeout_keep_alive=600)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def start_server(latency_s: float) -> tuple[subprocess.Popen[str], str]:
    """The server as a child process: (process, ``http://127.0.0.1:PORT/v1``). Stop it with
    ``proc.terminate(); proc.wait()``."""
    proc = subprocess.Popen([sys.executable, str(HERE / "fake_server.py"), "--latency", str(latency_s)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("port "):
        proc.kill()
        raise RuntimeError(f"the fake server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def answered(base_url: str) -> int:
    """How many chat completions the server at ``base_url`` has answered so far."""
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/calls", timeout=30) as response:
        return int(json.loads(response.read())["calls"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each answer waits (default 0)")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    args = parser.parse_args()
    serve(args.latency, args.port)
