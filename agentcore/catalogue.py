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
from functools import cache
from typing import Any

# agentcore provider (or dialect) name -> genai-prices provider id
CATALOGUED = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}

# The default is the newest model of the provider's small, cheap family: a playground makes many
# calls, and each one resends the whole history.
DEFAULT_FAMILY = {
    "openai": re.compile(r"gpt-[\d.]+-(mini|luna)"),
    "anthropic": re.compile(r"claude-haiku-[\d-]+"),
}

# Ids past the vendor's end of life: requests to them fail. genai-prices keeps their prices (old
# runs are still priced) and marks none of them, so they are listed here with the retirement date.
# Sources: Anthropic's model-deprecations page and its SDK's DEPRECATED_MODELS; OpenAI's deprecations page.
RETIRED: dict[str, dict[str, str]] = {
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
    retired: str | None  # the end-of-life date, when past it

    @property
    def current(self) -> bool:
        """Whether the model can be called and is not on its way out."""
        return not self.deprecated and self.retired is None


def _retired(provider: str, model_id: str) -> str | None:
    for prefix, date in RETIRED.get(provider, {}).items():
        if model_id == prefix or model_id.startswith(prefix + "-"):
            return date
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
        CatalogueModel(gp_id, m.id, m.name, m.context_window, bool(m.deprecated), _retired(gp_id, m.id))
        for m in found.models
        if not _NOT_CHAT.search(m.id) and m.context_window
    ]
    out.sort(key=lambda m: (_version(m.id), m.id), reverse=True)
    return tuple(out)


@cache
def find(provider: str, model: str) -> CatalogueModel | None:
    """The catalogue's entry for a model id as sent to the API (a dated id finds its model), or None."""
    gp_id = CATALOGUED.get(provider)
    if gp_id is None or not model:
        return None
    try:
        _, m = _snapshot().find_provider_model(model, None, gp_id, None)
    except LookupError:
        return None
    return CatalogueModel(gp_id, m.id, m.name, m.context_window, bool(m.deprecated), _retired(gp_id, m.id))


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


def retired(provider: str, model: str) -> str | None:
    """The end-of-life date of a model whose requests now fail, or None."""
    entry = find(provider, model)
    return entry.retired if entry else None


@cache
def default_model(provider: str) -> str | None:
    """The newest current model of the provider's default family, or None for a provider the catalogue lacks."""
    family = DEFAULT_FAMILY.get("openai" if provider == "openai-responses" else provider)
    if family is None:
        return None
    return next((m.id for m in models(provider) if m.current and family.fullmatch(m.id)), None)


@cache
def suggested_models(provider: str, limit: int = SUGGESTIONS) -> tuple[str, ...]:
    """The default first, then the newest current models: what a model picker offers."""
    default = default_model(provider)
    rest = [m.id for m in models(provider) if m.current and m.id != default]
    return tuple([default] if default else []) + tuple(rest[: limit - bool(default)])
