"""Keep secrets out of pins, error messages and logs.

Provider errors sometimes echo the key or the Authorization header back; every text simlab
keeps from a model call goes through ``scrub`` first.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Whole name parts only: "max_tokens" is a setting, "auth_token" is a secret.
_SECRET_NAME = re.compile(
    r"(^|[_-])(api[_-]?key|apikey|key|secret|token|passw(or)?d|authori[sz]ation|auth|credentials?|cookie"
    r"|bearer|private[_-]?key|access[_-]?key)($|[_-])",
    re.IGNORECASE,
)
_SECRET_ENV = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|CRED|AUTH)$", re.IGNORECASE
)
# Credentials inside URLs: the userinfo of scheme://user:pass@host and credential-named query values.
# Both patterns are anchored on a literal ("://", "?" or "&") and stop at "/", so they stay linear.
_URL_USERINFO = re.compile(r"(://)([^\s/@\"'<>\\]+)@")
_URL_QUERY = re.compile(
    r"(?i)([?&](?:api[_-]?key|apikey|key|token|access[_-]?token|secret|password|passwd|sig|"
    r"signature|auth)=)[^&#\s\"'<>]+"
)
SECRET_SHAPES = [
    _URL_QUERY,
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"(?i)((?:x-)?api[_-]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"',}&]{6,}"),
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\"',}\n]{6,}"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{8,}"),
    # providers' key shapes: GitHub tokens, AWS access key ids, Google API keys, Slack tokens
    re.compile(r"()\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"()\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"()\bAIza[0-9A-Za-z_-]{30,}"),
    re.compile(r"()\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    # "name": "value" in JSON text with a credential-looking name (a tool's arguments as a string)
    re.compile(
        r'(?i)("[a-z0-9_-]*(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key'
        r'|credentials?)"\s*:\s*")[^"\\]{4,}'
    ),
    # NAME=value with a credential-looking NAME: a .env file quoted in an error (one start per word)
    re.compile(
        r"(?i)(\b[a-z0-9_]*(?:key|token|secret|password|passwd|credentials?|cred)\s*=\s*[\"']?)"
        r"[^\s\"',&]{4,}"
    ),
]
MASK = "***"
_ENV_CACHE: dict[str, Any] = {"key": None, "values": []}
_DECLARED: set[str] = set()  # variables a spec names as holding a key or a header, whatever they are called


def declare_secret_env(*names: str | None) -> None:
    """Treat these environment variables as secrets from now on, whatever they are called: a spec's
    ``api_key_env`` and the variables its headers read (``SUPPORT_BOT_PAT``) are masked like
    ``*_API_KEY`` wherever anything is stored or printed."""
    _DECLARED.update(n for n in names if n)


def is_secret_name(name: str) -> bool:
    """Whether a setting or header name looks like it holds a credential."""
    return bool(_SECRET_NAME.search(name))


def secret_env_values(min_len: int = 8) -> list[str]:
    """Values of environment variables named like credentials (``*_API_KEY``, ``*_TOKEN``,
    ``*_PASSWORD``, ``*_CRED``...) or declared by a spec (``declare_secret_env``), longest first.
    Cached until the environment changes: every record simlab writes is checked against them."""
    items = tuple(os.environ.items())
    key = (items, min_len, frozenset(_DECLARED))
    if _ENV_CACHE["key"] != key:
        values = {v for k, v in items if (k in _DECLARED or _SECRET_ENV.search(k)) and len(v) >= min_len}
        _ENV_CACHE["key"], _ENV_CACHE["values"] = key, sorted(values, key=len, reverse=True)
    return list(_ENV_CACHE["values"])


def mask_values(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask the given secret values, the values of credential-named environment variables and the
    credentials inside URLs; nothing else (stored transcripts keep their words)."""
    values = {s for s in secrets if s and len(s) >= 4} | set(secret_env_values())
    forms = {form for value in values for form in _escaped(value)}
    for value in sorted(forms, key=len, reverse=True):  # longest first: no partial leftovers
        if value in text:
            text = text.replace(value, MASK)
    if "://" in text:
        text = _URL_USERINFO.sub(_mask_userinfo, text)
        text = _URL_QUERY.sub(lambda m: m.group(1) + MASK, text)
    return text


@functools.lru_cache(maxsize=256)
def _escaped(value: str) -> frozenset[str]:
    """A secret as text may hold it: as it is, escaped as JSON holds it in a string, and with ``/``
    written ``\\/`` as some JSON encoders write it (PHP's, some Java libraries')."""
    forms = {value, json.dumps(value)[1:-1]}
    return frozenset(forms | {f.replace("/", "\\/") for f in forms if "/" in f})


def _mask_userinfo(match: re.Match[str]) -> str:
    user, sep, _ = match.group(2).partition(":")
    return f"{match.group(1)}{user}:{MASK}@" if sep else f"{match.group(1)}{MASK}@"


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask the given secret values, credential-named env values, credentials in URLs and
    key-shaped tokens in text (``mask_values`` and then the shapes of keys)."""
    text = mask_values(text, secrets)
    for pattern in SECRET_SHAPES:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A copy of a JSON-like value with ``change`` applied to every string in it, keys too."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {map_strings(k, change): map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    return value


def mask_tree(value: Any) -> Any:
    """``mask_values`` over every string (keys too) of a JSON-like value."""
    return map_strings(value, mask_values)


def holds_secret(data: bytes) -> bool:
    """Cheap test of an encoded text (JSON included) for what ``mask_values`` would mask."""
    for value in secret_env_values():
        if any(form.encode() in data for form in _escaped(value)):
            return True
    return b"://" in data and (
        _URL_USERINFO_B.search(data) is not None or _URL_QUERY_B.search(data) is not None
    )


_URL_USERINFO_B = re.compile(_URL_USERINFO.pattern.encode())
_URL_QUERY_B = re.compile(_URL_QUERY.pattern.encode())


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
