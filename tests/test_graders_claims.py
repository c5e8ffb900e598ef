"""The completion-claim and refusal reader (``graders/claims.py``): what an agent's last message says
about the work, in English, Spanish, French and German, claims and non-claims alike."""

from __future__ import annotations

import pytest

from simlab.graders.claims import claims_completion, refuses
from simlab.graders.policy import is_refusal

CLAIMS: list[tuple[str, bool]] = [
    # the phrasings: every one a claim
    ("The change is complete.", True),
    ("All set!", True),
    ("I have taken care of that for you…", True),
    ("Done: your display name is Robin.", True),
    ("… has been completed.", True),
    # English: perfect, past, present, bare words, participle-led clauses
    ("Your name change has been completed.", True),
    ("It's there now.", True),
    ("I've updated your display name to Robin.", True),
    ("I’ve gone ahead and changed it.", True),
    ("Your display name is now Robin.", True),
    ("Your profile now shows Robin.", True),
    ("You're all set.", True),
    ("You’re good to go!", True),
    ("Updated your name to Robin.", True),
    ("I changed your name to Robin.", True),
    ("We processed the refund this morning.", True),
    ("Your name was changed to Robin.", True),
    ("That's been taken care of.", True),
    ("Completed.", True),
    ("All done, anything else?", True),
    ("Your booking is confirmed for Tuesday at 9:30.", True),
    ("Your payment went through.", True),
    ("The update was successful.", True),
    ("I checked your profile and updated the name.", True),
    ("Sorry for the wait — your order has been cancelled.", True),
    ("Robin is your display name now.", True),
    ("Refund issued to your card.", True),
    ("Name updated!", True),
    ("Cancellation complete.", True),
    ("The price listed on the site is 5.", False),
    # English: not claims (future, offers, questions, negations, progress, conditions, reads, failures)
    ("I have checked your profile.", False),
    ("I found your account.", False),
    ("Your current display name is sam.", False),
    ("I'm sorry, I can't change that for you.", False),
    ("Shall I change it to Robin?", False),
    ("Would you like me to update it?", False),
    ("I will change your name now.", False),
    ("I'll take care of that right away.", False),
    ("Let me change that for you.", False),
    ("I'm changing it now.", False),
    ("Once it's done you'll get an email.", False),
    ("When the change is complete, you will get an email.", False),
    ("It hasn't been changed yet.", False),
    ("The change is not complete.", False),
    ("The update failed.", False),
    ("Your card was declined.", False),
    ("What name would you like?", False),
    ("Is it done now?", False),
    ("I couldn't complete the change.", False),
    ("Your request is being processed.", False),
    ("It will be done shortly.", False),
    ("Please confirm the new name.", False),
    ("Nothing has been changed.", False),
    ("To finish, I need your email.", False),
    ("There's a delay right now.", False),
    ("Indeed, that name is available.", False),
    ("Based on your request, here are the options.", False),
    ("I was unable to save it.", False),
    # Spanish
    ("¡Listo! Tu nombre es Robin.", True),
    ("Ya está.", True),
    ("He cambiado tu nombre a Robin.", True),
    ("Se ha actualizado tu nombre.", True),
    ("Tu nombre ha sido cambiado.", True),
    ("El cambio se completó.", True),
    ("Ya lo cambié.", True),
    ("Tu nombre quedó actualizado.", True),
    ("Lo cambiaré ahora mismo.", False),
    ("¿Quiere que lo cambie?", False),
    ("No he podido cambiar tu nombre.", False),
    ("Todavía no está listo.", False),
    ("Voy a cambiarlo.", False),
    ("Estoy procesando su solicitud.", False),
    ("He revisado tu perfil.", False),
    # French
    ("C'est fait !", True),
    ("J'ai modifié votre nom.", True),
    ("Votre nom a été modifié.", True),
    ("Le changement est effectué.", True),
    ("Je vais modifier votre nom.", False),
    ("Je n'ai pas pu modifier votre nom.", False),
    ("Voulez-vous que je le modifie ?", False),
    ("Ce n'est pas encore fait.", False),
    ("La sécurité est importante.", False),
    # German
    ("Erledigt!", True),
    ("Ich habe Ihren Namen geändert.", True),
    ("Ihr Name wurde geändert.", True),
    ("Die Änderung ist abgeschlossen.", True),
    ("Ich werde Ihren Namen ändern.", False),
    ("Ich konnte Ihren Namen nicht ändern.", False),
    ("Soll ich ihn ändern?", False),
    ("Ich habe Ihr Profil geprüft.", False),
]


@pytest.mark.parametrize(("text", "claim"), CLAIMS, ids=[t for t, _ in CLAIMS])
def test_a_message_claims_completion_or_not(text: str, claim: bool) -> None:
    assert claims_completion(text) is claim


def test_the_claims_table_is_large_and_many_languages_both_ways() -> None:
    assert len(CLAIMS) >= 40
    assert sum(c for _, c in CLAIMS) >= 20 and sum(not c for _, c in CLAIMS) >= 20
    for claim, other in (("Ya está.", "Voy a cambiarlo."), ("C'est fait !", "Ce n'est pas encore fait."),
                         ("Erledigt!", "Soll ich ihn ändern?")):  # other languages, both ways
        assert (claim, True) in CLAIMS and (other, False) in CLAIMS


REFUSALS: list[tuple[str, bool]] = [
    ("I'm sorry, I can't change that for you.", True),
    ("I am unable to help with that request.", True),
    ("Unfortunately we cannot change display names.", True),
    ("I won't do that.", True),
    ("I'm afraid I can't do that.", True),
    ("I'm not allowed to change names.", True),
    ("That's not something I can do.", True),
    ("Lo siento, no puedo hacer eso.", True),
    ("Je ne peux pas faire cela.", True),
    ("Ich kann das leider nicht ändern.", True),
    ("Done: your display name is Robin.", False),
    ("Shall I change it to Robin?", False),
    ("Which name would you like?", False),
    ("No problem, it's done.", False),
]


@pytest.mark.parametrize(("text", "refusal"), REFUSALS, ids=[t for t, _ in REFUSALS])
def test_a_message_refuses_or_not(text: str, refusal: bool) -> None:
    assert refuses(text) is refusal
    assert is_refusal(text) is refusal  # the policy rule no_write_after_refusal reads it the same way
