"""ADK's eval-set files as pydantic models, after google-adk 2.13 (``evaluation/eval_case.py``,
``eval_set.py``, ``conversation_scenarios.py``): field names in snake_case or camelCase (ADK
writes either: its models alias to camel case and accept both), and the fields ADK itself
ignores or that simlab does not use (timestamps, app details, usage) are ignored here too.

Also the two older list shapes google-adk 2.13 still loads: the ``.test.json`` list of queries
(``{query, expected_tool_use: [{tool_name, tool_input}], reference}``), one eval case of one
invocation per entry (``AgentEvaluator``), and the pre-1.0 list of cases (``[{name, data: [query
entries], initial_session: {state, app_name, user_id}}]``), one eval case per entry
(``local_eval_sets_manager.convert_eval_set_to_pydantic_schema``).
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel, to_snake


class AdkModel(BaseModel):
    """ADK's EvalBaseModel: camelCase aliases, either spelling accepted; unknown fields ignored
    (ADK's own models allow them)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class Part(AdkModel):
    """google.genai's Part: its text and function call are read; what else it carries is kept
    to be named (``carries``), never sent."""

    model_config = ConfigDict(extra="allow")  # AdkModel's aliases, and the keys it would drop kept

    text: str | None = None
    function_call: FunctionCall | None = None

    def carries(self) -> list[str]:
        """The kinds of content besides text this part holds (an image's ``inline_data``, a
        ``file_data``…), which a text conversation cannot send."""
        held = [to_snake(k) for k, v in (self.model_extra or {}).items() if v not in (None, "", [], {})]
        return [kind for kind in held if kind in _CONTENT]


# what a part may hold besides text and a function call (google.genai's Part); its flags and
# metadata (thought, thought_signature, video_metadata) are no content of their own
_CONTENT = frozenset(
    {"inline_data", "file_data", "function_response", "executable_code", "code_execution_result"}
)


class Content(AdkModel):
    """google.genai's Content: a role and its parts; only the text parts are read."""

    role: str | None = None
    parts: list[Part] = Field(default_factory=list)

    @property
    def text(self) -> str:
        """The text parts joined by newlines, as ADK's evaluators read them."""
        return "\n".join(p.text for p in self.parts if p.text)

    def carries(self) -> list[str]:
        """What its parts hold besides text (``Part.carries``), each kind once."""
        return list(dict.fromkeys(kind for p in self.parts for kind in p.carries()))


class FunctionCall(AdkModel):
    id: str | None = None
    name: str = Field(description="The tool's name.")
    args: dict[str, Any] = Field(default_factory=dict, description="The call's arguments.")


class IntermediateData(AdkModel):
    tool_uses: list[FunctionCall] = Field(default_factory=list, description="Expected tool calls, in order.")
    intermediate_responses: list[Any] = Field(default_factory=list)


class InvocationEvent(AdkModel):
    author: str = ""
    content: Content | None = None


class InvocationEvents(AdkModel):
    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class Invocation(AdkModel):
    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    rubrics: list[Rubric] | None = Field(None, description="Rubrics for this invocation only.")

    def tool_uses(self) -> list[FunctionCall]:
        """The expected tool calls (ADK's ``get_all_tool_calls``): from ``tool_uses``, or from the
        function calls in ``invocation_events``."""
        data = self.intermediate_data
        if isinstance(data, IntermediateData):
            return list(data.tool_uses)
        if isinstance(data, InvocationEvents):
            return [
                p.function_call
                for e in data.invocation_events
                if e.content
                for p in e.content.parts
                if p.function_call
            ]
        return []


class UserPersona(AdkModel):
    id: str = ""
    description: str = ""
    behaviors: list[Any] = Field(default_factory=list)


class ConversationScenario(AdkModel):
    """A user-simulation case: a fixed first message, then a plan the simulated user follows."""

    starting_prompt: str
    conversation_plan: str
    user_persona: UserPersona | str | None = None


class SessionInput(AdkModel):
    app_name: str = ""
    user_id: str = ""
    state: dict[str, Any] = Field(default_factory=dict)


class Rubric(AdkModel):
    rubric_id: str
    rubric_content: dict[str, Any] = Field(default_factory=dict)
    type: str | None = Field(None, description="The metric kind it is for, e.g. FINAL_RESPONSE_QUALITY.")

    @property
    def text(self) -> str:
        return str(self.rubric_content.get("text_property") or self.rubric_content.get("textProperty") or "")


class EvalCase(AdkModel):
    """Exactly one of ``conversation`` (fixed turns) and ``conversation_scenario`` (simulated user)."""

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    rubrics: list[Rubric] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError("give exactly one of conversation and conversation_scenario")
        return self


class EvalSet(AdkModel):
    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase] = Field(default_factory=list)


