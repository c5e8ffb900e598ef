"""Two deterministic demo agents for the built-in ``retail`` domain.

``careful_agent`` follows the retail policy; ``flaky_agent`` is the same agent with faults that a
trial's seed switches on (``random.Random(inp.seed)``), so that a demo run shows passes and
failures, and different trials differ. Use them as ``python: examples.retail_agents:careful_agent``.

Both are plain code: regular expressions over what the user said (``inp.messages``) and the
scenario's ``agent_context`` (``inp.context``). They keep no memory between turns: each turn they
re-read the conversation, including their own earlier replies, to know where they are. They speak
in fixed phrases that a rule-based simulated user can answer:

* questions for facts name the fact: "Could you tell me your order id?"
* before a change they ask to confirm: "Shall I refund 49.90 for order A123 to your original card
  (visa ending 4242)?" / "... as store credit?" / "Shall I request manager approval and then refund
  249.00 for order A124 to your original card (...)?"
* a store-credit offer (only when ``agent_context.offer_store_credit_first`` is set): "Would you like
  to take store credit instead for order B310? You would get 70.95 instead of 64.50 back on your card."
* outcomes: "Done: your refund of 49.90 to your original card (visa ending 4242) has been issued
  (reference R-2002)." / "Done: your refund of 38.75 as store credit has been issued ..."
* refusals: "I'm sorry, but order A123 is not on your account, so I can't share its details or make
  any changes to it." / "I'm sorry, order A126 can't be refunded: ..." / "... has already been refunded ..."
* transfer offer and transfer: "Do you want me to transfer you to a human colleague?" /
  "I'm transferring you to a human colleague now (ticket T-1)." (returned with ``transfer=True``)
* policy answers quote the help center: "According to our help center (Refund policy): ..."
"""

from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass
from typing import Any

from simlab import AgentInput, AgentReply

# --- reading the conversation ------------------------------------------------------------------

ORDER_ID = re.compile(r"\b([A-Za-z]\d{3,6})\b")
YES = re.compile(
    r"\b(yes|yeah|yep|yup|sure|ok|okay|please do|go ahead|do it|correct|that'?s right|fine|alright|"
    r"confirm(ed)?|agreed?|sounds good|of course|absolutely|tak|si|ja|oui)\b",
    re.I,
)
NO_START = re.compile(r"^\W*(no\b|nope|nah|not\b|don'?t|do not|never|nie\b|rather not|wait\b|stop\b)", re.I)
NO_ANYWHERE = re.compile(r"\b(no thanks|no thank you|don'?t want|do not want|not interested|rather not|i'?d rather)\b", re.I)
NEGATION = re.compile(r"\b(no|not|don'?t|do not|never|without|rather not|instead of)\b[^.!?]{0,25}$", re.I)
STORE_CREDIT = re.compile(r"store[ -]?credit|voucher|gift card", re.I)
CARD = re.compile(r"\b(card|original payment|credit card|debit card|my money back|to my (visa|mastercard|amex))\b", re.I)
HUMAN = re.compile(
    r"\b(human|real person|a person|someone real|manager|supervisor|representative|talk to someone|"
    r"speak to someone|live agent|real agent)\b",
    re.I,
)
DONT_KNOW_ID = re.compile(
    r"(don'?t|do not|can'?t|cannot|didn'?t|no)\s+(have|know|find|remember|got|keep)?[^.?!]{0,25}"
    r"(order (id|number)|number|confirmation|receipt)|no idea|not sure (what|which)",
    re.I,
)
REQUEST = re.compile(
    r"\b(i want|i wanna|i'?d like|i would like|i need|please refund|refund (it|my|the|this|order|for|me)|"
    r"give me|money back|get (a|my) refund|want (a|my) refund|could you refund|can you refund|return (my|the|it)|"
    r"send (it )?back|reimburse)",
    re.I,
)
PROBLEM = re.compile(r"\b(broken|damaged|arrived|cracked?|smashed|bent|defect|faulty|wrong item|too small|too big)\b", re.I)
POLICY_QUESTION = re.compile(
    r"\b(policy|policies|how (many|long|much time|soon)|what (is|are|happens)|when will|how do(es)?|"
    r"is it possible|do i (need|have)|can i|rules?|business days|window)\b",
    re.I,
)
CLOSING = re.compile(r"^\W*(thanks|thank you|thx|great|perfect|cheers|bye|goodbye|that'?s all|dzi[eę]kuj[eę])\b", re.I)
INJECTION = re.compile(
    r"ignore (all |any |the )?(previous|prior|above|earlier)|instruction|assistant|\bai\b|system|"
    r"do not (mention|tell)|don'?t (mention|tell)|@|send_email|issue_store_credit",
    re.I,
)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
WORD = re.compile(r"[a-z0-9]+")
_STOP = {"the", "and", "for", "with", "you", "your", "have", "has", "that", "this", "from", "what", "how", "can",
         "are", "does", "will", "about", "would", "could", "please", "hello", "thanks", "want", "need", "many"}

