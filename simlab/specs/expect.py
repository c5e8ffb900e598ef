"""The ``expect:`` block of a scenario: what the graders check.

This module only describes and validates the block (unknown keys and unknown tools are load
errors); the graders give it meaning.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from simlab.specs.base import PythonRef, Regex, SpecModel
from simlab.specs.graph_expect import GraphTrajectory
from simlab.specs.response_match import ResponseMatch

LIMIT = re.compile(r"^\s*([A-Za-z_]\w*)\.([A-Za-z_][\w.]*)\s*(<=|>=|==|!=|<|>)\s*(\S.*?)\s*$")
RULE_KEYS = (
    "before",
    "after_confirmation",
    "max_calls",
    "limit",
    "no_write_after_refusal",
    "owner",
    "forbid_args",
    "python",
)
COMPARISONS = ("equals", "not_equals", "contains", "exists", "absent", "gt", "ge", "lt", "le")


class StateAssertion(SpecModel):
    """One assertion on the final environment state, e.g. ``refunds[order_id=A123].method``."""

    path: str = Field(description="Path into the state: dotted keys, [index] or [field=value] filters.")
    equals: Any = None
    not_equals: Any = None
    contains: Any = None
    exists: bool | None = None
    absent: bool | None = None
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    tolerance: float = Field(1e-9, ge=0, description="Numeric tolerance for equals and comparisons.")
    name: str | None = Field(None, description="Sub-goal name used in reports and partial credit.")

    @model_validator(mode="after")
    def _one_comparison(self) -> StateAssertion:
        given = [c for c in COMPARISONS if c in self.model_fields_set]
        if not given:
            raise ValueError(f"give one comparison: {', '.join(COMPARISONS)}")
        return self


class CallSpec(SpecModel):
    """A reference tool call; ``args`` lists only the arguments that matter."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    compare: dict[str, str | dict[str, Any]] = Field(
        default_factory=dict,
        description="Per-argument comparator: exact, ignore, casefold, number, date, regex, one_of, "
        "module:func.",
    )


class Trajectory(SpecModel):
    """The tool calls the agent should make; checked only when a scenario asks for it."""

    mode: Literal["exact", "in_order", "any_order", "subset", "superset"] = "in_order"
    calls: list[str | CallSpec] = Field(description="Reference calls: tool names or {tool, args}.")


class ConfirmationPhrases(SpecModel):
    """Phrases (regexes, any case) for the confirmation recogniser of ``after_confirmation``: added
    to the built-in lists, or, with ``replace``, replacing each list given here."""

    ask: list[Regex] = Field(default_factory=list, description="Agent phrases that ask the user to consent.")
    agree: list[Regex] = Field(default_factory=list, description="User phrases that agree.")
    refuse: list[Regex] = Field(
        default_factory=list, description="User phrases that refuse or withdraw consent."
    )
    hedge: list[Regex] = Field(default_factory=list, description="User phrases that doubt (no consent yet).")
    replace: bool = Field(
        False, description="Replace the built-in lists given here instead of adding to them."
    )


PRINCIPAL_FROM = re.compile(r"^[A-Za-z_]\w*\.(?:result|args)(?:\.[^.\s]+)*$")
CONSENT = re.compile(r"^(conversation|[A-Za-z_]\w*(?:\.result(?:\.[^.\s]+)+)?)$")


