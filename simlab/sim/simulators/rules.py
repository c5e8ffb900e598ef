"""The rule-based simulator: a deterministic user for offline runs, CI and regressions.

It sees only the conversation, like a real user. Each turn it reacts to the agent's last reply:
success phrase → stop; give-up phrase → give up; an offer the goal rejects → refuse; questions
about known facts → answer them (never the never-reveal ones); a request to confirm → yes;
anything else is unhelpful, and after ``persona.give_up_after`` of those in a row it gives up.
Phrasing is drawn from a ``random.Random`` seeded with the trial seed, so trials differ and each
one replays exactly.
"""

from __future__ import annotations

import random
import re
from typing import Any

from simlab.sim.simulators.base import Simulator, SimView, UserTurn
from simlab.sim.simulators.phrases import first_match
from simlab.transcript import Pin

_CONFIRM = re.compile(
    r"\b(shall i|should i|do you want me to|would you like me to|can i go ahead|may i|ok(ay)? to proceed|"
    r"confirm|proceed\?|go ahead\?|is that (ok|okay|alright|fine)|would you like (a|the|me|to))\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"\?|\b(could you|can you|please (provide|share|tell|give|send)|what is your|what's your)\b",
    re.IGNORECASE,
)

GREETINGS = ["Hi.", "Hello,", "Hi there —", "Hey,", "Good morning."]
THANKS = ["Great, thank you!", "Perfect, thanks.", "That's all I needed, thanks.", "Thanks, that works."]
YES = ["Yes, please go ahead.", "Yes.", "Yes, please.", "Sure, go ahead.", "That's right, please do."]
NUDGES = [
    "I still need this sorted: {goal}",
    "Can you help me or not? {goal}",
    "To be clear: {goal}",
    "Sorry, that doesn't help. {goal}",
]
REFUSALS = ["No, I don't want {offer}.", "No thanks, not {offer}.", "I'm not interested in {offer}."]
COMPLAINTS = ["I told you I didn't want {offer}!", "That's not what I asked for, I said no {offer}."]
GIVE_UPS = ["Forget it, this is going nowhere.", "Never mind, I'll try somewhere else.", "I give up."]
DONT_KNOW = ["I don't have my {name} to hand, sorry. Can you look it up?", "I don't know my {name}, sorry."]
WONT_SAY = ["I'd rather not share my {name}.", "I won't give out my {name}, sorry."]


def fact_aliases(name: str) -> list[str]:
    """Ways an agent may ask for a fact: order_id → 'order id', 'order number', 'order #'…"""
    base = name.replace("_", " ").replace("-", " ").strip().lower()
    aliases = {base, name.lower()}
    if base.endswith(" id"):
        stem = base[:-3]
        aliases |= {f"{stem} number", f"{stem} #", f"{stem} no", f"{stem}id", f"{stem} reference"}
    if base == "email":
        aliases |= {"e-mail", "email address"}
    if base in ("phone", "phone number"):
        aliases |= {"phone", "telephone", "mobile"}
    if base == "name":
        aliases |= {"your name", "full name"}
    return sorted(aliases, key=len, reverse=True)


_FIRST_SENTENCE = re.compile(r"^\s*(.+?[.!?])(?:\s|$)", re.DOTALL)
# Verbs a goal written as an instruction starts with ("Borrow Emma", "Get order A123 refunded"):
# such a goal reads as a request after "I'd like to".
_GOAL_VERBS = frozenset(
    """add ask book borrow buy cancel change check close collect confirm extend find fix get have
know learn make move open order pay pick postpone receive register remove renew rent replace report
request reschedule reserve reset return schedule see sell send set sign stop switch transfer unlock
update upgrade use verify""".split()
)
_REQUESTS = [
    "I'd like to {request}.",
    "I need to {request}.",
    "Can you help me? I want to {request}.",
    "I'm hoping you can help: I'd like to {request}.",
]
_ABOUT = [
    "I need help with this: {request}.",
    "It's about this: {request}.",
    "I'm writing about this: {request}.",
]


def request_from_goal(goal: str, seed: int) -> str:
    """The first thing a user with this hidden goal says: its first sentence, as a request in the
    first person ("Borrow Emma (book B2). Refuse a substitute." → "I'd like to borrow Emma (book
    B2)."), phrased by the trial's seed."""
    match = _FIRST_SENTENCE.match(goal)
    sentence = (match.group(1) if match else goal).strip().rstrip(".!?").strip()
    if not sentence:
        return goal.strip()
    first, _, rest = sentence.partition(" ")
    rng = random.Random(f"request/{seed}")
    if first.lower() in _GOAL_VERBS:
        request = (first.lower() + (" " + rest if rest else "")).strip()
        return rng.choice(_REQUESTS).format(request=request)
    acronym = sentence[1:2].isupper()  # "API access…": keep its case
    request = sentence if acronym else sentence[0].lower() + sentence[1:]
    return rng.choice(_ABOUT).format(request=request)


def _mentions(text: str, name: str) -> bool:
    lowered = text.lower()
    return any(re.search(rf"(?<![a-z]){re.escape(alias)}(?![a-z])", lowered) for alias in fact_aliases(name))


_GREETING = re.compile(
    r"^\s*(hi|hello|hey|good (morning|afternoon|evening))\b[^.!?,—-]*[.!?,—-]*\s*", re.IGNORECASE
)
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_OFFER = re.compile(
    r"\?|\b(would you like|do you want|i can offer|i could|instead|prefer|option)\b", re.IGNORECASE
)
_DONE = re.compile(r"\b(issued|added|processed|done|completed|credited|applied)\b", re.IGNORECASE)


def _rejected(patterns: list[str], reply: str) -> tuple[str | None, str | None]:
    """(offer the user must refuse, unwanted thing the agent says it already did).

    A rejected phrase counts only in a sentence that offers it or reports doing it; a mere
    mention (in an explanation) is not an offer.
    """
    for sentence in _SENTENCE.findall(reply):
        found = _first_match(patterns, sentence)
        if found and _OFFER.search(sentence):
            return found, None
        if found and _DONE.search(sentence):
            return None, found
    return None, None


def _first_match(patterns: list[str], text: str) -> str | None:
    return first_match(patterns, text)  # linear in the reply, whatever the pattern (phrases.py)


class RulesSimulator(Simulator):
    def pin(self) -> Pin:
        return Pin(kind="rules", ref="rules")

    async def next_message(self, view: SimView) -> UserTurn:
        rng: random.Random = view.memory.setdefault("rng", random.Random(view.seed))
        user, persona = view.scenario.user, view.persona
        if view.turn == 1:
            return UserTurn(self._opening(view, rng))
        reply = view.last_agent_message
        if _first_match(user.success_phrases, reply):
            return UserTurn(rng.choice(THANKS), signal="stop")
        if _first_match(user.give_up_phrases, reply):
            return UserTurn(rng.choice(GIVE_UPS), signal="give_up")

        parts: list[str] = []
        helpful = False
        offer, done = _rejected(user.reject_phrases, reply)
        if offer:
            parts.append(rng.choice(REFUSALS).format(offer=offer.lower()))
        elif done:
            parts.append(rng.choice(COMPLAINTS).format(offer=done.lower()))
            offer = done
        questions = [q for q in _SENTENCE.findall(reply) if _QUESTION.search(q) or _CONFIRM.search(q)]
        answered = self._answer_questions(" ".join(questions), view, rng) if questions else []
        if answered:
            parts.extend(answered)
            helpful = True
        confirm = [q for q in questions if _CONFIRM.search(q) and not _first_match(user.reject_phrases, q)]
        if confirm and not offer and not any(_mentions_fact(q, view) for q in confirm):
            parts.append(rng.choice(YES))
            helpful = True
        if helpful:
            view.memory["unhelpful"] = 0
        else:
            unhelpful = view.memory.get("unhelpful", 0) + 1
            view.memory["unhelpful"] = unhelpful
            if persona.give_up_after is not None and unhelpful >= persona.give_up_after:
                return UserTurn(" ".join([*parts, rng.choice(GIVE_UPS)]), signal="give_up")
            if not offer:
                parts.append(rng.choice(NUDGES).format(goal=self._goal_line(view)))
        return UserTurn(" ".join(parts))

    def _opening(self, view: SimView, rng: random.Random) -> str:
        user = view.scenario.user
        text = user.opening or f"{rng.choice(GREETINGS)} {self._goal_line(view)}"
        if view.persona.volunteers_facts and user.known_facts:
            facts = ", and ".join(
                f"my {k.replace('_', ' ')} is {_say(v)}" for k, v in user.known_facts.items()
            )
            text = f"{text} For reference, {facts}."
        return text

    def _goal_line(self, view: SimView) -> str:
        """What the user asks for, in the user's words: the opening without its greeting, or a
        request phrased from the goal's first sentence (never the hidden goal word for word: its
        other sentences are the user's strategy, not what the user says)."""
        opening = view.scenario.user.opening
        if not opening:
            return request_from_goal(view.scenario.user.goal, view.seed)
        return _GREETING.sub("", opening).strip() or opening

    def _answer_questions(self, reply: str, view: SimView, rng: random.Random) -> list[str]:
        user = view.scenario.user
        answers: list[str] = []
        for name in user.never_reveal:
            if _mentions(reply, name):
                answers.append(rng.choice(WONT_SAY).format(name=name.replace("_", " ")))
        for name, value in user.known_facts.items():
            if name not in user.never_reveal and _mentions(reply, name):
                answers.append(f"My {name.replace('_', ' ')} is {_say(value)}.")
        if not answers:
            unknown = _asked_unknown_fact(reply)
            if unknown:
                answers.append(rng.choice(DONT_KNOW).format(name=unknown))
        return answers


def _mentions_fact(text: str, view: SimView) -> bool:
    user = view.scenario.user
    return any(_mentions(text, name) for name in (*user.known_facts, *user.never_reveal))


def _say(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


_ASKED_FOR = re.compile(
    r"\b(?:your|the)\s+((?:order|account|customer|ticket|booking|reference)\s*(?:id|number|#))", re.IGNORECASE
)


def _asked_unknown_fact(reply: str) -> str | None:
    match = _ASKED_FOR.search(reply)
    return match.group(1).lower() if match else None