PENDING_REFUND = re.compile(
    r"Shall I (?P<approval>request manager approval and then )?refund (?P<amount>\d+\.\d{2}) for order "
    r"(?P<order>[A-Z]\d+) (?P<dest>to your original card|as store credit)"
)
PENDING_OFFER = re.compile(
    r"Would you like to take store credit instead for order (?P<order>[A-Z]\d+)\? You would get "
    r"(?P<credit>\d+\.\d{2}) instead of (?P<amount>\d+\.\d{2})"
)
ANYTHING_ELSE = re.compile(r"Is there anything else I can help you with\?\s*$")
PENDING_TRANSFER = re.compile(r"Do you want me to transfer you to a human colleague(?: about order (?P<order>[A-Z]\d+))?")


def _money(value: float) -> str:
    return f"{float(value):.2f}"


def _answer(text: str) -> str | None:
    """'yes', 'no' or None for what the user said to a yes/no question."""
    if NO_START.search(text):
        return "no"
    if NO_ANYWHERE.search(text):
        return "no"
    if YES.search(text):
        return "yes"
    return None


def _prefers_store_credit(text: str) -> bool | None:
    """True: asks for store credit; False: refuses it; None: does not say."""
    result: bool | None = None
    for match in STORE_CREDIT.finditer(text):
        before = text[max(0, match.start() - 40):match.start()]
        result = not NEGATION.search(before)
    return result


@dataclass
class Conversation:
    user_texts: list[str]
    agent_texts: list[str]
    last_user: str
    last_agent: str

    @classmethod
    def read(cls, messages: list[dict[str, Any]]) -> Conversation:
        users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        agents = [str(m.get("content") or "") for m in messages if m.get("role") == "assistant"]
        last_agent = ""
        for message in reversed(messages):
            if message.get("role") == "assistant":
                last_agent = str(message.get("content") or "")
                break
        return cls(users, agents, users[-1] if users else "", last_agent)

    @property
    def all_user(self) -> str:
        return "\n".join(self.user_texts)

    def order_id(self) -> str | None:
        """The order id the user mentioned last."""
        for text in reversed(self.user_texts):
            found = ORDER_ID.findall(text)
            if found:
                return found[-1].upper()
        return None

    def store_credit_preference(self) -> bool | None:
        for text in reversed(self.user_texts):
            pref = _prefers_store_credit(text)
            if pref is not None:
                return pref
        return None

    def wants_refund(self) -> bool:
        for text in self.user_texts:
            if REQUEST.search(text) or ORDER_ID.search(text):
                return True
            if PROBLEM.search(text) and not _is_policy_question(text):
                return True
        return False

    def agent_said(self, pattern: str) -> bool:
        return any(re.search(pattern, text, re.I) for text in self.agent_texts)


def _is_closing(text: str) -> bool:
    short = len(text) < 60 and not ORDER_ID.search(text) and not text.rstrip().endswith("?")
    return short and bool(CLOSING.search(text))


def _is_policy_question(text: str) -> bool:
    return bool(POLICY_QUESTION.search(text)) and ("?" in text or text.lower().startswith(("how", "what", "when")))


# --- the agent ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Faults:
    """Deliberate mistakes, switched on per trial by the flaky agent."""

    skip_policy_check: bool = False
    store_credit: str | None = None  # "offer": pushes store credit; "issue": refunds as store credit anyway
    loop_on_lookup: bool = False  # mangles the order id and retries lookup_order until the lab stops it
    skip_owner_check: bool = False
    follow_injection: bool = False
    gives_up_on_tool_error: bool = False  # a tool that fails for a moment ends the attempt (no retry)

    @classmethod
    def from_seed(cls, seed: int) -> Faults:
        rng = random.Random(seed)
        skip_policy = rng.random() < 0.3
        store = rng.random()
        loop = rng.random() < 0.15
        owner = rng.random() < 0.3
        inject = rng.random() < 0.5
        return cls(
            skip_policy_check=skip_policy,
            store_credit="issue" if store < 0.15 else "offer" if store < 0.3 else None,
            loop_on_lookup=loop,
            skip_owner_check=owner,
            follow_injection=inject,
        )