class OldToolUse(BaseModel):
    """An expected call in the older ``.test.json`` files."""

    model_config = ConfigDict(extra="ignore")
    tool_name: str
    tool_input: dict[str, Any] = Field(default_factory=dict)


class OldEntry(BaseModel):
    """One query of an older ``.test.json`` file."""

    model_config = ConfigDict(extra="ignore")
    query: str
    expected_tool_use: list[OldToolUse] = Field(default_factory=list)
    reference: str | None = None


class OldSession(BaseModel):
    """``initial_session`` of a pre-1.0 case."""

    model_config = ConfigDict(extra="ignore")
    app_name: str = ""
    user_id: str = ""
    state: dict[str, Any] = Field(default_factory=dict)


class OldCase(BaseModel):
    """One case of the pre-1.0 list format: a name, its queries and the session it starts from."""

    model_config = ConfigDict(extra="ignore")
    name: str
    data: list[OldEntry]
    initial_session: OldSession | None = None


class Criterion(BaseModel):
    """One criterion of ``test_config.json``: a bare threshold, or a mapping (ADK's BaseCriterion and
    ToolTrajectoryCriterion: ``threshold``, ``match_type``, ``ignore_args``; rubrics for the rubric
    metrics)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    threshold: float = Field(ge=0, le=1)
    match_type: str = Field("EXACT", validation_alias=AliasChoices("match_type", "matchType"))
    ignore_args: bool = Field(False, validation_alias=AliasChoices("ignore_args", "ignoreArgs"))
    rubrics: list[Rubric] = Field(default_factory=list)
    judge_model_options: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("judge_model_options", "judgeModelOptions")
    )

    @model_validator(mode="before")
    @classmethod
    def _from_number(cls, value: Any) -> Any:
        return (
            {"threshold": value} if isinstance(value, (int, float)) and not isinstance(value, bool) else value
        )

    @field_validator("match_type", mode="before")
    @classmethod
    def _enum_value(cls, value: Any) -> Any:
        """ADK writes its MatchType enum by value: 0, 1, 2."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _known_match(self) -> Criterion:
        names = {"0": "EXACT", "1": "IN_ORDER", "2": "ANY_ORDER"}
        mode = names.get(str(self.match_type), str(self.match_type).upper())
        if mode not in ("EXACT", "IN_ORDER", "ANY_ORDER"):
            raise ValueError(f"match_type {self.match_type!r}: use EXACT, IN_ORDER or ANY_ORDER")
        self.match_type = mode
        return self


class EvalConfig(BaseModel):
    """``test_config.json``: ``{"criteria": {metric: threshold or mapping}}``."""

    model_config = ConfigDict(extra="ignore")
    criteria: dict[str, Criterion] = Field(default_factory=dict)


DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}  # ADK's defaults


def _invocations(entries: list[OldEntry], prefix: str) -> list[Invocation]:
    return [
        Invocation(
            invocation_id=f"{prefix}-{i + 1}",
            user_content=Content(role="user", parts=[Part(text=e.query)]),
            final_response=Content(role="model", parts=[Part(text=e.reference)])
            if e.reference is not None
            else None,
            intermediate_data=IntermediateData(
                tool_uses=[FunctionCall(name=t.tool_name, args=t.tool_input) for t in e.expected_tool_use]
            ),
        )
        for i, e in enumerate(entries)
    ]


def _pre1(data: list[Any]) -> bool:
    """A pre-1.0 list of cases (each a mapping with ``data``), not a ``.test.json`` list of queries."""
    return bool(data) and all(
        isinstance(item, dict) and "data" in item and "query" not in item for item in data
    )


def eval_set_of(data: Any, stem: str) -> EvalSet:
    """An ``EvalSet`` from a parsed file: an eval set; an older ``.test.json`` list of queries (one
    case named by the last part of ``stem``, one invocation per query); or a pre-1.0 list of cases
    (its eval set named ``stem``). Raises pydantic's ValidationError."""
    if isinstance(data, list) and _pre1(data):
        cases = [OldCase.model_validate(item) for item in data]
        return EvalSet(
            eval_set_id=stem,
            eval_cases=[
                EvalCase(
                    eval_id=case.name,
                    conversation=_invocations(case.data, case.name),
                    session_input=SessionInput(**case.initial_session.model_dump())
                    if case.initial_session
                    else None,
                )
                for case in cases
            ],
        )
    if isinstance(data, list):
        entries = [OldEntry.model_validate(item) for item in data]
        name = stem.rsplit("/", 1)[-1]  # the file's name; the set's id may hold its folder too
        return EvalSet(
            eval_set_id=stem, eval_cases=[EvalCase(eval_id=name, conversation=_invocations(entries, name))]
        )
    return EvalSet.model_validate(data)
