"""Deterministic simulator-drift checks: did the simulated user break its script?

A failed drift check makes the trial ``invalid``, not ``fail``, so every check here leans towards
passing when in doubt (a false alarm would hide an agent's real result). Decisions:

- revealed_secret: each never_reveal value, matched case-insensitively and allowing spaces, dashes
  and dots between its characters ("4242-4242 4242.4242"). A value given only as a description
  (list form without digits or "@", e.g. "the card number") cannot be matched and is listed as
  unchecked.
- invented_identifier: tokens that look like ids — emails, letters+digits (A123, C-17), 6+ digit
  runs or 7+ digit groups (card, phone) — that appear in none of: the user's goal, known facts and
  never-reveal values (also matched without separators), an inline persona, or an agent message
  before the user's. Whichever simulator spoke: a scripted line or a fixed opening that states an id
  the user was never given is flagged too (``simlab validate`` warns about such lines). Dates,
  ordinals and units (2nd, 10am, 5kg) are not ids. Each id is reported once.
- premature_stop (only when a WRITE is expected: expect.expected_actions, or a state assertion that
  asks for something missing from/different in the initial state): the user's stop signal came
  before each expected WRITE tool had succeeded (as often as listed) — or, with state assertions
  only, before any WRITE succeeded. Not drift, because the agent ended the conversation or the user
  kept to its script (the state check judges the outcome, and a false claim or a refusal of a
  legitimate request is the agent's failure):
  the agent's last message before the stop matched a success phrase, claimed the work was done in
  any tense or language the claim reader knows ("The change is complete", "All set!", "I have taken
  care of that", "Listo": ``claims.py``), or refused; a scripted user stopped on its script's last
  line (it played its script through) or ran out of lines (``script_ended``, or a stop with no line
  in records written before that reason existed); a replayed user stopped where its recording did
  (a turn up to the one the agent diverged at, or any with ``--divergence never``).
  Whatever the scenario expects: a user that stopped, gave up or asked for a human before the agent
  had answered once (after a scenario's history) drifted, unless it played its script through: the
  agent never had a turn, so the trial is neither its pass nor its fail. A user that gives up on, or
  asks past, an agent that did answer reacts to it: not drift (the state check judges the outcome).
- accepted_rejected (only with reject_phrases): an agent sentence offering or reporting a rejected
  outcome, answered by the user with agreement (yes/ok/sure/fine/that works/thanks…, or a stop) and
  no refusal. Ambiguous offers are skipped: "A or B", or a later question about something else
  that the user's "yes" may answer (unless the user names the rejected thing).
- role_swap: a user message written as the assistant ("Assistant:", "As an AI", "How can I help
  you", "I'm here to help", …). Not the agent's own words quoted back, in quotation marks or after
  "you said" ("You said 'I have processed your request' but nothing changed"): a reaction to the
  agent's failure, not the user speaking as the assistant.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from simlab.graders.base import Check, GradeContext, check_at, initial_snapshot, scenario_memo
from simlab.graders.claims import completion_claim, refuses
from simlab.graders.comparators import same_value
from simlab.graders.paths import MISSING, PathError, resolve
from simlab.graders.policy import calls_of
from simlab.graders.registry import grader
from simlab.sim.simulators.scripted import script_of
from simlab.specs import Persona, Scenario
from simlab.transcript import AgentMessage, Signal, UserMessage

__all__ = ["KINDS", "grade_drift", "identifiers", "known_identifiers", "unknown_identifiers"]

# the kinds of drift these checks find, each a check named ``drift:<kind>`` (``simlab coverage`` lists them)
KINDS = ("revealed_secret", "invented_identifier", "premature_stop", "accepted_rejected", "role_swap")

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_MIXED = re.compile(r"(?<![\w@.-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w@-])")
_GROUPED = re.compile(r"(?<![\w.,])\+?\d{2,}(?:[ -]\d{2,})+(?![\w]|[.,]\d)")
_PLAIN = re.compile(r"(?<![\w.,])\+?\d{6,}(?![\w]|[.,]\d)")
_NOT_ID = re.compile(
    r"^\d+(st|nd|rd|th|am|pm|h|hrs?|s|mins?|m|k|kg|g|cm|mm|km|gb|mb|tb|x|ml|l|lbs?|oz|in|ft|d|"
    r"days?|yrs?|p|min)$|^\d{4}-\d{2}-\d{2}$",
    re.I,
)
_SEPARATORS = re.compile(r"[\s\-.+()]")
_MAYBE_ID = re.compile(r"[\d@]")


def identifiers(text: str) -> list[str]:
    """Id-like tokens in ``text``, in order of appearance."""
    if not _MAYBE_ID.search(text):  # every pattern needs a digit or an @
        return []
    return list(_identifiers(text))


@functools.lru_cache(maxsize=4096)
def _identifiers(text: str) -> tuple[str, ...]:
    """Cached: agents and simulated users repeat their phrases across trials."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for regex in (_EMAIL, _GROUPED, _PLAIN, _MIXED):
        for m in regex.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken) or _NOT_ID.match(m.group(0)):
                continue
            if regex is _GROUPED and sum(ch.isdigit() for ch in m.group(0)) < 7:
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), m.group(0)))
    return tuple(token for _, token in sorted(found))


