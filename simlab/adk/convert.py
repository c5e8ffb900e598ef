"""ADK eval cases → simlab scenarios (plain dicts, written as YAML by ``cli.py``).

- A fixed conversation becomes a scripted scenario: the user's turns as ``user.script`` (played
  by the ``scripted`` simulator), and ADK's criteria as the ``adk`` grader with the case's
  expected invocations (tool uses, final responses).
- A conversation scenario becomes a scenario for the rules or an LLM simulator: the starting
  prompt is the opening, the plan is the goal, the persona comes along inline.
- ``session_input.state`` becomes ``initial_state`` where it fits the domain's state; otherwise it
  is given to the agent as ``agent_context`` (ADK puts it in the agent's session state), and
  the import says so.
- ``rubric_based_final_response_quality_v1``'s rubrics become soft rubric items: the criterion's
  and the case's judge the whole conversation, an invocation's own (``Invocation.rubrics``) judge
  that turn (``turn:``); rubrics typed for another ADK metric (``TOOL_USE_QUALITY``, …) stay with
  it. ``hallucinations_v1`` turns on groundedness: simlab's own judges grade them.
- Criterion options simlab does not apply get a note (``judge_model_options.num_samples`` is
  applied: it is the judge graders' ``samples``); expected tools the domain lacks get a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from simlab.adk.schema import DEFAULT_CRITERIA, Criterion, EvalCase, EvalSet, Rubric, UserPersona

GRADER = "simlab.adk.grader:adk_criteria"
JUDGE_GRADER = "simlab.adk.judge:adk_judge"
RUBRIC_METRIC = "rubric_based_final_response_quality_v1"
RUBRIC_TYPE = "FINAL_RESPONSE_QUALITY"  # the rubric type ADK's final-response metric takes
APPLIED = {"threshold", "match_type", "ignore_args", "rubrics"}
DEFAULT_PERSONA = {
    "id": "adk-user",
    "description": "A user of the agent, as an ADK eval case describes them.",
}


@dataclass
class Converted:
    kind: str  # fixed | simulated
    scenario: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    """A scenario id from ADK's ids: lowercase letters, digits, '-', '_' and '.'."""
    cleaned = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")
    return cleaned or "case"


def criteria_of(config: dict[str, Criterion] | None) -> dict[str, Criterion]:
    """The criteria to apply: the file's, or ADK's defaults (trajectory 1.0, response match 0.8)."""
    if config:
        return dict(config)
    return {name: Criterion.model_validate(value) for name, value in DEFAULT_CRITERIA.items()}


def criterion_params(criterion: Criterion) -> dict[str, Any]:
    """What the ``adk`` grader takes of a criterion."""
    return {
        "threshold": criterion.threshold,
        "match_type": criterion.match_type,
        "ignore_args": criterion.ignore_args,
    }


def samples_of(criterion: Criterion | None) -> int | None:
    """``judge_model_options.num_samples``, applied as the judge graders' ``samples``."""
    options = criterion.judge_model_options if criterion is not None else {}
    value = options.get("num_samples", options.get("numSamples"))
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


# ADK's defaults of the criterion options simlab does not apply: an option at its default changes nothing
OPTION_DEFAULTS: dict[str, Any] = {
    "include_intermediate_responses_in_final": False,
    "evaluate_intermediate_nl_responses": False,
    "stop_signal": "</finished>",
    "judge_model_options.judge_model": "gemini-2.5-flash",
    "judge_model_options.num_samples": 5,
    "judge_model_options.parallelism_limit": 1,
    "judge_model_options.judge_model_config": None,
}
SAMPLED = ("final_response_match_v2", RUBRIC_METRIC)  # criteria whose num_samples simlab applies


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def ignored_options(criteria: dict[str, Criterion]) -> list[str]:
    """One note per criterion whose file sets options simlab does not apply to other values than
    ADK's defaults (``judge_model_options.num_samples`` is applied where simlab's judge samples)."""
    notes = []
    for name, criterion in criteria.items():
        options = {_snake(key): value for key, value in (criterion.model_extra or {}).items()}
        options.update(
            {
                f"judge_model_options.{_snake(key)}": value
                for key, value in criterion.judge_model_options.items()
            }
        )
        if name in SAMPLED:
            options.pop("judge_model_options.num_samples", None)
        shown = [
            f"{key}={value!r}"
            for key, value in options.items()
            if key not in OPTION_DEFAULTS or OPTION_DEFAULTS[key] != value
        ]
        if shown:
            notes.append(
                f"criterion {name}: simlab does not apply {', '.join(shown)} (simlab's judge is the run's "
                "--judge; these options change only what ADK itself computes)"
            )
    return notes


