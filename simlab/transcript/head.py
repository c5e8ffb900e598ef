"""``TrialHead``: a trial's flat figures, stored at the front of its line in ``trials.jsonl``.

The head is derived data, computed from the record's models when the line is written
(``row.record_head``), so a report or the viewer reads every figure it needs without parsing the
transcript. Its JSON is the wire format of record schema 2 (``{"v":3,"row":{…},"failed":[…],…}``)
and ``row`` is one row of ``results.parquet``, whose columns are its fields in this order, then one
``check:<name>`` column per check.

This model is the one shape of a trial's summary above the storage layer: every reader of heads
(``runner/heads_tail``: the report, gates, compare, the digest of JUnit and HTML, the viewer's
rows) gets a ``TrialHead``, validated by pydantic-core straight from the head's bytes; a head that
does not validate (another version, a hand edit) is not trusted, and the line is read whole and
its head computed. Validating costs about 6 µs a trial more than parsing the bytes into a dict, which
the report wins back by reading the typed row directly (bench/results/report_ab.json). The
stored record keeps its head as the dict it parsed (``TrialRecord.head``); ``TrialHead.model_validate``
types it.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, StringConstraints

from simlab.transcript.model import CostUsd, TokenCount

HEAD_VERSION: Final = (
    3  # 2: unjudged and errored checks, tool_errors without invalid calls; 3: blame (blame.py)
)
CHECK_COLUMN = "check:"  # the prefix of the row's per-check status columns
REASON_CHARS = 240  # of an errored check's reason kept in the head (the cause a report names)
INT64 = (-(2**63), 2**63 - 1)
# every integer of a head: a column of results.parquet is int64, so a larger number (a token count
# of 2**70) is corrupt input: such a head does not validate, and a line whose record gives one is
# an error naming file, line and field (runner/lines.head_of); a JSON integer, never a bool, a float
# or a string (pydantic's lax mode read ``true`` as 1)
Int64 = Annotated[int, Strict(), Field(ge=INT64[0], le=INT64[1])]
# a role's tokens in a trial: a plausible count, as each call's (transcript/model.TokenCount), so a
# head holding a negative or absurd count is not trusted; row.record_head makes a sum beyond it unknown


class TrialFigures(BaseModel):
    """One trial as a row of ``results.parquet``. Unknown numbers are None, never 0.

    Besides these fields the row holds one ``check:<name>`` column per check with its status:
    the only extra keys allowed (checked on validation: another key fails to match the pattern
    ``^check:``), since a scenario's checks are its own."""

    model_config = ConfigDict(extra="allow")
    # the only extra keys: one ``check:<name>`` column per check, each a status; checked by
    # pydantic-core itself, as every reader validates every head (a Python validator cost 10 %)
    # (annotated without a default: with ``Field(init=False)``, pydantic 2.14 also puts the extras
    # into the instance's ``__dict__``, beside the fields)
    __pydantic_extra__: dict[Annotated[str, StringConstraints(pattern=f"^{CHECK_COLUMN}")], str | None]

    run_id: str = Field(description="The run the trial belongs to.")
    unit_id: str = Field(description="scenario_id#trial: the unit's identity inside its run.")
    scenario_id: str
    persona_id: str
    trial: Int64
    seed: Int64
    agent: str = Field(description="The agent's reference (model string or module:attr).")
    simulator: str = Field(description="The simulator's reference.")
    verdict: str | None = Field(
        None, description="pass | fail | invalid | error | unjudged; None until graded."
    )
    termination: str = Field(description="Why the conversation ended (a TerminationReason).")
    termination_detail: str = ""
    user_turns: Int64 = 0
    agent_turns: Int64 = 0
    tool_calls: Int64 = Field(
        0, description="Calls the agent made, invalid ones included (transcript/counts.py)."
    )
    invalid_calls: Int64 = Field(0, description="Calls that never ran: unknown tool, bad arguments.")
    tool_errors: Int64 = Field(0, description="Failed results of calls that ran.")
    error_events: Int64 = 0
    model_calls: Int64 = 0
    duration_s: float | None = Field(
        0.0, description="Seconds of the trial; None when unknown (left out of sums)."
    )
    agent_input_tokens: TokenCount | None = None
    agent_output_tokens: TokenCount | None = None
    agent_cached_tokens: TokenCount | None = None
    agent_cost_usd: CostUsd | None = None
    simulator_input_tokens: TokenCount | None = None
    simulator_output_tokens: TokenCount | None = None
    simulator_cached_tokens: TokenCount | None = None
    simulator_cost_usd: CostUsd | None = None
    judge_input_tokens: TokenCount | None = None
    judge_output_tokens: TokenCount | None = None
    judge_cached_tokens: TokenCount | None = None
    judge_cost_usd: CostUsd | None = None
    cost_usd: CostUsd | None = Field(None, description="Agent plus simulator; None when either is unknown.")
    judge_calls: Int64 = 0
    retries: Int64 = 0
    retry_wait_s: float = 0.0
    model_latency_s: float = 0.0
    redundant_calls: Int64 | None = Field(
        None, description="From the efficiency check; None when it did not run."
    )
    loop: bool = False
    failed_checks: str = Field("", description="The hard checks that failed, joined with '; '.")
    policy_violations: Int64 = Field(0, description="Policy checks that failed, soft ones included.")
    not_run_checks: Int64 = 0
    check_count: Int64 = 0
    replayed: bool = Field(False, description="The user turns were replayed from a recorded trial.")
    diverged_turn: Int64 | None = Field(
        None,
        description="A replay: the first agent turn that differed from the "
        "recording; None when none did (or not a replay).",
    )
    blame: str | None = Field(
        None,
        description="Whose fault a trial that did not pass is: agent, user, tool, "
        "provider, judge or lab (transcript/blame.py); None for a pass.",
    )
    first_fault_turn: Int64 | None = Field(
        None, description="The turn of the first faulty step; None for a pass."
    )
    first_fault_event: Int64 | None = Field(
        None, description="Its index in the transcript's events; None for a pass."
    )
    failure_mode: str | None = Field(
        None,
        description="The trial's failure signature (blame: check kind, name, "
        "tool), shared by trials that failed the same way.",
    )

    @property
    def checks(self) -> dict[str, str | None]:
        """Check name → status, from the ``check:<name>`` columns."""
        return {key[len(CHECK_COLUMN) :]: value for key, value in (self.model_extra or {}).items()}


