"""The model catalogue: context windows, defaults and suggestions from genai-prices' data."""

from __future__ import annotations

import subprocess
import sys
from datetime import date

import pytest

from agentcore import catalogue
from agentcore.errors import UsageError
from agentcore.loop import Agent
from agentcore.messages import UserMessage
from agentcore.providers.anthropic import AnthropicProvider
from agentcore.providers.base import ModelRequest, Settings
from agentcore.providers.openai import OpenAIProvider
from agentcore.run import Run, RunConfig


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


def test_models_past_their_end_of_life_are_retired_and_never_suggested():
    assert catalogue.retired("anthropic", "claude-3-5-haiku-latest") == "2026-02-19"
    assert catalogue.retired("anthropic", "claude-3-5-haiku-20241022") == "2026-02-19"
    assert catalogue.retired("anthropic", "claude-sonnet-4-0") == "2026-06-15"
    assert catalogue.retired("anthropic", "claude-haiku-4-5") is None
    for provider in ("openai", "anthropic"):
        suggested = catalogue.suggested_models(provider)
        assert suggested[0] == catalogue.default_model(provider)
        assert len(set(suggested)) == len(suggested) == catalogue.SUGGESTIONS
        assert all(catalogue.find(provider, m).end_of_life is None for m in suggested), suggested


@pytest.fixture
def newest_cheap_retired(monkeypatch):
    """The catalogue as it stands the day after the newest model of each cheap family reached its end of life."""
    families = catalogue.DEFAULT_FAMILY.items()  # by genai-prices provider id: openai, anthropic
    newest = {p: next(m.id for m in catalogue.models(p) if family.fullmatch(m.id)) for p, family in families}
    yesterday = date.fromordinal(date.today().toordinal() - 1).isoformat()
    end_of_life = {p: dict(ids) for p, ids in catalogue.END_OF_LIFE.items()}
    for provider, model in newest.items():
        end_of_life[provider][model] = yesterday
    monkeypatch.setattr(catalogue, "END_OF_LIFE", end_of_life)
    cached = (catalogue.models, catalogue.find, catalogue.default_model, catalogue.suggested_models)
    for f in cached:
        f.cache_clear()
    yield newest
    for f in cached:
        f.cache_clear()


def test_no_default_names_a_model_past_its_end_of_life(newest_cheap_retired):
    from agentcore.providers import REGISTRY, create_provider

    for name in ("openai", "openai-responses", "anthropic"):
        gone = newest_cheap_retired[catalogue.CATALOGUED[name]]
        assert catalogue.retired(name, gone) is not None
        family = catalogue.DEFAULT_FAMILY[catalogue.CATALOGUED[name]]
        # the next newest of the same cheap family takes its place, and the picker no longer offers it
        expected = [m.id for m in catalogue.models(name) if family.fullmatch(m.id) and m.id != gone][0]
        assert catalogue.default_model(name) == REGISTRY[name].default_model == expected
        assert catalogue.retired(name, expected) is None
        assert gone not in catalogue.suggested_models(name) and gone not in REGISTRY[name].known_models
    assert create_provider("anthropic", api_key="test-key").model == catalogue.default_model("anthropic")


def test_a_model_with_an_end_of_life_to_come_is_deprecated_until_then():
    before, after = date(2027, 1, 21), date(2027, 1, 22)
    assert catalogue.retired("anthropic", "claude-opus-4-5-20251101", before) is None
    assert catalogue.retired("anthropic", "claude-opus-4-5-20251101", after) == "2027-01-22"
    assert not catalogue.find("anthropic", "claude-opus-4-5").current
    assert "claude-opus-4-5" not in catalogue.suggested_models("anthropic", limit=50)


def test_suggestions_are_chat_models_newest_first():
    suggested = catalogue.suggested_models("openai")
    assert not any(s in m for m in suggested for s in ("embedding", "tts", "image", "realtime", "gpt-oss"))
    versions = [catalogue._version(m) for m in suggested[1:]]
    assert versions == sorted(versions, reverse=True)


def test_import_agentcore_does_not_load_genai_prices():
    code = "import sys, agentcore, agentcore.catalogue; print('genai_prices' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the parameters a model accepts ---------------------------------------------------------------


def refusal(provider: str, model: str, **settings) -> str | None:
    return catalogue.check_settings(provider, model, Settings(**settings))


def test_temperature_is_range_checked_per_provider():
    assert refusal("openai", "gpt-5.4-mini", temperature=2.0) is None
    assert refusal("openai", "gpt-5.4-mini", temperature=2.5) == "temperature 2.5 is out of range for openai: 0 to 2"
    assert refusal("anthropic", "claude-haiku-4-5", temperature=1.0) is None
    assert refusal("anthropic", "claude-haiku-4-5", temperature=1.5) == (
        "temperature 1.5 is out of range for anthropic: 0 to 1"
    )
    assert refusal("openai-responses", "my-model", temperature=3) is not None
    assert refusal("ollama", "llama3.2", temperature=5) is None
    assert "0 or more" in refusal("ollama", "llama3.2", temperature=-1)


