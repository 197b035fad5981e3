"""Which models each provider offers: ids, context windows, the default and the suggestions.

The ids and context windows come from genai-prices' bundled data, the same maintained database
the costs are priced from, so a newer genai-prices brings newer models without a change here.
What genai-prices does not say is kept here, each with its source: which ids are past the
vendor's end of life, and which family a provider's default is taken from (the newest cheap
model of the family). genai-prices is imported on first use, never by `import agentcore`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import cache, lru_cache
from typing import Any

# agentcore provider (or dialect) name -> genai-prices provider id
CATALOGUED = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}

# The default is the newest model of the provider's small, cheap family: a playground makes many
# calls, and each one resends the whole history.
DEFAULT_FAMILY = {
    "openai": re.compile(r"gpt-[\d.]+-(mini|luna)"),
    "anthropic": re.compile(r"claude-haiku-[\d-]+"),
}

# The vendor's end-of-life date of each id that has one: past it, requests fail; before it, the model
# is deprecated. genai-prices keeps their prices (old runs are still priced) and marks none of them.
# Sources: Anthropic's model-deprecations page and its SDK's DEPRECATED_MODELS; OpenAI's deprecations page.
END_OF_LIFE: dict[str, dict[str, str]] = {
    "anthropic": {
        "claude-v1": "2024-11-06",
        "claude-2": "2025-07-21",
        "claude-3-sonnet": "2025-07-21",
        "claude-3-opus": "2026-01-05",
        "claude-3-5-sonnet": "2025-10-22",
        "claude-3-5-haiku": "2026-02-19",
        "claude-3-7-sonnet": "2026-02-19",
        "claude-3-haiku": "2026-04-20",
        "claude-opus-4-0": "2026-06-15",
        "claude-sonnet-4-0": "2026-06-15",
        "claude-opus-4-1": "2026-08-05",
        "claude-sonnet-4-5": "2026-11-30",
        "claude-opus-4-5": "2027-01-22",
    },
    "openai": {
        "gpt-4-vision-preview": "2024-12-06",
        "gpt-4-32k": "2025-06-06",
        "gpt-4.5-preview": "2025-07-14",
        "o1-preview": "2025-07-28",
        "o1-mini": "2025-10-27",
    },
}

# Ids (or parts of ids) that are not chat models a tool loop can use: embeddings, speech, images,
# realtime audio, fine-tune price entries, completions-era models, models only the Responses API
# serves (`-pro`, deep research, computer use), and open-weight models other hosts serve (gpt-oss).
_NOT_CHAT = re.compile(
    r"embedding|tts|transcribe|whisper|image|audio|realtime|moderation|live|search|ft:|:|"
    r"davinci|babbage|curie|^ada|instruct|codex|computer-use|deep-research|-pro$|cyber|rosalind|"
    r"chat-latest|^chatgpt|^gpt-oss|^gpt-3\.5|^gpt-4(-|$)|^claude-v1|^claude-2"
)
_VERSION = re.compile(r"\d+(?:[.-]\d+)*")

# The local provider's default n_ctx: the window SmolLM2 is loaded with unless told otherwise.
LOCAL_N_CTX = 4096
SUGGESTIONS = 8  # how many models the sidebar offers per provider


@dataclass(frozen=True)
class CatalogueModel:
    """One model of a provider as genai-prices knows it, and whether it can still be called."""

    provider: str  # the genai-prices provider id
    id: str
    name: str | None
    context_window: int | None
    deprecated: bool  # genai-prices' flag: still works, going away
    end_of_life: str | None  # the vendor's end-of-life date (ISO), past or to come

    @property
    def current(self) -> bool:
        """Whether the model can be called and is not on its way out."""
        return not self.deprecated and self.end_of_life is None

    def retired(self, today: date | None = None) -> bool:
        """Whether the model is past its end of life: its requests fail."""
        return self.end_of_life is not None and self.end_of_life <= (today or date.today()).isoformat()


def _end_of_life(provider: str, model_id: str) -> str | None:
    for prefix, day in END_OF_LIFE.get(provider, {}).items():
        if model_id == prefix or model_id.startswith(prefix + "-"):
            return day
    return None


def _version(model_id: str) -> tuple[int, ...]:
    """The version in an id as numbers, for newest-first ordering: gpt-6.1-sol → (6, 1), claude-haiku-4-5 → (4, 5)."""
    found = _VERSION.search(model_id)
    return tuple(int(n) for n in re.split(r"[.-]", found.group())) if found else ()


@cache
def _snapshot() -> Any:
    from genai_prices.data_snapshot import get_snapshot

    return get_snapshot()


@cache
def models(provider: str) -> tuple[CatalogueModel, ...]:
    """The chat models genai-prices lists for an agentcore provider, newest version first; () for others."""
    gp_id = CATALOGUED.get(provider)
    if gp_id is None:
        return ()
    found = next((p for p in _snapshot().providers if p.id == gp_id), None)
    if found is None:
        return ()
    out = [
        CatalogueModel(gp_id, m.id, m.name, m.context_window, bool(m.deprecated), _end_of_life(gp_id, m.id))
        for m in found.models
        if not _NOT_CHAT.search(m.id) and m.context_window
    ]
    out.sort(key=lambda m: (_version(m.id), m.id), reverse=True)
    return tuple(out)


@lru_cache(maxsize=512)  # model names are typed by people: bounded
def find(provider: str, model: str) -> CatalogueModel | None:
    """The catalogue's entry for a model id as sent to the API (a dated id finds its model), or None."""
    gp_id = CATALOGUED.get(provider)
    if gp_id is None or not model:
        return None
    try:
        _, m = _snapshot().find_provider_model(model, None, gp_id, None)
    except LookupError:
        return None
    return CatalogueModel(gp_id, m.id, m.name, m.context_window, bool(m.deprecated), _end_of_life(gp_id, m.id))


