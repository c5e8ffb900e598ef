"""Model families and version pinning.

The simulator should be of a different family than the agent (a model grading or playing
against its own kin flatters it) and pinned to a dated version (a moving alias changes the
simulated user under your feet between two runs). These helpers only read model strings;
they never import LiteLLM.
"""

from __future__ import annotations

import re

_FAKE_PREFIXES = ("simlab-fake/", "fake/")

# Name patterns, checked on the last path segment with any vendor dot-prefix removed.
_NAME_FAMILIES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(ft:)?(gpt|chatgpt|o[1345](?![0-9a-z])|text-davinci|davinci|babbage|codex)"), "openai"),
    (re.compile(r"^claude"), "anthropic"),
    (re.compile(r"^(gemini|gemma|palm|chat-bison|text-bison)"), "google"),
    (re.compile(r"^(meta-)?(llama|codellama)"), "meta"),
    (re.compile(r"^(open-)?(mistral|mixtral|codestral|ministral|magistral|devstral|pixtral)"), "mistral"),
    (re.compile(r"^(qwen|qwq)"), "qwen"),
    (re.compile(r"^deepseek"), "deepseek"),
    (re.compile(r"^(command|c4ai-command)"), "cohere"),
    (re.compile(r"^grok"), "xai"),
    (re.compile(r"^(nova|titan)"), "amazon"),
    (re.compile(r"^phi-?\d"), "microsoft"),
]
# Organisation segments (openrouter/anthropic/..., together_ai/meta-llama/..., bedrock's "meta.").
_ORGS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "meta-llama": "meta",
    "meta": "meta",
    "mistralai": "mistral",
    "mistral": "mistral",
    "qwen": "qwen",
    "deepseek-ai": "deepseek",
    "deepseek": "deepseek",
    "cohere": "cohere",
    "x-ai": "xai",
    "xai": "xai",
    "amazon": "amazon",
    "microsoft": "microsoft",
}
# LiteLLM providers that only serve their own vendor's models; "openai/" is not one of them
# (it is also LiteLLM's prefix for any OpenAI-compatible server).
_VENDOR_PROVIDERS = {
    "anthropic": "anthropic",
    "gemini": "google",
    "mistral": "mistral",
    "cohere": "cohere",
    "cohere_chat": "cohere",
    "xai": "xai",
    "deepseek": "deepseek",
}
_REGION = re.compile(r"^(us|eu|apac|global|us-gov)\.")
_DOTTED_VENDOR = re.compile(r"^([a-z0-9-]+)\.(?=[a-z])")


def _fake_name(model: str) -> str | None:
    for prefix in _FAKE_PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix) :]
    return None


def base_name(model: str) -> str:
    """The bare model name: provider path, region and vendor prefixes removed, lower case."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _REGION.sub("", name)
    match = _DOTTED_VENDOR.match(name)
    if match and match.group(1) in _ORGS:
        name = name[match.end() :]
    return name


def model_family(model: str) -> str | None:
    """The vendor family of a model string (``openai``, ``anthropic``, ``google``...), or None.

    Fakes are their own family each: ``simlab-fake/alice`` is ``fake:alice``.
    """
    fake = _fake_name(model.strip())
    if fake is not None:
        return f"fake:{fake}"
    name = base_name(model)
    for pattern, family in _NAME_FAMILIES:
        if pattern.match(name):
            return family
    segments = model.strip().lower().split("/")
    last = _REGION.sub("", segments[-1])
    dotted = _DOTTED_VENDOR.match(last)
    if dotted and dotted.group(1) in _ORGS:
        return _ORGS[dotted.group(1)]
    for segment in segments[1:-1]:
        if segment in _ORGS:
            return _ORGS[segment]
    if len(segments) > 1 and segments[0] in _VENDOR_PROVIDERS:
        return _VENDOR_PROVIDERS[segments[0]]
    return None


_STAMPS = [
    re.compile(r"(19|20)\d{2}-\d{2}-\d{2}"),  # gpt-4o-2024-08-06
    re.compile(r"(?<!\d)20\d{6}(?!\d)"),  # claude-3-5-sonnet-20241022, @20240620
    re.compile(r"-\d{2}-\d{2}$"),  # gemini-2.5-pro-preview-06-05
    re.compile(r"-\d{3,4}$"),  # gemini-1.5-pro-002, gpt-4-0613, mistral-large-2411
    re.compile(r"-v\d+(:\d+)?$"),  # bedrock ...-v1:0 (with a date before it, usually)
]


def is_pinned(model: str) -> tuple[bool, str]:
    """Whether ``model`` names a fixed version, with the reason (shown in warnings)."""
    if _fake_name(model.strip()) is not None:
        return True, "fake model: deterministic"
    name = base_name(model)
    if "latest" in name:
        return False, f"{model} is a moving alias ('latest'); pin a dated version"
    if ":" in name and not re.search(r"-v\d+:\d+$", name):  # ollama tags (llama3:8b) can be re-pulled
        tag = name.split(":", 1)[1]
        if not any(p.search(tag) for p in _STAMPS[:2]):
            return False, f"{model} uses a mutable tag ({tag}); pin a digest or dated version"
    for pattern in _STAMPS:
        match = pattern.search(name)
        if match:
            return True, f"version stamp {match.group(0).lstrip('-@')}"
    return False, f"{model} has no date or version stamp; it may change without notice"


def same_family(a: str, b: str) -> bool:
    """True when both models are of one known family, or are the same model.

    Unknown families are not assumed to match: callers warn only on what they can know.
    """
    if base_name(a) == base_name(b) and _fake_name(a) is None and _fake_name(b) is None:
        return True
    fa, fb = model_family(a), model_family(b)
    return fa is not None and fa == fb
