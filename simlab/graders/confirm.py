"""Recognising consent in a conversation: the ``after_confirmation`` rule's reading of the text.

Two questions, answered without knowing which action is meant (its verb may be "stop", "cancel"
or "remove", and those words must not read as a refusal):

- Did the agent **ask**? A *strong* ask proposes an action and waits for a yes: "shall I / should
  I / do you want me to / would you like me to / want me to / are you sure / OK to proceed /
  do I have your permission / let me know if I should". A *weak* ask checks a fact or a summary:
  "is that correct / right / OK?", "please confirm", "can you confirm", "to confirm". Both open a
  question a yes can answer; only a strong ask takes back a consent given before (it asks anew).
  Requests for information ("may I have your date of birth?") are not asks.
- What did the user **answer**? ``stance`` reads a reply clause by clause (split at . ! ? ; ,
  dashes and "but") and returns ``agree``, ``refuse``, ``hedge``, ``question`` or ``none``:

  * agreement idioms that contain a negation are agreement: "no problem", "no worries", "not a
    problem", "why not", "I don't mind"; negations about something else are neutral: "don't forget
    the receipt", "don't worry", "no rush", "no need to email me";
  * a refusal is a "no" that stands as an answer ("No.", "No, …", "nope", "no thanks", "no
    way"), "not yet / not now", "wait", "hold on", "stop" alone, "never mind", "forget it",
    "changed my mind", "on second thought", "rather not", "please don't", "don't do it", "I
    don't think so", "I disagree" — or, in the reply's first clause (or after "but" or
    "actually"), "don't …", "not …", "I don't want …";
  * a hedge is doubt: "maybe", "not sure", "let me think", "hmm", "I don't know", "depends";
    agreement followed by "but …" is a hedge too ("yes, but is there a fee?", "yes, but not
    until Monday"): the consent is conditional;
  * a question back is a clause that asks something, with no agreement in it;
  * agreement is a yes-word (yes, yeah, sure, ok, fine, correct, right, confirm, go ahead, please
    do, do it, proceed, sounds good, absolutely, of course, agreed, I do, 👍 …), or a clause that
    starts with the verb the agent's own question proposed ("Shall I book it?" — "Book it.");
  * the last clause with a stance decides: "yes — actually no" refuses, "no wait, yes, go
    ahead" agrees.

A scenario (``expect.confirmation``) and a rule (its ``confirmation``) may add phrases to each list
(regexes, any case) or, with ``replace: true``, replace the lists they give.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ASK",
    "Phrases",
    "Stance",
    "ask_kind",
    "builtin",
    "clauses",
    "merge",
    "normalise",
    "proposed_verb",
    "stance",
]

Stance = Literal["agree", "refuse", "hedge", "question", "none"]
ASK = Literal["strong", "weak"]

_STRONG_ASK = [
    r"\b(?:shall|should) (?:i|we)\b(?! (?:have|ask|get|need)\b)",
    r"\b(?:do|would) you (?:want|like) me to\b",
    r"\b(?:want|like) me to\b",
    r"\bwould you like (?:us|me) to\b",
    r"\bready for me to\b",
    r"\bcan i (?:go ahead|proceed|do (?:that|it|this))\b",
    r"\bmay i (?:go ahead|proceed)\b",
    r"\bis it (?:ok|okay|alright|all right|fine) (?:if i|for me to|to)\b",
    r"\bok(?:ay)? (?:to|if i) (?:proceed|go ahead|continue)\b",
    r"\bare you sure\b",
    r"\b(?:do you want|would you like|are you ready|ready) to (?:proceed|continue|go ahead|confirm)\b",
    r"\b(?:go ahead|proceed|continue)\s*\?",
    r"\b(?:let me know|tell me) if (?:i should|you(?:'d| would) like me to|you want me to)\b",
    r"\b(?:do i|can i) (?:have|get) your (?:permission|consent|ok|okay|go-ahead|approval|authori[sz]ation)\b",
    r"\byes or no\b",
]
_WEAK_ASK = [
    r"\bis (?:that|this|it|everything) (?:ok|okay|alright|all right|fine|correct|right|good)\b",
    r"\b(?:please|can you|could you|would you|do you) confirm\b",
    r"\bto confirm\b",
    r"\bconfirm\s*\?",
    r"\b(?:does|do) (?:that|this) (?:sound|look) (?:ok|okay|good|right|correct|fine)\b",
    r"\bsound good\s*\?",
    r"\bright\s*\?\s*$",
    r"\bcorrect\s*\?\s*$",
]

# Idioms first: agreement that contains a negation, and negations about something else.
_AGREE_IDIOMS = re.compile(
    r"\b(?:no problems?|no worries|not a problem|no objections?|why not|(?:i )?(?:do not|don'?t) mind|"
    r"(?:i )?would ?n'?t mind|wouldn'?t mind|i don'?t see why not|of course(?! not)|sure thing|"
    r"i guess so|i suppose so|guess so|i think so|i believe so|uh[- ]?huh|mm[- ]?hmm|mhm+|yes "
    r"yes)\b|👍|✅|👌",
    re.I,
)
_NEUTRAL_IDIOMS = re.compile(
    r"\b(?:(?:do not|don'?t|dont) (?:forget|worry|hesitate|stress|rush)|no (?:rush|hurry|need(?: "
    r"to)?|pressure)|"
    r"nothing else|no more questions|not much|no big deal)\b",
    re.I,
)

_NO_PARTICLE = re.compile(
    r"^(?:no+|nope|nah|naw|negative)(?=$|[^\w']|\s+(?:thanks?|thank|thx|ty|sorry|please|way|wait|no+|i|i'?m|i'?d|"
    r"we|you|don'?t|dont|do "
    r"not|not|never|stop|actually|sir|ma'?am|just|that|this|it|leave|hold|let'?s|let|keep|"
    r"forget|definitely|absolutely|really|nothing|thats?|that'?s)\b)",
    re.I,
)
_REFUSE = [
    r"^(?:absolutely|certainly|definitely|of course|hell|god|please|really) not\b",
    r"^no way\b",
    r"^not (?:yet|now|right now|today|at the moment|at this (?:time|point|moment)|so fast|really|quite)\b",
    r"^(?:wait|hold on|hang on|hold up|whoa|woah)\b(?! (?:for|until|till)\b)",
    r"^(?:just |give me |gimme )?(?:a|one) (?:sec|second|moment|minute)\b",
    r"^(?:please )?stop(?: (?:it|that|please|right there|now))?(?: please)?$",
    r"\bnever ?mind\b",
    r"^forget (?:it|that|this|about it)\b",
    r"\bchanged? my mind\b",
    r"\bchange of plans?\b",
    r"\bon second thoughts?\b",
    r"\bscratch that\b",
    r"\bleave it(?: as it is| be| alone)?$",
    r"\blet'?s not\b",
    r"\b(?:i'?d|i would) rather (?:not|you didn'?t)\b",
    r"^rather not\b",
    r"\bi'?d prefer (?:you )?not\b",
    r"\bplease (?:don'?t|do not|dont)\b",
    r"\b(?:don'?t|do not|dont) (?:do (?:it|that|this|anything)|go ahead|proceed|bother)\b",
    r"\bi (?:do not|don'?t|dont) (?:think so|agree|consent|approve|authori[sz]e)\b",
    r"\bi (?:disagree|refuse|decline|object)\b",
    r"\bi (?:didn'?t|did not) (?:ask|agree|say)\b",
    r"\bthat'?s not what i\b",
    r"\bi said no\b",
    r"^(?:don'?t|do not|dont)!*$",
    r"\b(?:yeah|yes|ok|okay) no\b",
    r"\b(?:that'?s|that is|it'?s|this is) (?:not (?:right|correct|ok|okay|fine|what)|wrong|incorrect)\b",
]
_REFUSE_LEAD = [  # only in the reply's first clause, or after "but" / "actually"
    r"^(?:don'?t|do not|dont)\b",
    r"^not\b(?! (?:until|till|before|unless)\b)",
    r"^i (?:do not|don'?t|dont) (?:want|need)\b",
    r"^i'?d rather\b",
]
_HEDGE = [
    r"\b(?:maybe|perhaps|possibly|unsure|depends)\b",
    r"\bnot (?:so |really |too |entirely )?(?:sure|certain)\b",
    r"\blet me (?:think|check|see|ask|get back|talk|look)\b",
    r"\bi (?:need|have|want) to (?:think|check|ask|talk)\b",
    r"\bi'?ll (?:think|check|get back|let you know)\b",
    r"\bthink about it\b",
    r"^(?:hmm+|umm*|erm+|uh+|err+)\b",
    r"\bi (?:do not|don'?t|dont) know\b",
    r"\bdunno\b",
    r"^(?:only )?(?:not )?(?:until|till|before|unless|if)\b",
    r"\bi guess not\b",
    r"\bi'?m torn\b",
    r"\bnot yet sure\b",
]
_AGREE = [
    r"\b(?:yes|yeah|yea|yep|yup|ya|yah|aye|sure|ok|okay|okey|k|kk|alright|all right|correct|"
    r"confirm(?:ed|s)?|agreed?|affirmative|absolutely|definitely|certainly|indeed|exactly|totally|proceed|approved?)\b",
    r"\bgo (?:ahead|for it|on)\b",
    r"\bplease do\b",
    r"\bdo (?:it|that|so)\b",
    r"\bcarry on\b",
    r"\bsounds? (?:good|great|fine|perfect)\b",
    r"\bthat (?:works|would be (?:great|good|perfect|lovely|fine))\b",
    r"\bworks for me\b",
    r"\blet'?s (?:do (?:it|that)|go)\b",
    r"\bmake it so\b",
    r"\bby all means\b",
    r"\bi'?d (?:like|love) that\b",
    r"^i do\b",
    r"\byes please\b",
    r"\bthat'?s right\b",
]
_AGREE_WEAK = [  # agreement only where nothing was refused before it: "not the card, store credit please"
    r"\b(?:please|fine|right|perfect|great|lovely|good)\b",
]
_QUESTION_START = re.compile(
    r"^(?:how|what|when|where|why|which|who|whose|will|would|is|are|can|could|do|does|did|"
    r"should|shall|am|was|were|have|has|won'?t|isn'?t|aren'?t)\b",
    re.I,
)
_CONTRAST = re.compile(r"^(?:but|though|although|however|except|actually|only)\b[\s,]*", re.I)
_FILLER = re.compile(r"^(?:and|so|oh|well|then|also|um|uh)\b[\s,]*", re.I)
_SPLIT = re.compile(r"([.!?;:]+|,|\s[-–—]+\s|[–—]|\.\.\.|…|\bbut\b|\bthough\b|\bhowever\b)", re.I)
_VERB = re.compile(
    r"\b(?:shall|should) (?:i|we)|\b(?:want|like) (?:me|us) to|\bready for me to|\bis it "
    r"(?:ok|okay|alright|fine) "
    r"(?:if i|for me to|to)|\bcan i|\bmay i",
    re.I,
)
_SKIP_AFTER_ASK = {"go", "ahead", "and", "also", "now", "then", "just", "please", "still", "first", "quickly"}


@dataclass(frozen=True)
class Phrases:
    """The compiled phrase lists the recogniser uses (built in, or extended by a scenario or rule)."""

    strong_ask: tuple[re.Pattern[str], ...]
    weak_ask: tuple[re.Pattern[str], ...]
    agree: tuple[re.Pattern[str], ...]
    refuse: tuple[re.Pattern[str], ...]
    refuse_lead: tuple[re.Pattern[str], ...]
    hedge: tuple[re.Pattern[str], ...]
    agree_weak: tuple[re.Pattern[str], ...] = ()


def _compile(patterns: list[str] | tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.I) for p in patterns)


@functools.lru_cache(maxsize=1)
def builtin() -> Phrases:
    return Phrases(
        _compile(_STRONG_ASK),
        _compile(_WEAK_ASK),
        _compile(_AGREE),
        _compile(_REFUSE),
        _compile(_REFUSE_LEAD),
        _compile(_HEDGE),
        _compile(_AGREE_WEAK),
    )


def merge(base: Phrases, override: Any) -> Phrases:
    """``base`` with a spec's ``{ask, agree, refuse, hedge, replace}`` applied (None: ``base``).

    Added phrases go first, so an author's refusal outranks a built-in agreement in one clause.
    With ``replace``, each list the override gives replaces the built-in one (lists it leaves out
    stay); a replaced ``ask`` list is strong, and the weak asks go with it."""
    if override is None:
        return base
    ask, agree = _compile(override.ask), _compile(override.agree)
    refuse, hedge = _compile(override.refuse), _compile(override.hedge)
    if override.replace:
        given = override.model_fields_set
        return Phrases(
            ask if "ask" in given else base.strong_ask,
            () if "ask" in given else base.weak_ask,
            agree if "agree" in given else base.agree,
            refuse if "refuse" in given else base.refuse,
            () if "refuse" in given else base.refuse_lead,
            hedge if "hedge" in given else base.hedge,
            () if "agree" in given else base.agree_weak,
        )
    return Phrases(
        ask + base.strong_ask,
        base.weak_ask,
        agree + base.agree,
        refuse + base.refuse,
        base.refuse_lead,
        hedge + base.hedge,
        base.agree_weak,
    )


def normalise(text: str) -> str:
    """Lower case, one space between words, typographic apostrophes as ``'``."""
    return " ".join(text.replace("’", "'").replace("‘", "'").replace("`", "'").split()).lower()


