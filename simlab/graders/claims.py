"""What an agent's message says about the work: did it claim the work is done, or refuse it?

One reading of the text with the confirmation reader (``confirm.py``): the same normalising and
the same clauses (split at . ! ? ; : , dashes, "but"), each clause further split at "and" (and
its Spanish, French and German words), and each part read on its own. A part **claims completion**
when it reports the work done in any tense, without a negation, a future or modal verb, a
condition, an offer or a question:

- perfect and past, active or passive: "I have taken care of that", "I've updated it", "I changed
  your name", "Your name has been changed", "It was updated", "that's been handled";
- present state: "The change is complete", "it's done", "You're all set", "your name is now
  Robin", "it's there now", "your profile now shows Robin";
- a bare word or a clause led by a participle: "Done", "All set!", "Completed.", "Updated your name";
- Spanish ("Listo", "Ya está", "He cambiado…", "Se ha actualizado", "Se completó"), French ("C'est
  fait", "J'ai modifié…", "Votre nom a été modifié") and German ("Erledigt", "Ich habe … geändert",
  "Ihr Name wurde geändert").

Verbs that report reading or a failure are not the work done: "I checked", "I found", "was
declined", "the update failed". Not a claim: "I'll change it", "It will be done", "Once it's done…",
"It hasn't been changed", "is being processed", "Shall I change it?", "¿Lo cambio?".

A message **refuses** when it says the agent cannot or will not act ("I can't", "I'm unable",
"I won't", "unfortunately we cannot", "no puedo", "je ne peux pas", "ich kann … nicht" …):
``policy.no_write_after_refusal`` reads refusals with it too.

tests/test_graders_claims.py holds the table of phrasings, claims and not.
"""

from __future__ import annotations

import functools
import re

from simlab.graders.confirm import clauses, normalise

__all__ = ["claims_completion", "completion_claim", "refuses"]

_AND = re.compile(r"\s(?:and|y|et|und)\s")
_LEAD = re.compile(r"^[\s¡¿\"'«“(]+")

