"""Exceptions the agent under test raised that are its provider's failure, not the agent's.

A framework agent (LangGraph, the OpenAI Agents SDK, pydantic-ai) or a Python agent calls its own
model through its own client. When that provider is down, rate-limited or refuses the key, the
agent raises the client's exception; counting that as the agent's crash (``agent_error``, a fail)
would make a nightly gate say "the agent regressed" on the night the provider was down.

The rule: walk the exception and its causes (``raise … from``, and the exception being handled
when it was raised), outermost first. The first one raised by a provider client (its class comes
from one of ``CLIENTS``) is placed by its HTTP status, else by its class names:

- a rate limit, an overload or a server error (429, 409, 5xx, 529; ``RateLimitError``,
  ``InternalServerError``, ``ServiceUnavailable``, ``Overloaded``, ``ResourceExhausted``…): TRANSIENT;
- a timeout (408; a class named ``…Timeout…`` or ``DeadlineExceeded``): TIMEOUT;
- a connection that failed (``APIConnectionError``, httpx's transport errors, aiohttp's and
  requests' connection errors, LiteLLM's 500 around one): UNREACHABLE when no connection was
  ever made, else TRANSIENT;
- a rejected or missing credential (401, 403; ``AuthenticationError``, ``PermissionDenied``,
  ``Unauthenticated``; or its text, whatever the class: LiteLLM's "Missing credentials" inside a
  500, the openai client's bare ``OpenAIError`` when no key is set, as ``retry.AUTH_TEXT`` reads
  simlab's own calls): AUTH, which stops the run naming the client's key variable;
- an answer that is no completion (a proxy's HTML page or an error payload sent with 200, a
  completion without choices: pydantic-ai's ``ModelInvalidResponseError`` and
  ``ModelEmptyResponseError``, openai's ``APIResponseValidationError``, the Agents SDK's
  ``ModelBehaviorError`` that says "possible provider error payload"), or an error event inside a
  stream answered 200 (openai's bare ``APIError``, with no status), or an ``AssertionError`` raised
  in a client's own code reading the answer (openai's stream helper, given no chunk): TRANSIENT.

Anything else the agent raises (its own ``ValueError``, a provider's 400 for a request the agent
built badly, a validation error of its output) is the agent's: ``provider_failure`` returns None.
The kinds then follow simlab's own rules for its model calls (``ModelErrorKind``): a transient
failure makes the trial an ``error`` (infrastructure: resumed runs play it again), a permanent one
stops the run (exit 3). No provider SDK is imported here: classes are read by name and module.
"""

from __future__ import annotations

from simlab.llm.retry import AUTH_TEXT, cause_chain
from simlab.llm.types import ModelError, ModelErrorKind
from simlab.redact import scrub

__all__ = ["CLIENTS", "provider_failure"]

# module prefix of a provider client -> the environment variable its key is read from ("" when none)
CLIENTS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google.genai": "GOOGLE_API_KEY or GEMINI_API_KEY",
    "google.api_core": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "cohere": "CO_API_KEY",
    "litellm": "",
    "httpx": "",
    "aiohttp": "",
    "requests": "",
    "urllib3": "",
    "pydantic_ai": "",
    "langchain_openai": "OPENAI_API_KEY",
    "langchain_anthropic": "ANTHROPIC_API_KEY",
    "langchain_google_genai": "GOOGLE_API_KEY",
    "agents": "OPENAI_API_KEY",
}
_TRANSIENT_NAMES = (
    "RateLimit",
    "InternalServerError",
    "ServiceUnavailable",
    "Overloaded",
    "ResourceExhausted",
    "TooManyRequests",
    "BadGateway",
    "GatewayTimeout",
    "ServerError",
    "APIConnectionError",
    "ConnectionError",
    "ConnectError",
    "TransportError",
    "NetworkError",
    "RemoteProtocolError",
    "ReadError",
    "WriteError",
    "ServerDisconnected",
    "ClientConnectorError",
    "ProtocolError",
)
# an answer that is no completion (a proxy's page, an error payload sent with 200, no choices): the
# provider's, not the model's behaviour (pydantic-ai's _ModelResponseError kinds, openai's)
_INVALID_ANSWER_NAMES = ("ModelInvalidResponseError", "ModelEmptyResponseError", "APIResponseValidationError")
# the Agents SDK raises ModelBehaviorError for the model's mistakes too; this one it says is the provider's
_PROVIDER_PAYLOAD = "possible provider error payload"
# the openai client raises its bare APIError (no status) for one thing only: the error event a
# provider sends inside a stream it answered 200 ("The server had an error while processing…")
_STREAM_ERRORS = ("openai.APIError", "openai._exceptions.APIError")
_TIMEOUT_NAMES = ("Timeout", "DeadlineExceeded")
_AUTH_NAMES = ("AuthenticationError", "PermissionDenied", "Unauthenticated", "Unauthorized", "Forbidden")
_NEVER_CONNECTED = (
    "ConnectError",
    "ConnectionRefusedError",
    "ClientConnectorError",
    "gaierror",
    "ClientConnectorDNSError",
    "NewConnectionError",
    "NameResolutionError",
)


