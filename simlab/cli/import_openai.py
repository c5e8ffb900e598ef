"""``simlab import openai SOURCE``: OpenAI-style message lists, one conversation a line."""

from __future__ import annotations

import argparse

from simlab.cli.import_observed import configure as configure  # the shared arguments


def run(args: argparse.Namespace) -> int:
    from simlab.cli.import_observed import import_conversations
    from simlab.traces.openai_jsonl import read_openai_jsonl

    return import_conversations(args, "openai", read_openai_jsonl)