def _persona(value: UserPersona | str | None) -> dict[str, Any]:
    if value is None:
        return dict(DEFAULT_PERSONA)
    if isinstance(value, str):
        return {"id": slug(value), "description": f"ADK's pre-built persona {value!r}."}
    behaviours = [
        b
        if isinstance(b, str)
        else str(b.get("description") or b.get("name") or b)
        if isinstance(b, dict)
        else str(b)
        for b in value.behaviors
    ]
    return {
        "id": slug(value.id or "adk-user"),
        "description": value.description or DEFAULT_PERSONA["description"],
        "behaviours": behaviours,
    }


def _rubric_items(case: EvalCase, criterion: Criterion, sid: str, notes: list[str]) -> list[dict[str, Any]]:
    """The criterion's and the case's rubrics for the whole conversation, each invocation's for its turn;
    a rubric typed for another ADK metric is left to it, and said so."""
    scoped: list[tuple[Rubric, int | None]] = [(r, None) for r in [*criterion.rubrics, *(case.rubrics or [])]]
    for i, invocation in enumerate(case.conversation or []):
        scoped += [(r, i + 1) for r in invocation.rubrics or []]
    items: list[dict[str, Any]] = []
    taken: set[str] = set()
    for rubric, turn in scoped:
        if rubric.type not in (None, "", RUBRIC_TYPE):
            notes.append(
                f"{sid}: rubric {rubric.rubric_id!r} is for ADK's {rubric.type} metric, which simlab does "
                "not "
                "compute; not imported"
            )
            continue
        if not rubric.text:
            continue
        rid = slug(rubric.rubric_id)
        if rid in taken:
            rid = f"{rid}-turn-{turn}" if turn is not None else f"{rid}-{len(items) + 1}"
        taken.add(rid)
        items.append(
            {"id": rid, "text": rubric.text, "hard": False, **({"turn": turn} if turn is not None else {})}
        )
    return items