def context_window(provider: str, model: str) -> int | None:
    """The most input tokens `model` takes on `provider`, or None when not known.

    From genai-prices for OpenAI and Anthropic ids (dated ids included); the default n_ctx for the
    local model. None for Ollama (the server's `num_ctx` decides, not the model), the scripted
    model, and any id genai-prices does not know (a compatible server's own model).
    """
    if provider == "local":
        return LOCAL_N_CTX
    entry = find(provider, model)
    return entry.context_window if entry else None


def retired(provider: str, model: str, today: date | None = None) -> str | None:
    """The end-of-life date of a model past it (on `today`, by default the real one): its requests fail."""
    entry = find(provider, model)
    return entry.end_of_life if entry and entry.retired(today) else None


@cache
def default_model(provider: str) -> str | None:
    """The newest current model of the provider's default family, or None for a provider the catalogue lacks."""
    family = DEFAULT_FAMILY.get(CATALOGUED.get(provider, provider))
    if family is None:
        return None
    return next((m.id for m in models(provider) if m.current and family.fullmatch(m.id)), None)


@cache
def suggested_models(provider: str, limit: int = SUGGESTIONS) -> tuple[str, ...]:
    """The default first, then the newest current models: what a model picker offers."""
    default = default_model(provider)
    rest = [m.id for m in models(provider) if m.current and m.id != default]
    return tuple([default] if default else []) + tuple(rest[: limit - bool(default)])


# -- the parameters a model accepts ---------------------------------------------------------------

# The temperature each wire format takes (None: no upper bound documented).
TEMPERATURE_RANGE: dict[str, tuple[float, float | None]] = {
    "openai": (0.0, 2.0),
    "openai-responses": (0.0, 2.0),
    "anthropic": (0.0, 1.0),
    "ollama": (0.0, None),
}
# The reasoning efforts each wire format names ("none" is off, and is never sent).
EFFORTS: dict[str, tuple[str, ...]] = {
    "openai-responses": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "anthropic": ("none", "low", "medium", "high", "xhigh", "max"),
    "ollama": ("none", "low", "medium", "high", "max"),
}
MIN_THINKING_BUDGET = 1024  # Anthropic's smallest budget_tokens

