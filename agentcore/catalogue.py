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
from typing import Any, Literal

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
# The reasoning efforts each wire format names: Chat Completions' reasoning_effort and the Responses API's
# reasoning.effort (the openai SDK's ReasoningEffort), where "none" is sent; Anthropic's output_config.effort
# and Ollama's think levels, where "none" is agentcore's word for off and is never sent.
EFFORTS: dict[str, tuple[str, ...]] = {
    "openai": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "openai-responses": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "anthropic": ("none", "low", "medium", "high", "xhigh", "max"),
    "ollama": ("none", "low", "medium", "high", "max"),
}
MIN_THINKING_BUDGET = 1024  # Anthropic's smallest budget_tokens
# max_tokens for a Claude model that thinks by default, when the run sets none: thinking counts toward it,
# and Anthropic's own extended-thinking example gives 16,000 (a 10,000-token budget within it)
THINKING_MAX_TOKENS = 16_000

# any (in range); never; one (1 only); effort_none (only at effort none); one_unless_effort_none (any at effort
# none, else 1 only)
Temperature = Literal["any", "never", "one", "effort_none", "one_unless_effort_none"]


@dataclass(frozen=True)
class ModelRules:
    """What one model takes beyond its API's types: the documented rules a schema-valid body can still break."""

    efforts: tuple[str, ...] | None = None  # the reasoning efforts it takes; None: every one its API names
    default_effort: str | None = None  # the effort it reasons at when none is sent
    temperature: Temperature = "any"  # see Temperature
    chat_tools: Literal["any", "effort_none", "never"] = "any"  # function calling on Chat Completions
    thinking: Literal["both", "adaptive", "extended"] = "both"  # Claude's thinking types
    thinking_by_default: bool = False  # Claude: thinks with no thinking setting, within max_tokens
    thinking_bound_to_prefix: bool = False  # Claude: a thinking block goes back only after an unchanged prefix


