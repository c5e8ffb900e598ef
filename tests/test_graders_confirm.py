"""The confirmation recogniser behind ``after_confirmation``: what counts as the agent asking and
as the user agreeing, refusing, hedging or asking back — on real-looking replies to questions about
many different actions (the action's verb must never read as a refusal)."""

from __future__ import annotations

import pytest

from simlab.graders.confirm import ask_kind, builtin, merge, proposed_verb, stance
from simlab.specs.expect import ConfirmationPhrases

CANCEL = "I found booking B-12 for Friday at 10:00. Shall I cancel it?"
STOP = "Your order O-7 has not shipped yet. Do you want me to stop the order?"
REFUND = "Would you like me to refund 49.90 to your original card?"
REMOVE = "Should I remove the old address from your account?"
BOOK = "Dr. Lee has a slot on Tuesday at 9:30. Shall I book it for you?"
MOVE = "Would you like me to move your appointment to Thursday at 14:00?"
TRANSFER = "Shall I transfer 200 EUR from checking to savings now?"
DELETE = "Are you sure you want me to delete the saved card ending 4242?"
SUMMARY = "To confirm: a refill of amoxicillin 500 mg sent to the Main Street pharmacy. Is that correct?"
RENEW = "Do you want me to renew the library loan for another two weeks?"

REPLIES: list[tuple[str, str, str]] = [
    # agreement, naming many different actions; negations that are not refusals
    (CANCEL, "Yes, no problem", "agree"),
    (STOP, "Sure, go ahead and stop the order", "agree"),
    (REFUND, "Yes, and don't forget the receipt", "agree"),
    (CANCEL, "Yes please cancel it", "agree"),
    (CANCEL, "Cancel it.", "agree"),
    (BOOK, "Book it!", "agree"),
    (BOOK, "yep, book it", "agree"),
    (REMOVE, "Yes remove it, I don't use that address anymore", "agree"),
    (MOVE, "That works for me, thanks", "agree"),
    (TRANSFER, "Ok", "agree"),
    (TRANSFER, "okay do it", "agree"),
    (DELETE, "Yes, I'm sure. Delete it.", "agree"),
    (SUMMARY, "That's right.", "agree"),
    (SUMMARY, "Correct", "agree"),
    (RENEW, "Sounds good", "agree"),
    (RENEW, "Yes please, no rush though", "agree"),
    (REFUND, "Not a problem, go ahead", "agree"),
    (MOVE, "Sure, why not", "agree"),
    (BOOK, "I don't mind, book it", "agree"),
    (REFUND, "Absolutely.", "agree"),
    (STOP, "Yes — stop it, I ordered the wrong size", "agree"),
    (TRANSFER, "yeah go for it", "agree"),
    (CANCEL, "No worries, please go ahead", "agree"),
    (SUMMARY, "Yes, I confirm.", "agree"),
    (REFUND, "Yes please. How long will it take to show up?", "agree"),
    (REMOVE, "👍", "agree"),
    (STOP, "No wait — yes, go ahead and stop it", "agree"),
    (REFUND, "Yes, to the card, not store credit", "agree"),
    (DELETE, "Yes, don't worry about it", "agree"),
    (BOOK, "Of course", "agree"),
    # refusals
    (CANCEL, "No.", "refuse"),
    (CANCEL, "No, don't cancel it", "refuse"),
    (STOP, "Don't stop it, I still want it", "refuse"),
    (REFUND, "no thanks", "refuse"),
    (TRANSFER, "Wait", "refuse"),
    (TRANSFER, "Hold on, not yet", "refuse"),
    (MOVE, "Actually, I changed my mind", "refuse"),
    (DELETE, "Nope, keep it", "refuse"),
    (REMOVE, "Yes — actually no, leave it", "refuse"),
    (BOOK, "I'd rather not", "refuse"),
    (SUMMARY, "No, that's wrong, it's the Elm Street pharmacy", "refuse"),
    (RENEW, "Not now, thanks", "refuse"),
    (REFUND, "Of course not!", "refuse"),
    (CANCEL, "Please don't", "refuse"),
    (REFUND, "Stop.", "refuse"),
    (STOP, "Stop it.", "agree"),  # the proposed action echoed back
    (REFUND, "I don't want that", "refuse"),
    (MOVE, "Never mind, leave it", "refuse"),
    (TRANSFER, "Absolutely not", "refuse"),
    (SUMMARY, "That's not right", "refuse"),
    # hedges
    (CANCEL, "Hmm, I'm not sure", "hedge"),
    (BOOK, "Maybe, let me check my calendar first", "hedge"),
    (TRANSFER, "Let me think about it", "hedge"),
    (REFUND, "Yes, but is there a fee?", "hedge"),
    (MOVE, "Ok but not until I check with my wife", "hedge"),
    (RENEW, "I don't know", "hedge"),
    # questions back
    (CANCEL, "Will I get my deposit back?", "question"),
    (TRANSFER, "How much is in savings right now?", "question"),
    (BOOK, "Is there anything earlier?", "question"),
    (DELETE, "Which card is that again?", "question"),
    (SUMMARY, "What strength did the doctor prescribe?", "question"),
    # neither
    (REFUND, "My order number is A123", "none"),
    (CANCEL, "It's for my daughter.", "none"),
]