# English participles: regular -ed, and irregular ones that mean work done
_IRREGULAR = (
    "done|made|set|sent|put|taken|given|paid|written|built|kept|cut|bought|brought|sold|begun|chosen|"
    "gone|shut|split|undone|withdrawn|reset|rewritten|redone|remade|resent|overwritten|frozen|hidden"
)
_PARTICIPLE = rf"(?:[a-z]+ed|{_IRREGULAR})"
# participles that do not report the work done: reading, failing, feelings, states
_NOT_DONE = frozenset(
    """
    checked looked found reviewed verified searched seen read received noted asked tried attempted informed
    declined rejected denied refused failed blocked required needed expected supposed allowed located based
    called named delayed limited restricted pleased excited interested concerned worried confused used
    noticed wanted hoped thought believed assumed understood realized realised suggested recommended offered
    mentioned explained figured meant liked loved hated guessed wondered apologized apologised sorry
    experienced detailed related advised unfounded unresolved unchanged unsupported unauthorized unauthorised
    unverified unconfirmed unprocessed indeed need needs feed seed speed proceed succeed exceed agreed embed
    bed red shed escalated forwarded passed""".split()
)
_ADVERBS = (
    r"(?:(?:just|now|already|also|all|since|successfully|fully|officially|completely|finally|been|"
    r"gone ahead and|went ahead and)\s+)*"
)
_EN_CLAIMS = [
    # perfect: I've updated, has been completed
    rf"\b(?:have|has|had|'ve|'s)\s+{_ADVERBS}(?P<p>{_PARTICIPLE})\b",
    rf"\b(?:is|are|was|were|got|gets|'re|'m)\s+{_ADVERBS}(?P<p>{_PARTICIPLE})\b",  # passive: was updated
    rf"\b(?:is|are|was|were|'s|'re|'m)\s+{_ADVERBS}(?:complete|finished|through|in place|sorted|good to "
    r"go|live)\b",
    rf"\b(?:i|we)\s+{_ADVERBS}(?:(?P<p>{_PARTICIPLE})|did|took care of|went through)\b",  # I changed it
    # is now Robin, it's there now
    r"^(?!(?:there|here|what|how|where|who)\b).*\b(?:is|are|'s|'re)\b.*\bnow\b",
    r"\bnow\s+(?:shows?|reads?|says?|displays?|appears?|lists?|reflects?|contains?|includes?)\b",
    r"\b(?:went|gone) through\b",
    r"\bgood to go\b",
    r"\bsuccess(?:ful|fully)?\b",
    r"\ball set\b",
    r"^(?:all\s+)?(?:done|complete|completed|finished|sorted|set|fixed|taken care of)$",
    # led by a participle: Updated your name
    r"^(?P<p>[a-z]{2,}ed|done|made|sent|taken|written|built|undone)\b",
    # a headline: a short noun phrase and a participle ("Refund issued to your card", "Name updated")
    r"^(?!(?:you|they|he|she|it|i|we)\b)(?:[\w'-]+\s+){1,3}(?P<p>[a-z]{2,}ed|done|sent|made|set|taken|reset|paid|"
    r"complete)(?:\s+(?:to|for|on|at|in|as|successfully|now|already)\b(?!.*\b(?:is|are|was|were)\b).*)?$",
]
_ES_PART = (
    r"(?:\w+(?:ado|ada|ados|adas|ido|ida|idos|idas)|hecho|hecha|puesto|escrito|resuelto|vuelto|abierto|"
    r"devuelto|cubierto)"
)
_ES_CLAIMS = [
    r"^(?:(?:ya|todo)\s+)?(?:listo|lista|listos|hecho|hecha|terminado|terminada|terminé|completado|completada|"
    r"resuelto|solucionado|actualizado|cambiado)$",
    r"\bya (?:está|esta|quedó|quedo)\b",
    r"\btodo listo\b",
    rf"\b(?:he|hemos|ha|han|has)\s+(?:sido\s+)?(?:ya\s+)?(?P<p>{_ES_PART})\b",
    rf"\b(?:está|están|esta|quedó|quedo|queda|quedaron|fue|fueron)\s+(?:ya\s+)?(?:(?P<p>{_ES_PART})|listo|lista|"
    r"completo|completa)\b",
    r"\bse \w+ó\b",
    r"\b(?:lo|los|las|les|ya) (?:\w+é|hice|hicimos)\b",
]
_FR_PART = r"(?:\w+(?:é|ée|és|ées)|fait|faite|faits|mis|mise|pris|prise|fini|finie)"
_FR_CLAIMS = [
    r"^(?:c'est |voilà,? c'est )?(?:fait|réglé|terminé|fini|effectué|c'est chose faite)$",
    r"\bc'est (?:fait|réglé|terminé|fini|effectué)\b",
    r"\btout est (?:prêt|réglé|fait|en ordre)\b",
    r"\b(?:j'ai|nous avons|on a|il a|elle a|a été|ont "
    r"été|est|sont)\s+(?:(?:bien|déjà|maintenant|correctement|"
    rf"été)\s+)*(?P<p>{_FR_PART})\b",
]
_DE_PART = (
    r"(?:ge\w{2,}(?:t|en)|\w+iert|erledigt|abgeschlossen|übernommen|eingetragen|hinterlegt|umgestellt|"
    r"angepasst|eingerichtet|aufgenommen|vorgenommen|ausgeführt|durchgeführt|freigeschaltet)"
)
_DE_CLAIMS = [
    r"^(?:alles\s+|ist\s+)?(?:erledigt|fertig|abgeschlossen|erfolgreich|geschafft|gemacht|gespeichert|geändert|"
    r"aktualisiert)$",
    rf"\b(?:habe|haben|hat|hast|habt|ist|sind|wurde|wurden|worden)\b.*\b(?P<p>{_DE_PART})\b",
    r"\b(?:alles|das) (?:ist )?erledigt\b",
]
_ES_NOT_DONE = frozenset(
    "revisado buscado encontrado verificado comprobado consultado visto leído recibido "
    "intentado podido querido rechazado denegado negado fallado sido".split()
)
_FR_NOT_DONE = frozenset(
    "vérifié cherché trouvé regardé consulté vu lu reçu essayé refusé échoué demandé désolé "
    "désolée navré navrée été".split()
)
_DE_NOT_DONE = frozenset(
    "geprüft gefunden gesehen gesucht gelesen gefragt versucht abgelehnt gescheitert "
    "fehlgeschlagen überprüft kontrolliert informiert gewesen gesagt "
    "gehört gewusst gedacht geglaubt gewollt blockiert".split()
)
_CLAIMS = (
    [(re.compile(p), _NOT_DONE) for p in _EN_CLAIMS]
    + [(re.compile(p), _ES_NOT_DONE) for p in _ES_CLAIMS]
    + [(re.compile(p), _FR_NOT_DONE) for p in _FR_CLAIMS]
    + [(re.compile(p), _DE_NOT_DONE) for p in _DE_CLAIMS]
)

