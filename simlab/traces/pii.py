"""Personal data masked before an imported conversation is written.

Why before writing: a production record is only as safe as its most careless copy, so nothing
simlab stores (transcripts, summaries, the viewer's exports) ever held the raw values. Built-in
patterns catch the common kinds (e-mail addresses, payment card numbers, phone numbers, IBANs),
and API keys and tokens are masked in the shapes simlab masks in its own records (``redact``:
``sk-…``, ``Bearer …``, ``ghp_…``, ``AKIA…``, ``key=…``);
a PII file adds patterns of its own and, like a scenario's ``never_reveal``, literal values that
must never appear. Each match becomes ``[REDACTED:<name>]``, so graders still see that something
was there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from simlab.redact import SECRET_SHAPES, is_secret_name

# Linear time on any text: a pattern that can start inside a long run of the characters it repeats
# starts only where such a run starts (the look-behind), so no run is scanned once per position
# (the e-mail pattern without it took 10 s on 100 KB of letters and never ended on 1 MB).
BUILTIN_PATTERNS: dict[str, str] = {
    "email": r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
    "card": r"\b(?:\d[ -]?){12,18}\d\b",
    "iban": r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b",
    "phone": r"(?<![\w-])\+?\d{1,3}[ .-]?\(?\d{2,4}\)?[ .-]?\d{3,4}[ .-]?\d{3,4}(?![\w-])",
}


class PiiSpec(BaseModel):
    """A PII file (``--pii FILE``): what to mask in imported conversations."""

    model_config = ConfigDict(extra="forbid")

    builtin: bool = Field(
        True, description="Also mask with the built-in patterns (email, card, iban, phone)."
    )
    patterns: dict[str, str] = Field(default_factory=dict, description="{name: regex}: more kinds to mask.")
    never_reveal: list[str] = Field(
        default_factory=list, description="Literal values to mask wherever they appear."
    )

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{name}: not a valid regular expression: {exc}") from None
        return value


@dataclass
class Redactor:
    """Masks strings; counts what it masked."""

    spec: PiiSpec = field(default_factory=PiiSpec)
    count: int = 0

    def __post_init__(self) -> None:
        kinds = {**(BUILTIN_PATTERNS if self.spec.builtin else {}), **self.spec.patterns}
        values = sorted({v for v in self.spec.never_reveal if v}, key=len, reverse=True)
        self._literal = re.compile("|".join(re.escape(v) for v in values)) if values else None
        self._kinds = [(name, re.compile(pattern)) for name, pattern in kinds.items()]

    def text(self, value: str) -> str:
        if self._literal is not None:
            value, n = self._literal.subn("[REDACTED:never_reveal]", value)
            self.count += n
        for name, pattern in self._kinds:
            value, n = pattern.subn(f"[REDACTED:{name}]", value)
            self.count += n
        for shape in SECRET_SHAPES:  # keys and tokens: the shapes a run's own records are masked for
            value, n = shape.subn(lambda m: m.group(1) + "[REDACTED:secret]", value)
            self.count += n
        return value

    def tree(self, value: Any) -> Any:
        """Every string in ``value`` masked, keys included (a phone number can be a key), and the
        whole value of a credential-named key (``api_key``, ``token``, ``password``: a tool's
        arguments given as an object), which no pattern of its text alone would catch."""
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if isinstance(key, str) and is_secret_name(key) and isinstance(item, str) and item:
                    self.count += 1
                    out[self.text(key)] = "[REDACTED:secret]"
                else:
                    out[self.text(key) if isinstance(key, str) else key] = self.tree(item)
            return out
        if isinstance(value, list):
            return [self.tree(v) for v in value]
        return self.text(value) if isinstance(value, str) else value


def load_pii(path: Path | None) -> PiiSpec:
    """The PII file, or the defaults (no file, or an empty one). Errors name the file, line and field."""
    if path is None:
        return PiiSpec()
    from simlab.specs.loader import load_model

    spec: PiiSpec = load_model(path, PiiSpec, empty_ok=True).spec
    return spec
