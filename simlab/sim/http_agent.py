"""An agent that runs as a service (``agent: {http: URL}``): simlab posts each user turn to it and
reads its reply; the agent calls the trial's tools itself, over MCP, at the URL simlab hands it.

Per trial: one session id and one tool token (kept in the trial's agent memory). Per turn: the
token's tools open (``serve.sessions``), the request goes out with the MCP URL in the
``X-Simlab-Tools-Url`` header and in the body (``metadata.simlab_tools_url`` for an
OpenAI-shaped service, the ``{tools_url}`` placeholder for a REST one), and the tools close when
the reply is in. Failures are classified as model calls are (``llm.retry``): transient ones are
retried, unless the failed attempt had already called tools (a retry would repeat what they
did); a permanent one (401/403/404, an endpoint that never answered) stops the run; a service
that answers something that is no reply is the agent's error. Each exchange is recorded as a
``model_call`` of the agent (latency, retries, and the tokens the service reports).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from simlab.inert import one_line
from simlab.llm.client import clean_text
from simlab.llm.retry import RetryPolicy, RetryStats, call_with_retries, classify, settled
from simlab.llm.types import ModelError, ModelErrorKind
from simlab.redact import mask_url, scrub
from simlab.sim.agent_io import AgentInput, AgentReply
from simlab.sim.tool_handle import StopTrial
from simlab.specs.http_agent import TOOLS_URL_HEADER, HttpAgentSpec, expand_env, fill
from simlab.specs.statepath import parse_path
from simlab.transcript import ModelCall, Pin, Usage
from simlab.transcript.model import cost_usd, token_count

__all__ = ["AgentReplyError", "HttpAgent", "SESSION_HEADER"]

SESSION_HEADER = "X-Simlab-Session-Id"
_MAX_ERROR_CHARS = 800
_ERROR_BODY_BYTES = 64 * 1024  # of an error or redirect answer: its start is all a message shows


class AgentReplyError(Exception):
    """The service answered, but not with a reply: the agent's failure (``agent_error``)."""


class _NotRetried(Exception):
    """A transient failure after the attempt had called tools: retrying would repeat them."""

    def __init__(self, kind: ModelErrorKind, calls: int, cause: BaseException):
        self.kind, self.calls, self.cause = kind, calls, cause
        super().__init__(str(cause))


