"""Keep secrets out of pins, error messages and logs.

Provider errors sometimes echo the key or the Authorization header back; every text simlab
keeps from a model call goes through ``scrub`` first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Whole name parts only: "max_tokens" is a setting, "auth_token" is a secret.
_SECRET_NAME = re.compile(
    r"(^|[_-])(api[_-]?key|apikey|key|secret|token|passw(or)?d|authori[sz]ation|auth|credentials?|cookie"
    r"|bearer|private[_-]?key|access[_-]?key)($|[_-])",
    re.IGNORECASE,
)
_SECRET_ENV = re.compile(r"(_API_KEY|_KEY|_TOKEN|_SECRET|_PASSWORD)$", re.IGNORECASE)
_PATTERNS = [
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"(?i)((?:x-)?api[_-]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"),
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\"',}\n]{6,}"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{8,}"),
]
MASK = "***"


def is_secret_name(name: str) -> bool:
    """Whether a setting or header name looks like it holds a credential."""
    return bool(_SECRET_NAME.search(name))


def secret_env_values(min_len: int = 8) -> list[str]:
    """Values of environment variables named like credentials (``*_API_KEY``, ``*_TOKEN``...)."""
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= min_len]


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask the given secret values, credential-named env values and key-shaped tokens in text."""
    values = {s for s in secrets if s and len(s) >= 4} | set(secret_env_values())
    for value in sorted(values, key=len, reverse=True):  # longest first: no partial leftovers
        text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def safe_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy without credential-named keys, recursively (headers dicts included)."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if is_secret_name(str(key)):
            continue
        out[key] = safe_settings(value) if isinstance(value, Mapping) else value
    return out


def secret_values(settings: Mapping[str, Any]) -> list[str]:
    """String values stored under credential-named keys, recursively: what ``scrub`` must mask."""
    found: list[str] = []
    for key, value in settings.items():
        if isinstance(value, Mapping):
            found.extend(secret_values(value))
        elif is_secret_name(str(key)) and isinstance(value, str):
            found.append(value)
    return found


def mask_url(url: str) -> str:
    """``url`` with the credentials it carries masked: the password of ``user:pass@host`` and the
    values of credential-named query parameters (``?api_key=…``). The rest is kept, so two pins
    that differ only in a password still compare equal, and a reader still sees which host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if sep else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(k) for k, _ in pairs):
            query = urlencode([(k, MASK if is_secret_name(k) else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