# Per-model rules, matched on the catalogue's id (so a dated id follows its model). Sources: Anthropic's
# thinking troubleshooting table and Sonnet 5 migration guide, and the 400s users report (Opus 4.7,
# Opus 5); the Claude 5 models after those follow their rules until the docs say otherwise.
# Claude models that take adaptive thinking only, and reject any temperature.
_ADAPTIVE_ONLY = re.compile(r"claude-(opus-4-[78]|(sonnet|opus|haiku|fable|mythos)-5\b).*")
# Claude models with extended thinking (a budget) only: adaptive is a 400.
_EXTENDED_ONLY = re.compile(r"claude-(opus-4-[15]|haiku-4-5|sonnet-4-5)\b.*")
# Claude models whose efforts stop at max without xhigh ("Supported levels: high, low, max, medium").
_NO_XHIGH = re.compile(r"claude-(opus|sonnet)-4-6\b.*")
# OpenAI reasoning models that take only the default temperature, 1.
_FIXED_TEMPERATURE = re.compile(r"o\d(-mini)?|gpt-5(-mini|-nano)?")


def _canonical(provider: str, model: str) -> str:
    entry = find(provider, model)
    return entry.id if entry else model.strip().lower()


def check_settings(provider: str, model: str, settings: Any) -> str | None:
    """Why `provider` would refuse `settings` for `model`, in one line; None when it would take them.

    `settings` is a providers.base.Settings (read by attribute, so an older one without the
    reasoning fields works too). Checked before sending, so a bad setting is a clear message
    rather than a 400 from the server.
    """
    temperature = getattr(settings, "temperature", None)
    budget = getattr(settings, "thinking_budget", None)
    effort = getattr(settings, "reasoning_effort", None)
    return (
        _check_temperature(provider, temperature)
        or _check_effort(provider, effort)
        or _check_model(provider, _canonical(provider, model), temperature, budget, effort)
    )


def _check_temperature(provider: str, temperature: float | None) -> str | None:
    bounds = TEMPERATURE_RANGE.get(provider)
    if temperature is None or bounds is None:
        return None
    low, high = bounds
    if temperature < low or (high is not None and temperature > high):
        allowed = f"{low:g} to {high:g}" if high is not None else f"{low:g} or more"
        return f"temperature {temperature:g} is out of range for {provider}: {allowed}"
    return None


def _check_effort(provider: str, effort: str | None) -> str | None:
    known = EFFORTS.get(provider)
    if effort is None or known is None or effort in known:
        return None
    return f"{provider} has no reasoning effort {effort!r}: {', '.join(known)}"


def _check_model(
    provider: str, model: str, temperature: float | None, budget: int | None, effort: str | None
) -> str | None:
    if provider == "anthropic":
        return _check_claude(model, temperature, budget, effort)
    fixed = provider in ("openai", "openai-responses") and _FIXED_TEMPERATURE.fullmatch(model)
    if fixed and temperature is not None and temperature != 1:
        return f"{model} takes the default temperature (1) only: leave it unset"
    return None


def _check_claude(model: str, temperature: float | None, budget: int | None, effort: str | None) -> str | None:
    thinking = bool(budget) or effort not in (None, "none")
    if _ADAPTIVE_ONLY.fullmatch(model):
        if temperature is not None:
            return f"{model} does not accept temperature: leave it unset"
        if budget:
            return f"{model} takes adaptive thinking only: set a reasoning effort instead of a thinking budget"
    if budget is not None and budget < MIN_THINKING_BUDGET:
        return f"a thinking budget must be at least {MIN_THINKING_BUDGET} tokens, not {budget}"
    if thinking and temperature is not None and temperature != 1:
        return f"with thinking on, {model} takes temperature 1 only: leave it unset"
    if effort not in (None, "none") and not budget and _EXTENDED_ONLY.fullmatch(model):
        return f"{model} has no adaptive thinking: set a thinking budget ({MIN_THINKING_BUDGET} or more) instead"
    if effort == "xhigh" and _NO_XHIGH.fullmatch(model):
        return f"{model} has no reasoning effort 'xhigh': low, medium, high or max"
    return None


def overflow(provider: str, model: str, request_tokens: int) -> str | None:
    """A one-line warning when a request of about `request_tokens` would not fit the model's window."""
    window = context_window(provider, model)
    if window is None or request_tokens <= window:
        return None
    return (
        f"the request is about {request_tokens:,} tokens, more than {model}'s context window of {window:,}: "
        "fork from an earlier step or trim the messages"
    )
