"""How an agent that runs as a service is reached: ``agent: {http: URL}`` or ``agent: {http: {url, ...}}``.

Two shapes of service. ``openai`` (the default): an OpenAI-compatible chat-completions endpoint
that gets the whole conversation each turn. ``rest``: any JSON endpoint, given a request
``body`` template and the ``reply_path`` of the reply text; it gets the newest user message
and keeps the conversation itself, per ``session_id`` (one per trial).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from simlab.redact import declare_secret_env
from simlab.specs.base import SpecModel
from simlab.specs.statepath import PathError, parse_path

__all__ = ["HttpAgentSpec", "PLACEHOLDERS", "TOOLS_URL_HEADER"]

TOOLS_URL_HEADER = "X-Simlab-Tools-Url"
"""The header that carries the trial's MCP URL (also in the body: ``metadata.simlab_tools_url``)."""

PLACEHOLDERS = {
    "message": "the user's newest message (text)",
    "messages": "the whole conversation: [{role, content}, ...]",
    "session_id": "one id per trial, the same on every turn of it",
    "tools_url": "the trial's MCP endpoint (streamable HTTP)",
    "context": "the scenario's agent_context (a mapping)",
    "turn": "the turn number (1, 2, ...)",
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

DEFAULT_BODY = {
    "message": "{message}",
    "session_id": "{session_id}",
    "tools_url": "{tools_url}",
    "context": "{context}",
}


REPLY_PATH = "reply"  # where a rest service's reply is, unless told


class HttpAgentSpec(SpecModel):
    """An agent service: where it listens and how to talk to it."""

    url: str = Field(
        description="The endpoint. format openai: the chat-completions URL, or its base "
        "(http://host:8000/v1; /chat/completions is added). format rest: the URL posted to."
    )
    format: Literal["openai", "rest"] = Field(
        "openai",
        description="openai: OpenAI chat completions; rest: any JSON endpoint (body template + reply_path).",
    )
    model: str = Field("simlab-agent", description="format openai: the 'model' field of the request.")
    body: dict[str, Any] | None = Field(
        None,
        description="format rest: the JSON body; strings may hold {message}, {messages}, {session_id}, "
        "{tools_url}, {context}, {turn} (a string that is just one placeholder becomes its value, "
        "of any JSON type). Default: {message, session_id, tools_url, context}.",
    )
    reply_path: str = Field(
        REPLY_PATH,
        description="format rest: where the reply text is in the answer, e.g. "
        "output.text or choices[0].message.content.",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra request headers; ${NAME} in a value is read from the environment at call time.",
    )
    api_key_env: str | None = Field(
        None, description="Environment variable holding a key sent as 'Authorization: Bearer KEY'."
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        description="Seconds for one agent turn (its tool calls "
        "included). Default: the run's call_timeout_s.",
    )
    max_reply_bytes: int = Field(
        2_000_000,
        ge=1,
        description="The most bytes of one answer simlab reads; a "
        "bigger answer is the agent's failure (agent_error).",
    )
    uses_models: bool | None = Field(
        None,
        description="false declares that the service spends no tokens simlab "
        "cannot see (its cost is then a known zero).",
    )
    price: dict[str, float] | None = Field(
        None,
        description="USD per million tokens {input, output}, applied to "
        "the usage the service reports (format openai).",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        return {"url": value} if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip()
        if not re.match(r"https?://[^/\s]+", value):
            raise ValueError(f"'url' must be an http:// or https:// URL, got {value!r}")
        return value

    @field_validator("reply_path")
    @classmethod
    def _path(cls, value: str) -> str:
        try:
            parse_path(value)
        except PathError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("price")
    @classmethod
    def _price(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is not None and (set(value) != {"input", "output"} or min(value.values()) < 0):
            raise ValueError(
                "price must be {input: USD per million tokens, output: USD per million tokens}, both ≥ 0"
            )
        return value

    @model_validator(mode="after")
    def _secrets(self) -> HttpAgentSpec:
        """The key's variable and every variable a header reads are secrets, whatever their names."""
        declare_secret_env(self.api_key_env, *self.env_names())
        return self

    @model_validator(mode="after")
    def _shape(self) -> HttpAgentSpec:
        # a pin holds the default reply_path: only another one is given for format rest
        if self.format == "openai" and (self.body is not None or self.reply_path != REPLY_PATH):
            raise ValueError(
                "'body' and 'reply_path' are for format: rest (an OpenAI-compatible endpoint gets "
                "the conversation and answers a chat completion)"
            )
        for name in sorted(set(_names_in(self.body))):
            if name not in PLACEHOLDERS:
                raise ValueError(
                    f"body: unknown placeholder {{{name}}}; use "
                    + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                )
        return self

    @property
    def endpoint(self) -> str:
        """The URL posted to."""
        url = self.url.rstrip("/")
        if self.format == "openai" and not url.endswith("/chat/completions"):
            return f"{url}/chat/completions"
        return self.url

    @property
    def request_body(self) -> dict[str, Any]:
        return self.body if self.body is not None else DEFAULT_BODY

    def env_names(self) -> list[str]:
        """The environment variables the headers read (``${NAME}``)."""
        return [m.group(1) for v in self.headers.values() for m in _ENV_REF.finditer(v)]


def _names_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return _PLACEHOLDER.findall(value)
    if isinstance(value, dict):
        return [n for v in value.values() for n in _names_in(v)]
    if isinstance(value, list):
        return [n for v in value for n in _names_in(v)]
    return []


def fill(template: Any, values: dict[str, Any]) -> Any:
    """``template`` with its placeholders replaced: a string that is exactly one placeholder becomes
    the value itself (any JSON type); inside longer text a value is written as text (JSON for
    anything but a string)."""
    import json

    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]

        def text(match: re.Match[str]) -> str:
            if match.group(1) not in values:
                return match.group(0)
            value = values[match.group(1)]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

        return _PLACEHOLDER.sub(text, template)
    if isinstance(template, dict):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    return template


def expand_env(value: str, environ: dict[str, str]) -> str:
    """``${NAME}`` replaced by the environment's value ('' when unset)."""
    return _ENV_REF.sub(lambda m: environ.get(m.group(1), ""), value)