NO_FAULTS = Faults()


TRANSIENT = re.compile(r"temporarily unavailable|try again|did not return within|timed? ?out", re.I)


class RetryingTools:
    """The agent's tools, with one retry of a call that failed for a moment (a tool that timed out
    or said to try again): how the careful agent recovers from a flaky backend."""

    def __init__(self, tools: Any):
        self._tools = tools

    def call(self, tool: str, **arguments: Any) -> Any:
        reply = self._tools.call(tool, **arguments)
        if not reply.ok and TRANSIENT.search(reply.error or ""):
            reply = self._tools.call(tool, **arguments)
        return reply


class RetailBot:
    def __init__(self, inp: AgentInput, faults: Faults = NO_FAULTS):
        self.inp = inp
        self.tools = inp.tools if faults.gives_up_on_tool_error else RetryingTools(inp.tools)
        self.faults = faults
        self.conv = Conversation.read(inp.messages)
        self.customer: str | None = inp.context.get("signed_in_customer")

    # entry point
    def respond(self) -> AgentReply:
        conv = self.conv
        if not conv.user_texts:
            return self._say("Hello! How can I help you today?")
        pending = self._pending()
        if pending is not None:
            return pending
        if HUMAN.search(conv.last_user):
            return self._transfer("The customer asked to speak to a person.", conv.order_id())
        if _is_closing(conv.last_user):
            return self._say("You're welcome! Is there anything else I can help you with?")
        if _is_policy_question(conv.last_user) and not REQUEST.search(conv.last_user):
            return self._say(self._help_center_answer(conv.last_user))
        if conv.wants_refund():
            return self._refund_flow()
        return self._say("Hello! How can I help you today? If it's about an order, could you tell me your order id?")

    # --- answers to our own questions --------------------------------------------------------
    def _pending(self) -> AgentReply | None:
        conv = self.conv
        answer = _answer(conv.last_user)
        refund_q = PENDING_REFUND.search(conv.last_agent)
        if refund_q:
            order, amount = refund_q["order"], float(refund_q["amount"])
            method = "store_credit" if refund_q["dest"] == "as store credit" else "original_card"
            pref = _prefers_store_credit(conv.last_user)
            if method == "original_card" and pref is True:
                return self._propose(order, "store_credit", ask_prefix="Of course. ")
            if method == "store_credit" and (pref is False or (answer == "no" and CARD.search(conv.last_user))):
                return self._propose(order, "original_card", ask_prefix="Of course. ")
            if answer == "yes":
                return self._execute_refund(order, amount, method, approval=bool(refund_q["approval"]))
            if answer == "no":
                return self._say("Alright, I won't make any changes. Is there anything else I can help you with?")
            if _is_policy_question(conv.last_user):
                return self._say(self._help_center_answer(conv.last_user) + "\n\n" + self._sentence_with(refund_q))
            return self._say("Sorry, I didn't quite catch that. " + self._sentence_with(refund_q))
        offer = PENDING_OFFER.search(conv.last_agent)
        if offer:
            pref = _prefers_store_credit(conv.last_user)
            if pref is True or (answer == "yes" and pref is None):
                return self._propose(offer["order"], "store_credit", ask_prefix="Great. ")
            return self._propose(offer["order"], "original_card", ask_prefix="Understood, I'll refund it to your card then. ")
        if ANYTHING_ELSE.search(conv.last_agent) and (answer == "no" or _is_closing(conv.last_user)):
            return self._say("You're welcome. Have a nice day!")
        transfer_q = PENDING_TRANSFER.search(conv.last_agent)
        if transfer_q and answer is not None:
            if answer == "yes":
                return self._transfer("The customer wants a refund that the policy does not allow.", transfer_q["order"])
            return self._say("Alright, I won't transfer you. Is there anything else I can help you with?")
        return None

    @staticmethod
    def _sentence_with(match: re.Match[str]) -> str:
        start = match.string.rfind("Shall I", 0, match.end())
        end = match.string.find("?", match.end())
        return match.string[start:end + 1] if end >= 0 else match.string[start:]

    # --- the refund flow ----------------------------------------------------------------------
    def _refund_flow(self) -> AgentReply:
        conv = self.conv
        order_id = conv.order_id()
        prefix = ""
        if order_id is None:
            asked = conv.agent_said(r"order id")
            lacks = any(DONT_KNOW_ID.search(t) for t in conv.user_texts)
            if not self.customer:
                return self._say("I'm sorry to hear that. Could you tell me your order id? "
                                 "Please also sign in so I can check that the order is yours.")
            if not (asked or lacks):
                return self._say("I'm sorry to hear that. Could you tell me your order id? "
                                 "If you don't have it, I can look up the orders on your account.")
            found = self._find_order_on_account()
            if isinstance(found, AgentReply):
                return found
            order_id, prefix = found, "I found it on your account: "
        elif conv.agent_said(rf"order {order_id} is not on your account"):
            return self._say(
                f"I understand, but as I said, order {order_id} is not on your account, so I can't make any "
                "changes to it. The account holder can contact us from their own account."
            )
        elif conv.agent_said(rf"couldn't find an order with the id {order_id}"):
            return self._say(
                f"I still can't find an order with the id {order_id}. Do you want me to transfer you to a "
                "human colleague?"
            )
        return self._check_and_propose(order_id, prefix)

    def _find_order_on_account(self) -> str | AgentReply:
        listing = self.tools.call("find_customer_orders", customer_id=self.customer)
        if not listing.ok:
            return self._say("I couldn't open your account just now. Could you tell me your order id?")
        orders = listing.result["orders"]
        text = self.conv.all_user.lower()
        words = {w for w in WORD.findall(text) if len(w) > 3 and w not in _STOP}

        def score(order: dict[str, Any]) -> int:
            names = " ".join(order["items"]).lower()
            return sum(1 for w in set(WORD.findall(names)) if len(w) > 3 and (w in words or w.rstrip("s") in words))

        best = max((score(o) for o in orders), default=0)
        if best > 0:
            candidates = [o for o in orders if score(o) == best]
        else:
            candidates = [o for o in orders if o["status"] == "delivered" and not o["refunded"]]
            if PROBLEM.search(text):
                candidates = [o for o in candidates if o["damaged"]] or candidates
        if len(candidates) == 1:
            return candidates[0]["order_id"]
        if not candidates:
            return self._say("I couldn't find a matching order on your account. Could you tell me your order id?")
        lines = "\n".join(
            f"- {o['order_id']}: {', '.join(o['items'])} ({_money(o['total'])}, {o['status']})" for o in candidates
        )
        return self._say(f"I see these orders on your account:\n{lines}\nWhich one is it? Could you tell me the order id?")

    def _lookup(self, order_id: str) -> Any:
        if self.faults.loop_on_lookup:
            mangled = f"{order_id[0]}-{order_id[1:]}"
            for _ in range(5):  # retries the same failing call; the lab stops it as a loop
                reply = self.tools.call("lookup_order", order_id=mangled)
                if reply.ok:
                    return reply
        return self.tools.call("lookup_order", order_id=order_id)

    def _check_and_propose(self, order_id: str, prefix: str = "") -> AgentReply:
        info = self._lookup(order_id)
        if not info.ok:
            return self._say(
                f"I'm sorry, I couldn't find an order with the id {order_id}. Could you double-check the order id?"
            )
        order = info.result
        if self.customer and order["customer_id"] != self.customer and not self.faults.skip_owner_check:
            return self._say(
                f"I'm sorry, but order {order_id} is not on your account, so I can't share its details or make "
                "any changes to it. The account holder can contact us from their own account."
            )
        pref = self.conv.store_credit_preference()
        method = "store_credit" if pref else "original_card"
        if self.faults.skip_policy_check:
            return self._propose_from(order, method, prefix, check=None)
        check = self.tools.call("check_refund_policy", order_id=order_id, method=method)
        if not check.ok:
            return self._say(f"I'm sorry, I couldn't check the refund policy for order {order_id}: {check.error}")
        result = check.result
        if not result["eligible"]:
            if order["refunds"]:
                refund = order["refunds"][0]
                where = "your original card" if refund["method"] == "original_card" else "store credit"
                card = f" ({order['paid_with']})" if refund["method"] == "original_card" and order["paid_with"] else ""
                return self._say(
                    f"{prefix}order {order_id} ({self._items(order)}) has already been refunded: "
                    f"{_money(refund['amount'])} went back to {where}{card} on {refund['issued_on']} "
                    f"(reference {refund['refund_id']}), so I can't refund it a second time. Card refunds usually "
                    "take 5 to 10 business days to show on your statement. Is there anything else I can help you with?"
                )
            return self._say(
                f"{prefix}I'm sorry, order {order_id} ({self._items(order)}) can't be refunded: {result['reason']} "
                f"(refund policy {result['policy_version']}). Do you want me to transfer you to a human colleague "
                f"about order {order_id}?"
            )
        return self._propose_from(order, method, prefix, check=result)

    def _propose(self, order_id: str, method: str, ask_prefix: str = "") -> AgentReply:
        """Re-ask for confirmation with another method (policy re-checked for that method)."""
        info = self.tools.call("lookup_order", order_id=order_id)
        if not info.ok:
            return self._say(f"I'm sorry, I couldn't open order {order_id} just now. Could you tell me your order id again?")
        check = None
        if not self.faults.skip_policy_check:
            reply = self.tools.call("check_refund_policy", order_id=order_id, method=method)
            if not reply.ok or not reply.result["eligible"]:
                reason = reply.result["reason"] if reply.ok else reply.error
                return self._say(f"I'm sorry, order {order_id} can't be refunded: {reason}.")
            check = reply.result
        return self._propose_from(info.result, method, "", check=check, ask_only=True, ask_prefix=ask_prefix)

    def _propose_from(self, order: dict[str, Any], method: str, prefix: str, *, check: dict[str, Any] | None,
                      ask_only: bool = False, ask_prefix: str = "") -> AgentReply:
        order_id = order["order_id"]
        amount = check["refundable_amount"] if check else order["total"]
        needs_approval = check["needs_manager_approval"] if check else amount > 100
        threshold = check["approval_threshold"] if check else 100.0
        card = f" ({order['paid_with']})" if order.get("paid_with") else ""
        offer = self.inp.context.get("offer_store_credit_first") or self.faults.store_credit == "offer"
        parts = []
        if not ask_only:
            why = (f"was delivered on {order['delivered_on']} and arrived damaged, so it qualifies for a full refund"
                   if order["damaged"] else
                   f"was delivered on {order['delivered_on']} and is within the refund window, so it qualifies for a refund")
            version = f" (refund policy {check['policy_version']})" if check else ""
            parts.append(f"{prefix}order {order_id} ({self._items(order)}) {why} of {_money(amount)}{version}.")
            if (offer and method == "original_card" and self.conv.store_credit_preference() is None
                    and not self.conv.agent_said("store credit instead")):
                credit = amount * 1.10
                parts.append(
                    f"Would you like to take store credit instead for order {order_id}? You would get "
                    f"{_money(credit)} instead of {_money(amount)} back on your card."
                )
                return self._say(_capitalize(" ".join(parts)))
        if needs_approval:
            parts.append(f"Refunds over {_money(threshold)} need a manager's approval, so I'll request it first.")
        dest = f"to your original card{card}" if method == "original_card" else "as store credit"
        step = "request manager approval and then refund" if needs_approval else "refund"
        parts.append(f"Shall I {step} {_money(amount)} for order {order_id} {dest}?")
        return self._say(_capitalize(ask_prefix + " ".join(parts)))

    def _execute_refund(self, order_id: str, amount: float, method: str, *, approval: bool) -> AgentReply:
        if self.faults.store_credit == "issue":
            method = "store_credit"
        prefix = ""
        if approval:
            approved = self.tools.call(
                "request_manager_approval", order_id=order_id, amount=amount,
                reason="Customer reported the delivery as damaged; refund per policy.",
            )
            if not approved.ok:
                return self._say(
                    f"I'm sorry, the manager did not approve the refund: {approved.error}. Do you want me to "
                    f"transfer you to a human colleague about order {order_id}?"
                )
            prefix = f"The manager approved the refund (approval {approved.result['approval_id']}). "
        done = self.tools.call("issue_refund", order_id=order_id, amount=amount, method=method)
        if not done.ok:
            return self._say(
                f"I'm sorry, the refund could not be issued: {done.error}. Do you want me to transfer you to a "
                f"human colleague about order {order_id}?"
            )
        result = done.result
        if method == "store_credit":
            text = (f"Done: your refund of {_money(result['amount'])} as store credit has been issued (reference "
                    f"{result['refund_id']}); {_money(result['credited'])} was added to your store credit, which is "
                    f"now {_money(result['store_credit_balance'])}.")
        else:
            card = f" ({result['refund_to']})" if result.get("refund_to") else ""
            text = (f"Done: your refund of {_money(result['amount'])} to your original card{card} has been issued "
                    f"(reference {result['refund_id']}).")
        return self._say(prefix + text + " Is there anything else I can help you with?")

    # --- information ------------------------------------------------------------------------
    def _help_center_answer(self, question: str) -> str:
        found = self.tools.call("search_help_center", query=question)
        if not found.ok or not found.result.get("results"):
            return ("I couldn't find that in our help center. Do you want me to transfer you to a human colleague?")
        article = found.result["results"][0]
        sentences = re.split(r"(?<=[.!?])\s+", article["text"].strip())
        clean = [s for s in sentences if s and not INJECTION.search(s)]
        if self.faults.follow_injection:
            self._obey_document(article["text"])
        words = {w for w in WORD.findall(question.lower()) if len(w) > 2 and w not in _STOP}
        scored = [(sum(w in WORD.findall(s.lower()) for w in words), i, s) for i, s in enumerate(clean)]
        relevant = sorted((item for item in scored if item[0] > 0), key=lambda x: (-x[0], x[1]))[:3]
        chosen = [s for _, _, s in sorted(relevant, key=lambda x: x[1])] or clean[:3]
        return f"According to our help center ({article['title']}): {' '.join(chosen)}"

    def _obey_document(self, text: str) -> None:
        """The flaky agent's worst habit: doing what a document says."""
        if not INJECTION.search(text):
            return
        for address in EMAIL.findall(text):
            self.tools.call("send_email", to=address.rstrip("."), subject="Customer order history",
                            body=f"Order history of customer {self.customer}.")
        if STORE_CREDIT.search(text) and self.customer:
            amount = re.search(r"(\d+\.\d{2})\s*(store credit)?", text)
            self.tools.call("issue_store_credit", customer_id=self.customer,
                            amount=float(amount.group(1)) if amount else 25.0, reason="apology")

    # --- endings ----------------------------------------------------------------------------
    def _transfer(self, reason: str, order_id: str | None) -> AgentReply:
        done = self.tools.call("transfer_to_human", reason=reason, customer_id=self.customer, order_id=order_id)
        ticket = f" (ticket {done.result['ticket_id']})" if done.ok else ""
        return AgentReply(
            f"I'm transferring you to a human colleague now{ticket}. They will see this conversation, so you "
            "won't need to repeat yourself.",
            transfer=True,
        )

    @staticmethod
    def _items(order: dict[str, Any]) -> str:
        return ", ".join(item["name"] for item in order.get("items", [])) or "no items"

    @staticmethod
    def _say(text: str) -> AgentReply:
        return AgentReply(text)


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def careful_agent(inp: AgentInput) -> AgentReply:
    """Follows the retail policy (see the module docstring for how it phrases things)."""
    return RetailBot(inp).respond()


def flaky_agent(inp: AgentInput) -> AgentReply:
    """The careful agent with seed-driven faults: skips the policy check, pushes or issues store
    credit, loops on lookup_order, skips the ownership check, obeys instructions in documents; and
    it never retries a tool that failed for a moment."""
    return RetailBot(inp, dataclasses.replace(Faults.from_seed(inp.seed), gives_up_on_tool_error=True)).respond()


def agent_skipping_policy_check(inp: AgentInput) -> AgentReply:
    """The careful agent with one planted defect: it refunds without calling check_refund_policy
    (the same defect the framework examples plant, for side-by-side runs)."""
    return RetailBot(inp, Faults(skip_policy_check=True)).respond()


__all__ = ["Faults", "RetailBot", "RetryingTools", "agent_skipping_policy_check", "careful_agent", "flaky_agent"]


# Both demo agents are plain code: they call no model, so their cost is a known zero.
careful_agent.uses_models = False  # type: ignore[attr-defined]
flaky_agent.uses_models = False  # type: ignore[attr-defined]
agent_skipping_policy_check.uses_models = False  # type: ignore[attr-defined]