def ask_kind(text: str, phrases: Phrases | None = None) -> ASK | None:
    """``strong`` when an agent message proposes an action and waits for a yes, ``weak`` when it
    asks to confirm a fact or a summary, None when it asks for neither."""
    p = phrases or builtin()
    norm = normalise(text)
    if any(rx.search(norm) for rx in p.strong_ask):
        return "strong"
    if any(rx.search(norm) for rx in p.weak_ask):
        return "weak"
    return None


def proposed_verb(text: str) -> str | None:
    """The verb the agent's question proposes: "Shall I go ahead and cancel it?" → ``cancel``."""
    norm = normalise(text)
    for match in _VERB.finditer(norm):
        words = re.findall(r"[a-z][a-z'-]*", norm[match.end() :])
        while words and words[0] in _SKIP_AFTER_ASK:
            words.pop(0)
        if words and words[0] not in ("i", "you", "we", "have", "get", "ask"):
            return words[0]
    return None


def clauses(text: str) -> list[tuple[str, bool, bool]]:
    """(clause, ends with a question mark, follows a contrast: "but", "actually" …)."""
    parts = _SPLIT.split(text)
    out: list[tuple[str, bool, bool]] = []
    contrast = False
    for i in range(0, len(parts), 2):
        body = parts[i].strip()
        sep = parts[i + 1] if i + 1 < len(parts) else ""
        asks = "?" in sep
        while True:
            stripped = _FILLER.sub("", body)
            marker = _CONTRAST.match(stripped)
            if marker:
                contrast, stripped = True, stripped[marker.end() :]
            if stripped == body:
                break
            body = stripped
        if body or asks:
            out.append((body, asks, contrast))
            contrast = False
        if sep.strip().lower() in ("but", "though", "however"):
            contrast = True
    return out