def provider_failure(exc: BaseException) -> ModelError | None:
    """The infrastructure failure ``exc`` stands for, as simlab's own ``ModelError`` (role agent),
    or None when it is the agent's own failure."""
    chain = cause_chain(exc)
    for error in chain:
        client = _client_of(error)
        if client is None:
            continue
        kind = _kind(error, chain)
        if kind is None:
            continue
        name = f"{type(error).__module__}.{type(error).__name__}"
        status = _status(error)
        causes = [
            f"{type(e).__module__}.{type(e).__name__}" for e in chain if e is not error and _client_of(e)
        ]
        said = (
            name
            + (f" (HTTP {status})" if status else "")
            + "".join(f" from {c}" for c in causes[:3])
            + (f": {error}" if str(error) else "")
        )
        message = f"the agent's own model client failed: {scrub(said)[:500]}"
        variable = next((CLIENTS[c] for c in map(_client_of, chain) if c and CLIENTS[c]), "")
        if kind is ModelErrorKind.AUTH and variable:
            message += f"; the agent's client reads its key from {variable}: set it"
        return ModelError(kind, message, role="agent", model=f"{client} client")
    return _broken_invariant(chain)


def _broken_invariant(chain: list[BaseException]) -> ModelError | None:
    """An ``AssertionError`` a provider client's own code raised: its reading of the answer found
    what no completion holds (openai's stream helper asserts a snapshot once the stream ends: a
    200 with an HTML page or an error payload gave it no chunk). Never the agent's own logic."""
    for error in chain:
        if not isinstance(error, AssertionError):
            continue
        tb = error.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        module = str(tb.tb_frame.f_globals.get("__name__", "")) if tb is not None else ""
        client = next((c for c in CLIENTS if module == c or module.startswith(c + ".")), None)
        if client is not None:
            where = f"{module}:{tb.tb_lineno}" if tb is not None else module
            return ModelError(
                ModelErrorKind.TRANSIENT,
                f"the agent's own model client failed: its code ({scrub(where)}) could not read the answer "
                "as a completion (a proxy's page, an error payload, no choices)",
                role="agent",
                model=f"{client} client",
            )
    return None


def _client_of(error: BaseException) -> str | None:
    for cls in type(error).__mro__:
        module = cls.__module__ or ""
        for prefix in CLIENTS:
            if module == prefix or module.startswith(prefix + "."):
                return prefix
    return None


def _status(error: BaseException) -> int | None:
    for value in (
        getattr(error, "status_code", None),
        getattr(error, "status", None),
        getattr(error, "code", None),
        getattr(getattr(error, "response", None), "status_code", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def _kind(error: BaseException, chain: list[BaseException]) -> ModelErrorKind | None:
    names = [cls.__name__ for cls in type(error).__mro__]
    status = _status(error)
    if status in (401, 403) or any(n.startswith(_AUTH_NAMES) for n in names) or AUTH_TEXT.search(str(error)):
        return ModelErrorKind.AUTH
    if status == 408 or any(t in n for n in names for t in _TIMEOUT_NAMES):
        return ModelErrorKind.TIMEOUT
    never = any(type(e).__name__ in _NEVER_CONNECTED for e in chain)
    if status is not None and (status in (409, 429) or status >= 500):
        # LiteLLM says 500 for whatever it wraps, a connection never made included
        return ModelErrorKind.UNREACHABLE if never and status == 500 else ModelErrorKind.TRANSIENT
    if any(n in _INVALID_ANSWER_NAMES for n in names) or (
        "ModelBehaviorError" in names and _PROVIDER_PAYLOAD in str(error)
    ):
        return ModelErrorKind.TRANSIENT
    if status is None and f"{type(error).__module__}.{names[0]}" in _STREAM_ERRORS:
        return ModelErrorKind.TRANSIENT
    if status is None and any(t in n for n in names for t in _TRANSIENT_NAMES):
        return ModelErrorKind.UNREACHABLE if never else ModelErrorKind.TRANSIENT
    return None