_OPENAI_EFFORTS = EFFORTS["openai"]
_DATED = r"(-\d{4}-\d{2}-\d{2})?"
# Each model's rules, matched on the catalogue's id (so a dated id follows its model); the first match wins.
RULES: tuple[tuple[str, re.Pattern[str], ModelRules], ...] = (
    # developers.openai.com/api/docs/models/gpt-6-luna (copy of 2026-10-05): efforts none, low, medium, high,
    # xhigh, max (no minimal), medium by default; "Chat Completions supports function calling only with
    # `reasoning_effort` set to `none`"; temperature and top_p only at effort none ("at any other effort,
    # remove them": OpenAI's prompting reference).
    (
        "openai",
        re.compile(r"gpt-6-luna" + _DATED),
        ModelRules(
            efforts=("none", "low", "medium", "high", "xhigh", "max"),
            default_effort="medium",
            temperature="effort_none",
            chat_tools="effort_none",
        ),
    ),
    # The GPT-5.6 family. The API's own 400, quoted in public reports (LibreChat #14231 for gpt-5.6-terra,
    # Langflow #14361 for gpt-5.6-luna, fazer-ai/agents #66 for all three): "Function tools with reasoning_effort
    # are not supported for gpt-5.6-luna in /v1/chat/completions. To use function tools, use /v1/responses or set
    # reasoning_effort to 'none'"; it comes with no effort set too, since the models reason by default (litellm
    # #34569: tools only => 400, tools + effort none => 200). OpenAI's reasoning guide (quoted in inspect_ai
    # #5172): "If you omit `reasoning.effort`, GPT-5.6 defaults to `medium`". The family refuses "minimal"
    # (livekit/agents #7169: "'reasoning_effort' does not support 'minimal' with this model. Supported values are:
    # 'none', 'low', 'medium', 'high', 'xhigh'"; experientiallabs #764 adds 'max' for luna, which open-swe #1849
    # uses; that issue's one report of sol taking "minimal" is not followed). Temperature: "'temperature' does not
    # support 0.8 with this model" (the wording of a default-temperature-only model), and GPT 5.6 "requires
    # temperature to be set to 1" (Vane #1173) when it reasons; at effort none it samples as gpt-5.2 does there.
    (
        "openai",
        re.compile(r"gpt-5\.6(-luna|-terra|-sol)?" + _DATED),
        ModelRules(
            efforts=("none", "low", "medium", "high", "xhigh", "max"),
            default_effort="medium",
            temperature="one_unless_effort_none",
            chat_tools="effort_none",
        ),
    ),
    # gpt-6-sol: the same 400 (onyx #15008: "Function tools with reasoning_effort are not supported for gpt-6-sol
    # in /v1/chat/completions ... set reasoning_effort to 'none'"). Temperature: "400 Unsupported parameter:
    # temperature" on gpt-6-luna, and "gpt-6-sol and gpt-6-astra hit the same check" (ai-memory #851, 2026-09-22).
    # The GPT-6 models drop the "minimal" effort (bolna #1019, measured: "gpt-6 drops the none and minimal floors").
    (
        "openai",
        re.compile(r"gpt-6-sol" + _DATED),
        ModelRules(
            efforts=tuple(e for e in _OPENAI_EFFORTS if e != "minimal"), temperature="never", chat_tools="effort_none"
        ),
    ),
    # The gpt-6.1-sol model page: "Use the Responses API for tool calling"; it does not take effort none.
    (
        "openai",
        re.compile(r"gpt-6\.1-sol" + _DATED),
        ModelRules(efforts=tuple(e for e in _OPENAI_EFFORTS if e != "none"), chat_tools="never"),
    ),
    # gpt-6-astra: its model page refuses temperature. Efforts on OpenAI's own API, two live checks of September
    # 2026: "reasoning_effort='none' and 'minimal' return 400 Unsupported value ... Supported values are: 'low',
    # 'medium', 'high', 'xhigh', and 'max'", medium when none is sent (inspect_ai #5254); "OpenAI rejects none and
    # minimal on it" (litellm-docs #1173); so function tools on Chat Completions are refused at every effort
    # (bolna #1019) and go through the Responses API. One Azure report says otherwise (oh-my-pi #11056: a
    # request forcing effort none with function tools was taken there); OpenAI's own answer is followed.
    (
        "openai",
        re.compile(r"gpt-6-astra" + _DATED),
        ModelRules(
            efforts=("low", "medium", "high", "xhigh", "max"),
            default_effort="medium",
            temperature="never",
            chat_tools="never",
        ),
    ),
    # OpenAI's reasoning guide: the o-series and gpt-5 reasoning models take only the default temperature.
    ("openai", re.compile(r"(o\d(-mini)?|gpt-5(-mini|-nano)?)" + _DATED), ModelRules(temperature="one")),
    # platform.claude.com/docs/en/models/haiku-5-5/overview and its migration guide: thinking is on by default
    # and counts toward max_tokens; "If a request includes `temperature`, it must be `1`"; adaptive thinking
    # only; "a request that sends a thinking block back after a change to `system`, `tools`, or earlier
    # `messages` returns a 400 error".
    (
        "anthropic",
        re.compile(r"claude-haiku-5-5\b.*"),
        ModelRules(temperature="one", thinking="adaptive", thinking_by_default=True, thinking_bound_to_prefix=True),
    ),
    # Anthropic's thinking troubleshooting table: Fable 5 and Mythos 5 adaptive only and always thinking,
    # Sonnet 5 adaptive only and thinking by default, Opus 4.8 and 4.7 adaptive only. The Sonnet 5 migration
    # guide (copy of 2026-09-26): a non-default temperature returns 400 regardless of thinking, so Sonnet 5
    # takes `temperature: 1`; the 400s users report on Opus 4.7 and Opus 5 ("`temperature` is deprecated for
    # this model") refuse any. The Claude 5 models after those follow their rules until the docs say otherwise.
    (
        "anthropic",
        re.compile(r"claude-sonnet-5\b.*"),
        ModelRules(temperature="one", thinking="adaptive", thinking_by_default=True),
    ),
    (
        "anthropic",
        re.compile(r"claude-(fable|mythos)-5\b.*"),
        ModelRules(temperature="never", thinking="adaptive", thinking_by_default=True),
    ),
    (
        "anthropic",
        re.compile(r"claude-(opus-4-[78]|opus-5|haiku-5)\b.*"),
        ModelRules(temperature="never", thinking="adaptive"),
    ),
    # the same table: Opus 4.5, Haiku 4.5, Sonnet 4.5 and Opus 4.1 take extended thinking (a budget) only
    ("anthropic", re.compile(r"claude-(opus-4-[15]|haiku-4-5|sonnet-4-5)\b.*"), ModelRules(thinking="extended")),
    # a recorded 400 on Opus 4.6: "This model does not support effort level 'xhigh'. Supported levels: high,
    # low, max, medium."
    (
        "anthropic",
        re.compile(r"claude-(opus|sonnet)-4-6\b.*"),
        ModelRules(efforts=("none", "low", "medium", "high", "max")),
    ),
)
NO_RULES = ModelRules()


def _canonical(provider: str, model: str) -> str:
    entry = find(provider, model)
    return entry.id if entry else model.strip().lower()


@lru_cache(maxsize=512)  # model names are typed by people: bounded
def model_rules(provider: str, model: str) -> ModelRules:
    """The documented rules of `model` on `provider` (a dated id follows its model); none for a model without."""
    family = CATALOGUED.get(provider)
    if family is None or not model:
        return NO_RULES
    canonical = _canonical(provider, model)
    return next((rules for f, rx, rules in RULES if f == family and rx.fullmatch(canonical)), NO_RULES)


def _fit(provider: str, model: str, settings: Any, tools: bool) -> tuple[Any, str | None]:
    rules = model_rules(provider, model)
    chat_tools = provider == "openai" and tools and rules.chat_tools == "effort_none"
    if chat_tools and getattr(settings, "reasoning_effort", None) is None:
        note = f"reasoning_effort none is sent: {model} calls tools on Chat Completions only at effort none"
        return settings.model_copy(update={"reasoning_effort": "none"}), note
    return settings, None


