"""Argument types the commands share (``type=`` of ``add_argument``): a bad value is a usage error
(exit 2) that names the flag."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def count(text: str) -> int:
    """A whole number, 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def workers(text: str) -> int | str:
    """A number of processes, or ``auto``."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or auto, got {text!r}") from None


def tags(text: str) -> list[str]:
    """Comma-separated words, blanks dropped."""
    return [t.strip() for t in text.split(",") if t.strip()]
