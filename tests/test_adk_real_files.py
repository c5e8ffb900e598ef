"""ADK eval sets as google-adk 2.13 itself writes and reads them (issue 26, items 2-6).

The files under ``tests/fixtures/adk/generated`` and the figures in its ``figures.json`` were
written by the real google-adk (``tests/fixtures/adk/generate.py``, run by hand); this module
checks simlab against them and does not import google-adk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from simlab.adk.schema import eval_set_of
from simlab.cli.main import main

GENERATED = Path(__file__).parent / "fixtures" / "adk" / "generated"
FIGURES = json.loads((GENERATED / "figures.json").read_text("utf-8"))


def _what_simlab_reads(name: str) -> list[dict[str, Any]]:
    eval_set = eval_set_of(json.loads((GENERATED / name).read_text("utf-8")), Path(name).name.split(".")[0])
    return [{"eval_id": c.eval_id, "state": c.session_input.state if c.session_input else None,
             "invocations": [{"user": i.user_content.text,
                              "reference": i.final_response.text if i.final_response else "",
                              "tool_uses": [{"name": t.name, "args": t.args} for t in i.tool_uses()],
                              "rubrics": [r.rubric_id for r in i.rubrics or []]} for i in c.conversation or []]}
            for c in eval_set.eval_cases]


@pytest.mark.parametrize("name", sorted(FIGURES["read"]))
def test_every_shape_reads_as_google_adk_reads_it(name: str) -> None:
    """Current (snake and camel case, with per-invocation rubrics), .test.json and the pre-1.0 list."""
    want = FIGURES["read"][name]["cases"]
    got = _what_simlab_reads(name)
    if name.startswith("legacy/"):  # ADK names the one case by the file's path; simlab by its stem
        got = [{**case, "eval_id": "<the file's path>"} for case in got]
    assert got == want


def _transcript(invocations: list[list[dict[str, Any]]]) -> Any:
    from simlab.transcript import AgentMessage, Pin, Termination, ToolCall, Transcript, UserMessage

    events: list[Any] = []
    for turn, calls in enumerate(invocations, start=1):
        events.append(UserMessage(turn=turn, text=f"turn {turn}"))
        events += [ToolCall(turn=turn, call_id=f"c{turn}-{i}", name=c["name"], arguments=c["args"])
                   for i, c in enumerate(calls)]
        events.append(AgentMessage(turn=turn, text="ok"))
    return Transcript(run_id="r", unit_id="s#1", scenario_id="s", persona_id="p", domain="kv", trial=1, seed=1,
                      agent=Pin(kind="python", ref="a:b"), simulator=Pin(kind="scripted", ref="scripted"),
                      events=events, termination=Termination(reason="script_ended", turn=len(invocations)))


def _trajectory_check(row: dict[str, Any]) -> Any:
    from simlab.adk.grader import adk_criteria
    from simlab.graders.base import GradeContext
    from tests.support import KV, scenario

    criteria = {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": row["match_type"],
                                              "ignore_args": row["ignore_args"]}}
    invocations = [{"user": f"turn {i + 1}", "tool_uses": calls} for i, calls in enumerate(row["expected"])]
    ctx = GradeContext(transcript=_transcript(row["actual"]), scenario=scenario(), domain=KV)
    [check] = adk_criteria(criteria=criteria, invocations=invocations).run(ctx)
    return check


@pytest.mark.parametrize("row", FIGURES["trajectory"], ids=[r["name"] for r in FIGURES["trajectory"]])
def test_trajectory_scores_equal_google_adk(row: dict[str, Any]) -> None:
    check = _trajectory_check(row)
    assert check.score == pytest.approx(row["overall_score"])
    assert [p["score"] for p in check.details["invocations"]] == row["per_invocation"]


def test_a_trajectory_failure_names_the_invocation_and_the_call() -> None:
    rows = {r["name"]: r for r in FIGURES["trajectory"]}
    check = _trajectory_check(rows["three-invocations-one-miss"])
    assert check.status == "fail"
    assert "invocation 2 of 3 ('turn 2')" in check.reason
    assert 'expected call 1 of 1, b({"x": 2}), was not made in order; the agent called b({"x": 1})' in check.reason
    assert check.turn == 2 and check.event is not None  # points at the invocation's user message
    exact = _trajectory_check(rows["exact-extra"])
    assert 'expected 1 calls, got 2: issue_refund({"order_id": "A1"}) is extra' in exact.reason
    args = _trajectory_check(rows["exact-args"])
    assert 'call 1: expected lookup_order({"order_id": "A1"}), got lookup_order({"order_id": "B2"})' in args.reason
    dup = _trajectory_check(rows["any-order-duplicate-needed"])
    assert 'expected roll_die({"sides": 17}) was not made' in dup.reason


@pytest.fixture
def project(demo_project: Path) -> Path:
    shutil.copytree(GENERATED, demo_project / "gen")
    return demo_project


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_a_folder_of_same_named_test_files_keeps_every_case(project: Path, capsys) -> None:
    assert main(["import", "adk", "gen/legacy", "--domain", "retail"]) == 0
    out = capsys.readouterr().out
    a = yaml.safe_load((project / "scenarios/adk/a-simple/simple.yaml").read_text())
    b = yaml.safe_load((project / "scenarios/adk/b-simple/simple.yaml").read_text())
    assert a["id"] == "a-simple.simple" and b["id"] == "b-simple.simple"
    assert a["user"]["script"] == ["Where is my order A123?", "Thanks."]
    assert b["user"]["script"] == ["Can order B7 be refunded?"]
    assert "wrote 4 files" in out
    assert main(["validate", "scenarios/adk"]) == 0


def test_clashing_ids_are_an_error_before_anything_is_written(project: Path, capsys) -> None:
    both = project / "both"
    shutil.copytree(GENERATED / "current", both / "snake")
    shutil.copytree(GENERATED / "camel", both / "camel")  # the same eval set id, in camelCase
    before = _tree(project)
    assert main(["import", "adk", "both", "--domain", "retail"]) == 2
    err = capsys.readouterr().err
    assert "scenarios/adk/refund-current/broken-item-refund.yaml: both both/camel/refund.evalset.json" in err
    assert "nothing written" in err
    assert _tree(project) == before
    assert main(["import", "adk", "both/snake", "--domain", "retail"]) == 0
    capsys.readouterr()
    written = _tree(project)
    (project / "gen/legacy/a/simple.test.json").unlink()
    shutil.copy(GENERATED / "current/refund.evalset.json", project / "gen/legacy/a/refund.evalset.json")
    assert main(["import", "adk", "gen/legacy", "--domain", "retail"]) == 2  # one of its files exists: none written
    assert "nothing written; pass --force" in capsys.readouterr().err
    assert _tree(project) == (written | {"gen/legacy/a/refund.evalset.json"}) - {"gen/legacy/a/simple.test.json"}


def test_the_pre_1_0_list_format_imports(project: Path, capsys) -> None:
    assert main(["import", "adk", "gen/pre1/dice.test.json", "--domain", "retail"]) == 0
    out = capsys.readouterr().out
    assert "gen/pre1/dice.test.json: 2 cases (2 fixed)" in out
    roll = yaml.safe_load((project / "scenarios/adk/dice/roll_17_sided_dice_twice.yaml").read_text())
    assert roll["user"]["script"] == ["What can you do?", "Roll a 17 sided dice twice for me"]
    assert roll["agent_context"] == {"rolls": []}  # the initial session's state: not the retail domain's
    invocations = roll["expect"]["graders"][0]["params"]["invocations"]
    assert invocations[1]["tool_uses"] == [{"name": "roll_die", "args": {"sides": 17}}] * 2
    assert "invocation 2 expects tool 'roll_die', which domain 'retail' does not have" in out


def test_per_invocation_rubrics_become_turn_scoped_items(project: Path, capsys) -> None:
    assert main(["import", "adk", "gen/current", "--domain", "retail"]) == 0
    out = capsys.readouterr().out
    scenario = yaml.safe_load((project / "scenarios/adk/refund-current/broken-item-refund.yaml").read_text())
    rubric = {item["id"]: item for item in scenario["expect"]["rubric"]}
    assert rubric["asks-before-refund"]["turn"] == 1 and rubric["states-method"]["turn"] == 2
    assert "turn" not in rubric["polite"] and "turn" not in rubric["concise"]  # the case's and the criterion's
    assert {"use": "rubric", "params": {"samples": 3}} in scenario["expect"]["graders"]  # num_samples applied
    # options simlab ignores get a note; ADK's defaults, written out by ADK, do not
    assert "criterion hallucinations_v1: simlab does not apply evaluate_intermediate_nl_responses=True" in out
    assert "include_intermediate_responses_in_final" not in out
    assert ("refund-current.typo-tool: invocation 1 expects tool 'lookup_ordr', which domain 'retail' does not "
            "have (did you mean 'lookup_order'?)") in out
    assert main(["validate", "scenarios/adk/refund-current/typo-tool.yaml"]) == 2
    err = capsys.readouterr().err
    assert ("typo-tool.yaml:41: expect.graders.0.params.invocations.0.tool_uses.0.name: unknown expected tool "
            "'lookup_ordr' in domain 'retail'; did you mean 'lookup_order'?") in err
    assert main(["validate", "scenarios/adk/refund-current/broken-item-refund.yaml"]) == 0


async def test_a_turn_scoped_rubric_item_shows_the_judge_that_turn() -> None:
    from simlab.graders.base import GradeContext
    from simlab.graders.judge import grade_rubric
    from simlab.llm import FunctionModel
    from simlab.specs.expect import RubricItem
    from tests.support import KV, scenario

    transcript = _transcript([[], [], []])
    transcript.events[1].text = "Shall I refund it?"  # turn 1's answer
    transcript.events[3].text = "Refunded to your card."  # turn 2's
    items = [RubricItem(id="asks", text="The agent asks before refunding.", turn=1),
             RubricItem(id="later", text="Something in turn 5.", turn=5),
             RubricItem(id="whole", text="Polite.")]
    judge = FunctionModel(lambda messages, _tools: json.dumps({"verdict": "yes", "reason": "it asks, #1"}),
                          role="judge")
    ctx = GradeContext(transcript=transcript, scenario=scenario(expect={"rubric": [i.model_dump() for i in items]}),
                       domain=KV, judge=judge)
    outcome = await grade_rubric(ctx)
    checks = {c.name: c for c in outcome.checks}
    first = judge.calls[0]["messages"]
    assert "The criterion is about turn 1 only" in first[0]["content"]
    assert "Shall I refund it?" in first[1]["content"] and "Refunded to your card." not in first[1]["content"]
    assert "Does turn 1 of the conversation above satisfy" in first[1]["content"]
    assert checks["rubric:asks"].status == "pass" and checks["rubric:asks"].details["turn"] == 1
    assert checks["rubric:later"].status == "fail"  # never reached: no judge asked, never a pass
    assert "ended before turn 5" in checks["rubric:later"].reason
    assert len(judge.calls) == 2  # asks and whole
    assert "Refunded to your card." in judge.calls[1]["messages"][1]["content"]
    assert "about turn" not in judge.calls[1]["messages"][0]["content"]


def test_a_session_of_two_agents_saved_by_adk_imports_with_every_agents_calls(project: Path, capsys) -> None:
    """``adk web``'s shape: invocation_events by two authors, calls without arguments, plain-text
    results, random invocation ids, no null or default field, French and emoji."""
    assert main(["import", "adk", "gen/session", "--domain", "retail"]) == 0
    out = capsys.readouterr().out
    case = yaml.safe_load((project / "scenarios/adk/desk_sessions/broken-mug.yaml").read_text("utf-8"))
    assert case["user"]["script"] == ["ma tasse est arrivée cassée 😞", "oui, remboursez-la"]
    invocations = case["expect"]["graders"][0]["params"]["invocations"]
    assert [[t["name"] for t in i["tool_uses"]] for i in invocations] == [
        ["transfer_to_agent", "list_orders"], ["issue_refund"]]
    assert [i["final_response"] for i in invocations] == ["Votre commande A123 : je la rembourse ? 💳", "C'est fait ✓"]
    assert "expects tool 'transfer_to_agent', which domain 'retail' does not have" in out
    assert main(["validate", "scenarios/adk"]) == 2  # ADK's tool names, not the domain's: said where
    assert "broken-mug.yaml:35: expect.graders.0.params.invocations.0.tool_uses.0.name: unknown expected tool " \
        "'transfer_to_agent'" in capsys.readouterr().err


def test_cases_simlab_cannot_play_are_not_imported_and_said(project: Path, capsys) -> None:
    """Written by google-adk: a case of no invocation was a scenario of no turn that passed every
    trial (ADK leaves it NOT_EVALUATED); a user turn of an image alone was an empty message (an
    infrastructure error each trial); an image beside text was dropped unsaid."""
    assert main(["import", "adk", "gen/odd", "--domain", "retail"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "gen/odd/odd.evalset.json: 3 cases (1 fixed, 2 not imported)" in out
    assert "case 'no-turns' is not imported: its conversation has no invocation" in out
    assert "case 'photo-only' is not imported: the user's message of invocation 1 has no text (only inline_data)" in out
    assert "case 'photo-and-text', invocation 1: the user's inline_data part is left out" in out
    assert sorted(p.name for p in (project / "scenarios/adk/odd").iterdir()) == ["photo-and-text.yaml"]
    kept = yaml.safe_load((project / "scenarios/adk/odd/photo-and-text.yaml").read_text())
    assert kept["user"]["script"] == ["My order A123 arrived like this."]


def test_an_eval_set_of_no_case_is_an_error_that_writes_nothing(project: Path, capsys) -> None:
    before = _tree(project)
    assert main(["import", "adk", "gen/none", "--domain", "retail"]) == 2
    assert "gen/none: no eval case to import" in capsys.readouterr().err
    assert _tree(project) == before