def _norm(token: str) -> str:
    return token.casefold() if "@" in token else _SEPARATORS.sub("", token.casefold())


def _flat(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    elif value is not None:
        yield str(value)


def _check(ctx: GradeContext, kind: str, found: list[tuple[int, str]], ok: str, **details: Any) -> Check:
    name = f"drift:{kind}"
    violations = [{**check_at(ctx.transcript, i), "reason": why} for i, why in found]
    if not found:
        return Check(name=name, kind="drift", status="pass", reason=ok, details={"violations": [], **details})
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return Check(
        name=name,
        kind="drift",
        status="fail",
        reason=found[0][1] + more,
        details={"violations": violations, **details},
        **check_at(ctx.transcript, found[0][0]),
    )


def _user_messages(ctx: GradeContext) -> list[tuple[int, UserMessage]]:
    """The simulated user's messages: a scenario's history (given, not simulated) is left out."""
    start = ctx.transcript.history_events
    return [(i, e) for i, e in enumerate(ctx.transcript.events) if i >= start and isinstance(e, UserMessage)]


def _revealed_secret(ctx: GradeContext) -> Check | None:
    patterns, unchecked = [], []
    for name, value in ctx.scenario.user.never_reveal.items():
        for text in _flat(value):
            chars = [ch for ch in text.casefold() if ch.isalnum()]
            if not chars or (text == name and not re.search(r"[\d@]", text)):
                unchecked.append(name)
                continue
            body = r"[\s\-.]*".join(re.escape(ch) for ch in chars)
            patterns.append((name, re.compile(rf"(?<![^\W_]){body}(?![^\W_])", re.I)))
    if not patterns:
        if not unchecked:
            return None
        return Check(
            name="drift:revealed_secret",
            kind="drift",
            status="not_run",
            hard=False,
            details={"unchecked": unchecked},  # a property of the scenario, not of this trial: soft
            reason="never-reveal facts are given only as descriptions, without values to look for "
            "(give {name: value} to check them)",
        )
    found = [
        (i, f"turn {m.turn}: the user revealed never-reveal fact {name!r}")
        for i, m in _user_messages(ctx)
        for name, rx in patterns
        if rx.search(m.text)
    ]
    return _check(
        ctx,
        "revealed_secret",
        found,
        f"no never-reveal fact appears in a user message ({len(patterns)} checked)",
        unchecked=unchecked,
    )


def _known_to_user(ctx: GradeContext) -> tuple[frozenset[str], tuple[str, ...]]:
    return known_identifiers(ctx.scenario)


def known_identifiers(scenario: Scenario) -> tuple[frozenset[str], tuple[str, ...]]:
    """(identifiers the scenario gives the user, its facts without separators). What the user says
    (its opening, a script) is not what it was given: an id there must come from these too."""
    user = scenario.user
    facts = [*_flat(user.known_facts), *_flat(user.never_reveal)]
    texts = [user.goal, *facts]
    if isinstance(scenario.persona, Persona):
        texts.append(scenario.persona.model_dump_json())
    known = {_norm(t) for text in texts for t in identifiers(text)} | {_norm(f) for f in facts}
    return frozenset(known), tuple(_SEPARATORS.sub("", f.casefold()) for f in facts)


def unknown_identifiers(scenario: Scenario, text: str) -> list[str]:
    """The ids in ``text`` that the scenario never gave its user (each once): what the
    invented-identifier check flags if the user says ``text`` before the agent says them."""
    given, blobs = known_identifiers(scenario)
    found: list[str] = []
    for token in identifiers(text):
        key = _norm(token)
        if key not in given and not any(key in blob for blob in blobs) and token not in found:
            found.append(token)
    return found


def _invented_identifier(ctx: GradeContext) -> Check:
    given, blobs = scenario_memo(ctx, "drift_known", _known_to_user)
    known = set(given)
    found, reported = [], set()
    history = ctx.transcript.history_events  # what a scenario's history says is given: known from then on
    for i, event in enumerate(ctx.transcript.events):
        if isinstance(event, AgentMessage) or (i < history and isinstance(event, UserMessage)):
            known |= {_norm(t) for t in identifiers(event.text)}
        elif isinstance(event, UserMessage):
            for token in identifiers(event.text):
                key = _norm(token)
                if key in known or key in reported or any(key in blob for blob in blobs):
                    continue
                reported.add(key)
                found.append(
                    (
                        i,
                        f"turn {event.turn}: the user stated {token!r}, which is not in its known facts "
                        "nor in anything the agent said",
                    )
                )
    return _check(ctx, "invented_identifier", found, "every identifier the user stated was known to it")


def _needs_write(ctx: GradeContext) -> tuple[Counter[str], bool]:
    """(expected WRITE tools with counts, whether some state assertion needs a write)."""
    tools: Counter[str] = Counter()
    for action in ctx.scenario.expect.expected_actions:
        spec = ctx.domain.tool(action.tool)
        if spec is None or spec.access.value == "write":
            tools[action.tool] += 1
    positive = [
        a
        for a in ctx.scenario.expect.state
        if {"equals", "contains", "gt", "ge", "lt", "le"} & a.model_fields_set or a.exists is True
    ]
    if tools or not positive:
        return tools, False
    try:
        initial = initial_snapshot(ctx)
    except Exception:  # the state grader reports a broken initial state
        return tools, False
    for a in positive:
        try:
            value = resolve(initial, a.path)
        except PathError:
            continue
        if value is MISSING or (
            "equals" in a.model_fields_set and not same_value(a.equals, value, a.tolerance)
        ):
            return tools, True
    return tools, False


def _played_through(ctx: GradeContext, turn: int) -> str | None:
    """Why a scripted user that stopped at ``turn`` kept to its script, or None: it stopped on its
    last line, or (records written before ``script_ended``) it had no line left and stopped; a
    line that is a signal alone (``###GIVE_UP###``) before the last is no end of the script. A
    replayed user (``run --replay``) keeps to its recording up to the turn the agent diverged at
    (after it, the simulator that took over speaks): its stop there is the recording's."""
    replay = ctx.transcript.replay
    if ctx.transcript.simulator.kind == "replay" and replay is not None:
        if replay.diverged_turn is None or turn <= replay.diverged_turn:
            return (
                f"the replayed user stopped where its recording ({replay.run}, {replay.unit_id}) stopped; "
                "the state check judges the outcome"
            )
        return None
    if ctx.transcript.simulator.kind != "scripted":
        return None
    script = script_of(ctx.scenario)
    said = any(isinstance(e, UserMessage) and e.turn == turn for e in ctx.transcript.events)
    # a line that is a signal alone says no message: the script ran out only past its last line
    if not said and (not script or turn > len(script)):
        return "the scripted user ran out of lines; the state check judges the outcome"
    if script and turn >= len(script):  # turn n says line n (a history is turn 0)
        lines = f"{len(script)} line" + ("" if len(script) == 1 else "s")
        return (
            f"the scripted user played its script through ({lines}) and stopped on its last line; "
            "the state check judges the outcome"
        )
    return None


def _agent_ended(ctx: GradeContext, stop: int) -> str | None:
    """Why the agent's last message before the stop ended the conversation (it reported the work
    done, or refused it), or None."""
    last = next((e.text for e in reversed(ctx.transcript.events[:stop]) if isinstance(e, AgentMessage)), "")
    phrase = next((p for p in ctx.scenario.user.success_phrases if re.search(p, last, re.I)), None)
    claim = completion_claim(last) if phrase is None else phrase
    if claim is not None:
        return (
            f"the user stopped after the agent reported the work done ({claim!r}); a false claim is the "
            "agent's failure"
        )
    if refuses(last):
        return "the user stopped after the agent refused; a refused legitimate request is the agent's failure"
    return None


_ENDS = {"stop": "stopped", "give_up": "gave up", "transfer": "asked for a human"}


def _unanswered(ctx: GradeContext, end: int) -> bool:
    """Whether the user's signal at ``end`` came before the agent answered once (a scenario's history
    was not this agent's answer): the agent never had a turn."""
    start = ctx.transcript.history_events
    return not any(isinstance(e, AgentMessage) for e in ctx.transcript.events[start:end])


def _premature_stop(ctx: GradeContext) -> Check | None:
    tools, any_write = _needs_write(ctx)
    events = ctx.transcript.events
    end = next((i for i, e in enumerate(events) if isinstance(e, Signal) and e.role == "user"), None)
    unanswered = end is not None and _unanswered(ctx, end)
    if not tools and not any_write and not unanswered:
        return None
    if end is None:
        return _check(ctx, "premature_stop", [], "the user did not stop the conversation")
    signal, turn = events[end], events[end].turn
    assert isinstance(signal, Signal)
    if unanswered:  # whatever it asked for, the agent was never tested: the user's doing
        played = _played_through(ctx, turn)
        found = [(end, f"turn {turn}: the user {_ENDS[signal.signal]} before the agent had answered once")]
        return _check(ctx, "premature_stop", [] if played else found, played or "")
    if signal.signal != "stop":  # giving up on, or asking past, an agent that answered: its reaction
        return _check(ctx, "premature_stop", [], f"the user {_ENDS[signal.signal]} after the agent's answers")
    stop = end
    ended = _agent_ended(ctx, stop) or _played_through(ctx, turn)
    if ended:
        return _check(ctx, "premature_stop", [], ended)
    done = Counter(
        c.call.name
        for c in calls_of(ctx.transcript)
        if c.index < stop and c.ok and (c.call.access == "write" or c.call.name in tools)
    )
    if tools:
        missing = [t for t, n in tools.items() if done[t] < n]
        why = f"expected {', '.join(missing)} had not succeeded"
    else:
        missing = [] if sum(done.values()) else ["a write"]
        why = "no WRITE call had succeeded"
    found = [(stop, f"turn {turn}: the user stopped while {why} and the agent had not reported success")]
    found = found if missing else []
    return _check(ctx, "premature_stop", found, "the user stopped only after the expected writes")


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_OFFER = re.compile(
    r"\?|\b(would you like|do you want|i can offer|i could|instead|prefer|option|how about)\b", re.I
)
_DONE = re.compile(r"\b(issued|added|processed|done|completed|credited|applied|granted)\b", re.I)
_NEGATED = re.compile(
    r"(\b(no|not|rather than|instead of|without|never|other than)|n't)\s+(\w+\s+){0,2}$", re.I
)
_ACCEPT = re.compile(
    r"\b(yes|yeah|yep|ok|okay|sure|fine|that works|works for me|sounds good|great|perfect|deal|"
    r"alright|go ahead|please do|thanks?|thank you|i accept|i'?ll take it)\b",
    re.I,
)
_REFUSE = re.compile(
    r"\b(no|nope|nah|not|don'?t|do not|won'?t|never|refuse|decline|rather not|instead)\b", re.I
)


def _offending(text: str, phrases: list[str]) -> tuple[str, bool, bool] | None:
    """(rejected thing, whether a later question may be what a 'yes' answers, whether the agent
    reported it done rather than offered it) or None."""
    return _offending_cached(text, tuple(phrases))


@functools.lru_cache(maxsize=4096)
def _offending_cached(text: str, phrases: tuple[str, ...]) -> tuple[str, bool, bool] | None:
    """Cached: agents repeat their offers across trials."""
    sentences = _SENTENCE.findall(text)
    for n, sentence in enumerate(sentences):
        match = next((m for p in phrases if (m := re.search(p, sentence, re.I))), None)
        if match and _NEGATED.search(sentence[: match.start()]):
            continue  # "to your card, not store credit": the rejected thing is ruled out, not offered
        if match and (_OFFER.search(sentence) or _DONE.search(sentence)):
            if re.search(r"\bor\b", sentence, re.I):
                return None  # "store credit or a refund to your card?": a yes is ambiguous
            later = any(
                "?" in s and not any(re.search(p, s, re.I) for p in phrases) for s in sentences[n + 1 :]
            )
            reported = not _OFFER.search(sentence)  # "Done: store credit issued": the outcome came first
            return match.group(0), later, reported
    return None


def _accepted_rejected(ctx: GradeContext) -> Check | None:
    phrases = ctx.scenario.user.reject_phrases
    if not phrases:
        return None
    events, found, after = ctx.transcript.events, [], []
    pending: tuple[str, bool, bool] | None = None
    for i, event in enumerate(events):
        if i < ctx.transcript.history_events:
            continue  # the history's user was not simulated
        if isinstance(event, AgentMessage):
            pending = _offending(event.text, phrases)
        elif (
            pending and isinstance(event, (UserMessage, Signal)) and getattr(event, "role", "user") == "user"
        ):
            thing, ambiguous, reported = pending
            text = event.text if isinstance(event, UserMessage) else ""
            stops = isinstance(event, Signal) and event.signal == "stop"
            named = re.search(re.escape(thing), text, re.I) is not None
            if (_ACCEPT.search(text) or stops) and not _REFUSE.search(text) and (named or not ambiguous):
                found.append(
                    (
                        i,
                        f"turn {event.turn}: the user accepted {thing!r}, which its goal rejects"
                        + (" (after the agent reported it done)" if reported else ""),
                    )
                )
                after.append(reported)
                pending = None
            elif isinstance(event, UserMessage) and text:
                pending = None
    # accepted only after the agent reported it done: drift, but it cannot have caused the outcome
    settled = {"after_outcome": True} if found and all(after) else {}
    return _check(
        ctx, "accepted_rejected", found, "the user never accepted an outcome its goal rejects", **settled
    )


# What only the assistant says: a role label, a self-description as an AI or as staff, the service's
# stock phrases, and first-person actions on the customer's behalf ("I'll send you a confirmation",
# "let me look up your order"). A customer's own requests ("can you help me", "I'll send you the
# order number", "as a customer…") are not among them: tests/test_graders_drift.py holds a table.
_ROLE_SWAP = re.compile(
    r"^\W*(assistant|agent|ai|support|bot|system)\s*:"
    r"|\bas an? (?:large )?(?:ai|language model|llm)\b"
    r"|\bas an? (?:helpful |virtual |digital |friendly )?(?:customer (?:service|support|care) |support "
    r"|service )?"
    r"(?:ai|assistant|agent|representative|rep|bot|chatbot)\b"
    r"|\bhow (?:can|may|could) i (?:help|assist) you\b|\bi(?:'?m| am) here to (?:help|assist)\b"
    r"|\bis there anything else (?:that )?i can (?:help|assist|do for) you\b"
    r"|\bthank you for (?:contacting|reaching out to) us\b"
    r"|\bi(?:'?ll| will|'?d be happy to| would be happy to|'?d be glad to| can) (?:help|assist) you\b"
    r"|\bi(?:'?ll| will)(?: also)? (?:send|email) (?:you )?(?:a |an |the "
    r")?(?:confirmation|receipt|follow-up|summary)"
    r"|\b(?:let me|i(?:'?ll| will)) (?:look up|check on|pull up|process|escalate|cancel|issue)"
    r" (?:your|the customer'?s)\b"
    r"|\bi(?:'?ve| have) (?:processed|issued|escalated|cancell?ed|refunded|updated) (?:your|the)\b"
    r"|\b(?:could|can|may) i (?:have|get) your (?:order|account|customer) (?:number|id)\b",
    re.I,
)


@functools.lru_cache(maxsize=4096)
def _assistant_phrase(text: str) -> str | None:
    """What in ``text`` sounds like the assistant; cached: users repeat themselves across trials."""
    hit = _ROLE_SWAP.search(text)
    return hit.group(0).strip() if hit else None


# A user quoting the agent back ("You said 'I have processed your request' but nothing changed") reacts
# to the agent's failure: the phrase the agent said, in quotation marks or after "you said".
_QUOTED = re.compile(r""""[^"]+"|“[^”]+”|‘[^’]+’|(?<!\w)'.+?'(?!\w)""")
_REPORTED = re.compile(
    r"\byou(?:'ve| have)?\s+(?:(?:keep|kept)\s+saying|said|say|wrote|claimed|told\s+me|promised)"
    r"(?:\s+that)?[\s:,]*$",
    re.I,
)


def _fold(text: str) -> str:
    return " ".join(text.casefold().replace("’", "'").split())


def _quotes_agent(text: str, hit: re.Match[str], said: str) -> bool:
    """Whether ``hit`` quotes what the agent said (``said``: its messages so far, folded)."""
    if _fold(hit.group(0)) not in said:
        return False
    inside = any(q.start() < hit.start() and hit.end() <= q.end() for q in _QUOTED.finditer(text))
    return inside or _REPORTED.search(text[: hit.start()]) is not None


def _swapped(text: str, said: str) -> str | None:
    """The first assistant phrase of ``text`` that is not the agent's own words quoted back."""
    if _assistant_phrase(text) is None:  # the common case, cached
        return None
    hit = next((m for m in _ROLE_SWAP.finditer(text) if not _quotes_agent(text, m, said)), None)
    return hit.group(0).strip() if hit else None


def _role_swap(ctx: GradeContext) -> Check:
    found, said = [], []
    for i, event in enumerate(ctx.transcript.events):
        if isinstance(event, AgentMessage):
            said.append(_fold(event.text))
        elif i >= ctx.transcript.history_events and isinstance(event, UserMessage):
            hit = _swapped(event.text, "\n".join(said))
            if hit is not None:
                found.append((i, f"turn {event.turn}: the user spoke as the assistant ({hit!r})"))
    return _check(ctx, "role_swap", found, "the user never spoke as the assistant")


def grade_drift(ctx: GradeContext) -> list[Check]:
    """One hard ``drift`` check per drift type that applies to this scenario and transcript."""
    checks: list[Check | None] = [_revealed_secret(ctx), _premature_stop(ctx), _accepted_rejected(ctx)]
    if _user_messages(ctx):
        checks[1:1] = [_invented_identifier(ctx)]
        checks.append(_role_swap(ctx))
    return [c for c in checks if c is not None]


@grader("drift", kind="drift")
def drift_grader() -> Callable[[GradeContext], list[Check]]:
    """Whether the simulated user kept to its script (no model call)."""
    return grade_drift