def _clause_stance(
    body: str, asks: bool, lead: bool, p: Phrases, verb: str | None
) -> Stance | Literal["weak"]:
    if _NO_PARTICLE.search(body):
        return "refuse"
    if (
        verb is not None
        and not asks
        and re.match(rf"(?:please )?(?:just )?{re.escape(verb)}\b(?! not)", body)
    ):
        return "agree"  # the proposed action, echoed: "Shall I stop the order?" — "Stop it."
    if any(rx.search(body) for rx in p.refuse):
        return "refuse"
    if lead and any(rx.search(body) for rx in p.refuse_lead):
        return "refuse"
    if any(rx.search(body) for rx in p.hedge):
        return "hedge"
    questioned = asks or _QUESTION_START.match(body) is not None
    if any(rx.search(body) for rx in p.agree) and not (asks and _QUESTION_START.match(body)):
        return "agree"
    if not questioned and any(rx.search(body) for rx in p.agree_weak):
        return "weak"
    return "question" if questioned else "none"


def stance(text: str, phrases: Phrases | None = None, *, question: str = "") -> Stance:
    """How a user's reply answers a request for consent (``question``: the agent's message it
    answers, whose proposed verb echoed back counts as agreement)."""
    p = phrases or builtin()
    norm = _NEUTRAL_IDIOMS.sub(" ", _AGREE_IDIOMS.sub(" yes ", normalise(text)))
    verb = proposed_verb(question) if question else None
    result: Stance = "none"
    for n, (body, asks, contrast) in enumerate(clauses(norm)):
        said = _clause_stance(body, asks, n == 0 or contrast, p, verb)
        if said == "weak":  # "please", "fine": agreement unless something was refused before
            said = "agree" if result != "refuse" else "none"
        if said == "agree" or said == "refuse":
            result = said
        elif said == "hedge":
            result = "hedge"
        elif said == "question" and result == "none":
            result = "question"
        elif result == "agree" and contrast:  # "yes, but …": conditional
            result = "hedge"
    return result


def __getattr__(name: str) -> object:
    """The completion-claim and refusal reading lives beside this one, on the same clauses
    (``claims.py``): ``confirm.claims_completion`` and ``confirm.refuses`` name it too."""
    if name in ("claims_completion", "completion_claim", "refuses"):
        from simlab.graders import claims

        return getattr(claims, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