class Rule(SpecModel):
    """One policy rule; exactly one of the rule keys is set."""

    before: list[str] | None = Field(
        None, min_length=2, max_length=2, description="[A, B]: A must precede every B."
    )
    after_confirmation: str | None = Field(None, description="Tool allowed only after the user confirmed.")
    consent: list[str] | None = Field(
        None,
        description="With after_confirmation: what counts as consent: 'conversation' (the user agreed to "
        "the agent's question), a tool whose successful result is true or {confirmed: true}, or "
        "'tool.result.PATH' (that value of the tool's result is true). Default: the conversation "
        "or any tool answering true / {confirmed: true}.",
    )
    confirmation: ConfirmationPhrases | None = Field(
        None,
        description="With after_confirmation: phrases for this rule, over the scenario's "
        "expect.confirmation.",
    )
    max_calls: dict[str, int] | None = Field(None, description="{tool: N}: at most N calls.")
    limit: str | None = Field(None, description="Argument limit, e.g. 'issue_refund.amount <= 100'.")
    unless: str | None = Field(None, description="With limit: a tool whose earlier success lifts the limit.")
    no_write_after_refusal: bool | None = None
    owner: dict[str, str] | None = Field(
        None,
        description="Permission rule: {tool.arg: where the owner is, principal: agent_context key} or "
        "{tool.arg: …, principal_from: tool.result.PATH}. Where the owner is: a state path to an "
        "owner field (orders.{value}.customer), '{value}' (the argument is the owner id), or a "
        "path whose '*' segment is the owner's id (cards.*[card_id={value}]).",
    )
    forbid_args: dict[str, Any] | None = Field(
        None,
        description="{tool, args, category}: a call with these arguments is a violation (injection cases).",
    )
    python: PythonRef | None = Field(None, description="module:function(transcript) -> list of violations.")
    name: str | None = None

    @field_validator("limit")
    @classmethod
    def _limit_syntax(cls, value: str | None) -> str | None:
        if value is not None and not LIMIT.match(value):
            raise ValueError(
                f"write a limit as 'tool.argument OP value' (e.g. 'issue_refund.amount <= 100'); "
                f"OP is one of <=, <, >=, >, ==, !=; got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> Rule:
        given = [k for k in RULE_KEYS if getattr(self, k) is not None]
        if len(given) != 1:
            got = ", ".join(given) if given else "none"
            raise ValueError(f"a rule needs exactly one of {', '.join(RULE_KEYS)}; got {got}")
        if self.unless is not None and self.limit is None:
            raise ValueError("'unless' only goes with 'limit'")
        if (self.consent is not None or self.confirmation is not None) and self.after_confirmation is None:
            raise ValueError("'consent' and 'confirmation' only go with 'after_confirmation'")
        if self.owner is not None:
            _check_owner(self.owner)
        for item in self.consent or []:
            if not CONSENT.match(item):
                raise ValueError(
                    f"consent: write 'conversation', a tool name, or 'tool.result.PATH'; got {item!r}"
                )
        return self

    @field_validator("consent", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def tool_references(self) -> list[tuple[tuple[Any, ...], str]]:
        """Every tool name this rule mentions, with the field path (inside the rule) that mentions it."""
        refs: list[tuple[tuple[Any, ...], str]] = [
            (("before", j), name) for j, name in enumerate(self.before or [])
        ]
        if self.after_confirmation:
            refs.append((("after_confirmation",), self.after_confirmation))
        refs += [
            (("consent", j), source.split(".", 1)[0])
            for j, source in enumerate(self.consent or [])
            if source != "conversation"
        ]
        refs += [(("max_calls", name), name) for name in self.max_calls or {}]
        if self.limit and (match := LIMIT.match(self.limit)):
            refs.append((("limit",), match.group(1)))
        if self.unless:
            refs.append((("unless",), self.unless))
        for key, value in (self.owner or {}).items():
            if key == "principal_from":
                refs.append((("owner", key), value.split(".", 1)[0]))
            elif key != "principal" and "." in key:
                refs.append((("owner", key), key.split(".", 1)[0]))
        if self.forbid_args and "tool" in self.forbid_args:
            refs.append((("forbid_args", "tool"), str(self.forbid_args["tool"])))
        return refs


def _check_owner(owner: dict[str, str]) -> None:
    given = [k for k in ("principal", "principal_from") if k in owner]
    if len(given) != 1:
        raise ValueError(
            "owner: give exactly one of 'principal' (an agent_context key) or 'principal_from' "
            "(tool.result.PATH: the id an earlier tool call established, e.g. "
            "verify_customer.result.customer_id)"
        )
    source = owner.get("principal_from")
    if source is not None and not PRINCIPAL_FROM.match(source):
        raise ValueError(
            f"owner: write principal_from as 'tool.result.PATH' or 'tool.args.NAME'; got {source!r}"
        )
    checked = [k for k in owner if k not in ("principal", "principal_from")]
    if not checked:
        raise ValueError("owner: name at least one 'tool.argument: where its owner is'")
    for key in checked:
        if not re.match(r"^[A-Za-z_]\w*\.[A-Za-z_]\w*$", key):
            raise ValueError(f"owner: write the checked argument as 'tool.argument'; got {key!r}")


class Budgets(SpecModel):
    """Efficiency limits the graders check (a trial over budget fails the budget check)."""

    max_user_turns: int | None = Field(None, ge=0)
    max_agent_turns: int | None = Field(None, ge=0)
    max_tool_calls: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    max_cost_usd: float | None = Field(None, ge=0)
    max_seconds: float | None = Field(None, ge=0)
    count_history: bool = Field(
        False,
        description="Also count a scenario's history (given, not played) in the "
        "efficiency counts and these budgets; by default only live turns.",
    )


class RubricItem(SpecModel):
    """A question for the LLM judge, for what code cannot check."""

    id: str
    text: str
    hard: bool = False
    turn: int | None = Field(
        None,
        ge=1,
        description="Judge only this user turn (1 = the first live one) and what led to it: the judge "
        "sees the conversation up to the end of that turn. A trial that never reached it "
        "fails the item. Default: the whole conversation.",
    )


GRADER_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


class SaysNot(SpecModel):
    """A pattern the agent's own messages must never match: a regular expression searched in each
    of its replies (never the user's words, a tool's result or a scenario's given history)."""

    pattern: Regex = Field(
        description="A regular expression (Python syntax), searched in each agent message."
    )
    name: str | None = Field(
        None, description="The check's name in reports (agent_says_not:NAME); default: the pattern itself."
    )
    hard: bool = Field(
        True, description="A match fails the trial (hard, the default) or only lowers its score."
    )
    case_sensitive: bool = Field(False, description="Match letter case exactly (default: ignore case).")


class GraderUse(SpecModel):
    """A grader a scenario or a suite adds to the built-in ones: a ``@grader`` factory, called with
    ``params``. Naming a built-in (``rubric``) runs it with these parameters instead of its defaults."""

    use: str = Field(
        description="module:function of a @grader factory (a dotted module, or a .py path inside "
        "the project), or the name of a built-in grader: state, trajectory, policy, "
        "efficiency, drift, rubric, groundedness, drift_llm, agent_says_not."
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword arguments for the factory; `simlab validate` checks that they "
        "fit its signature.",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        return {"use": value} if isinstance(value, str) else value

    @field_validator("use")
    @classmethod
    def _ref_or_name(cls, value: str) -> str:
        module, sep, attr = value.rpartition(":")
        if sep and module.strip() and attr.strip():
            return value
        if not sep and GRADER_NAME.match(value):
            return value
        raise ValueError(
            f"write a grader as module:function (e.g. mypkg.checks:no_pii) or a built-in grader's name "
            f"(e.g. rubric); got {value!r}"
        )


class Expect(SpecModel):
    """What the graders check: end state first, then trajectory, rules, budgets, rubric."""

    state: list[StateAssertion] = Field(default_factory=list)
    expected_actions: list[CallSpec] = Field(
        default_factory=list,
        description="Reference WRITE actions; replayed on a fresh state to get the expected end state.",
    )
    ignore_paths: list[str] = Field(
        default_factory=list, description="State paths left out of the comparison."
    )
    predicate: PythonRef | None = Field(
        None, description="module:function(state, transcript) -> bool | (bool, reason)"
    )
    trajectory: Trajectory | None = None
    forbidden: list[str | CallSpec] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)
    confirmation: ConfirmationPhrases | None = Field(
        None,
        description="Phrases for every after_confirmation rule of this scenario (a rule's own go over them).",
    )
    budgets: Budgets | None = None
    rubric: list[RubricItem] = Field(default_factory=list)
    agent_says_not: list[SaysNot] = Field(
        default_factory=list,
        description="Patterns the agent's own messages must never match: {pattern, name, "
        "hard, case_sensitive}, a regex each; deterministic, hard by default; the "
        "check points at the first agent message that matches.",
    )
    groundedness: bool = Field(
        False, description="Judge whether the agent's final claims are backed by tool results."
    )
    response_match: ResponseMatch | None = Field(
        None,
        description="ROUGE-1 of the agent's last reply against a reference text (needs the rouge extra).",
    )
    drift_judge: bool = Field(
        False, description="Also ask the judge whether the simulated user stayed on script."
    )
    first_tool_call: CallSpec | None = Field(
        None,
        description="Single-step check: the tool call the agent decides on first, for the opening message. "
        "It is taken on a throwaway copy of the agent and never run (LangGraph: interrupt_before "
        "the tool node); the conversation then plays as usual.",
    )
    graph_trajectory: GraphTrajectory | None = Field(
        None, description="LangGraph agents: the nodes the graph should visit (same modes as trajectory)."
    )
    graph_state: list[StateAssertion] = Field(
        default_factory=list,
        description="LangGraph agents: assertions on the final graph state (same syntax as state).",
    )
    graders: list[GraderUse] = Field(
        default_factory=list,
        description="Graders to run besides the built-in ones: {use: module:function, params: "
        "{…}} or just module:function; a built-in's name sets its parameters.",
    )

    @field_validator("agent_says_not")
    @classmethod
    def _unique_says_not(cls, items: list[SaysNot]) -> list[SaysNot]:
        names = [item.name or item.pattern for item in items]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(
                "agent_says_not names must be unique (give each a name:); repeated: " + ", ".join(repeated)
            )
        return items

    @field_validator("rubric")
    @classmethod
    def _unique_rubric_ids(cls, items: list[RubricItem]) -> list[RubricItem]:
        ids = [item.id for item in items]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"rubric ids must be unique; repeated: {', '.join(repeated)}")
        return items

    def call_specs(self) -> list[tuple[tuple[Any, ...], CallSpec]]:
        """Every ``{tool, args}`` reference call, with its field path."""
        calls: list[tuple[tuple[Any, ...], CallSpec]] = [
            (("expected_actions", i), action) for i, action in enumerate(self.expected_actions)
        ]
        for i, call in enumerate(self.trajectory.calls if self.trajectory else []):
            if isinstance(call, CallSpec):
                calls.append((("trajectory", "calls", i), call))
        calls.extend(
            (("forbidden", i), item) for i, item in enumerate(self.forbidden) if isinstance(item, CallSpec)
        )
        if self.first_tool_call is not None:
            calls.append((("first_tool_call",), self.first_tool_call))
        return calls

    def tool_references(self) -> list[tuple[tuple[Any, ...], str]]:
        """Every tool name this block mentions, with the field path that mentions it."""
        refs: list[tuple[tuple[Any, ...], str]] = []
        for i, action in enumerate(self.expected_actions):
            refs.append((("expected_actions", i, "tool"), action.tool))
        for i, call in enumerate(self.trajectory.calls if self.trajectory else []):
            refs.append(
                (("trajectory", "calls", i), call)
                if isinstance(call, str)
                else (("trajectory", "calls", i, "tool"), call.tool)
            )
        for i, item in enumerate(self.forbidden):
            refs.append(
                (("forbidden", i), item) if isinstance(item, str) else (("forbidden", i, "tool"), item.tool)
            )
        for i, rule in enumerate(self.rules):
            refs.extend(((("rules", i, *path), name) for path, name in rule.tool_references()))
        if self.first_tool_call is not None:
            refs.append((("first_tool_call", "tool"), self.first_tool_call.tool))
        return refs
