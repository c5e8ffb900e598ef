"""``simlab generate``: drafts a model writes (simlab's fake models on the real LiteLLM path) land in
the review folder only when they validate, replay, lint clean and are no near-duplicate; every other
draft is reported with its reason, file-less; ``--accept`` moves the kept ones into the project,
never over a file; a refused key exits 3 (report/generate.py, report/draft.py, cli/generate_cmd.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.llm.fakes import register_fake, unregister_fake
from simlab.report.draft import near_duplicate, shape_of
from simlab.report.generate import SUMMARY_FILE, GenerateSummary
from tests.support import copy_demo

PRICE = {"input": 3.0, "output": 15.0}

STORE_CREDIT = {  # good: issue_store_credit was never expected; reuses a persona
    "id": "goodwill-credit-late-delivery",
    "title": "Goodwill store credit for a late delivery",
    "persona": "polite-detailed",
    "goal": "Get a small goodwill store credit because your grinder came a week late.",
    "opening": "Hello, my coffee grinder arrived a week late and I would like a small goodwill gesture.",
    "known_facts": {"order_id": "A124"},
    "success_phrases": ["store credit (has been )?(added|granted)"],
    "agent_context": {"signed_in_customer": "C-17", "channel": "chat"},
    "expected_actions": [
        {"tool": "issue_store_credit", "args": {"customer_id": "C-17", "amount": 10, "reason": "late delivery"}}
    ],
    "rules": [{"after_confirmation": "issue_store_credit"}],
    "expected_state": {"store_credit": {"C-17": 999}},  # never read: the replay is the expected state
}
EMAIL = {  # good: get_customer and send_email were never expected; a new persona
    "id": "Email Me The Receipt",
    "title": "Customer wants the order receipt by email",
    "persona": {"id": "busy-parent", "description": "A parent writing between two school runs.",
                "traits": ["hurried", "distracted"], "speaking_style": "Short, lower case, no greeting."},
    "goal": "Have the receipt of your last order emailed to you.",
    "opening": "can you email me the receipt please",
    "known_facts": {"email": "dana@example.com"},
    "success_phrases": ["(sent|emailed)"],
    "agent_context": {"signed_in_customer": "C-17"},
    "expected_actions": [
        {"tool": "get_customer", "args": {"customer_id": "C-17"}},
        {"tool": "send_email", "args": {"to": "dana@example.com", "subject": "Your receipt",
                                        "body": "Here is the receipt of your order."}},
    ],
    "forbidden": ["issue_refund"],
}
DUPLICATE = {  # refund-damaged-card again, reworded
    "id": "broken-mugs-refund",
    "title": "Broken mugs, money back",
    "persona": "impatient-terse",
    "goal": "Get order A123 (mug set arrived broken) refunded in full to your original card; refuse store credit.",
    "known_facts": {"order_id": "A123"},
    "success_phrases": ["refunded"],
    "agent_context": {"signed_in_customer": "C-17"},
    "expected_actions": [{"tool": "issue_refund", "args": {"order_id": "A123", "amount": 49.9,
                                                           "method": "original_card"}}],
}
FAILS_ON_REPLAY = {  # more than the order total
    **DUPLICATE, "id": "refund-too-much", "goal": "Get 500 back for the mugs.",
    "expected_actions": [{"tool": "issue_refund", "args": {"order_id": "A123", "amount": 500}}],
}
UNOBTAINABLE = {  # an order id nobody in the conversation knows
    "id": "someone-elses-blanket",
    "title": "Look up an order the customer never names",
    "persona": "confused-elderly",
    "goal": "Ask about the status of your parcel.",
    "opening": "Where is my parcel?",
    "success_phrases": ["delivered"],
    "agent_context": {"signed_in_customer": "C-22"},
    "expected_actions": [{"tool": "lookup_order", "args": {"order_id": "E501"}}],
}
NOT_VALID = {  # a tool the domain lacks, a phrase that is no regular expression
    **STORE_CREDIT, "id": "refund-everything", "success_phrases": ["(unclosed"],
    "expected_actions": [{"tool": "refund_everything", "args": {}}],
}
ANSWERS: dict[int, Any] = {1: STORE_CREDIT, 2: "Sure! Here is a scenario: {id: oops", 3: DUPLICATE,
                           4: EMAIL, 5: FAILS_ON_REPLAY, 6: UNOBTAINABLE, 7: NOT_VALID,
                           8: {**STORE_CREDIT, "id": "grinder-late-goodwill",  # draft 1 again, reworded
                               "goal": "Get a small goodwill credit since the grinder came one week late."}}


def drafter(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> dict[str, Any]:
    """Answers draft k (read from the prompt) with ANSWERS[k]; a text answer as it is."""
    number = int(re.search(r"Write draft (\d+) of", messages[1]["content"]).group(1))  # type: ignore[union-attr]
    answer = ANSWERS[number]
    return {"text": answer if isinstance(answer, str) else json.dumps(answer)}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy_demo(tmp_path)
    with open(tmp_path / "simlab.yaml", "a") as fh:
        fh.write(f"judge: {{model: simlab-fake/unused, price: {json.dumps(PRICE)}}}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


@pytest.fixture
def model() -> Any:
    prompts: list[list[dict[str, Any]]] = []

    def answer(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> dict[str, Any]:
        prompts.append(messages)
        return drafter(messages)

    name = register_fake("drafter", answer)
    yield name, prompts
    unregister_fake("drafter")


def coverage_json(capsys: Any) -> dict[str, Any]:
    assert main(["coverage", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def never_expected(cov: dict[str, Any]) -> set[str]:
    tools = next(s for s in cov["sections"] if s["area"] == "tools")
    return {e["name"] for e in tools["entries"] if "never expected" in e["gaps"]}


def test_only_the_drafts_that_earn_their_place_land_and_each_other_says_why(
        project: Path, model: Any, capsys: Any) -> None:
    name, prompts = model
    before = coverage_json(capsys)
    assert never_expected(before) == {"get_customer", "issue_store_credit", "send_email"}

    assert main(["generate", "--model", name, "-n", "8", "--target", "uncovered"]) == 0
    out = capsys.readouterr().out
    drafts = project / "drafts"
    assert sorted(p.name for p in drafts.glob("*.yaml")) == [
        "email-me-the-receipt.yaml", "goodwill-credit-late-delivery.yaml"]
    assert [p.name for p in (drafts / "personas").iterdir()] == ["busy-parent.yaml"]
    summary = GenerateSummary.model_validate_json((drafts / SUMMARY_FILE).read_text())
    assert [(k.draft, k.id) for k in summary.kept] == [(1, "goodwill-credit-late-delivery"),
                                                       (4, "email-me-the-receipt")]
    reasons = {d.draft: (d.stage, d.reason) for d in summary.dropped}
    assert sorted(reasons) == [2, 3, 5, 6, 7, 8]
    assert reasons[2][0] == "answer" and "not a JSON object" in reasons[2][1] and "3 attempts" in reasons[2][1]
    assert reasons[3] == ("duplicate", reasons[3][1]) and "near-duplicate of refund-damaged-card" in reasons[3][1]
    assert reasons[5][0] == "oracle" and "issue_refund fails" in reasons[5][1]
    assert reasons[6][0] == "lint" and "someone-elses-blanket.yaml:" in reasons[6][1]
    assert "'E501'" in reasons[6][1] and "cannot learn" in reasons[6][1]
    assert reasons[7][0] == "validate" and "refund-everything.yaml:" in reasons[7][1]
    assert "refund_everything" in reasons[7][1] and "success_phrases" in reasons[7][1]
    assert reasons[8][0] == "duplicate" and "near-duplicate of goodwill-credit-late-delivery" in reasons[8][1]
    assert not any("simlab-drafts-" in r for _, r in reasons.values())  # the staging folder is no place
    # what each adds: the tools it makes expected
    assert "tools: issue_store_credit" in summary.kept[0].adds
    assert {"tools: get_customer", "tools: send_email", "persona traits: hurried"} <= set(summary.kept[1].adds)
    assert summary.missing_after < summary.missing_before
    # one call per draft, three for the malformed one; cost at simlab.yaml's judge price
    assert summary.calls == len(prompts) == 8 + 2
    usage = summary.usage
    assert usage.cost_usd == pytest.approx((usage.input_tokens * PRICE["input"]
                                            + usage.output_tokens * PRICE["output"]) / 1e6)
    assert f"author {name}: 10 calls" in out and f"{usage.input_tokens:,} tokens in" in out
    assert "dropped: oracle" in out and "2 kept of 8" in out
    # the prompt: the domain's tools, the gaps coverage reports, the suite to stay away from
    first = prompts[0][1]["content"]
    assert "issue_store_credit (write): never expected" in first and "refund-damaged-card: goal:" in first
    assert '"name": "send_email"' in first and "Write draft 1 of 8" in first
    assert "goodwill-credit-late-delivery: goal:" in prompts[-1][1]["content"]  # kept drafts are taken
    # the model's expected state is never written
    text = (drafts / "goodwill-credit-late-delivery.yaml").read_text()
    assert "999" not in text and "state:" not in text and "expected_actions" in text

    assert main(["generate", "--accept"]) == 0
    capsys.readouterr()
    assert (project / "scenarios" / "email-me-the-receipt.yaml").is_file()
    assert (project / "personas" / "busy-parent.yaml").is_file()
    assert not list(drafts.glob("*.yaml"))
    assert main(["validate"]) == 0 and main(["lint"]) == 0  # the generated suite: 100 %
    capsys.readouterr()
    after = coverage_json(capsys)
    assert never_expected(after) == set() and after["missing"] < before["missing"]
    assert len(after["scenarios"]) == len(before["scenarios"]) + 2


def test_near_duplicates_of_the_generated_suite_stay_under_five_percent(project: Path, model: Any,
                                                                        capsys: Any) -> None:
    from simlab.specs import load_personas, load_scenarios, scenario_files

    name, prompts = model
    assert main(["generate", "--model", name, "-n", "6"]) == 0
    assert not any("never expected" in p[1]["content"] for p in prompts)  # no --target: no gaps asked for
    assert main(["generate", "--accept"]) == 0
    loaded = load_scenarios(scenario_files(["scenarios"]), load_personas(Path("personas")))
    shapes = [shape_of(s.spec.expect.expected_actions, s.spec.user.goal)
              for s in loaded if s.spec.expect.expected_actions]
    pairs = [(a, b) for i, a in enumerate(shapes) for b in shapes[i + 1:]]
    duplicates = sum(near_duplicate(a, b) for a, b in pairs)
    assert len(pairs) >= 15 and duplicates / len(pairs) < 0.05
    # the rule sees the planted duplicate, which therefore never landed
    damaged = next(s for s in loaded if s.spec.id == "refund-damaged-card")
    planted = shape_of(damaged.spec.expect.expected_actions, DUPLICATE["goal"])
    assert near_duplicate(planted, shape_of(damaged.spec.expect.expected_actions, damaged.spec.user.goal))
    assert not any(s.spec.id == DUPLICATE["id"] for s in loaded)


def test_accept_never_overwrites_and_takes_drafts_by_name(project: Path, model: Any, capsys: Any) -> None:
    name, _ = model
    assert main(["generate", "--model", name, "-n", "1"]) == 0
    capsys.readouterr()
    taken = project / "scenarios" / "goodwill-credit-late-delivery.yaml"
    taken.write_text("mine\n")
    assert main(["generate", "--accept", "goodwill-credit-late-delivery"]) == 2
    assert "exists already" in capsys.readouterr().err and taken.read_text() == "mine\n"
    assert (project / "drafts" / "goodwill-credit-late-delivery.yaml").is_file()
    assert main(["generate", "--accept", "nope"]) == 2
    taken.unlink()
    assert main(["generate", "--accept", "goodwill-credit-late-delivery.yaml"]) == 0
    assert taken.is_file()


def test_a_draft_id_already_taken_is_dropped_and_none_kept_exits_1(project: Path, model: Any,
                                                                 capsys: Any) -> None:
    name, _ = model
    assert main(["generate", "--model", name, "-n", "1"]) == 0
    capsys.readouterr()
    assert main(["generate", "--model", name, "-n", "1", "--json"]) == 1  # the same draft again
    summary = json.loads(capsys.readouterr().out)
    assert summary["kept"] == [] and summary["dropped"][0]["stage"] == "id"


def test_a_refused_key_exits_3_and_writes_nothing(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: Any) -> None:
    from tests.strict_server import StrictServer

    def reply(request: dict[str, Any]) -> str:
        return str(drafter(request["messages"])["text"])

    with StrictServer({"author-x": reply}, api_key="sk-author-key-123456") as server:
        (project / "simlab.yaml").write_text(
            f"scenarios: [scenarios]\npersonas: personas\njudge: {{model: openai/author-x, api_base: "
            f"'{server.base}', api_key_env: T_AUTHOR_KEY}}\n")
        monkeypatch.setenv("T_AUTHOR_KEY", "sk-wrong-key-000000")
        assert main(["generate", "--model", "openai/author-x", "-n", "2"]) == 3
        err = capsys.readouterr().err
        assert server.answered == 0 and not (project / "drafts").exists()
        assert "sk-wrong-key" not in err and "error:" in err

        monkeypatch.setenv("T_AUTHOR_KEY", "sk-author-key-123456")
        assert main(["generate", "--model", "openai/author-x", "-n", "1"]) == 0
        assert server.answered == 1 and (project / "drafts" / "goodwill-credit-late-delivery.yaml").is_file()


def test_a_provider_that_answers_nothing_exits_3(project: Path, capsys: Any) -> None:
    import litellm

    def down(messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> Any:
        raise litellm.ServiceUnavailableError("overloaded", llm_provider="simlab-fake", model="down")

    name = register_fake("down", down)
    try:
        assert main(["generate", "--model", name, "-n", "2"]) == 3
    finally:
        unregister_fake("down")
    err = capsys.readouterr().err
    assert "answered none of the 2 drafts" in err and "transient" in err
    assert not (Path("drafts") / SUMMARY_FILE).exists()
