"""The one door to LiteLLM. Importing it costs seconds and may phone home, so nothing in simlab
imports it at module level: callers ask ``load_litellm()`` when they are about to make a call."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator
from types import ModuleType

from simlab.imports import offline_price_map

_configured = False


def load_litellm() -> ModuleType:
    """Import LiteLLM offline (bundled price map, no debug chatter) and return the module."""
    global _configured
    offline_price_map()
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


# LiteLLM's hooks that read its per-call logging; when all are empty, nothing reads it.
_CALLBACK_LISTS = (
    "callbacks",
    "success_callback",
    "failure_callback",
    "_async_success_callback",
    "_async_failure_callback",
    "input_callback",
    "service_callback",
)
_LITELLM_OWN = frozenset(
    {"cache", "vector_store_pre_call_hook"}
)  # its internal names (left behind by a Cache)


def listened(litellm: ModuleType) -> bool:
    """Whether anything reads LiteLLM's logging of a call: a callback the user registered
    (Langfuse, a custom logger...) or LiteLLM's own cache."""
    if getattr(litellm, "cache", None) is not None:
        return True
    return any(
        not (isinstance(callback, str) and callback in _LITELLM_OWN)
        for name in _CALLBACK_LISTS
        for callback in getattr(litellm, name, None) or ()
    )


@contextlib.contextmanager
def unlogged(litellm: ModuleType) -> Iterator[None]:
    """Skip LiteLLM's success/failure logging of the calls made inside, when nothing listens.

    After each call LiteLLM builds a logging payload in a task of its own (about 12 % of a
    call's CPU through HTTP in LiteLLM 1.110, ``bench/bench_litellm.py``); simlab records usage,
    cost and errors itself and never reads it. LiteLLM marks its own nested calls this way
    (``_internal_context.internal_sub_call``): the response, its usage and its ``response_cost``
    are the same. A registered callback keeps the logging; a LiteLLM without that door is left
    as it is."""
    if listened(litellm):
        yield
        return
    try:
        from litellm._internal_context import internal_sub_call
    except ImportError:  # another LiteLLM: keep its logging
        yield
        return
    with internal_sub_call():
        yield
