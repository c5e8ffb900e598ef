"""``simlab import otlp SOURCE``: OpenTelemetry spans as OTLP JSON (GenAI semconv, OpenInference)."""

from __future__ import annotations

import argparse

from simlab.cli.import_observed import configure as configure  # the shared arguments


def run(args: argparse.Namespace) -> int:
    from simlab.cli.import_observed import import_conversations
    from simlab.traces.otlp import NO_CONTENT_HINT, read_otlp

    notes: list[str] = []
    return import_conversations(
        args, "otlp", lambda path: read_otlp(path, notes), notes=notes, no_content_hint=NO_CONTENT_HINT
    )