def fit_settings(provider: str, model: str, settings: Any, *, tools: bool = False) -> Any:
    """`settings` with what `model` needs where there is one right answer (a Settings; a copy when changed).

    The one such rule: a model that calls tools on Chat Completions only at effort none (gpt-6-luna, the GPT-5.6
    family, gpt-6-sol, gpt-6-astra) offered tools there is sent reasoning_effort none when the run set no effort.
    """
    return _fit(provider, model, settings, tools)[0]


def fit_note(provider: str, model: str, settings: Any, *, tools: bool = False) -> str | None:
    """One line saying what fit_settings sends that the settings did not ask for, and why; None when nothing."""
    return _fit(provider, model, settings, tools)[1]


def default_max_tokens(provider: str, model: str) -> int | None:
    """The max_tokens a request to `model` needs when none is set: room for thinking it does by default."""
    return THINKING_MAX_TOKENS if model_rules(provider, model).thinking_by_default else None


def binds_thinking_to_prefix(provider: str, model: str) -> bool:
    """Whether `model` refuses a thinking block sent back after a change to what was sent before it."""
    return model_rules(provider, model).thinking_bound_to_prefix


def check_settings(provider: str, model: str, settings: Any, *, tools: bool = False) -> str | None:
    """Why `provider` would refuse `settings` for `model`, in one line; None when it would take them.

    `settings` is a providers.base.Settings (read by attribute, so an older one without the reasoning
    fields works too), checked as fit_settings sends them; `tools` says whether tools are offered.
    Checked before sending, so a bad setting is a clear message rather than a 400 from the server.
    """
    settings = fit_settings(provider, model, settings, tools=tools)
    temperature = getattr(settings, "temperature", None)
    budget = getattr(settings, "thinking_budget", None)
    effort = getattr(settings, "reasoning_effort", None)
    name = _canonical(provider, model)
    rules = model_rules(provider, model)
    return (
        _check_temperature(provider, temperature)
        or _check_effort(provider, effort)
        or _check_model_effort(provider, name, rules, effort)
        or (_check_claude(name, rules, temperature, budget, effort) if provider == "anthropic" else None)
        or (
            _check_openai(provider, name, rules, temperature, effort, tools)
            if provider in ("openai", "openai-responses")
            else None
        )
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


def _check_model_effort(provider: str, model: str, rules: ModelRules, effort: str | None) -> str | None:
    if effort is None or rules.efforts is None or effort in rules.efforts:
        return None
    # Anthropic's "none" is agentcore's word for off, always allowed: the efforts it names are the others
    named = [e for e in rules.efforts if not (provider == "anthropic" and e == "none")]
    return f"{model} has no reasoning effort {effort!r}: {', '.join(named[:-1])} or {named[-1]}"


def _check_openai(
    provider: str, model: str, rules: ModelRules, temperature: float | None, effort: str | None, tools: bool
) -> str | None:
    if provider == "openai" and tools and rules.chat_tools == "never":
        return f"{model} calls tools on the Responses API only: choose the openai-responses provider, or offer no tools"
    if provider == "openai" and tools and rules.chat_tools == "effort_none" and effort != "none":
        return (
            f"{model} calls tools on Chat Completions only at reasoning effort none, not {effort!r}: "
            "set the effort to none, or choose the openai-responses provider"
        )
    return _check_sampling(model, rules, temperature, effort or rules.default_effort)


def _check_sampling(model: str, rules: ModelRules, temperature: float | None, effort: str | None) -> str | None:
    if temperature is None or rules.temperature == "any":
        return None
    if rules.temperature == "never":
        return f"{model} does not accept temperature: leave it unset"
    if rules.temperature == "one" and temperature != 1:
        return f"{model} takes the default temperature (1) only: leave it unset"
    if rules.temperature == "effort_none" and effort not in (None, "none"):
        return (
            f"{model} takes temperature only at reasoning effort none, and this request reasons at {effort!r}: "
            "leave temperature unset, or set the effort to none"
        )
    if rules.temperature == "one_unless_effort_none" and effort not in (None, "none") and temperature != 1:
        return (
            f"{model} takes the default temperature (1) only when it reasons, and this request reasons at "
            f"{effort!r}: leave temperature unset, or set the effort to none"
        )
    return None


def _check_claude(
    model: str, rules: ModelRules, temperature: float | None, budget: int | None, effort: str | None
) -> str | None:
    if rules.thinking == "adaptive" and budget:
        return f"{model} takes adaptive thinking only: set a reasoning effort instead of a thinking budget"
    sampling = _check_sampling(model, rules, temperature, None)
    if sampling:
        return sampling
    if budget is not None and budget < MIN_THINKING_BUDGET:
        return f"a thinking budget must be at least {MIN_THINKING_BUDGET} tokens, not {budget}"
    # Anthropic's extended-thinking page: "Thinking isn't compatible with temperature … modifications"
    thinking = bool(budget) or effort not in (None, "none") or rules.thinking_by_default
    if thinking and temperature is not None and temperature != 1:
        return f"with thinking on, {model} takes temperature 1 only: leave it unset"
    if effort not in (None, "none") and not budget and rules.thinking == "extended":
        return f"{model} has no adaptive thinking: set a thinking budget ({MIN_THINKING_BUDGET} or more) instead"
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
