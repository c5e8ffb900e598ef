"""Keep secrets out of everything simlab writes or prints."""

from __future__ import annotations

import re
from typing import Any

SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|authorization|auth|bearer|credential)", re.IGNORECASE)
REDACTED = "[redacted]"


def redact_mapping(value: Any) -> Any:
    """A copy of ``value`` with every secret-looking key's value replaced."""
    if isinstance(value, dict):
        return {k: (REDACTED if isinstance(k, str) and SECRET_KEY.search(k) and v else redact_mapping(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact_mapping(v) for v in value]
    return value


def redact_text(text: str, secrets: list[str]) -> str:
    """``text`` with every occurrence of each secret (at least 4 characters) replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text