def _unknown_tools(
    sid: str, invocations: list[dict[str, Any]], tools: list[str] | None, domain: str
) -> list[str]:
    import difflib

    if tools is None:
        return []
    notes = []
    for i, invocation in enumerate(invocations):
        for call in invocation["tool_uses"]:
            if call["name"] not in tools:
                close = difflib.get_close_matches(call["name"], tools, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (its tools: {', '.join(tools)})"
                notes.append(
                    f"{sid}: invocation {i + 1} expects tool {call['name']!r}, which domain {domain!r} does "
                    f"not have{hint}; tool_trajectory_avg_score cannot pass until the names agree"
                )
    return notes


def unplayable(case: EvalCase) -> tuple[str | None, list[str]]:
    """(why the case cannot be played, or None; notes on what of it is left out). A fixed
    conversation of no invocation (ADK's evaluators leave it NOT_EVALUATED: imported, it was a
    scenario of no turn that passed) or with a user turn of no text (an image alone: simlab's user
    sends text) cannot be; a user turn's other parts beside its text are left out, and said."""
    if case.conversation is None:
        return None, []
    if not case.conversation:
        return "its conversation has no invocation (ADK's evaluators leave such a case NOT_EVALUATED)", []
    notes = []
    for i, invocation in enumerate(case.conversation, start=1):
        kinds = ", ".join(invocation.user_content.carries())
        if not invocation.user_content.text.strip():
            held = f" (only {kinds})" if kinds else ""
            return f"the user's message of invocation {i} has no text{held}: simlab's user sends text", []
        if kinds:
            notes.append(
                f"case {case.eval_id!r}, invocation {i}: the user's {kinds} part is left out (simlab's "
                "user sends the text alone)"
            )
    return None, notes


def convert_case(
    eval_set: EvalSet,
    case: EvalCase,
    criteria: dict[str, Criterion],
    domain: str,
    state_fits: Any = None,
    tools: list[str] | None = None,
) -> Converted:
    """One case as a scenario dict. ``state_fits(state) -> str | None`` says why the session
    state does not fit the domain's state (None: it fits); ``tools``: the domain's tool names."""
    sid = f"{slug(eval_set.eval_set_id)}.{slug(case.eval_id)}"
    scenario: dict[str, Any] = {"id": sid, "domain": domain}
    notes: list[str] = []
    params: dict[str, Any] = {"criteria": {name: criterion_params(c) for name, c in criteria.items()}}
    if case.conversation is not None:
        lines = [inv.user_content.text for inv in case.conversation]
        scenario.update(
            {
                "title": f"ADK {eval_set.eval_set_id} / {case.eval_id}: "
                f"a fixed conversation of {len(lines)} turns",
                "tags": ["adk", "adk-fixed"],
                "persona": dict(DEFAULT_PERSONA),
                "user": {
                    "goal": "Say exactly these messages, one per turn: " + " | ".join(lines),
                    "opening": lines[0] if lines else None,
                    "script": lines,
                },
                "max_turns": len(lines) + 1,
            }
        )
        params["invocations"] = [
            {
                "user": inv.user_content.text,
                "final_response": inv.final_response.text if inv.final_response else None,
                "tool_uses": [{"name": t.name, "args": t.args} for t in inv.tool_uses()],
            }
            for inv in case.conversation
        ]
        if "tool_trajectory_avg_score" in criteria:
            notes.extend(_unknown_tools(sid, params["invocations"], tools, domain))
        kind = "fixed"
    else:
        plan = case.conversation_scenario
        assert plan is not None
        scenario.update(
            {
                "title": f"ADK {eval_set.eval_set_id} / {case.eval_id}: a simulated user with a plan",
                "tags": ["adk", "adk-simulated"],
                "persona": _persona(plan.user_persona),
                "user": {"goal": plan.conversation_plan, "opening": plan.starting_prompt},
            }
        )
        kind = "simulated"
    state = case.session_input.state if case.session_input else {}
    if state:
        why = state_fits(state) if state_fits else None
        if why is None:
            scenario["initial_state"] = state
        else:
            scenario["agent_context"] = state
            notes.append(
                f"{sid}: session_input.state does not fit domain {domain!r}: {why}; it is given to the "
                "agent as agent_context instead"
            )
    expect: dict[str, Any] = {"graders": [{"use": GRADER, "params": params}]}
    v2 = criteria.get("final_response_match_v2")
    if v2 is not None and "invocations" in params:  # a judge of its own (simlab/adk/judge.py)
        samples = {"samples": samples_of(v2)} if samples_of(v2) else {}
        expect["graders"].append(
            {
                "use": JUDGE_GRADER,
                "params": {"threshold": v2.threshold, "invocations": params["invocations"], **samples},
            }
        )
    rubric = criteria.get(RUBRIC_METRIC)
    if rubric is not None:
        expect["rubric"] = _rubric_items(case, rubric, sid, notes)
        if samples_of(rubric):
            expect["graders"].append({"use": "rubric", "params": {"samples": samples_of(rubric)}})
    elif case.rubrics or any(inv.rubrics for inv in case.conversation or []):
        notes.append(f"{sid}: the case has rubrics but the criteria name no {RUBRIC_METRIC}; not imported")
    if "hallucinations_v1" in criteria:
        expect["groundedness"] = True
    for name in criteria:
        if name not in (
            "tool_trajectory_avg_score",
            "response_match_score",
            "rubric_based_final_response_quality_v1",
            "hallucinations_v1",
            "final_response_match_v2",
        ):
            notes.append(f"{sid}: criterion {name} is not computed by simlab yet (its check is 'not run')")
    scenario["expect"] = expect
    return Converted(kind=kind, scenario=scenario, notes=notes)
