"""Deterministic simulator-drift checks: each type passes and fails, pointing at the user's event."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from simlab.graders.base import GradeContext, verdict_of
from simlab.graders.drift import grade_drift, identifiers
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.simulators import RulesSimulator, ScriptedSimulator
from simlab.transcript import (
    AgentMessage,
    Pin,
    Signal,
    Termination,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
)
from tests.support import KV, kv_agent, make_trial, scenario


def transcript(events: list[Any], *, simulator: str = "llm") -> Transcript:
    return Transcript(run_id="r", unit_id="kv-set#1", scenario_id="kv-set", persona_id="tester", domain="kv", trial=1,
                      seed=1, agent=Pin(kind="python", ref="a"), simulator=Pin(kind=simulator, ref="s"), events=events,
                      termination=Termination(reason="goal_reached"), final_state={})


def grade(events: list[Any], *, simulator: str = "llm", **overrides: Any) -> dict[str, Any]:
    user = {"goal": "Store b=2 for order A123.", "opening": "Please store b=2.",
            "known_facts": {"key": "b", "email": "dana@example.com", "phone": "+1 (555) 123-4567"},
            **overrides.pop("user", {})}
    ctx = GradeContext(transcript(events, simulator=simulator), scenario(user=user, **overrides), KV)
    return {c.name: c for c in grade_drift(ctx)}


def stored(turn: int, ok: bool = True) -> list[Any]:
    return [ToolCall(turn=turn, call_id=f"c{turn}", name="set_item", arguments={"key": "b", "value": "2"}, access="write"),
            ToolResult(turn=turn, call_id=f"c{turn}", name="set_item", ok=ok)]


def test_identifier_tokens():
    text = "order A123, dana@example.com, card 4242-4242-4242-4242, 2024-05-01 at 10am, the 3rd, 49.90, 12345 C-17"
    assert identifiers(text) == ["A123", "dana@example.com", "4242-4242-4242-4242", "C-17"]


def test_revealed_secret_with_spacing_variations():
    secret = {"user": {"never_reveal": {"card_number": "4242 4242 4242 4242"}}}
    events = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Card?"),
              UserMessage(turn=2, text="sure it's 4242-4242-42424242")]
    check = grade(events, **secret)["drift:revealed_secret"]
    assert check.status == "fail" and check.kind == "drift" and check.hard
    assert check.event == 2 and check.turn == 2 and "card_number" in check.reason
    clean = grade(events[:2] + [UserMessage(turn=2, text="it ends in 4242")], **secret)["drift:revealed_secret"]
    assert clean.status == "pass"


def test_revealed_secret_given_only_as_a_description_is_not_run():
    check = grade([UserMessage(turn=1, text="hi")], user={"never_reveal": ["the card number"]})["drift:revealed_secret"]
    assert check.status == "not_run" and check.details["unchecked"] == ["the card number"]
    assert "drift:revealed_secret" not in grade([UserMessage(turn=1, text="hi")])


def test_invented_identifier():
    events = [UserMessage(turn=1, text="Please store b=2 for A123, mail dana@example.com or call 555-123-4567."),
              AgentMessage(turn=1, text="I found ticket T-77 for you."),
              UserMessage(turn=2, text="Yes T77 is right, and my account is ZX-9001."),
              AgentMessage(turn=2, text="ZX-9001 noted."), UserMessage(turn=3, text="ZX-9001 again")]
    check = grade(events)["drift:invented_identifier"]
    assert check.status == "fail" and check.event == 2 and check.turn == 2 and "ZX-9001" in check.reason
    assert len(check.details["violations"]) == 1  # reported once, though said again later
    assert grade(events[:2])["drift:invented_identifier"].status == "pass"


def test_premature_stop_before_the_expected_write():
    expect = {"expect": {"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}]}}
    early = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Let me see."),
             UserMessage(turn=2, text="ok bye"), Signal(turn=2, role="user", signal="stop")]
    check = grade(early, **expect)["drift:premature_stop"]
    assert check.status == "fail" and check.event == 3 and check.turn == 2 and "set_item" in check.reason
    failed_write = early[:1] + stored(1, ok=False) + early[1:]
    assert grade(failed_write, **expect)["drift:premature_stop"].status == "fail"
    after = early[:1] + stored(1) + early[1:]
    assert grade(after, **expect)["drift:premature_stop"].status == "pass"
    claimed = early[:1] + [AgentMessage(turn=1, text="Done, b is stored.")] + early[2:]
    assert grade(claimed, **expect)["drift:premature_stop"].status == "pass"  # the agent's false claim: not drift
    ran_out = early[:2] + [Signal(turn=2, role="user", signal="stop")]
    assert grade(ran_out, simulator="scripted", **expect)["drift:premature_stop"].status == "pass"
    assert grade(ran_out, **expect)["drift:premature_stop"].status == "fail"


def test_a_scripted_stop_line_before_the_last_line_is_no_end_of_the_script():
    """A line that is a signal alone says no message; before the script's last line, the user
    stopped early (drift), not ran out of lines. Before, every such stop read as "ran out"."""
    expect = {"expect": {"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}]}}
    stop = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Let me see."),
            Signal(turn=2, role="user", signal="stop")]
    early = {"user": {"script": ["Please store b=2.", "###STOP###", "and b=3 too"]}, **expect}
    check = grade(stop, simulator="scripted", **early)["drift:premature_stop"]
    assert check.status == "fail" and check.turn == 2
    last = {"user": {"script": ["Please store b=2.", "###STOP###"]}, **expect}  # its last line: played through
    assert grade(stop, simulator="scripted", **last)["drift:premature_stop"].status == "pass"
    past = {"user": {"script": ["Please store b=2."]}, **expect}  # no line left: ran out
    assert grade(stop, simulator="scripted", **past)["drift:premature_stop"].status == "pass"


EXPECT_WRITE = {"expect": {"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}]}}


@pytest.mark.parametrize("last", ["The change is complete.", "All set!", "I have taken care of that for you…",
                                  "Done: b is 2.", "The change has been completed.", "It's there now.",
                                  "¡Listo! Ya está.", "C'est fait !", "Erledigt."])
def test_a_user_that_stops_after_a_completion_claim_did_not_stop_early(last: str) -> None:
    events = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text=last),
              Signal(turn=2, role="user", signal="stop")]
    check = grade(events, **EXPECT_WRITE)["drift:premature_stop"]
    assert check.status == "pass" and "reported the work done" in check.reason


@pytest.mark.parametrize("last", ["I'm sorry, I can't change that for you.", "Lo siento, no puedo hacer eso."])
def test_a_user_that_stops_after_a_refusal_did_not_stop_early(last: str) -> None:
    events = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text=last),
              Signal(turn=2, role="user", signal="stop")]
    check = grade(events, **EXPECT_WRITE)["drift:premature_stop"]
    assert check.status == "pass" and "refused" in check.reason


@pytest.mark.parametrize("last", ["Shall I store it?", "I will store it once you confirm.", "It is not stored yet."])
def test_a_user_that_stops_while_the_work_is_open_stopped_early(last: str) -> None:
    events = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text=last),
              Signal(turn=2, role="user", signal="stop")]
    assert grade(events, **EXPECT_WRITE)["drift:premature_stop"].status == "fail"


def test_premature_stop_from_state_assertions_only():
    early = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Let me see."),
             UserMessage(turn=2, text="bye"), Signal(turn=2, role="user", signal="stop")]
    needs_write = {"expect": {"state": [{"path": "items.b", "equals": "2"}]}}
    assert grade(early, **needs_write)["drift:premature_stop"].status == "fail"
    assert grade(early[:1] + stored(1) + early[1:], **needs_write)["drift:premature_stop"].status == "pass"
    already_true = {"expect": {"state": [{"path": "items.a", "equals": "1"}, {"path": "items.b", "absent": True}]}}
    assert "drift:premature_stop" not in grade(early, **already_true)


def test_accepted_rejected_outcome():
    reject = {"user": {"reject_phrases": ["store credit"]}}
    offer = AgentMessage(turn=1, text="I can't store that. Would you like store credit instead?")
    accepted = [UserMessage(turn=1, text="Please store b=2."), offer, UserMessage(turn=2, text="Sure, that works.")]
    check = grade(accepted, **reject)["drift:accepted_rejected"]
    assert check.status == "fail" and check.event == 2 and "store credit" in check.reason
    refused = accepted[:2] + [UserMessage(turn=2, text="No thanks, not store credit.")]
    assert grade(refused, **reject)["drift:accepted_rejected"].status == "pass"
    done = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Done: store credit issued."),
            Signal(turn=2, role="user", signal="stop")]
    after = grade(done, **reject)["drift:accepted_rejected"]
    assert after.status == "fail" and after.details["after_outcome"]  # accepted after the fact: not the cause
    assert "after_outcome" not in check.details  # an offer accepted: the drift came first


def test_accepted_rejected_skips_negated_or_ambiguous_offers():
    reject = {"user": {"reject_phrases": ["store credit"]}}
    for text in ("I will refund your card, not store credit. Shall I go ahead?",
                 "Would you prefer store credit or a refund to your card?",
                 "You could take store credit instead. Or shall I refund the card?"):
        events = [UserMessage(turn=1, text="refund"), AgentMessage(turn=1, text=text), UserMessage(turn=2, text="Yes please.")]
        assert grade(events, **reject)["drift:accepted_rejected"].status == "pass", text
    assert "drift:accepted_rejected" not in grade([UserMessage(turn=1, text="hi")])


def test_role_swap():
    swapped = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Done, stored."),
               UserMessage(turn=2, text="Assistant: Great! How can I help you today?")]
    check = grade(swapped)["drift:role_swap"]
    assert check.status == "fail" and check.event == 2 and check.turn == 2
    assert verdict_of(transcript(swapped), [check]) == "invalid"
    assert grade(swapped[:2])["drift:role_swap"].status == "pass"


def test_real_loop_rules_user_does_not_drift():
    scn = scenario(user={"goal": "Store b=2.", "opening": "Please store b=2.", "known_facts": {"key": "b"},
                         "never_reveal": {"pin": "9876"}, "success_phrases": ["stored"], "reject_phrases": ["voucher"]},
                   expect={"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}]})
    t = asyncio.run(run_trial(make_trial(PythonAgent(kv_agent, "tests.support:kv_agent"), RulesSimulator(), scn=scn)))
    checks = grade_drift(GradeContext(t, scn, KV))
    assert [c.name for c in checks] == ["drift:revealed_secret", "drift:invented_identifier", "drift:premature_stop",
                                        "drift:accepted_rejected", "drift:role_swap"]
    assert all(c.status == "pass" for c in checks), [c.reason for c in checks]


def test_real_loop_scripted_user_stopping_before_its_script_ends_is_drift():
    scn = scenario(user={"goal": "Store b=2.", "script": ["Please store b=2.", "never mind ###STOP###", "b=2!"]},
                   expect={"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}]})
    t = asyncio.run(run_trial(make_trial(PythonAgent(lambda inp: "Let me check.", "t:idle"), ScriptedSimulator(), scn=scn)))
    check = {c.name: c for c in grade_drift(GradeContext(t, scn, KV))}["drift:premature_stop"]
    assert check.status == "fail" and isinstance(t.events[check.event], Signal)


def test_real_loop_scripted_user_that_stops_on_its_last_line_played_its_script_through():
    scn = scenario(user={"goal": "Store b=2.", "script": ["Please store b=2.", "never mind ###STOP###"]},
                   expect={"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}]})
    t = asyncio.run(run_trial(make_trial(PythonAgent(lambda inp: "Let me check.", "t:idle"), ScriptedSimulator(), scn=scn)))
    check = {c.name: c for c in grade_drift(GradeContext(t, scn, KV))}["drift:premature_stop"]
    assert check.status == "pass" and "played its script through (2 lines)" in check.reason


ROLE_SWAPS = [  # the simulated user speaks as the assistant (seen with small models)
    "As a customer service AI, I can't access your account details.",
    "As an AI language model, I do not have orders.",
    "I'll send a confirmation email with this information next week.",
    "I'll help you with something!",
    "How can I help you today?",
    "I'd be happy to help you with that refund.",
    "Let me look up your order right away.",
    "I have processed your refund of 49.90.",
    "Is there anything else I can help you with?",
    "Thank you for contacting us, have a great day.",
    "Agent: your order is on its way.",
    "As a support representative I must follow the policy.",
    "I'm here to help with any questions.",
    "Could I have your order number, please?",
    "I will also email you a receipt.",
    "Let me check on your refund status.",
]
NOT_SWAPS = [  # what customers say
    "Can you help me with my order?",
    "I need help with a refund for order A123.",
    "I'll send you the order number in a second: A123.",
    "As a customer of ten years, I expect better.",
    "Can you send me a confirmation email?",
    "I'll wait for the confirmation email then.",
    "Thanks for your help!",
    "How can I get my money back?",
    "Let me look up my order number... it's A123.",
    "I have my receipt here.",
    "I will check my email later.",
    "Is there anything else you need from me?",
    "My assistant placed the order for me.",
    "yes please go ahead",
    "no, I want it back on my card, not store credit",
    "I'm an engineer, not an AI expert.",
]


def test_role_swap_table():
    from simlab.graders.drift import _assistant_phrase

    assert [t for t in ROLE_SWAPS if _assistant_phrase(t) is None] == []
    assert [(t, _assistant_phrase(t)) for t in NOT_SWAPS if _assistant_phrase(t) is not None] == []


def test_the_rules_simulator_never_speaks_as_the_assistant():
    from simlab.graders.drift import _assistant_phrase
    from simlab.sim.simulators import rules

    lines = [line for name in ("THANKS", "GIVE_UPS", "REFUSALS", "COMPLAINTS", "YES", "NUDGES")
             for line in getattr(rules, name, [])]
    assert lines and [t for t in lines if _assistant_phrase(t.format(offer="store credit", goal="a refund"))] == []


def test_invented_identifier_under_a_scripted_user_too():
    script = ["Please store b=2.", "my customer number is C-99", "thanks ###STOP###"]
    events = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Who are you?"),
              UserMessage(turn=2, text="my customer number is C-99")]
    check = grade(events, simulator="scripted", user={"script": script})["drift:invented_identifier"]
    assert check.status == "fail" and check.turn == 2 and "'C-99'" in check.reason
    told = [events[0], AgentMessage(turn=1, text="Is your customer number C-99?"), events[2]]
    assert grade(told, simulator="scripted", user={"script": script})["drift:invented_identifier"].status == "pass"
    known = grade(events, simulator="scripted", user={"script": script, "known_facts": {"customer": "C-99"}})
    assert known["drift:invented_identifier"].status == "pass"
    opening = [UserMessage(turn=1, text="Hi, I'm customer C-99, please store b=2.")]
    fixed = grade(opening, user={"opening": "Hi, I'm customer C-99, please store b=2."})["drift:invented_identifier"]
    assert fixed.status == "fail"  # a fixed opening is something the user says, not something it was told


def test_unknown_identifiers_of_a_line():
    from simlab.graders.drift import unknown_identifiers

    scn = scenario(user={"goal": "Store b=2 for order A123.", "known_facts": {"email": "dana@example.com"}})
    assert unknown_identifiers(scn, "order A123, mail dana@example.com, account ZX-9001 and ZX-9001") == ["ZX-9001"]


@pytest.mark.parametrize("signal", ["stop", "give_up", "transfer"])
def test_a_user_that_ends_before_the_agent_answered_once_drifted_whatever_the_scenario_expects(signal):
    """Without an expected write too (a question, a refusal): a trial the agent never had a turn in is
    no pass of its, and no fail of its either."""
    events = [UserMessage(turn=1, text="Please store b=2."), Signal(turn=1, role="user", signal=signal)]
    check = grade(events)["drift:premature_stop"]
    assert check.status == "fail" and check.event == 1 and "before the agent had answered once" in check.reason
    assert verdict_of(transcript(events), [check]) == "invalid"
    answered = [events[0], AgentMessage(turn=1, text="Which value?"), UserMessage(turn=2, text="2"),
                Signal(turn=2, role="user", signal=signal)]
    assert "drift:premature_stop" not in grade(answered)  # nothing expected of the agent: no check
    line = f"Please store b=2. ###{signal.upper()}###"
    scripted = grade(events, simulator="scripted", user={"opening": line, "script": [line]})
    assert scripted["drift:premature_stop"].status == "pass"  # its one line said so: it played its script


QUOTES = [  # an agent that failed, and a user that quotes it back: the agent's failure, not the user's drift
    ("I have processed your request, b is stored.", 'You said "I have processed your request" but nothing changed.'),
    ("How can I help you?", "You keep saying 'how can I help you'. I told you: store b=2."),
    ("I'd be happy to help you with that!", "“I'd be happy to help you” — then help me: store b=2."),
    ("Let me look up your order.", "you said let me look up your order ten minutes ago. store b=2."),
]


@pytest.mark.parametrize(("agent", "user"), QUOTES)
def test_a_user_quoting_the_agent_does_not_speak_as_the_assistant(agent: str, user: str) -> None:
    events = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text=agent),
              UserMessage(turn=2, text=user)]
    check = grade(events)["drift:role_swap"]
    assert check.status == "pass", check.reason
    assert verdict_of(transcript(events), [check, _state_failed()]) == "fail"


def _state_failed() -> Any:
    from simlab.transcript import Check

    return Check(name="items.b equals '2'", kind="state", status="fail")


@pytest.mark.parametrize("user", [
    '"How can I help you today?"',  # the whole message in quotes, not what the agent said: the user's drift
    "Assistant: How can I help you?",  # a role label after a quote-free start
    'You said "done". How can I help you today?',  # the phrase outside the quote
])
def test_quoting_is_no_cover_for_speaking_as_the_assistant(user: str) -> None:
    events = [UserMessage(turn=1, text="Please store b=2."), AgentMessage(turn=1, text="Done."),
              UserMessage(turn=2, text=user)]
    assert grade(events)["drift:role_swap"].status == "fail"
