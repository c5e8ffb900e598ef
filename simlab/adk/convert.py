"""ADK eval cases → simlab scenarios (plain dicts, written as YAML by ``cli.py``).

- A fixed conversation becomes a scripted scenario: the user's turns as ``user.script`` (played
  by the ``scripted`` simulator), and ADK's criteria as the ``adk`` grader with the case's
  expected invocations (tool uses, final responses).
- A conversation scenario becomes a scenario for the rules or an LLM simulator: the starting
  prompt is the opening, the plan is the goal, the persona comes along inline.
- ``session_input.state`` becomes ``initial_state`` where it fits the domain's state; otherwise it
  is given to the agent as ``agent_context`` (ADK puts it in the agent's session state), and
  the import says so.
- ``rubric_based_final_response_quality_v1``'s rubrics (the criterion's and the case's) become
  soft rubric items, ``hallucinations_v1`` turns on groundedness: simlab's own judges grade them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from simlab.adk.schema import DEFAULT_CRITERIA, Criterion, EvalCase, EvalSet, UserPersona

GRADER = "simlab.adk.grader:adk_criteria"
JUDGE_GRADER = "simlab.adk.judge:adk_judge"
DEFAULT_PERSONA = {"id": "adk-user", "description": "A user of the agent, as an ADK eval case describes them."}


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


def _persona(value: UserPersona | str | None) -> dict[str, Any]:
    if value is None:
        return dict(DEFAULT_PERSONA)
    if isinstance(value, str):
        return {"id": slug(value), "description": f"ADK's pre-built persona {value!r}."}
    behaviours = [b if isinstance(b, str) else str(b.get("description") or b.get("name") or b)
                  if isinstance(b, dict) else str(b) for b in value.behaviors]
    return {"id": slug(value.id or "adk-user"), "description": value.description or DEFAULT_PERSONA["description"],
            "behaviours": behaviours}


def convert_case(eval_set: EvalSet, case: EvalCase, criteria: dict[str, Criterion], domain: str,
                 state_fits: Any = None) -> Converted:
    """One case as a scenario dict. ``state_fits(state) -> str | None`` says why the session
    state does not fit the domain's state (None: it fits)."""
    sid = f"{slug(eval_set.eval_set_id)}.{slug(case.eval_id)}"
    scenario: dict[str, Any] = {"id": sid, "domain": domain}
    notes: list[str] = []
    params: dict[str, Any] = {"criteria": {name: c.model_dump(exclude={"rubrics"}) for name, c in criteria.items()}}
    if case.conversation is not None:
        lines = [inv.user_content.text for inv in case.conversation]
        scenario.update({
            "title": f"ADK {eval_set.eval_set_id} / {case.eval_id}: a fixed conversation of {len(lines)} turns",
            "tags": ["adk", "adk-fixed"], "persona": dict(DEFAULT_PERSONA),
            "user": {"goal": "Say exactly these messages, one per turn: " + " | ".join(lines),
                     "opening": lines[0] if lines else None, "script": lines},
            "max_turns": len(lines) + 1,
        })
        params["invocations"] = [
            {"user": inv.user_content.text,
             "final_response": inv.final_response.text if inv.final_response else None,
             "tool_uses": [{"name": t.name, "args": t.args} for t in inv.tool_uses()]}
            for inv in case.conversation]
        kind = "fixed"
    else:
        plan = case.conversation_scenario
        assert plan is not None
        scenario.update({
            "title": f"ADK {eval_set.eval_set_id} / {case.eval_id}: a simulated user with a plan",
            "tags": ["adk", "adk-simulated"], "persona": _persona(plan.user_persona),
            "user": {"goal": plan.conversation_plan, "opening": plan.starting_prompt},
        })
        kind = "simulated"
    state = case.session_input.state if case.session_input else {}
    if state:
        why = state_fits(state) if state_fits else None
        if why is None:
            scenario["initial_state"] = state
        else:
            scenario["agent_context"] = state
            notes.append(f"{sid}: session_input.state does not fit domain {domain!r}: {why}; it is given to the "
                         "agent as agent_context instead")
    expect: dict[str, Any] = {"graders": [{"use": GRADER, "params": params}]}
    v2 = criteria.get("final_response_match_v2")
    if v2 is not None and "invocations" in params:  # a judge of its own (simlab/adk/judge.py)
        expect["graders"].append({"use": JUDGE_GRADER, "params": {"threshold": v2.threshold,
                                                                  "invocations": params["invocations"]}})
    rubric = criteria.get("rubric_based_final_response_quality_v1")
    if rubric is not None:
        items = [*(rubric.rubrics or []), *(case.rubrics or [])]
        expect["rubric"] = [{"id": slug(r.rubric_id), "text": r.text, "hard": False} for r in items if r.text]
    if "hallucinations_v1" in criteria:
        expect["groundedness"] = True
    for name in criteria:
        if name not in ("tool_trajectory_avg_score", "response_match_score", "rubric_based_final_response_quality_v1",
                        "hallucinations_v1", "final_response_match_v2"):
            notes.append(f"{sid}: criterion {name} is not computed by simlab yet (its check is 'not run')")
    scenario["expect"] = expect
    return Converted(kind=kind, scenario=scenario, notes=notes)
