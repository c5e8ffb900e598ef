"""``triage.json``: the written causes of a run's failure modes (``simlab triage RUN --judge MODEL``).

Off by default, and never needed by anything deterministic: the judge is asked only when a person
asks, once per failure mode (its representative trial, ``graders/triage.py``), and what it answered
is kept beside the run. ``report/build`` puts each cause on its mode (``FailureMode.cause``) when
the file is there, and ``report/why.py`` phrases it for every report. A ``triage.json`` that does
not validate is left out of the report with a warning, never half-read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from simlab.errors import SpecError
from simlab.redact import mask_tree
from simlab.results.figures import FailureMode, RunSummary
from simlab.runner.lines import ReadNotes, parse_record, record_of, scan
from simlab.runner.store import RunStore, write_atomic
from simlab.transcript import ModelCall, TrialRecord, Usage
from simlab.transcript.causes import Triage

if TYPE_CHECKING:
    from simlab.llm.types import ChatModel

TRIAGE_FILE = "triage.json"


def read_triage(folder: Path) -> Triage | None:
    """The run's ``triage.json``, or None when it has none; a bad one is a ``SpecError``."""
    path = folder / TRIAGE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return Triage.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "file"
        raise SpecError(
            f"{path}: {where}: {first['msg']} (run `simlab triage --judge MODEL` again to rewrite it)"
        ) from None


def attach_causes(summary: RunSummary, triage: Triage | None) -> None:
    """Each failure mode of ``summary`` gets its cause from ``triage``, matched by its signature."""
    if triage is None:
        return
    for mode in summary.failure_modes:
        mode.cause = triage.cause_of(mode.mode)


def representatives(folder: Path, unit_ids: set[str]) -> dict[str, TrialRecord]:
    """The stored records of ``unit_ids`` (one pass over the trials file; only their lines parsed)."""
    path = RunStore(folder).trials_path
    found: dict[str, TrialRecord] = {}
    for number, unit, line in scan(path, "line", ReadNotes(path)):
        if unit in unit_ids:
            found[unit] = record_of(parse_record(line.rstrip(b"\n"), path, number), path, number)
    return found


async def triage_run(
    folder: Path,
    judge: ChatModel,
    modes: list[FailureMode],
    *,
    run_id: str,
    max_attempts: int = 3,
    now: Callable[[], datetime] | None = None,
) -> Triage:
    """Ask ``judge`` for the cause of each of ``modes`` (one question each, retried when malformed up
    to ``max_attempts`` calls) and write ``triage.json`` into ``folder``."""
    from simlab.graders.judge import judge_pin  # the judges load only when one is asked
    from simlab.graders.triage import ask_cause

    records = representatives(folder, {m.representative for m in modes})
    calls: list[ModelCall] = []
    causes = []
    for mode in modes:
        record = records.get(mode.representative)
        if record is None:
            raise SpecError(
                f"{folder / 'trials.jsonl'}: the trial {mode.representative!r} that represents failure "
                f"mode {mode.mode!r} is not there any more; run `simlab report` first"
            )
        causes.append(
            await ask_cause(judge, record, trials=mode.trials, max_attempts=max_attempts, calls=calls)
        )
    usage = Usage.total(call.usage for call in calls)
    stamp = (now or (lambda: datetime.now(UTC)))()
    triage = Triage(
        run_id=run_id,
        created_at=stamp.isoformat(timespec="seconds"),
        judge=judge_pin(judge),
        causes=causes,
        calls=len(calls),
        usage=usage,
    )
    data = mask_tree(triage.model_dump(mode="json"))
    write_atomic(folder / TRIAGE_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return Triage.model_validate(data)
