"""The grader registry: built-in graders registered like users' own, graders named by scenarios
with parameters, and every check saying which grader (and which parameters) produced it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simlab.graders.base import GradeContext
from simlab.graders.grade import NOT_ASKED, grade, grade_deterministic, graders_of
from simlab.graders.registry import (
    BUILTINS,
    Check,
    GraderError,
    grader,
    graders_for,
    registered,
    resolve,
)
from simlab.llm import ModelError, ModelErrorKind, ScriptedModel
from simlab.specs import GraderUse
from simlab.transcript import (
    AgentMessage,
    Pin,
    Termination,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
)
from tests.support import KV, scenario

USER_GRADERS = '''
import asyncio

from simlab.graders.registry import Check, GradeContext, grader
from simlab.transcript import AgentMessage


@grader("banned_words")
def banned_words(words: list[str], hard: bool = True):
    """Fails when the agent says one of ``words`` (any case)."""
    def grade(ctx: GradeContext) -> list[Check]:
        said = " ".join(e.text for e in ctx.transcript.events if isinstance(e, AgentMessage)).lower()
        found = [w for w in words if w.lower() in said]
        return [Check(name="banned_words", kind="custom", status="fail" if found else "pass", hard=hard,
                      reason=f"the agent said {', '.join(found)}" if found else "no banned word")]
    return grade


@grader
def bare():
    return lambda ctx: Check(name="bare", kind="custom", status="pass")


@grader("explodes")
def explodes():
    def grade(ctx):
        raise KeyError("no such thing")
    return grade


@grader("junk")
def junk():
    return lambda ctx: 42


@grader("waits")
def waits():
    async def grade(ctx):
        await asyncio.sleep(0)
        return [Check(name="waited", kind="custom", status="pass")]
    return grade


@grader("my_judge", judge=True)
def my_judge():
    async def grade(ctx):
        if ctx.judge is None:
            return [Check(name="my_judge", kind="custom", status="not_run", reason="no judge model configured")]
        reply = await ctx.judge.chat([{"role": "user", "content": "Was the agent polite? yes or no"}])
        return [Check(name="my_judge", kind="custom", status="pass" if "yes" in (reply.text or "") else "fail")]
    return grade


@grader("refuses")
def refuses(limit: int):
    if limit < 0:
        raise ValueError("limit must be >= 0")
    return lambda ctx: []


def undecorated(ctx):
    return []
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder holding ``checks.py`` (user graders); simlab runs in it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "checks.py").write_text(USER_GRADERS)
    return tmp_path


def transcript(final: str = "Done, b is stored.", reason: str = "goal_reached") -> Transcript:
    events = [
        UserMessage(turn=1, text="Please store b=2."),
        ToolCall(turn=1, call_id="c1", name="set_item", arguments={"key": "b", "value": "2"},
                 raw_arguments='{"key": "b", "value": "2"}', access="write"),
        ToolResult(turn=1, call_id="c1", name="set_item", ok=True, result={"ok": True}),
        AgentMessage(turn=1, text=final),
    ]
    return Transcript(run_id="r", unit_id="kv-set#1", scenario_id="kv-set", persona_id="tester", domain="kv",
                      trial=1, seed=7, agent=Pin(kind="python", ref="tests.support:kv_agent"),
                      simulator=Pin(kind="rules", ref="rules"), events=events,
                      termination=Termination(reason=reason, turn=1), final_state={"items": {"a": "1", "b": "2"}})


def ctx_for(graders: list[Any] | None = None, *, judge: Any = None, t: Transcript | None = None,
            **expect: Any) -> GradeContext:
    scn = scenario(expect={"state": [{"path": "items.b", "equals": "2"}], **expect, "graders": graders or []})
    return GradeContext(t or transcript(), scn, KV, judge=judge)


def test_the_built_in_graders_are_registered_through_the_decorator_with_their_judge_flag() -> None:
    judges = set()
    for name, module in BUILTINS.items():
        info = registered(name)
        assert info is not None and info.name == name and info.builtin
        assert info.factory.__module__ == module and info.factory.grader_info is info  # type: ignore[attr-defined]
        if info.judge:
            judges.add(name)
    assert judges == {"rubric", "groundedness", "drift_llm"}
    assert [g.name for g in graders_for(scenario()).graders] == list(BUILTINS)  # in this order


async def test_every_check_records_its_grader_and_parameters() -> None:
    ctx = ctx_for([{"use": "rubric", "params": {"samples": 3}}],
                  rubric=[{"id": "polite", "text": "Was the agent polite?", "hard": True}])
    graded = await grade(ctx)
    assert graded.checks and all(c.grader is not None for c in graded.checks)
    by_grader = {c.name: (c.grader, c.grader_params) for c in graded.checks}
    assert by_grader["items.b equals '2'"] == ("state", {})
    assert by_grader["efficiency"] == ("efficiency", {})
    assert by_grader["rubric:polite"] == ("rubric", {"samples": 3})
    assert all(c.model_dump(exclude_unset=True)["grader"] == c.grader for c in graded.checks)  # set, as fields
    assert graded.verdict == "unjudged"  # no judge: the hard rubric item did not run


async def test_a_built_in_named_with_parameters_runs_with_them() -> None:
    yes = '{"verdict": "yes", "reason": "polite throughout (#3)"}'
    judge = ScriptedModel([yes, yes, yes], role="judge")
    ctx = ctx_for([{"use": "rubric", "params": {"samples": 3}}], judge=judge,
                  rubric=[{"id": "polite", "text": "Was the agent polite?", "hard": True}])
    graded = await grade(ctx)
    [check] = [c for c in graded.checks if c.name == "rubric:polite"]
    assert check.status == "pass" and len(check.details["votes"]) == 3 and len(judge.calls) == 3
    assert len(graded.judge_calls) == 3 and graded.verdict == "pass"
    # named by its module:function, the same grader
    use = GraderUse(use="simlab.graders.judge:rubric_grader", params={"samples": 2})
    assert resolve(use).name == "rubric" and resolve(use).params == {"samples": 2}


def test_a_user_grader_from_a_py_file_changes_the_verdict(project: Path) -> None:
    named = [{"use": "checks.py:banned_words", "params": {"words": ["Done"]}}]
    checks = grade_deterministic(ctx_for(named))
    [mine] = [c for c in checks if c.grader == "banned_words"]
    assert (mine.name, mine.status, mine.kind, mine.grader_params) == ("banned_words", "fail", "custom",
                                                                        {"words": ["Done"]})
    assert "the agent said Done" in mine.reason
    from simlab.graders.base import verdict_of

    assert verdict_of(transcript(), checks) == "fail"
    clean = grade_deterministic(ctx_for([{"use": "checks.py:banned_words", "params": {"words": ["sorry"]}}]))
    assert verdict_of(transcript(), clean) == "pass"
    soft = grade_deterministic(ctx_for([{"use": "checks.py:banned_words", "params": {"words": ["Done"],
                                                                                     "hard": False}}]))
    assert verdict_of(transcript(), soft) == "pass"  # a soft check only scores


def test_a_grader_that_raises_or_returns_junk_gives_an_error_check_that_names_it(project: Path) -> None:
    checks = grade_deterministic(ctx_for(["checks.py:explodes", "checks.py:junk"]))
    errors = {c.name: c for c in checks if c.status == "error"}
    assert set(errors) == {"grader:explodes", "grader:junk"}
    assert "raised KeyError: 'no such thing'" in errors["grader:explodes"].reason
    assert "returned int; return a Check" in errors["grader:junk"].reason
    assert all(c.hard and c.grader in ("explodes", "junk") for c in errors.values())
    from simlab.graders.base import verdict_of

    assert verdict_of(transcript(), checks) == "error"  # a hard check nobody could decide


async def test_an_async_grader_runs_and_only_a_users_async_grader_may_make_grading_wait(project: Path) -> None:
    graded = await grade(ctx_for(["checks.py:waits", "checks.py:bare"]))
    names = [c.name for c in graded.checks]
    assert "waited" in names and "bare" in names
    assert names.index("bare") < names.index("waited")  # synchronous graders first
    assert graders_for(scenario(expect={"graders": ["checks.py:waits"]})).may_wait
    assert not graders_for(scenario()).may_wait  # simlab's judges never wait without a judge model


async def test_a_users_judge_grader_asks_the_judge_and_is_not_asked_about_an_errored_trial(project: Path) -> None:
    judge = ScriptedModel(["yes"], role="judge")
    graded = await grade(ctx_for(["checks.py:my_judge"], judge=judge))
    [mine] = [c for c in graded.checks if c.grader == "my_judge"]
    assert mine.status == "pass" and len(judge.calls) == 1
    errored = await grade(ctx_for(["checks.py:my_judge"], judge=judge, t=transcript(reason="error")))
    [mine] = [c for c in errored.checks if c.grader == "my_judge"]
    assert (mine.status, mine.reason) == ("not_run", NOT_ASKED) and len(judge.calls) == 1  # not asked again
    without = await grade(ctx_for(["checks.py:my_judge"], judge=judge), use_judges=False)
    assert not [c for c in without.checks if c.grader == "my_judge"] and len(judge.calls) == 1


async def test_a_permanent_provider_error_in_a_grader_stops_the_run() -> None:
    judge = ScriptedModel([ModelError(ModelErrorKind.AUTH, "bad key", role="judge", model="m")], role="judge")
    with pytest.raises(ModelError):
        await grade(ctx_for(rubric=[{"id": "polite", "text": "Polite?"}], judge=judge))


def test_named_graders_must_import_be_graders_and_take_their_parameters(project: Path) -> None:
    def problem(use: str, **params: Any) -> GraderError:
        with pytest.raises(GraderError) as caught:
            resolve(GraderUse(use=use, params=params))
        return caught.value

    assert problem("checks.py:undecorated").field == "use"
    assert "is not a grader: decorate its factory with @grader" in str(problem("checks.py:undecorated"))
    assert "cannot import 'nowhere'" in str(problem("nowhere:grader"))
    assert "has no callable 'nothing'" in str(problem("checks.py:nothing"))
    assert "unknown grader 'rubrik'" in str(problem("rubrik"))
    unknown = problem("checks.py:banned_words", word=["x"])
    assert unknown.field == "params" and "takes (words: list[str], hard: bool = True)" in str(unknown)
    assert "no parameter 'word'" in str(unknown)
    assert "missing a required argument: 'words'" in str(problem("checks.py:banned_words"))
    refused = problem("checks.py:refuses", limit=-1)
    assert refused.field == "params" and "limit must be >= 0" in str(refused)
    assert "samples must be a whole number ≥ 1" in str(problem("rubric", samples=0))
    assert "unknown drift aspects ['mood']" in str(problem("drift_llm", aspects=["mood"]))


def test_a_grader_file_outside_the_project_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "checks.py").write_text(USER_GRADERS)
    inside = tmp_path / "project"
    inside.mkdir()
    monkeypatch.chdir(inside)
    with pytest.raises(GraderError, match="outside the project"):
        resolve(GraderUse(use="../checks.py:banned_words", params={"words": ["x"]}))


def test_a_user_grader_may_not_take_a_built_in_name_and_one_plan_holds_one_grader_per_name(project: Path) -> None:
    with pytest.raises(GraderError, match="'state' is the name of a built-in grader"):
        grader("state")(lambda: (lambda ctx: []))
    (project / "other.py").write_text(USER_GRADERS)  # the same names, from another module
    with pytest.raises(GraderError, match="two graders are named 'bare'"):
        graders_for(scenario(expect={"graders": ["other.py:bare"]}), [GraderUse(use="checks.py:bare")])
    with pytest.raises(GraderError, match="'bare' is named twice"):
        graders_for(scenario(expect={"graders": ["checks.py:bare", "checks.py:bare"]}))


def test_a_scenario_entry_wins_over_the_suites_for_the_same_grader(project: Path) -> None:
    suite = [GraderUse(use="checks.py:banned_words", params={"words": ["Done"]})]
    scn = scenario(expect={"graders": [{"use": "checks.py:banned_words", "params": {"words": ["sorry"]}}]})
    [mine] = [g for g in graders_for(scn, suite).graders if g.name == "banned_words"]
    assert mine.params == {"words": ["sorry"]}
    suite_only = [g for g in graders_for(scenario(), suite).graders if g.name == "banned_words"]
    assert suite_only[0].params == {"words": ["Done"]}


def test_graders_are_resolved_once_per_scenario(project: Path) -> None:
    memo: dict[str, Any] = {}
    scn = scenario(expect={"graders": [{"use": "checks.py:banned_words", "params": {"words": ["x"]}}]})
    first = graders_of(scn, memo)
    grade_deterministic(GradeContext(transcript(), scn, KV, memo=memo))
    assert graders_of(scn, memo) is first


def test_checks_stored_before_graders_were_registered_still_read() -> None:
    old = {"name": "rubric:polite", "kind": "rubric", "status": "pass", "hard": True, "score": 1.0, "reason": "",
           "event": None, "turn": None, "call_id": None, "category": None, "details": {}}
    check = Check.model_validate_json(json.dumps(old))
    assert check.grader is None and check.grader_params == {}
    assert Check.model_fields["grader"].description and Check.model_fields["grader_params"].description


def test_a_grader_entry_is_a_reference_or_a_built_in_name() -> None:
    assert GraderUse.model_validate("mypkg.checks:no_pii").use == "mypkg.checks:no_pii"
    assert GraderUse.model_validate({"use": "rubric", "params": {"samples": 3}}).params == {"samples": 3}
    from pydantic import ValidationError

    for bad in ("mypkg.checks:", "two words", {"use": "x:y", "param": {}}):
        with pytest.raises(ValidationError):
            GraderUse.model_validate(bad)
