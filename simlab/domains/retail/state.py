"""State of the retail demo domain: customers, orders, refunds, credit, escalations, documents.

Every collection that a scenario may want to override or assert on is keyed by id (a mapping) or
is an append-only list, so that ``initial_state`` overrides deep-merge cleanly and state paths
such as ``orders.A123.status`` or ``refunds[order_id=A123].method`` stay readable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

OrderStatus = Literal["placed", "shipped", "delivered", "cancelled"]
RefundMethod = Literal["original_card", "store_credit"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Customer(_Model):
    id: str
    name: str
    email: str
    tier: Literal["standard", "gold", "platinum"] = "standard"


class PaymentMethod(_Model):
    id: str
    customer: str = Field(description="Id of the customer who owns the card.")
    type: Literal["visa", "mastercard", "amex", "debit"] = "visa"
    last4: str = Field(pattern=r"^\d{4}$")


class OrderItem(_Model):
    sku: str
    name: str
    quantity: int = Field(1, ge=1)
    price: float = Field(ge=0)


class Order(_Model):
    id: str
    customer: str = Field(description="Id of the customer who placed the order.")
    items: list[OrderItem] = Field(default_factory=list)
    total: float = Field(ge=0)
    status: OrderStatus = "placed"
    delivered_on: str | None = Field(None, description="ISO date of delivery, when delivered.")
    damaged: bool = Field(False, description="The customer reported the delivery as damaged.")
    final_sale: bool = Field(False, description="Clearance item: not refundable unless damaged.")
    payment_method: str | None = Field(None, description="Id of the payment method charged.")

    @property
    def delivered(self) -> bool:
        return self.status == "delivered"


class Refund(_Model):
    id: str
    order_id: str
    amount: float = Field(gt=0)
    method: RefundMethod
    status: Literal["issued", "pending"] = "issued"
    issued_on: str | None = None
    policy_version: str | None = None
    approval_id: str | None = None


class StoreCreditGrant(_Model):
    """A goodwill store-credit grant that is not a refund of an order."""

    id: str
    customer: str
    amount: float = Field(gt=0)
    reason: str


class Approval(_Model):
    id: str
    order_id: str
    amount: float
    approved: bool
    reason: str
    decided_by: str = "duty-manager"


class Escalation(_Model):
    id: str
    kind: Literal["transfer"] = "transfer"
    reason: str
    customer: str | None = None
    order_id: str | None = None


class Email(_Model):
    id: str
    to: str
    subject: str
    body: str


class KBArticle(_Model):
    id: str
    title: str
    text: str
    tags: list[str] = Field(default_factory=list)


class RefundPolicy(_Model):
    version: str = Field(description="Policy version, e.g. 2026-07; reported by check_refund_policy.")
    window_days: int = Field(30, ge=0, description="Days after delivery in which a refund can be requested.")
    approval_threshold: float = Field(100.0, ge=0, description="Refunds above this need manager approval.")
    manager_limit: float = Field(1000.0, ge=0, description="Managers cannot approve refunds above this.")
    goodwill_credit_limit: float = Field(25.0, ge=0, description="Most store credit granted as goodwill.")
    store_credit_bonus_pct: float = Field(
        10.0, ge=0, description="Bonus when a refund is taken as store credit."
    )


class RetailState(_Model):
    today: str = Field(description="The simulated current date (ISO); makes refund windows deterministic.")
    policy: RefundPolicy
    customers: dict[str, Customer] = Field(default_factory=dict)
    payment_methods: dict[str, PaymentMethod] = Field(default_factory=dict)
    orders: dict[str, Order] = Field(default_factory=dict)
    refunds: list[Refund] = Field(default_factory=list)
    store_credit: dict[str, float] = Field(default_factory=dict, description="Balance per customer id.")
    credit_grants: list[StoreCreditGrant] = Field(default_factory=list)
    approvals: list[Approval] = Field(default_factory=list)
    escalations: list[Escalation] = Field(default_factory=list)
    outbox: list[Email] = Field(default_factory=list, description="Emails sent by the agent.")
    kb: dict[str, KBArticle] = Field(default_factory=dict, description="Help-center articles by id.")

    @model_validator(mode="before")
    @classmethod
    def _ids_from_keys(cls, data: Any) -> Any:
        """``orders: {A123: {...}}`` needs no ``id: A123`` inside; the key is the id."""
        if isinstance(data, dict):
            data = dict(data)
            for name in ("customers", "payment_methods", "orders", "kb"):
                table = data.get(name)
                if isinstance(table, dict):
                    data[name] = {
                        key: (
                            {"id": key, **value} if isinstance(value, dict) and "id" not in value else value
                        )
                        for key, value in table.items()
                    }
        return data

    @model_validator(mode="after")
    def _keys_match_ids(self) -> RetailState:
        for name in ("customers", "payment_methods", "orders", "kb"):
            for key, value in getattr(self, name).items():
                if value.id != key:
                    raise ValueError(f"{name}.{key}: the key and the id ({value.id!r}) differ")
        return self