class HttpAgent:
    """The agent under test behind an HTTP endpoint. Its tool server runs for the length of a run
    (``lifespan``, entered by ``runner.execute``)."""

    def __init__(
        self,
        spec: HttpAgentSpec,
        *,
        tool_server: Callable[[], Any],
        max_retries: int = 4,
        timeout_s: float = 60.0,
    ):
        """``tool_server``: makes the per-run tool server (``serve.server.ToolServer``, given by the
        runner: ``sim`` does not import ``serve``, which builds on ``sim``'s ``ToolHandle``); an async
        context manager with ``sessions`` and ``url(token)``."""
        self.spec = spec
        self._tool_server = tool_server
        self.timeout_s = spec.timeout_s or timeout_s
        self.retry_policy = RetryPolicy(max_retries=max_retries)
        self.ref = mask_url(spec.endpoint)
        self._server: Any = None  # serve.server.ToolServer, while a run plays
        self._client: httpx.AsyncClient | None = None
        self._answers = (
            0  # replies the service gave in this run (this process): "never answered" or "stopped"
        )

    def pin(self) -> Pin:
        spec = self.spec
        settings: dict[str, Any] = {"format": spec.format, "timeout_s": self.timeout_s}
        if spec.format == "openai":
            settings["model"] = spec.model
        else:
            settings.update(body=spec.request_body, reply_path=spec.reply_path)
        if spec.headers:  # their names: a value may be a credential by any name (X-Signature)
            settings["headers"] = sorted(spec.headers)
        for name in ("uses_models", "price"):
            if getattr(spec, name) is not None:
                settings[name] = getattr(spec, name)
        return Pin(kind="http", ref=self.ref, settings=settings)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The tool server and the HTTP client, for one run (one per worker process)."""
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
        async with (
            self._tool_server() as server,
            httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits) as client,
        ):
            self._server, self._client = server, client
            try:
                yield
            finally:
                self._server = self._client = None

    async def respond(self, inp: AgentInput) -> AgentReply:
        if self._server is None:
            raise RuntimeError("an HTTP agent plays only inside its lifespan (runner.execute enters it)")
        trial = inp.memory.get("http_agent")
        if trial is None:  # the first turn of this trial
            trial = inp.memory["http_agent"] = {
                "session_id": uuid.uuid4().hex,
                "token": self._server.sessions.new_token(),
            }
        with self._server.sessions.turn(trial["token"], inp.tools) as served:
            exchange = asyncio.ensure_future(
                self._exchange(inp, trial, self._server.url(trial["token"]), served)
            )
            stopped = asyncio.ensure_future(served.stopped.wait())
            try:
                await asyncio.wait({exchange, stopped}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (exchange, stopped):
                    task.cancel()
                await asyncio.gather(exchange, stopped, return_exceptions=True)
            if served.stop is not None:  # a served call tripped the loop detector or a budget
                raise StopTrial(*served.stop)
            text, usage = exchange.result()
        self._answers += 1
        trial["answered_turn"] = inp.turn
        if inp.record:
            inp.record(ModelCall(turn=inp.turn, role="agent", model=self.ref, usage=usage))
        return AgentReply(text=text, transfer=served.transferred)

    # ------------------------------------------------------------------ one exchange

    def _request(
        self, inp: AgentInput, session_id: str, tools_url: str
    ) -> tuple[dict[str, Any], dict[str, str]]:
        # only the encodings simlab decodes itself, within its bound (``_decoded``)
        headers = {
            TOOLS_URL_HEADER: tools_url,
            SESSION_HEADER: session_id,
            "Accept-Encoding": "gzip, deflate",
        }
        headers.update(
            {name: expand_env(value, dict(os.environ)) for name, value in self.spec.headers.items()}
        )
        if self.spec.api_key_env:
            key = os.environ.get(self.spec.api_key_env)
            if not key:
                raise ModelError(
                    ModelErrorKind.AUTH,
                    f"environment variable {self.spec.api_key_env} is not set: set {self.spec.api_key_env}",
                    role="agent",
                    model=self.ref,
                )
            headers["Authorization"] = f"Bearer {key}"
        messages = [{"role": m["role"], "content": m.get("content") or ""} for m in inp.messages]
        if self.spec.format == "openai":
            body = {
                "model": self.spec.model,
                "messages": messages,
                "metadata": {
                    "simlab_tools_url": tools_url,
                    "simlab_session_id": session_id,
                    "simlab_context": json.dumps(inp.context, ensure_ascii=False),
                },
            }
        else:
            body = fill(
                self.spec.request_body,
                {
                    "message": messages[-1]["content"] if messages else "",
                    "messages": messages,
                    "session_id": session_id,
                    "tools_url": tools_url,
                    "context": inp.context,
                    "turn": inp.turn,
                },
            )
        return body, headers

    async def _exchange(
        self, inp: AgentInput, trial: dict[str, Any], tools_url: str, served: Any
    ) -> tuple[str, Usage]:
        body, headers = self._request(inp, trial["session_id"], tools_url)
        stats = RetryStats()
        start = time.perf_counter()
        client = self._client
        assert client is not None

        async def attempt() -> httpx.Response:
            before = served.calls
            try:
                async with asyncio.timeout(self.timeout_s):
                    response = await self._post(client, body, headers)
                if 300 <= response.status_code < 400:
                    raise self._redirected(response)
                if response.status_code >= 400:
                    raise _status_error(response, self._said)
                return response
            except Exception as exc:
                kind = classify(exc)
                if kind is not None and kind.retryable and served.calls > before:
                    raise _NotRetried(kind, served.calls - before, exc) from exc
                raise

        try:
            response = await call_with_retries(attempt, self.retry_policy, stats, describe=self._scrub)
        except Exception as exc:
            error = self._failure(exc, stats, time.perf_counter() - start, trial.get("answered_turn"))
            if error is None:
                raise  # not an HTTP failure: a bug, keep its traceback
            raise error from None
        text, reported = self._reply(response)
        return text, self._usage(reported, stats, time.perf_counter() - start)

    async def _post(
        self, client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]
    ) -> httpx.Response:
        """The answer, read in chunks up to ``max_reply_bytes`` and decoded by simlab within the
        same bound (a small gzip body may inflate to gigabytes: httpx would inflate it whole): a
        bigger reply is the agent's failure and is never held whole, however much the service
        sends. An error or redirect answer keeps the start of its body (its status decides)."""
        request = client.build_request("POST", self.spec.endpoint, json=body, headers=headers)
        streamed = await client.send(request, stream=True)
        cap, size, chunks = self.spec.max_reply_bytes, 0, []
        kept_of_error = min(cap, _ERROR_BODY_BYTES) if streamed.status_code >= 300 else None
        try:
            async for chunk in streamed.aiter_raw():
                size += len(chunk)
                if kept_of_error is not None and size > kept_of_error:
                    chunks.append(chunk[: len(chunk) - (size - kept_of_error)])
                    break
                if size > cap:
                    raise AgentReplyError(_over(cap))
                chunks.append(chunk)
        finally:
            await streamed.aclose()
        content = b"".join(chunks)
        encodings = streamed.headers.get_list("content-encoding", split_commas=True)
        if kept_of_error is None:
            content = _decoded(content, encodings, cap)
        else:  # the start of an error page: decoded as far as it goes, else shown as it came
            with contextlib.suppress(AgentReplyError):
                content = _decoded(content, encodings, kept_of_error)
        kept = [
            (k, v)
            for k, v in streamed.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(streamed.status_code, headers=kept, content=content, request=request)

    def _reply(self, response: httpx.Response) -> tuple[str, dict[str, Any] | None]:
        """The reply text and the usage the service reported (OpenAI shape only)."""
        try:
            data = response.json()
        except ValueError:
            raise AgentReplyError(
                f"the agent service answered {response.status_code} with no JSON: {self._said(response.text)}"
            ) from None
        if self.spec.format == "rest":
            found, why = _at(data, self.spec.reply_path)
            if not isinstance(found, str):
                raise AgentReplyError(
                    f"the agent's answer has no text at {self.spec.reply_path} ({why}): "
                    f"{self._said(json.dumps(data, ensure_ascii=False))}"
                )
            return clean_text(found), None
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise AgentReplyError(
                "the agent's answer is not a chat completion (no choices[0].message): "
                f"{self._said(json.dumps(data, ensure_ascii=False))}"
            ) from None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts: text (or a refusal) parts, or plain strings
            content = "".join(
                p if isinstance(p, str) else str(p.get("text") or p.get("refusal") or "")
                for p in content
                if isinstance(p, str | dict)
            )
        if not isinstance(content, str):
            extra = (
                " but tool_calls: an HTTP agent calls its tools itself, at the trial's MCP URL"
                if isinstance(message, dict) and message.get("tool_calls")
                else ""
            )
            raise AgentReplyError(f"the agent's reply has no text (choices[0].message.content){extra}")
        usage = data.get("usage")
        return clean_text(content), usage if isinstance(usage, dict) else None

    def _usage(self, reported: dict[str, Any] | None, stats: RetryStats, elapsed: float) -> Usage:
        # each count as a provider's is read (transcript/model.token_count): one no call can have is unknown
        inp, out = (
            token_count(reported.get(k)) if reported else None for k in ("prompt_tokens", "completion_tokens")
        )
        declared_none = self.spec.uses_models is False
        if (inp is None or out is None) and declared_none:
            inp, out = 0, 0
        price = self.spec.price
        if price is not None and inp is not None and out is not None:
            cost: float | None = cost_usd((inp * price["input"] + out * price["output"]) / 1_000_000)
        else:
            cost = 0.0 if declared_none else None
        return Usage(
            input_tokens=inp,
            output_tokens=out,
            cost_usd=cost,
            latency_s=max(0.0, elapsed),
            retries=stats.retries,
            retry_wait_s=stats.waited_s,
        )

    # ------------------------------------------------------------------ errors

    def _silence(self, answered_turn: int | None) -> str:
        """What an unreachable service did: never answered, or stopped answering (and when)."""
        if answered_turn is not None:
            return f"stopped answering after turn {answered_turn} of this trial"
        if self._answers:
            return f"stopped answering (it gave {self._answers} replies earlier in this run)"
        return "never answered"

    def _secrets(self) -> list[str]:
        found = [os.environ.get(self.spec.api_key_env, "")] if self.spec.api_key_env else []
        found += [os.environ.get(name, "") for name in self.spec.env_names()]
        return [s for s in found if s]

    def _scrub(self, exc: BaseException) -> str:
        text = str(exc) or (f"no answer within {self.timeout_s:g}s" if isinstance(exc, TimeoutError) else "")
        if type(exc).__name__ not in text:
            text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        return self._said(text)

    def _said(self, text: str, limit: int = _MAX_ERROR_CHARS) -> str:
        """Text of the service's (an error body, an answer that is no reply) as simlab says it: its
        secrets masked while the text is whole (a cut key would no longer match), then cut, on one
        line (a service's newlines could forge lines of simlab's own output)."""
        text = scrub(text.replace(self.spec.endpoint, self.ref), self._secrets())
        return one_line(_cut(text, limit))

    def _redirected(self, response: httpx.Response) -> ModelError:
        """A redirect is a wrong URL, like a 404: simlab never follows one (the request's key would
        go to wherever it points), and it is no reply."""
        where = self._said(mask_url(response.headers.get("location", "")), 300) or "nowhere (no Location)"
        return ModelError(
            ModelErrorKind.NOT_FOUND,
            f"the agent service answered {response.status_code} (a redirect to {where}): simlab does not "
            "follow redirects; set agent.http to the URL the service answers at",
            role="agent",
            model=self.ref,
        )

    def _failure(
        self, exc: BaseException, stats: RetryStats, elapsed: float, answered_turn: int | None = None
    ) -> ModelError | None:
        """The ``ModelError`` for a failed exchange, or None when ``exc`` is no HTTP failure.
        ``answered_turn``: the last turn of this trial the service answered."""
        if isinstance(exc, ModelError):
            return exc
        usage = Usage(latency_s=max(0.0, elapsed), retries=stats.retries, retry_wait_s=stats.waited_s)
        if isinstance(exc, _NotRetried):
            message = (
                f"{self._scrub(exc.cause)}; not retried: the agent had already called {exc.calls} tool(s) "
                "in this attempt, and a retry would repeat them"
            )
            return ModelError(exc.kind, message, role="agent", model=self.ref, usage=usage)
        failed = settled(exc, stats, self._scrub)
        if failed is None:
            return None
        kind, message = failed
        if kind is ModelErrorKind.UNREACHABLE:  # (the URL is named beside it: ModelError.describe)
            message = f"the agent service {self._silence(answered_turn)} ({message})"
        elif kind.permanent:
            message = f"the agent service refused the request: {message}"
        return ModelError(kind, message, role="agent", model=self.ref, usage=usage)


def _status_error(response: httpx.Response, said: Callable[[str, int], str]) -> httpx.HTTPStatusError:
    """An HTTP error answer as an httpx error carrying ``status_code`` (what ``classify`` reads);
    ``said``: the agent's ``_said``, which masks its body before cutting it."""
    error = httpx.HTTPStatusError(
        f"HTTP {response.status_code} {response.reason_phrase}: {said(response.text, 300)}",
        request=response.request,
        response=response,
    )
    error.status_code = response.status_code  # type: ignore[attr-defined]
    return error


