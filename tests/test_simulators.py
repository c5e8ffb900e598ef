"""Simulators: signal parsing, the rule-based user, the scripted user, the LLM user's prompt."""

from __future__ import annotations

import asyncio

from simlab.llm.types import ChatResult
from simlab.sim.simulators import LLMSimulator, RulesSimulator, ScriptedSimulator, SimView, split_signal
from simlab.specs import Persona
from simlab.transcript import ModelCall, Pin, Usage
from tests.support import PERSONA, scenario


def view(messages, *, turn, scn=None, persona=PERSONA, seed=1, memory=None, record=None):
    return SimView(scn or scenario(), persona, messages, seed, turn, record=record,
                   memory=memory if memory is not None else {})


def say(sim, v):
    return asyncio.run(sim.next_message(v))


def test_split_signal_strips_and_detects():
    assert split_signal("Thanks! ###STOP###") == ("Thanks!", "stop")
    assert split_signal("###GIVE_UP### bye") == ("bye", "give_up")
    assert split_signal("ok ## TRANSFER ##") == ("ok", "transfer")
    assert split_signal("plain text") == ("plain text", None)


RULES_SCN = scenario(user={
    "goal": "Refund order A1 to my card.", "opening": "My order arrived broken.",
    "known_facts": {"order_id": "A1", "email": "d@example.com"}, "never_reveal": {"card_number": "4111"},
    "success_phrases": [r"refund .* issued"], "reject_phrases": ["store credit"],
    "give_up_phrases": ["cannot help"],
})


def test_rules_opening_and_answers_only_what_is_asked():
    sim = RulesSimulator()
    mem: dict = {}
    first = say(sim, view([], turn=1, scn=RULES_SCN, memory=mem))
    assert first.text == "My order arrived broken." and first.signal is None
    msgs = [{"role": "user", "content": first.text},
            {"role": "assistant", "content": "Sorry! Could you give me your order number?"}]
    second = say(sim, view(msgs, turn=2, scn=RULES_SCN, memory=mem))
    assert "A1" in second.text and "d@example.com" not in second.text


def test_rules_never_reveals_and_refuses_rejected_offers():
    sim = RulesSimulator()
    msgs = [{"role": "assistant", "content": "What is your card number and your email?"}]
    out = say(sim, view(msgs, turn=2, scn=RULES_SCN))
    assert "4111" not in out.text and "d@example.com" in out.text
    offer = [{"role": "assistant", "content": "I can give you store credit instead. Shall I do that?"}]
    out = say(sim, view(offer, turn=2, scn=RULES_SCN))
    assert "store credit" in out.text.lower() and out.text.lower().startswith(("no", "i'm not"))
    assert "yes" not in out.text.lower()


def test_rules_confirms_stops_and_gives_up():
    sim = RulesSimulator()
    ask = [{"role": "assistant", "content": "Shall I refund 10.00 to your card?"}]
    assert say(sim, view(ask, turn=2, scn=RULES_SCN)).text.lower().startswith(("yes", "sure", "that's right"))
    done = [{"role": "assistant", "content": "Your refund of 10.00 has been issued."}]
    assert say(sim, view(done, turn=3, scn=RULES_SCN)).signal == "stop"
    hopeless = [{"role": "assistant", "content": "I cannot help with that."}]
    assert say(sim, view(hopeless, turn=3, scn=RULES_SCN)).signal == "give_up"


def test_rules_gives_up_after_persona_patience():
    sim = RulesSimulator()
    mem: dict = {}
    meh = [{"role": "assistant", "content": "Our weather is nice today."}]
    first = say(sim, view(meh, turn=2, scn=RULES_SCN, memory=mem))
    assert first.signal is None
    assert say(sim, view(meh, turn=3, scn=RULES_SCN, memory=mem)).signal == "give_up"  # give_up_after=2
    patient = Persona(id="p", description="patient", give_up_after=None)
    mem = {}
    for turn in range(2, 8):
        assert say(sim, view(meh, turn=turn, scn=RULES_SCN, persona=patient, memory=mem)).signal is None


def test_rules_phrasing_is_seeded_and_replays():
    sim = RulesSimulator()
    no_opening = scenario(user={"goal": "Store b=2."})

    def opening(seed):
        return say(sim, view([], turn=1, scn=no_opening, seed=seed)).text

    assert opening(3) == opening(3)
    assert len({opening(s) for s in range(20)}) > 1


def test_rules_says_it_does_not_know_unknown_facts():
    sim = RulesSimulator()
    scn = scenario(user={"goal": "Refund my order.", "known_facts": {"email": "d@example.com"}})
    out = say(sim, view([{"role": "assistant", "content": "What's your order id?"}], turn=2, scn=scn))
    assert "don't" in out.text.lower() and "order id" in out.text.lower()


def test_scripted_plays_lines_then_stops():
    sim = ScriptedSimulator()
    scn = scenario(user={"goal": "g", "script": ["one", "two ###STOP###"]})
    assert say(sim, view([], turn=1, scn=scn)).text == "one"
    second = say(sim, view([], turn=2, scn=scn))
    assert (second.text, second.signal) == ("two", "stop")
    ran_out = say(sim, view([], turn=3, scn=scn))
    assert (ran_out.text, ran_out.signal) == ("", None)  # no line left, and no signal: the script ended
    assert ran_out.ended == "the script ended: all 2 lines played, none signalled stop"


def test_scripted_says_the_opening_then_every_line_of_its_script():
    sim = ScriptedSimulator()
    scn = scenario(user={"goal": "g", "opening": "hello", "script": ["one", "two"]})
    assert [say(sim, view([], turn=t, scn=scn)).text for t in (1, 2, 3)] == ["hello", "one", "two"]
    assert say(sim, view([], turn=4, scn=scn)).ended