@pytest.mark.parametrize(("question", "reply", "expected"), REPLIES, ids=[r for _, r, _ in REPLIES])
def test_a_reply_is_read_as_agreement_refusal_hedge_or_question(question: str, reply: str, expected: str) -> None:
    assert ask_kind(question) is not None
    assert stance(reply, question=question) == expected


def test_the_table_is_large_and_covers_every_stance() -> None:
    assert len(REPLIES) >= 40
    assert {e for _, _, e in REPLIES} == {"agree", "refuse", "hedge", "question", "none"}


@pytest.mark.parametrize(("text", "kind"), [
    ("Shall I go ahead and cancel it?", "strong"),
    ("Do you want me to stop the order?", "strong"),
    ("Want me to renew it?", "strong"),
    ("Are you sure?", "strong"),
    ("Okay to proceed?", "strong"),
    ("Let me know if I should send it.", "strong"),
    ("Is that correct?", "weak"),
    ("Please confirm the new address: 12 Elm St.", "weak"),
    ("Does that sound right?", "weak"),
    ("May I have your date of birth?", None),
    ("What is your booking number?", None),
    ("Your booking is cancelled.", None),
    ("Should I have asked for your postcode first? Sorry. Which postcode is it?", None),
])
def test_what_counts_as_the_agent_asking(text: str, kind: str | None) -> None:
    assert ask_kind(text) == kind


def test_the_proposed_verb_is_read_from_the_question() -> None:
    assert proposed_verb("Shall I go ahead and cancel it?") == "cancel"
    assert proposed_verb("Do you want me to also stop the order?") == "stop"
    assert proposed_verb("Would you like me to book Tuesday?") == "book"
    assert proposed_verb("Your booking is cancelled.") is None


def test_phrase_lists_can_be_extended_or_replaced() -> None:
    spanish = merge(builtin(), ConfirmationPhrases(agree=[r"\bvale\b", r"\bdale\b"], refuse=[r"\bni hablar\b"]))
    assert stance("vale", spanish) == "agree" and stance("vale", builtin()) == "none"
    assert stance("ni hablar", spanish) == "refuse"
    assert stance("yes", spanish) == "agree"  # extended: the built-in words still count
    strict = merge(builtin(), ConfirmationPhrases(agree=[r"^i confirm\b"], replace=True))
    assert stance("yes", strict) == "none" and stance("I confirm", strict) == "agree"
    assert stance("no", strict) == "refuse"  # lists it does not give stay built in
    asks = merge(builtin(), ConfirmationPhrases(ask=[r"\breply y to proceed\b"]))
    assert ask_kind("Reply Y to proceed.", asks) == "strong" and ask_kind("Reply Y to proceed.") is None
