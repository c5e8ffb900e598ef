"""The one door to LiteLLM. Importing it costs seconds and may phone home, so nothing in simlab
imports it at module level: callers ask ``load_litellm()`` when they are about to make a call."""

from __future__ import annotations

import logging
import os
import warnings
from types import ModuleType

_configured = False


def load_litellm() -> ModuleType:
    """Import LiteLLM offline (bundled price map, no debug chatter) and return the module."""
    global _configured
    # Literal "True": LiteLLM compares the string; without it the price map is fetched at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    if not _configured:
        _configured = True
        litellm.suppress_debug_info = True  # no "Provider List: ..." banners on stdout
        litellm.set_verbose = False
        # LiteLLM's TypedDicts make pydantic warn once per type at first use: noise for users.
        warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning)
        if getattr(litellm, "disable_hf_tokenizer_download", None) is None:
            litellm.disable_hf_tokenizer_download = True  # token counting must not download
        if not os.environ.get("LITELLM_LOG"):  # the user asked for LiteLLM logs: keep them
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                logging.getLogger(name).setLevel(logging.WARNING)
    return litellm
