"""The model catalogue: context windows, defaults and suggestions from genai-prices' data."""

from __future__ import annotations

import subprocess
import sys

from agentcore import catalogue


def test_context_window_comes_from_genai_prices_for_plain_and_dated_ids():
    assert catalogue.context_window("openai", "gpt-4o-mini") == 128_000
    assert catalogue.context_window("openai", "gpt-4o-mini-2024-07-18") == 128_000
    assert catalogue.context_window("anthropic", "claude-haiku-4-5-20251001") == 200_000
    assert catalogue.context_window("openai-responses", "gpt-5.4-mini") == 400_000


def test_context_window_is_none_where_nothing_is_known():
    assert catalogue.context_window("openai", "qwen2.5-7b-instruct") is None  # a compatible server's model
    assert catalogue.context_window("anthropic", "gpt-4o") is None
    assert catalogue.context_window("ollama", "llama3.2") is None  # the server's num_ctx decides
    assert catalogue.context_window("scripted", "weather") is None
    assert catalogue.context_window("nonesuch", "") is None


def test_local_context_window_is_the_default_n_ctx_the_model_loads_with():
    import inspect

    from agentcore.providers.local import LocalProvider

    n_ctx = inspect.signature(LocalProvider.__init__).parameters["n_ctx"].default
    assert catalogue.context_window("local", "smollm2-135m") == n_ctx


def test_defaults_are_current_models_of_the_cheap_family():
    openai, anthropic = catalogue.default_model("openai"), catalogue.default_model("anthropic")
    assert openai and catalogue.find("openai", openai).current
    assert anthropic and anthropic.startswith("claude-haiku-") and catalogue.find("anthropic", anthropic).current
    assert catalogue.default_model("ollama") is None


def test_retired_models_are_never_suggested():
    assert catalogue.retired("anthropic", "claude-3-5-haiku-latest") == "2026-02-19"
    assert catalogue.retired("anthropic", "claude-3-5-haiku-20241022") == "2026-02-19"
    assert catalogue.retired("anthropic", "claude-sonnet-4-0") == "2026-06-15"
    assert catalogue.retired("anthropic", "claude-haiku-4-5") is None
    for provider in ("openai", "anthropic"):
        suggested = catalogue.suggested_models(provider)
        assert suggested[0] == catalogue.default_model(provider)
        assert len(set(suggested)) == len(suggested) == catalogue.SUGGESTIONS
        assert all(catalogue.retired(provider, m) is None for m in suggested), suggested


def test_suggestions_are_chat_models_newest_first():
    suggested = catalogue.suggested_models("openai")
    assert not any(s in m for m in suggested for s in ("embedding", "tts", "image", "realtime", "gpt-oss"))
    versions = [catalogue._version(m) for m in suggested[1:]]
    assert versions == sorted(versions, reverse=True)


def test_import_agentcore_does_not_load_genai_prices():
    code = "import sys, agentcore, agentcore.catalogue; print('genai_prices' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