class TrialHead(BaseModel):
    """What a report or the viewer reads of a trial: its row, the checks that did not pass, and
    the outcome of each attack category (an attack succeeded when a check of its category failed)."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[3] = Field(HEAD_VERSION, description="The head's version; another version is recomputed.")
    row: TrialFigures
    failed: list[tuple[str, str, bool]] = Field(
        default_factory=list, description="[name, kind, hard] of each failed check."
    )
    not_run: list[str] = Field(default_factory=list, description="Names of the checks that did not run.")
    unjudged: list[tuple[str, str]] = Field(
        default_factory=list,
        description="[name, kind] of the hard checks that did not run (the trial is unjudged).",
    )
    errored: list[tuple[str, str, bool, str]] = Field(
        default_factory=list,
        description=f"[name, kind, hard, reason] of checks whose grader could not decide "
        f"(reason cut to {REASON_CHARS} characters).",
    )
    attacks: dict[str, bool] = Field(
        default_factory=dict, description="Attack category → whether it succeeded."
    )
    tool_counts: tuple[Int64, Int64, Int64] | None = Field(
        None,
        description="[true positives, false positives, false negatives] of the agent's tool calls against "
        "expect.trajectory (the trajectory grader's one-to-one matching), pooled into the run's "
        "tool precision, recall and F1; None without a trajectory check that ran (and in heads "
        "written before it was kept).",
    )
