"""Model families and pin warnings."""

from __future__ import annotations

import pytest

from simlab.llm import is_pinned, model_family, same_family


@pytest.mark.parametrize(("model", "family"), [
    ("gpt-4o-2024-08-06", "openai"),
    ("openai/gpt-4o-mini", "openai"),
    ("azure/gpt-4.1", "openai"),
    ("o1-preview", "openai"),
    ("o3-mini-2025-01-31", "openai"),
    ("openai/o4-mini", "openai"),
    ("chatgpt-4o-latest", "openai"),
    ("anthropic/claude-3-5-sonnet-20241022", "anthropic"),
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic"),
    ("bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic"),
    ("vertex_ai/claude-3-5-sonnet@20240620", "anthropic"),
    ("gemini/gemini-1.5-pro-002", "google"),
    ("vertex_ai/gemini-2.0-flash-001", "google"),
    ("ollama/gemma2:9b", "google"),
    ("ollama/llama3.1:8b", "meta"),
    ("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta"),
    ("bedrock/meta.llama3-1-70b-instruct-v1:0", "meta"),
    ("mistral/mistral-large-2411", "mistral"),
    ("mistral/open-mixtral-8x22b", "mistral"),
    ("codestral-2405", "mistral"),
    ("openrouter/qwen/qwen-2.5-72b-instruct", "qwen"),
    ("deepseek/deepseek-chat", "deepseek"),
    ("cohere/command-r-plus-08-2024", "cohere"),
    ("xai/grok-2-1212", "xai"),
    ("openrouter/anthropic/claude-3.5-sonnet", "anthropic"),
    ("simlab-fake/alice", "fake:alice"),
    ("fake/function", "fake:function"),
    ("openai/my-inhouse-model", None),
    ("some-unknown-thing", None),
])
def test_model_family(model: str, family: str | None) -> None:
    assert model_family(model) == family


@pytest.mark.parametrize("model", [
    "gpt-4o-2024-08-06", "anthropic/claude-3-5-sonnet-20241022", "gemini/gemini-1.5-pro-002",
    "gpt-4-0613", "mistral/mistral-large-2411", "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "vertex_ai/claude-3-5-sonnet@20240620", "simlab-fake/bob", "fake/scripted",
])
def test_pinned(model: str) -> None:
    pinned, reason = is_pinned(model)
    assert pinned, reason


@pytest.mark.parametrize(("model", "why"), [
    ("gpt-4o", "no date"),
    ("openai/gpt-4o-mini", "no date"),
    ("claude-3-5-sonnet-latest", "moving alias"),
    ("anthropic/claude-3-7-sonnet-latest", "moving alias"),
    ("chatgpt-4o-latest", "moving alias"),
    ("gemini/gemini-1.5-pro", "no date"),
    ("ollama/llama3.1:8b", "mutable tag"),
    ("ollama/llama3:latest", "moving alias"),
])
def test_unpinned_with_reason(model: str, why: str) -> None:
    pinned, reason = is_pinned(model)
    assert not pinned and why in reason and model in reason


def test_same_family() -> None:
    assert same_family("openai/gpt-4o-2024-08-06", "azure/gpt-4o-mini")
    assert same_family("anthropic/claude-3-5-sonnet-20241022", "bedrock/anthropic.claude-3-haiku-20240307-v1:0")
    assert not same_family("openai/gpt-4o", "anthropic/claude-3-5-sonnet-20241022")
    assert not same_family("simlab-fake/agent", "simlab-fake/user")
    assert same_family("simlab-fake/same", "simlab-fake/same")
    assert same_family("openai/inhouse-x", "hosted_vllm/inhouse-x")  # same model, family unknown
    assert not same_family("openai/inhouse-x", "openai/inhouse-y")  # unknown: not assumed equal