def _over(cap: int) -> str:
    return f"the agent service's answer is over {cap:,} bytes (max_reply_bytes): simlab stopped reading it"


def _decoded(raw: bytes, encodings: list[str], cap: int) -> bytes:
    """``raw`` undone of its ``Content-Encoding`` (gzip, deflate; the last applied first), never
    more than ``cap`` bytes out of any step: an answer that inflates past it is over the bound,
    one that is not what its header says is no reply."""
    data = raw
    for name in reversed([e.strip().lower() for e in encodings]):
        if name in ("", "identity"):
            continue
        if name not in ("gzip", "x-gzip", "deflate"):
            raise AgentReplyError(
                f"the agent service's answer is encoded as {name!r}, which simlab does not read"
            )
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib, by the header it finds
        try:
            out = inflate.decompress(data, cap + 1)
        except zlib.error as exc:
            if name != "deflate":
                raise AgentReplyError(
                    f"the agent service's answer is not the {name} it says it is ({exc})"
                ) from None
            inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # a raw deflate stream, as some servers send
            try:
                out = inflate.decompress(data, cap + 1)
            except zlib.error as again:
                raise AgentReplyError(
                    f"the agent service's answer is not the deflate it says it is ({again})"
                ) from None
        if len(out) > cap or inflate.unconsumed_tail:
            raise AgentReplyError(_over(cap))
        data = out
    return data


def _cut(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _at(data: Any, path: str) -> tuple[Any, str]:
    """(value at ``path``, or None with why not). Keys, ``[index]`` and ``[field=value]`` steps."""
    value = data
    for step in parse_path(path):
        if isinstance(step, tuple):
            field, wanted = step
            items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
            value = next((i for i in items if isinstance(i, dict) and str(i.get(field)) == wanted), None)
        elif isinstance(step, int):
            value = value[step] if isinstance(value, list) and -len(value) <= step < len(value) else None
        else:
            value = value.get(step) if isinstance(value, dict) else None
        if value is None:
            return None, f"{step!r} not found"
    return value, f"found {type(value).__name__}"
