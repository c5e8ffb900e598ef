"""ADK eval sets: files written from google-adk 2.13's schema (tests/fixtures/adk), imported as
scenarios, run with repeated trials, and graded by ADK's criteria; every score is recomputed here
from the stored transcripts, independently (rouge-score called directly, trajectories by hand)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from simlab.adk.grader import trajectory_match
from simlab.adk.schema import EvalConfig, eval_set_of
from simlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "adk"


def test_both_kinds_of_case_and_both_spellings_parse() -> None:
    data = json.loads((FIXTURES / "refund.evalset.json").read_text())
    eval_set = eval_set_of(data, "refund")
    fixed, simulated = eval_set.eval_cases
    assert [inv.user_content.text for inv in fixed.conversation] == [
        "My order A123 arrived broken. I want my money back on my card.", "Yes, go ahead."]
    assert [t.name for t in fixed.conversation[1].tool_uses()] == ["issue_refund"]  # camelCase invocation
    assert simulated.conversation_scenario.starting_prompt == "my mug set arrived broken"
    old = eval_set_of(json.loads((FIXTURES / "old.test.json").read_text()), "old")
    assert old.eval_cases[0].conversation[0].tool_uses()[0].args == {"order_id": "A123"}
    both = {"eval_id": "x", "conversation": [], "conversation_scenario": {"starting_prompt": "a",
                                                                           "conversation_plan": "b"}}
    with pytest.raises(ValueError, match="exactly one of conversation and conversation_scenario"):
        eval_set_of({"eval_set_id": "s", "eval_cases": [both]}, "s")
    config = EvalConfig.model_validate(json.loads((FIXTURES / "test_config.json").read_text())).criteria
    assert config["tool_trajectory_avg_score"].match_type == "IN_ORDER"
    assert config["response_match_score"].threshold == 0.4


def test_trajectory_modes_on_the_reference_texts_six_runs() -> None:
    """The reference text: six runs of one task, scored as six invocations under IN_ORDER, average 0.50."""
    ref = ["lookup_order", "check_policy", "issue_refund", "send_confirmation"]
    runs = [ref, ["lookup_order", *ref], ["check_policy", "lookup_order", "issue_refund", "send_confirmation"],
            ref[:3], [*ref, "delete_account"],
            ["lookup_order", "issue_refund", "check_policy", "send_confirmation"]]
    expected = [{"name": n, "args": {}} for n in ref]

    def score(mode: str) -> list[int]:
        return [int(trajectory_match([(n, {}) for n in run], expected, mode)) for run in runs]

    assert score("IN_ORDER") == [1, 1, 0, 0, 1, 0] and sum(score("IN_ORDER")) / 6 == 0.5
    assert score("EXACT") == [1, 0, 0, 0, 0, 0]
    assert score("ANY_ORDER") == [1, 1, 1, 0, 1, 1]
    assert not trajectory_match([("lookup_order", {"order_id": "B1"})], [{"name": "lookup_order",
                                                                        "args": {"order_id": "A1"}}], "EXACT")
    assert trajectory_match([("lookup_order", {"order_id": "B1"})], [{"name": "lookup_order",
                                                                     "args": {"order_id": "A1"}}], "EXACT", True)


@pytest.fixture
def project(demo_project: Path) -> Path:
    shutil.copytree(FIXTURES, demo_project / "adk", ignore=shutil.ignore_patterns("written_by_adk", "README.md", "generated", "generate.py"))
    return demo_project


def _invocations(events: list[dict]) -> list[dict]:
    """The transcript cut at each user message, by hand: valid calls and the last agent text."""
    invalid = {e["call_id"] for e in events if e["type"] == "invalid_call"}
    out: list[dict] = []
    for e in events:
        if e["type"] == "user":
            out.append({"calls": [], "text": ""})
        elif out and e["type"] == "tool_call" and e["call_id"] not in invalid:
            out[-1]["calls"].append((e["name"], e["arguments"] or {}))
        elif out and e["type"] == "agent":
            out[-1]["text"] = e["text"]
    return out


def _subsequence(calls: list[tuple], wanted: list[dict]) -> bool:
    it = iter(calls)
    return all(any(c == (w["name"], w["args"]) for c in it) for w in wanted)


def test_import_run_and_adk_scores_beside_pass_k(project: Path, capsys) -> None:
    from rouge_score import rouge_scorer

    assert main(["import", "adk", "adk", "--domain", "retail", "--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert "session_input.state does not fit domain 'retail'" in out  # signed_in_customer is no state of it
    scenario = yaml.safe_load((project / "scenarios/adk/refund-basic/broken-item-refund.yaml").read_text())
    assert scenario["user"]["script"][1] == "Yes, go ahead."
    assert scenario["agent_context"] == {"signed_in_customer": "C-17", "channel": "chat"}
    simulated = yaml.safe_load((project / "scenarios/adk/refund-basic/simulated-refund.yaml").read_text())
    assert simulated["user"]["opening"] == "my mug set arrived broken"
    assert simulated["user"]["goal"].startswith("Get order A123")
    assert simulated["persona"]["id"] == "terse-customer"
    assert main(["validate", "scenarios/adk", "suites/adk-refund-basic-fixed.yaml",
                 "suites/adk-refund-basic-simulated.yaml"]) == 0
    capsys.readouterr()

    expected = json.loads((project / "adk/refund.evalset.json").read_text())["eval_cases"][0]["conversation"]
    wanted = [inv.get("intermediate_data", inv.get("intermediateData"))
              for inv in expected]
    wanted_calls = [w.get("tool_uses", w.get("toolUses")) for w in wanted]
    references = [(inv.get("final_response") or inv.get("finalResponse"))["parts"][0]["text"] for inv in expected]
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    for agent, run_id in (("careful_agent", "adk-careful"), ("flaky_agent", "adk-flaky")):
        main(["run", "--suite", "suites/adk-refund-basic-fixed.yaml", "--agent",
              f"python:examples.retail_agents:{agent}", "--run-id", run_id, "--no-progress"])
        report = " ".join(capsys.readouterr().out.split())
        met_trajectory = met_rouge = 0
        for line in (project / "transcripts" / run_id / "trials.jsonl").read_text().splitlines():
            raw = json.loads(line)
            actual = _invocations(raw["transcript"]["events"])
            assert len(actual) == 2
            trajectory = sum(_subsequence(a["calls"], w) for a, w in zip(actual, wanted_calls)) / 2
            rouge = sum(scorer.score(r, a["text"])["rouge1"].fmeasure for a, r in zip(actual, references)) / 2
            checks = {c["name"]: c for c in raw["checks"]}
            assert checks["adk:tool_trajectory_avg_score"]["score"] == pytest.approx(trajectory)
            assert checks["adk:response_match_score"]["score"] == pytest.approx(rouge)
            assert checks["adk:tool_trajectory_avg_score"]["status"] == ("pass" if trajectory >= 1.0 else "fail")
            met_trajectory += trajectory >= 1.0
            met_rouge += rouge >= 0.4
        assert (f"ADK refund-basic.broken-item-refund: response_match_score met in {met_rouge}/3 trials"
                in report), report
        assert f"tool_trajectory_avg_score met in {met_trajectory}/3 trials" in report
        assert "· simlab pass^1 " in report
        if agent == "careful_agent":
            assert met_trajectory == 3 and met_rouge == 3
    summary = json.loads((project / "transcripts/adk-flaky/summary.json").read_text())
    assert summary["adk_criteria"]["refund-basic.broken-item-refund"]["tool_trajectory_avg_score"]["n"] == 3

    assert main(["run", "--suite", "suites/adk-refund-basic-simulated.yaml", "--agent",
                 "python:examples.retail_agents:careful_agent", "--run-id", "adk-sim", "--no-progress"]) in (0, 1)
    raw = json.loads((project / "transcripts/adk-sim/trials.jsonl").read_text().splitlines()[0])
    checks = {c["name"]: c for c in raw["checks"]}
    assert raw["transcript"]["events"][0]["text"] == "my mug set arrived broken"
    assert checks["adk:tool_trajectory_avg_score"]["status"] == "not_run"
    assert "user simulation" in checks["adk:tool_trajectory_avg_score"]["reason"]


def test_bad_files_are_one_clear_error(project: Path, capsys) -> None:
    (project / "broken.evalset.json").write_text("{not json")
    assert main(["import", "adk", "broken.evalset.json", "--domain", "retail"]) == 2
    assert "broken.evalset.json: not a JSON file" in capsys.readouterr().err
    (project / "shape.evalset.json").write_text(json.dumps({"eval_set_id": "s", "eval_cases": [{"eval_id": "a"}]}))
    assert main(["import", "adk", "shape.evalset.json", "--domain", "retail"]) == 2
    err = capsys.readouterr().err
    assert "shape.evalset.json: eval_cases.0" in err and "exactly one of conversation" in err
    assert main(["import", "adk", "adk/refund.evalset.json", "--domain", "retail"]) == 0
    assert main(["import", "adk", "adk/refund.evalset.json", "--domain", "retail"]) == 2
    assert "files exist; nothing written; pass --force" in capsys.readouterr().err


async def test_final_response_match_v2_asks_the_judge_per_invocation() -> None:
    from simlab.adk.judge import adk_judge
    from simlab.graders.base import GradeContext
    from simlab.llm import FunctionModel
    from simlab.transcript import AgentMessage, Pin, Termination, Transcript, UserMessage
    from tests.support import KV, scenario

    events = [UserMessage(turn=1, text="Refund A123."), AgentMessage(turn=1, text="Your refund has been issued."),
              UserMessage(turn=2, text="When?"), AgentMessage(turn=2, text="I cannot say.")]
    t = Transcript(run_id="r", unit_id="s#1", scenario_id="s", persona_id="p", domain="kv", trial=1, seed=3,
                   agent=Pin(kind="python", ref="a:b"), simulator=Pin(kind="scripted", ref="scripted"), events=events,
                   termination=Termination(reason="goal_reached", turn=2))
    invocations = [{"user": "Refund A123.", "final_response": "The refund is issued."},
                   {"user": "When?", "final_response": "Within five days."}]

    def answer(messages, _tools):  # equivalent when the agent's block says the refund was issued
        agent_block = messages[1]["content"].split("<agent_message")[1]
        verdict = "yes" if "issued" in agent_block else "no"
        return json.dumps({"verdict": verdict, "reason": "compared the response with the reference"})

    judge = FunctionModel(answer, role="judge")
    ctx = GradeContext(transcript=t, scenario=scenario(), domain=KV, judge=judge)
    [check] = (await adk_judge(threshold=0.5, invocations=invocations).arun(ctx))[0]
    assert (check.name, check.status, check.score) == ("adk:final_response_match_v2", "pass", 0.5)
    assert len(judge.calls) == 2 and "Within five days." in judge.calls[1]["messages"][1]["content"]
    [strict] = (await adk_judge(threshold=1.0, invocations=invocations).arun(ctx))[0]
    assert strict.status == "fail"
    no_judge = GradeContext(transcript=t, scenario=scenario(), domain=KV, judge=None)
    [skipped] = (await adk_judge(threshold=0.5, invocations=invocations).arun(no_judge))[0]
    assert skipped.status == "not_run" and skipped.hard  # the trial is unjudged, never passed


def test_judge_and_mapped_criteria_become_graders_and_checks() -> None:
    from simlab.adk.convert import convert_case, criteria_of
    from simlab.adk.schema import Criterion

    eval_set = eval_set_of(json.loads((FIXTURES / "refund.evalset.json").read_text()), "refund")
    criteria = {"final_response_match_v2": Criterion(threshold=0.7),
                "rubric_based_final_response_quality_v1": Criterion.model_validate(
                    {"threshold": 0.8, "rubrics": [{"rubricId": "polite", "rubricContent": {"textProperty": "Polite."}}]}),
                "safety_v1": Criterion(threshold=0.9)}
    converted = convert_case(eval_set, eval_set.eval_cases[0], criteria, "retail")
    uses = [g["use"] for g in converted.scenario["expect"]["graders"]]
    assert uses == ["simlab.adk.grader:adk_criteria", "simlab.adk.judge:adk_judge"]
    assert converted.scenario["expect"]["rubric"] == [{"id": "polite", "text": "Polite.", "hard": False}]
    assert any("safety_v1 is not computed by simlab yet" in n for n in converted.notes)
    assert set(criteria_of(None)) == {"tool_trajectory_avg_score", "response_match_score"}  # ADK's defaults
    assert criteria_of(None)["tool_trajectory_avg_score"].threshold == 1.0


def test_running_an_eval_set_directly_says_how_to_import_it(project: Path, capsys) -> None:
    assert main(["run", "adk/refund.evalset.json"]) == 2
    err = capsys.readouterr().err
    assert "adk/refund.evalset.json: an ADK eval set is imported, not run" in err
    assert "simlab import adk adk/refund.evalset.json --domain DOMAIN" in err
    assert main(["run", "adk"]) == 2  # a folder of eval sets: the same hint
    err = capsys.readouterr().err
    assert "adk: no scenario files (.yaml, .yml) here; it holds ADK eval sets" in err
    assert "simlab import adk adk --domain DOMAIN" in err


@pytest.mark.parametrize("name", ["refund-snake.evalset.json", "refund-camel.evalset.json"])
def test_files_google_adk_itself_wrote_are_read(name: str) -> None:
    """Written by google-adk 2.13.0 (EvalSet.model_dump_json, snake_case and by_alias camelCase)."""
    eval_set = eval_set_of(json.loads((FIXTURES / "written_by_adk" / name).read_text()), "refund")
    fixed, simulated = eval_set.eval_cases
    assert [t.name for inv in fixed.conversation for t in inv.tool_uses()] == [
        "lookup_order", "check_refund_policy", "issue_refund"]
    assert fixed.conversation[0].final_response.text.startswith("Order A123 can be refunded in full")
    assert fixed.session_input.state == {"signed_in_customer": "C-17", "channel": "chat"}
    assert simulated.conversation_scenario.conversation_plan.startswith("Get order A123")
