"""Tools of the retail demo domain.

READ tools look things up; WRITE tools change the state in place. A tool refuses in the domain's
own terms by raising ``ToolError`` (the environment then rolls the state back and shows the agent
the message). Results are small JSON-able dicts.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from simlab.domains.retail.state import (
    Approval,
    Email,
    Escalation,
    Order,
    Refund,
    RetailState,
    StoreCreditGrant,
)
from simlab.env import READ, WRITE, ToolError, tool

EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_STOPWORDS = {
    "the",
    "and",
    "for",
    "with",
    "how",
    "what",
    "when",
    "can",
    "you",
    "your",
    "are",
    "does",
    "did",
    "will",
    "get",
    "have",
    "has",
    "from",
    "this",
    "that",
    "there",
    "about",
    "would",
    "could",
    "please",
    "want",
    "need",
    "long",
    "much",
    "many",
    "which",
    "who",
    "why",
    "where",
    "not",
    "any",
    "all",
    "our",
    "ask",
    "know",
    "tell",
}


# --- helpers -------------------------------------------------------------------------------------


def _cents(value: float) -> int:
    """Whole cents, rounding half up (38.75 * 1.1 = 42.625 gives 4263, not banker's 4262)."""
    return int(Decimal(repr(float(value))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) * 100)


def _money(value: float) -> float:
    return _cents(value) / 100


def _norm_id(order_id: str) -> str:
    return order_id.strip().upper()


def _order(state: RetailState, order_id: str) -> Order:
    order = state.orders.get(_norm_id(order_id))
    if order is None:
        raise ToolError(f"order {order_id!r} not found")
    return order


def _refunds_of(state: RetailState, order_id: str) -> list[Refund]:
    return [r for r in state.refunds if r.order_id == order_id]


def _card_label(state: RetailState, order: Order) -> str | None:
    method = state.payment_methods.get(order.payment_method or "")
    if method is None:
        return None
    return f"{method.type} ending {method.last4}"


def _ineligibility(state: RetailState, order: Order) -> str | None:
    """Why the order cannot be refunded under the policy, or None when it can."""
    if order.status != "delivered":
        return (
            f"order {order.id} has not been delivered (status: {order.status}); only delivered orders "
            "can be refunded"
        )
    earlier = _refunds_of(state, order.id)
    if earlier:
        first = earlier[0]
        return (
            f"order {order.id} was already refunded ({first.id}: {first.amount:.2f} to "
            f"{first.method.replace('_', ' ')} on {first.issued_on or 'an earlier date'}); "
            "each order can be refunded once"
        )
    if order.final_sale and not order.damaged:
        return (
            f"order {order.id} is a final-sale item; "
            "final-sale items are refundable only if they arrived damaged"
        )
    if order.delivered_on:
        age = (date.fromisoformat(state.today) - date.fromisoformat(order.delivered_on)).days
        if age > state.policy.window_days:
            return (
                f"order {order.id} was delivered on {order.delivered_on}, {age} days ago; refunds must be "
                f"requested within {state.policy.window_days} days of delivery"
            )
    return None


def _approval_for(state: RetailState, order_id: str, amount: float) -> Approval | None:
    for approval in state.approvals:
        if approval.order_id == order_id and approval.approved and _cents(approval.amount) >= _cents(amount):
            return approval
    return None


def _check_amount(order: Order, amount: float) -> None:
    if _cents(amount) <= 0:
        raise ToolError("the refund amount must be greater than 0")
    if _cents(amount) > _cents(order.total):
        raise ToolError(f"the amount {amount:.2f} is more than the order total {order.total:.2f}")


# --- READ ---------------------------------------------------------------------------------------


@tool(READ)
def get_customer(state: RetailState, customer_id: str) -> dict[str, Any]:
    """Show a customer's profile: name, email, tier, saved cards and store-credit balance.

    Args:
        customer_id: The customer's id, for example C-17 (the signed-in customer).
    """
    customer = state.customers.get(customer_id.strip())
    if customer is None:
        raise ToolError(f"customer {customer_id!r} not found")
    cards = [
        f"{m.type} ending {m.last4}" for m in state.payment_methods.values() if m.customer == customer.id
    ]
    return {
        "customer_id": customer.id,
        "name": customer.name,
        "email": customer.email,
        "tier": customer.tier,
        "cards": cards,
        "store_credit_balance": _money(state.store_credit.get(customer.id, 0.0)),
    }


@tool(READ)
def find_customer_orders(state: RetailState, customer_id: str) -> dict[str, Any]:
    """List the orders of a customer, with status, total and items. Use it when the customer does
    not know the order id.

    Args:
        customer_id: The customer's id, for example C-17 (the signed-in customer).
    """
    customer = state.customers.get(customer_id.strip())
    if customer is None:
        raise ToolError(f"customer {customer_id!r} not found")
    orders = [o for o in state.orders.values() if o.customer == customer.id]
    return {
        "customer_id": customer.id,
        "orders": [
            {
                "order_id": o.id,
                "status": o.status,
                "delivered_on": o.delivered_on,
                "total": _money(o.total),
                "items": [i.name for i in o.items],
                "damaged": o.damaged,
                "refunded": bool(_refunds_of(state, o.id)),
            }
            for o in sorted(orders, key=lambda o: o.id)
        ],
    }


@tool(READ)
def lookup_order(state: RetailState, order_id: str) -> dict[str, Any]:
    """Look up one order by its id: owner, items, total, status, delivery, damage report, payment and refunds.

    Args:
        order_id: The order id, for example A123.
    """
    order = _order(state, order_id)
    return {
        "order_id": order.id,
        "customer_id": order.customer,
        "status": order.status,
        "delivered_on": order.delivered_on,
        "total": _money(order.total),
        "items": [{"name": i.name, "quantity": i.quantity, "price": _money(i.price)} for i in order.items],
        "damaged": order.damaged,
        "final_sale": order.final_sale,
        "paid_with": _card_label(state, order),
        "refunds": [
            {"refund_id": r.id, "amount": _money(r.amount), "method": r.method, "issued_on": r.issued_on}
            for r in _refunds_of(state, order.id)
        ],
    }


@tool(READ)
def check_refund_policy(
    state: RetailState,
    order_id: str,
    amount: float | None = None,
    method: Literal["original_card", "store_credit"] = "original_card",
) -> dict[str, Any]:
    """Check an order against the current refund policy before refunding it.

    Says whether the order is eligible, how much can be refunded, and whether manager approval is
    needed first.

    Args:
        order_id: The order id, for example A123.
        amount: The amount you intend to refund; defaults to the order total.
        method: Where the money would go: original_card (the default) or store_credit.
    """
    order = _order(state, order_id)
    policy = state.policy
    wanted = order.total if amount is None else amount
    reason = _ineligibility(state, order)
    if reason is None and _cents(wanted) > _cents(order.total):
        reason = f"the amount {wanted:.2f} is more than the order total {order.total:.2f}"
    if reason is None and _cents(wanted) <= 0:
        reason = "the refund amount must be greater than 0"
    needs_approval = _cents(wanted) > _cents(policy.approval_threshold)
    result: dict[str, Any] = {
        "policy_version": policy.version,
        "order_id": order.id,
        "eligible": reason is None,
        "reason": reason or ("arrived damaged: full refund" if order.damaged else "within the refund window"),
        "refundable_amount": 0.0 if reason else _money(order.total),
        "amount": _money(wanted),
        "method": method,
        "needs_manager_approval": needs_approval,
        "approval_threshold": _money(policy.approval_threshold),
        "approval_on_file": _approval_for(state, order.id, wanted) is not None,
        "refund_to": _card_label(state, order) if method == "original_card" else "store credit",
    }
    if method == "store_credit":
        result["store_credit_amount"] = _money(wanted * (1 + policy.store_credit_bonus_pct / 100))
    return result


@tool(READ)
def search_help_center(state: RetailState, query: str) -> dict[str, Any]:
    """Search the help-center articles and return the best matches with their full text.

    Args:
        query: What to look for, in a few words, for example "refund window damaged item".
    """
    words = {w for w in re.findall(r"[a-z0-9]+", query.lower()) if len(w) > 2 and w not in _STOPWORDS}
    scored = []
    for article in state.kb.values():
        title = set(re.findall(r"[a-z0-9]+", article.title.lower()))
        tags = set(re.findall(r"[a-z0-9]+", " ".join(article.tags).lower()))
        body = re.findall(r"[a-z0-9]+", article.text.lower())
        score = sum(3 * (w in title) + 2 * (w in tags) + min(body.count(w), 3) for w in words)
        if score:
            scored.append((-score, article.id, article))
    scored.sort(key=lambda item: (item[0], item[1]))
    results = [{"id": a.id, "title": a.title, "text": a.text} for _, _, a in scored[:2]]
    if not results:
        return {"query": query, "results": [], "note": "no article matched; try other words"}
    return {"query": query, "results": results}


# --- WRITE --------------------------------------------------------------------------------------


@tool(WRITE)
def request_manager_approval(state: RetailState, order_id: str, amount: float, reason: str) -> dict[str, Any]:
    """Ask the duty manager to approve a refund above the approval threshold (100.00 under policy 2026-07).

    The decision follows the rules: an eligible order, an amount up to the order total and within
    the manager limit is approved; anything else is refused with the reason (an error).

    Args:
        order_id: The order id, for example A124.
        amount: The refund amount that needs approval.
        reason: Why the refund is justified, for example "arrived damaged".
    """
    order = _order(state, order_id)
    if not reason.strip():
        raise ToolError("give the manager a reason for the refund")
    _check_amount(order, amount)
    policy = state.policy
    if _cents(amount) <= _cents(policy.approval_threshold):
        raise ToolError(
            f"no approval needed: refunds up to {policy.approval_threshold:.2f} can be issued directly"
        )
    problem = _ineligibility(state, order)
    if problem:
        raise ToolError(f"manager approval denied: {problem}")
    if _cents(amount) > _cents(policy.manager_limit):
        raise ToolError(
            f"manager approval denied: {amount:.2f} is above the manager limit of "
            f"{policy.manager_limit:.2f}; "
            "transfer the customer to a human"
        )
    approval = Approval(
        id=f"AP-{len(state.approvals) + 1}",
        order_id=order.id,
        amount=_money(amount),
        approved=True,
        reason=reason.strip(),
    )
    state.approvals.append(approval)
    return {"approved": True, "approval_id": approval.id, "order_id": order.id, "amount": approval.amount}


@tool(WRITE)
def issue_refund(
    state: RetailState,
    order_id: str,
    amount: float,
    method: Literal["original_card", "store_credit"] = "original_card",
) -> dict[str, Any]:
    """Refund an order, to the original card (the default) or as store credit.

    Check the refund policy first. Refunds above the approval threshold need an approved
    request_manager_approval for this order and amount. An order can be refunded once.

    Args:
        order_id: The order id, for example A123.
        amount: The amount to refund, at most the order total.
        method: original_card (back to the card the order was paid with) or store_credit (with a bonus).
    """
    order = _order(state, order_id)
    problem = _ineligibility(state, order)
    if problem:
        raise ToolError(f"refund refused: {problem}")
    _check_amount(order, amount)
    policy = state.policy
    approval = None
    if _cents(amount) > _cents(policy.approval_threshold):
        approval = _approval_for(state, order.id, amount)
        if approval is None:
            raise ToolError(
                f"refund refused: refunds above {policy.approval_threshold:.2f} need manager approval first "
                "(request_manager_approval)"
            )
    refund = Refund(
        id=f"R-{2001 + len(state.refunds)}",
        order_id=order.id,
        amount=_money(amount),
        method=method,
        status="issued",
        issued_on=state.today,
        policy_version=policy.version,
        approval_id=approval.id if approval else None,
    )
    state.refunds.append(refund)
    result: dict[str, Any] = {
        "refund_id": refund.id,
        "order_id": order.id,
        "amount": refund.amount,
        "method": method,
        "status": refund.status,
        "policy_version": policy.version,
    }
    if method == "store_credit":
        credited = _money(amount * (1 + policy.store_credit_bonus_pct / 100))
        balance = _money(state.store_credit.get(order.customer, 0.0) + credited)
        state.store_credit[order.customer] = balance
        result.update(credited=credited, store_credit_balance=balance)
    else:
        result["refund_to"] = _card_label(state, order)
    return result


@tool(WRITE)
def issue_store_credit(state: RetailState, customer_id: str, amount: float, reason: str) -> dict[str, Any]:
    """Grant goodwill store credit to a customer (not a refund of an order), up to the goodwill limit.

    Args:
        customer_id: The customer's id, for example C-17.
        amount: The credit to add, at most the goodwill limit (25.00 under policy 2026-07).
        reason: Why the credit is granted.
    """
    customer = state.customers.get(customer_id.strip())
    if customer is None:
        raise ToolError(f"customer {customer_id!r} not found")
    if not reason.strip():
        raise ToolError("give a reason for the store credit")
    if _cents(amount) <= 0:
        raise ToolError("the amount must be greater than 0")
    limit = state.policy.goodwill_credit_limit
    if _cents(amount) > _cents(limit):
        raise ToolError(f"goodwill store credit is limited to {limit:.2f}; refunds go through issue_refund")
    grant = StoreCreditGrant(
        id=f"SC-{len(state.credit_grants) + 1}",
        customer=customer.id,
        amount=_money(amount),
        reason=reason.strip(),
    )
    state.credit_grants.append(grant)
    balance = _money(state.store_credit.get(customer.id, 0.0) + amount)
    state.store_credit[customer.id] = balance
    return {
        "grant_id": grant.id,
        "customer_id": customer.id,
        "amount": grant.amount,
        "store_credit_balance": balance,
    }


@tool(WRITE)
def send_email(state: RetailState, to: str, subject: str, body: str) -> dict[str, Any]:
    """Send an email from customer care.

    Args:
        to: The recipient's email address.
        subject: The subject line.
        body: The message text.
    """
    address = to.strip()
    if not EMAIL_RE.match(address):
        raise ToolError(f"{to!r} is not a valid email address")
    if not subject.strip():
        raise ToolError("the email needs a subject")
    email = Email(id=f"M-{len(state.outbox) + 1}", to=address, subject=subject.strip(), body=body)
    state.outbox.append(email)
    return {"email_id": email.id, "to": address, "status": "sent"}


@tool(WRITE)
def transfer_to_human(
    state: RetailState, reason: str, customer_id: str | None = None, order_id: str | None = None
) -> dict[str, Any]:
    """Hand the conversation over to a human colleague, with a short reason for them.

    Args:
        reason: Why a human should take over, in one sentence.
        customer_id: The customer's id, when known.
        order_id: The order the case is about, when there is one.
    """
    if not reason.strip():
        raise ToolError("give the human colleague a reason for the transfer")
    escalation = Escalation(
        id=f"T-{len(state.escalations) + 1}",
        reason=reason.strip(),
        customer=customer_id.strip() if customer_id else None,
        order_id=_norm_id(order_id) if order_id else None,
    )
    state.escalations.append(escalation)
    return {
        "ticket_id": escalation.id,
        "status": "queued",
        "message": "A human colleague will take over this conversation.",
    }


TOOLS = [
    get_customer,
    find_customer_orders,
    lookup_order,
    check_refund_policy,
    search_help_center,
    request_manager_approval,
    issue_refund,
    issue_store_credit,
    send_email,
    transfer_to_human,
]
