"""The built-in ``retail`` demo domain: an online shop's customer care.

Customers, orders, refunds (to the original card or as store credit), manager approval above a
threshold, escalations, an outbox and a help center whose articles a scenario can poison with a
prompt injection. ``domain: retail`` in a scenario loads ``DOMAIN`` from here.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from simlab.domains.retail.state import RetailState
from simlab.domains.retail.tools import TOOLS
from simlab.env import Domain

_FILES = resources.files(__name__)


def _seed() -> dict[str, Any]:
    data = yaml.safe_load(_FILES.joinpath("seed.yaml").read_text(encoding="utf-8"))
    RetailState.model_validate(data)  # the seed itself must always be valid
    return data


SEED: dict[str, Any] = _seed()
POLICY: str = _FILES.joinpath("policy.md").read_text(encoding="utf-8")
POLICY_VERSION: str = str(SEED["policy"]["version"])

DOMAIN = Domain(
    name="retail",
    state_model=RetailState,
    tools=list(TOOLS),
    policy=POLICY,
    seed_state=SEED,
    policy_version=POLICY_VERSION,
)

__all__ = ["DOMAIN", "POLICY", "POLICY_VERSION", "SEED", "RetailState"]
