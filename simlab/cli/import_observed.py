"""What the production-conversation formats of ``simlab import`` share: their arguments, the PII
step, and writing the observed run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from simlab.inert import one_line
from simlab.traces.conversation import OBSERVED_SCENARIO, Conversation


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE", help="the file to import")
    parser.add_argument("--run-id", help="the run to write (default: import-<format>-<date and time>)")
    parser.add_argument(
        "--scenario-id",
        default=OBSERVED_SCENARIO,
        help=f"the scenario id the conversations are trials of (default {OBSERVED_SCENARIO})",
    )
    parser.add_argument(
        "--pii",
        metavar="FILE",
        help="a PII file: {builtin: true, patterns: {name: regex}, never_reveal: [values]}",
    )
    parser.add_argument(
        "--keep-raw",
        action="store_true",
        help="also copy the source file, unredacted, into the run folder (raw/)",
    )


def import_conversations(
    args: argparse.Namespace,
    fmt: str,
    read: Callable[[Path], list[Conversation]],
    *,
    notes: list[str] | None = None,
    no_content_hint: str = "",
) -> int:
    """Read, mask PII, convert, write; then say what was written, what the source lacks (``notes``
    the reader left; conversations without content, with ``no_content_hint``) and what to do next."""
    from simlab.errors import SpecError, UsageError
    from simlab.runner.observed import write_observed_run
    from simlab.runner.prepare import check_run_id
    from simlab.specs import load_config
    from simlab.specs.base import is_spec_id
    from simlab.traces.conversation import has_content, to_transcript
    from simlab.traces.pii import Redactor, load_pii

    source = Path(args.source)
    if not source.is_file():
        raise UsageError(f"{source}: no such file")
    if not is_spec_id(args.scenario_id):
        raise UsageError(
            f"--scenario-id {args.scenario_id!r}: use lowercase letters, digits, '.', '_' and '-' "
            "(a scenario id)"
        )
    spec = load_pii(Path(args.pii) if args.pii else None)
    conversations = read(source)
    no_message = [c for c in conversations if not c.messages and not c.calls]
    conversations = [c for c in conversations if c.messages or c.calls]
    if not conversations:
        raise SpecError(f"{source}: no conversation holds a message: nothing to import")
    redactor = Redactor(spec)
    transcripts = []
    run_id = check_run_id(args.run_id or f"import-{fmt}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}")
    for trial, conv in enumerate(conversations, start=1):
        before = redactor.count
        conv.messages = redactor.tree(conv.messages)
        conv.tool_errors = redactor.tree(conv.tool_errors)
        conv.feedback = redactor.tree(conv.feedback)
        conv.error = redactor.text(conv.error) if conv.error else None
        conv.id, conv.source, conv.agent = (
            redactor.text(conv.id),
            redactor.text(conv.source),
            redactor.text(conv.agent),
        )
        conv.redactions = redactor.count - before
        transcripts.append(to_transcript(conv, run_id=run_id, trial=trial, scenario_id=args.scenario_id))
    folder = Path(load_config(Path("simlab.yaml")).transcripts) / run_id
    redaction = {
        "builtin": spec.builtin,
        "patterns": sorted(spec.patterns),
        "never_reveal": len(spec.never_reveal),
        "masked": redactor.count,
    }
    write_observed_run(
        folder,
        transcripts,
        source=source,
        fmt=fmt,
        command=_command(args, fmt),
        redaction=redaction,
        keep_raw=args.keep_raw,
    )
    calls = sum(len(t.tool_calls()) for t in transcripts)
    print(
        f"imported {len(transcripts)} conversations ({sum(t.user_turns() for t in transcripts)} user turns, "
        f"{calls} tool calls) from {source} into {folder}; {redactor.count} PII matches masked"
        + ("; the raw file is kept in raw/" if args.keep_raw else ""),
        file=sys.stderr,
    )
    if no_message:
        shown = ", ".join(one_line(c.source) for c in no_message[:3]) + (", …" if len(no_message) > 3 else "")
        print(f"note: {len(no_message)} conversation(s) hold no message ({shown}): left out", file=sys.stderr)
    for note in [*(notes or []), *_unanswered_notes(conversations)]:
        print(f"note: {note}", file=sys.stderr)
    empty = [t for t in transcripts if not has_content(t)]
    if empty:
        print(
            f"warning: {len(empty)} of {len(transcripts)} conversations carry no message content (no text of "
            "the user's or the agent's): grade-traces leaves them unjudged"
            + (f"; {no_content_hint}" if no_content_hint else ""),
            file=sys.stderr,
        )
    print(
        f"next: simlab grade-traces {run_id} --rules RULES.yaml   (or: simlab view {run_id})", file=sys.stderr
    )
    return 0


def _unanswered_notes(conversations: list[Conversation]) -> list[str]:
    """Tool results that answer no call the conversation holds (``pair_results``), said by
    conversation: no grader can pair them, so a rule on that call sees no result."""
    out = []
    for conv in conversations:
        if conv.unanswered:
            where = conv.source if conv.id in conv.source else f"{conv.source} (conversation {conv.id})"
            shown = ", ".join(conv.unanswered[:3]) + (", …" if len(conv.unanswered) > 3 else "")
            out.append(
                f"{one_line(where)}: {len(conv.unanswered)} tool result(s) answer no tool call of the "
                f"conversation ({one_line(shown)}): kept, paired with none; export the calls too, or "
                "check each result's tool_call_id"
            )
    return out


def _command(args: argparse.Namespace, fmt: str) -> list[str]:
    """The command as given (its options), for the manifest."""
    command = ["simlab", "import", fmt, str(args.source)]
    for name in ("run_id", "scenario_id", "pii"):
        value = getattr(args, name)
        if value is not None and not (name == "scenario_id" and value == OBSERVED_SCENARIO):
            command += [f"--{name.replace('_', '-')}", str(value)]
    return command + (["--keep-raw"] if args.keep_raw else [])