def test_claude_models_that_reject_temperature_are_refused_even_by_a_dated_id():
    assert refusal("anthropic", "claude-sonnet-5", temperature=0.5) == (
        "claude-sonnet-5 takes the default temperature (1) only: leave it unset"
    )
    assert "does not accept temperature" in refusal("anthropic", "claude-opus-4-7", temperature=1.0)
    assert "claude-haiku-5-5 takes the default temperature (1)" in refusal(
        "anthropic", "claude-haiku-5-5-20261015", temperature=0.2
    )
    assert refusal("anthropic", "claude-sonnet-5") is None
    assert refusal("anthropic", "claude-opus-4-6", temperature=0.2) is None


def test_thinking_allows_only_the_values_the_model_takes():
    assert refusal("anthropic", "claude-haiku-4-5", thinking_budget=2048, temperature=0.3) == (
        "with thinking on, claude-haiku-4-5 takes temperature 1 only: leave it unset"
    )
    assert refusal("anthropic", "claude-haiku-4-5", thinking_budget=2048, temperature=1) is None
    assert refusal("anthropic", "claude-haiku-4-5", thinking_budget=500) == (
        "a thinking budget must be at least 1024 tokens, not 500"
    )
    assert "adaptive thinking only" in refusal("anthropic", "claude-opus-4-7", thinking_budget=2048)
    assert refusal("anthropic", "claude-opus-4-7", reasoning_effort="high") is None
    assert "no adaptive thinking" in refusal("anthropic", "claude-haiku-4-5", reasoning_effort="high")
    assert refusal("anthropic", "claude-opus-4-6", reasoning_effort="xhigh") == (
        "claude-opus-4-6 has no reasoning effort 'xhigh': low, medium, high or max"
    )
    assert refusal("anthropic", "claude-opus-4-6", reasoning_effort="max") is None
    assert "no reasoning effort 'minimal'" in refusal("anthropic", "claude-opus-4-6", reasoning_effort="minimal")
    assert refusal("ollama", "qwen3", reasoning_effort="xhigh") is not None
    assert "no reasoning effort 'minimal'" in refusal("openai-responses", "gpt-6-luna", reasoning_effort="minimal")


def test_openai_reasoning_models_take_only_the_default_temperature():
    assert refusal("openai", "o3", temperature=0.2) == "o3 takes the default temperature (1) only: leave it unset"
    assert refusal("openai", "gpt-5-mini-2025-08-07", temperature=0) is not None
    assert refusal("openai", "o4-mini", temperature=1) is None
    assert refusal("openai", "gpt-4.1-mini", temperature=0.2) is None


def test_a_refused_setting_stops_the_model_phase_before_anything_is_sent(katan):
    provider = AnthropicProvider("claude-sonnet-5", base_url=katan.url, api_key="katan-key")
    agent = Agent(provider)
    run = Run.start("Weather?", RunConfig(provider="anthropic", model="claude-sonnet-5", temperature=0.5))
    before = katan.requests_seen()
    with pytest.raises(UsageError) as refused:
        agent.model_phase(run)
    assert str(refused.value) == "anthropic: claude-sonnet-5 takes the default temperature (1) only: leave it unset"
    assert katan.requests_seen() == before
    assert run.steps == [] and run.next_phase == "model"
    with pytest.raises(UsageError):  # a caller that skips the loop is refused too
        provider.complete(ModelRequest(messages=tuple(run.messages), settings=Settings(temperature=0.5)))
    assert katan.requests_seen() == before


def test_a_request_past_the_context_window_is_refused_before_sending(katan):
    provider = OpenAIProvider("gpt-4o-mini", base_url=katan.url, api_key="katan-key")
    huge = UserMessage(content="word " * 110_000)  # about 137,500 tokens, past gpt-4o-mini's 128,000
    before = katan.requests_seen()
    with pytest.raises(UsageError, match="context window of 128,000"):
        provider.complete(ModelRequest(messages=(huge,)))
    assert katan.requests_seen() == before
    assert catalogue.overflow("openai", "gpt-4o-mini", 1000) is None


def test_the_registry_takes_its_defaults_and_suggestions_from_the_catalogue():
    from agentcore.providers import REGISTRY, create_provider

    for name in ("openai", "openai-responses", "anthropic"):
        info = REGISTRY[name]
        assert info.default_model == catalogue.default_model(name)
        assert info.known_models == catalogue.suggested_models(name)
        assert catalogue.retired(name, info.default_model) is None
    assert REGISTRY["anthropic"].default_model not in ("claude-3-5-haiku-latest", "claude-sonnet-4-0")
    provider = create_provider("anthropic", api_key="test-key")
    assert provider.model == catalogue.default_model("anthropic")
    assert REGISTRY["ollama"].default_model == "llama3.2"  # genai-prices lists no Ollama models