class Recorder:
    role = "simulator"
    model = "fake/sim-2025-01-01"

    def __init__(self, text):
        self.text = text
        self.seen = None

    def pin(self):
        return Pin(kind="llm", ref=self.model, settings={"temperature": 0.7})

    async def chat(self, messages, *, tools=None, seed=None):
        self.seen = messages
        return ChatResult(self.text, [], Usage(input_tokens=3, output_tokens=2))


def test_llm_simulator_prompt_flips_roles_and_parses_signals():
    model = Recorder("Great, all sorted. ###STOP###")
    events: list = []
    msgs = [{"role": "user", "content": "My order arrived broken."},
            {"role": "assistant", "content": "I have looked at it: the refund is possible."}]
    out = asyncio.run(LLMSimulator(model).next_message(view(msgs, turn=2, scn=RULES_SCN, record=events.append)))
    assert (out.text, out.signal) == ("Great, all sorted.", "stop")
    system, *history = model.seen
    assert "Refund order A1" in system["content"] and "card_number" in system["content"]
    assert "4111" not in system["content"]  # the value to hide is never put in front of the model
    assert [m["role"] for m in history] == ["assistant", "user"]
    assert isinstance(events[0], ModelCall) and events[0].role == "simulator"


def test_llm_simulator_builds_its_system_prompt_once_per_scenario(monkeypatch):
    import simlab.sim.simulators.llm as llm

    built: list[str] = []
    monkeypatch.setattr(llm, "system_prompt", lambda v: built.append(v.scenario.id) or f"prompt for {v.scenario.id}")
    model = Recorder("ok")
    sim = LLMSimulator(model)
    other = scenario(id="other")
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    for scn in (RULES_SCN, RULES_SCN, other, RULES_SCN):
        say(sim, view(msgs, turn=2, scn=scn))
        assert model.seen[0] == {"role": "system", "content": f"prompt for {scn.id}"}
    assert built == [RULES_SCN.id, "other"]


def test_llm_simulator_stops_on_a_success_phrase_without_asking_its_model():
    """A weak model that talks on after its goal was met would turn the agent's pass into a turn cap:
    the scenario's success phrases are the LLM simulator's backstop, as they are the rules simulator's."""
    model = Recorder("Thanks, but tell me more about your other products.")
    msgs = [{"role": "user", "content": "My order arrived broken."},
            {"role": "assistant", "content": "Your refund of 49.90 has been issued to your card."}]
    out = asyncio.run(LLMSimulator(model).next_message(view(msgs, turn=2, scn=RULES_SCN)))
    assert out.signal == "stop" and out.text == "" and "success phrase" in out.why
    assert model.seen is None  # no call: the backstop decided
    opening_only = asyncio.run(LLMSimulator(Recorder("hello")).next_message(view([], turn=1, scn=RULES_SCN)))
    assert opening_only.signal is None  # the opening is never cut short


def test_a_success_phrase_met_ends_an_llm_simulated_trial_as_goal_reached():
    from simlab.sim.agents import PythonAgent
    from simlab.sim.loop import run_trial
    from tests.support import make_trial

    talkative = Recorder("Great. By the way, what else do you sell?")  # never says ###STOP###
    scn = scenario(user={"goal": "Store a=1.", "opening": "store a=1", "success_phrases": ["stored"]}, max_turns=4)
    trial = make_trial(PythonAgent(lambda inp: "Done: it is stored.", "t:done"), LLMSimulator(talkative), scn=scn)
    t = asyncio.run(run_trial(trial))
    assert t.termination.reason.value == "goal_reached" and "success phrase" in t.termination.detail


def test_scenario_phrases_run_on_a_linear_time_engine_with_the_same_answers():
    from pathlib import Path

    from simlab.sim.simulators.phrases import engine, first_match
    from simlab.specs import load_personas, load_scenarios, scenario_files

    root = Path(__file__).resolve().parents[1]
    loaded = load_scenarios(scenario_files([str(root / "scenarios")]), load_personas(root / "personas"))
    phrases = [p for s in loaded for p in (*s.spec.user.success_phrases, *s.spec.user.give_up_phrases,
                                           *s.spec.user.reject_phrases)]
    assert phrases and {engine(p) for p in phrases} == {"re2"}  # RE2 never backtracks: linear in the reply
    pattern = r"refund of 49\.90 to your original card.*(issued|processed)"
    flood = "Refund of 49.90 to your original card, pending. " * 2500  # 117 KB: quadratic for Python's re
    assert first_match([pattern], flood) is None
    assert first_match([pattern], flood + "It was issued.") == flood + "It was issued"  # as re.search gives
    assert first_match([r"(?<!not )refunded", "x"], "it was not refunded, then refunded") == "refunded"
    assert engine(r"(?<!not )refunded") == "re"  # look-behind: Python's engine, the same answer


def test_without_an_opening_the_rules_user_asks_in_its_own_words_never_the_raw_goal():
    scn = scenario(user={"goal": "Borrow Emma (book B2). Refuse any substitute.", "known_facts": {"card": "L-1"}})
    first = asyncio.run(RulesSimulator().next_message(view([], turn=1, scn=scn)))
    assert "borrow Emma (book B2)" in first.text and first.text != scn.user.goal
    assert "Refuse" not in first.text and not first.text.startswith("Borrow")  # the strategy stays hidden
    from simlab.sim.simulators.rules import request_from_goal

    assert request_from_goal("A refund for order A123, not store credit.", 1).endswith(
        "a refund for order A123, not store credit.")
    assert "API access" in request_from_goal("API access for my team.", 1)
    assert len({request_from_goal("Cancel booking K9.", seed) for seed in range(20)}) > 1  # phrased by the seed