_BLOCKS = re.compile(
    "|".join(
        [
            # negation
            r"\b(?:not|never|no|no longer|nothing|none|unable|cannot|yet to|failed to)\b|n't\b|\bnot yet\b",
            r"\b(?:nunca|todavía no|aún no|tampoco|ningún|ninguna|nada)\b",
            r"\bne\b|(?:^|\s)n'|\b(?:pas|jamais|aucun|aucune|rien)\b",
            r"\b(?:nicht|kein|keine|keinen|nie|niemals)\b",
            # future, modal, offer, instruction
            r"\b(?:will|'ll|shall|going to|gonna|about to|would|'d|could|should|might|may|can|need to|needs "
            r"to|have to|"
            r"has to|must|want to|wants to|plan to|try to|let me|let's|please|make sure)\b",
            r"\b(?:voy|vamos|va|van) "
            r"a\b|\b\w+(?:aré|eré|iré|ará|erá|irá|aremos|eremos|iremos)\b|\b(?:puedo|podemos|debo|"
            r"debe|necesito|quiere|quieres|desea)\b",
            r"\b(?:vais|vas|va|vont|allons|allez)\b|\b\w{3,}(?:erai|erons|eront|irai|irons)\b|\bsera\b|\bpouvez\b|\bvoulez\b",
            r"\b(?:werde|werden|wird|wirst|möchten|möchte|soll|sollen|kann|können|muss|müssen)\b",
            # in progress
            r"\b(?:being|processing|updating|changing|working on|in progress|pending|underway|still)\b",
            r"\b(?:i'm|we're|i am|we are|is|are) \w+ing\b",
            r"\b(?:estoy|estamos|están)\s+\w+(?:ando|iendo)\b",
            r"\ben proceso\b|\ben cours\b|\bgerade\b|\bin bearbeitung\b",
        ]
    )
)
_CONDITION = re.compile(
    r"^(?:once|when|whenever|if|after|as soon as|until|unless|before|to|in order to|so that|"
    r"cuando|si|una vez que|en cuanto|después de que|antes de que|para|quand|lorsque|"
    r"une fois que|dès que|pour|avant|après|wenn|sobald|falls|nachdem|bevor|um)\b"
)


def _part_claims(part: str) -> str | None:
    if _CONDITION.match(part) or _BLOCKS.search(part):
        return None
    for rx, not_done in _CLAIMS:
        for match in rx.finditer(part):
            word = match.groupdict().get("p")
            if word is None or word not in not_done:
                return match.group(0)
    return None


@functools.lru_cache(maxsize=4096)
def completion_claim(text: str) -> str | None:
    """The words of ``text`` that claim the work is done, or None. Cached: agents repeat themselves."""
    for body, asks, _ in clauses(normalise(text)):
        if asks or "¿" in body:
            continue
        for part in _AND.split(body):
            found = _part_claims(_LEAD.sub("", part).strip())
            if found is not None:
                return found
    return None


def claims_completion(text: str) -> bool:
    """Whether an agent's message claims the work is done (any tense; English, Spanish, French, German)."""
    return completion_claim(text) is not None


_REFUSAL = re.compile(
    "|".join(
        [
            r"\b(?:i can'?t|i cannot|i can not|i'?m unable|i am unable|we'?re unable|we are unable|i "
            r"won'?t|i will not|"
            r"we won'?t|we will not|(?:not|n'?t) able to|unfortunately,? (?:we|i) (?:can'?t|cannot|can "
            r"not|are unable|"
            r"am unable|won'?t))",
            r"\bi'?m (?:not (?:allowed|permitted|authori[sz]ed)|afraid i can'?t)\b|\bi (?:must|have to) "
            r"decline\b",
            r"\bnot (?:something|a thing) (?:i|we) can\b",
            r"\bno (?:puedo|podemos|es posible|me es posible)\b",
            r"\b(?:je|nous) ne (?:peux|pouvons|suis|sommes) pas\b|\bimpossible de\b",
            r"\b(?:ich|wir) (?:kann|können)\b(?:\s+\S+){0,5}\s+nicht\b|\bnicht möglich\b",
        ]
    )
)


def refuses(text: str) -> bool:
    """Whether an agent's message says it cannot or will not act."""
    return _REFUSAL.search(normalise(text)) is not None
