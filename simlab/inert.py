"""Text simlab prints is inert: what came from a file (a scenario id, a rubric id, a check's reason,
a transcript) can neither drive the terminal nor a CI runner, and no secret is shown.

- ``one_line`` is for a field printed in a line or a cell: every control character, line break
  and bidirectional override becomes a visible escape (``\\x1b``, ``\\n``).
- ``InertStream`` wraps stdout and stderr of the command line: each write has its secrets masked
  (``redact.scrub``), control characters other than newline, tab and the colour and cursor
  sequences a terminal library writes made visible, and every line that a CI runner would read as
  a workflow command (GitHub Actions ``::error::``, ``::add-mask::``…, also behind any Unicode
  space or zero-width character, which the runner trims; ``##[…]``, Azure's ``##vso[…]``) broken
  with a zero-width space, so it is shown and never obeyed.
"""

from __future__ import annotations

import os
import re
from typing import Any, TextIO

from simlab.redact import scrub

__all__ = ["InertStream", "inert_text", "one_line"]

BIDI = "\u202a-\u202e\u2066-\u2069"  # the overrides and isolates that reorder what a reader sees
_LINE_BREAKING = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f{BIDI}\ufeff]")
_CSI = r"\x1b\[[0-?]*[ -/]*[@-~]"
_STRAY = re.compile(f"({_CSI})|([\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f])")  # a terminal's: CSI and CR kept
_STRAY_ELSEWHERE = re.compile("()([\x00-\x08\x0b-\x1f\x7f-\x9f])")  # a log or a pipe: every control shown
# what a CI runner trims before it reads a line: any Unicode space (U+00A0, U+3000…), zero-width
# and format characters, and the colour sequences a terminal library writes
_TRIMMED = "[^\\S\\n]|[\u200b-\u200f\u2060-\u2064\ufeff\u180e]"
_COMMAND_LINE = re.compile(f"(?m)^((?:{_TRIMMED}|{_CSI})*)::")
_COMMAND_ANYWHERE = re.compile(r"##(?=\[|vso\[)")
ZWSP = "\u200b"


def _escape(char: str) -> str:
    code = ord(char)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    )


def one_line(text: Any) -> str:
    """``text`` as one inert line: control characters, line breaks, zero-width and bidirectional
    characters shown as escapes."""
    return _LINE_BREAKING.sub(lambda m: _escape(m.group()), str(text))


def inert_text(text: str, *, at_line_start: bool = True, terminal: bool = False) -> str:
    """Several lines made inert (see the module docstring). For a terminal, the colour and cursor
    sequences (CSI) and carriage returns that terminal libraries write are kept (fields from files
    are made ``one_line`` before they get there); anywhere else every control character is shown."""
    text = scrub(text)
    stray = _STRAY if terminal else _STRAY_ELSEWHERE
    text = stray.sub(lambda m: m.group(1) or _escape(m.group(2)), text)
    if "::" in text:
        start = 0 if at_line_start else text.find("\n") + 1
        if start or at_line_start:
            text = text[:start] + _COMMAND_LINE.sub(lambda m: f"{m.group(1)}:{ZWSP}:", text[start:])
    if "##" in text:
        text = _COMMAND_ANYWHERE.sub("##" + ZWSP, text)
    return text


class InertStream:
    """A text stream (stdout, stderr) whose writes go through ``inert_text``; everything else is
    the wrapped stream's (``isatty``, ``fileno``, ``encoding``…), so terminal libraries work as before."""

    def __init__(self, raw: TextIO):
        self.raw = raw
        self._at_line_start = True
        try:
            tty = bool(raw.isatty())
        except (AttributeError, ValueError):
            tty = False
        # where a terminal library writes colours and redraws: a terminal, or forced as one
        self._terminal = tty or bool(os.environ.get("FORCE_COLOR")) or os.environ.get("TTY_COMPATIBLE") == "1"

    def write(self, text: str) -> int:
        if text:
            self.raw.write(inert_text(text, at_line_start=self._at_line_start, terminal=self._terminal))
            self._at_line_start = text.endswith("\n")
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)
