"""What a model's tokens cost: a run's price reference (its own model, or the one it is priced as), the
genai-prices lookup for it, and the chat models that database prices per token.

Prices come from genai-prices, the maintained price database; a free provider's call costs 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from ..catalogue import CATALOGUED  # agentcore provider -> genai-prices id, the Responses API's as OpenAI's
from ..errors import UsageError
from ..messages import Usage
from ..run import Run
from ..steps import ModelRef, StepRecord
from . import FREE_PROVIDERS


@dataclass(frozen=True)
class PriceRef:
    """A model to price tokens as: a genai-prices provider id and model name (or the provider's API URL)."""

    provider: str
    model: str
    api_url: str | None = None

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


def parse_price_as(text: str) -> PriceRef:
    """Parse `PROVIDER:MODEL` (e.g. `openai:gpt-4o-mini`) and check that genai-prices knows it."""
    provider, sep, model = text.partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise UsageError(f"price as {text!r}: expected PROVIDER:MODEL, e.g. openai:gpt-4o-mini")
    ref = PriceRef(provider.strip(), model.strip())
    if Pricer.find(ref) is None:
        raise UsageError(f"genai-prices does not know {ref.label}; see `agentcore cost --list-models`")
    return ref


def run_price_ref(run: Run) -> PriceRef:
    """The run's configured provider and model, as genai-prices would name them."""
    return model_price_ref(run, ModelRef(run.config.provider, run.config.model))


def step_price_ref(run: Run, step: StepRecord) -> PriceRef:
    """The provider and model that answered a step, as genai-prices would name them."""
    return model_price_ref(run, run.answered_by(step))


def model_price_ref(run: Run, model: ModelRef) -> PriceRef:
    """A provider and model of the run as genai-prices would name them; the run's base URL goes with its provider."""
    base_url = run.config.base_url if model.provider == run.config.provider else None
    return PriceRef(CATALOGUED.get(model.provider, model.provider), model.model, base_url)


@dataclass(frozen=True)
class Pricer:
    """Prices token counts for one genai-prices model, cache reads and writes at their own rates."""

    ref: PriceRef
    # equal and hashed by `ref` alone (genai-prices' own records are unhashable), so a price can be memoised
    _model: Any = field(repr=False, compare=False)
    _provider: Any = field(repr=False, compare=False)

    @classmethod
    def find(cls, ref: PriceRef) -> Pricer | None:
        """The pricer for `ref`, or None when genai-prices knows no such provider or model."""
        from genai_prices.data_snapshot import get_snapshot

        snapshot = get_snapshot()
        attempts = [(None, ref.api_url)] if ref.api_url else []
        attempts.append((ref.provider, None))
        for provider_id, api_url in attempts:
            try:
                provider, model = snapshot.find_provider_model(ref.model, None, provider_id, api_url)
            except LookupError:
                continue
            return cls(PriceRef(provider.id, model.id), model, provider)
        return None

    def price(self, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> float:
        """USD for one request; `input_tokens` includes the cached ones, as genai-prices and Usage count them.

        Cached tokens reported beyond the input (a server's or a file's mistake) are priced as if
        they were at most the input, where genai-prices would refuse them.
        """
        from genai_prices import Usage as PriceUsage

        cache_read = min(cache_read, input_tokens)
        cache_write = min(cache_write, input_tokens - cache_read)
        usage = PriceUsage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        return float(self._model.calc_price(usage, self._provider).total_price)


@lru_cache(maxsize=64)
def pricer_for(ref: PriceRef) -> Pricer | None:
    # the store prices a run after every phase: look each model up in the price snapshot once
    return Pricer.find(ref)


def price_call(run: Run, model: ModelRef, usage: Usage) -> float | None:
    """What one call of the run cost at its model's price: 0 for a free provider, None when the price is unknown."""
    if model.provider in FREE_PROVIDERS:
        return 0.0
    pricer = pricer_for(model_price_ref(run, model))
    if pricer is None:
        return None
    return pricer.price(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)


@cache
def price_choices(providers: tuple[str, ...] = ("openai", "anthropic", "google")) -> list[str]:
    """Chat models of the given providers that genai-prices prices per token, as `provider:model`."""
    from genai_prices.data_snapshot import get_snapshot

    skip = ("embedding", "tts", "transcribe", "whisper", "image", "audio", "realtime", "moderation", "live", "ft:")
    out = []
    for p in get_snapshot().providers:
        if p.id not in providers:
            continue
        for m in p.models:
            prices = m.prices if not isinstance(m.prices, list) else m.prices[-1].prices
            if m.deprecated or any(s in m.id for s in skip) or p.id == "google" and not m.id.startswith("gemini"):
                continue
            if getattr(prices, "input_mtok", None) is not None and getattr(prices, "output_mtok", None) is not None:
                out.append(f"{p.id}:{m.id}")
    return out
