"""The provider registry: name → factory, default model and known models.

Provider modules are imported only when used, so `import agentcore` stays fast and
the local model's llama-cpp-python is optional.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

from .. import catalogue
from ..errors import UsageError
from ..registry import Registry
from ..secrets import watch_env
from .base import BaseProvider, ModelRequest, ModelResponse, Provider, Settings, WireExchange
from .keys import server_key


@dataclass(frozen=True)
class ProviderInfo:
    """What the CLI and the app need to offer a provider."""

    name: str
    target: str  # "module:Class"
    model: str  # the default model where the catalogue has none (see default_model)
    models: tuple[str, ...]  # the models to offer where the catalogue has none (see known_models)
    description: str
    key_env: str | None = None  # environment variable holding its API key
    base_url_env: str | None = None
    default_base_url: str | None = None
    free: bool = False  # nothing to pay: its runs cost 0, not an unknown price
    wire: bool = False  # a wire format over HTTP: its module's `build_body` makes a run's request body (exports)

    @property
    def default_model(self) -> str:
        """The model used when none is named: the catalogue's current default (from genai-prices) where it has one."""
        return catalogue.default_model(self.name) or self.model

    @property
    def known_models(self) -> tuple[str, ...]:
        """The models a picker offers, the default first: the catalogue's current ones where it has them."""
        return catalogue.suggested_models(self.name) or self.models

    def load(self) -> type:
        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)

    def body_builder(self) -> Any:
        """The wire format's `build_body(model, request, *, stream, ...)`; UsageError for a provider with none."""
        if not self.wire:
            raise UsageError(f"{self.name} has no wire format of its own; choose one of {', '.join(WIRE_FORMATS)}")
        return importlib.import_module(self.target.split(":")[0]).build_body


def _provider_of(target: str, found: Any) -> ProviderInfo:
    """A user's provider, `module:Class`: a class built as the registry's are (model, base_url, api_key, options)."""
    if not isinstance(found, type) or not callable(getattr(found, "complete", None)):
        raise UsageError(f"provider {target[:120]!r}: not a provider class (one with a complete method)")
    doc = (found.__doc__ or "").strip().split("\n")[0]
    return ProviderInfo(target, target, getattr(found, "default_model", "") or "", (), doc or target)


# the providers by name: the built-ins, and (named by whoever runs agentcore) a user's module:Class
REGISTRY: Registry[ProviderInfo] = Registry(
    "provider",
    {
        p.name: p
        for p in (
            ProviderInfo(
                "local",
                "agentcore.providers.local:LocalProvider",
                "smollm2-135m",
                ("smollm2-135m",),
                "SmolLM2-135M-Instruct in-process through llama.cpp; no key, no network (or any GGUF file by path)",
                free=True,
            ),
            ProviderInfo(
                "scripted",
                "agentcore.providers.scripted:ScriptedProvider",
                "weather",
                ("weather", "recovery", "research", "runaway", "structured"),
                "a deterministic scripted model with bundled scenarios; the model name is the scenario",
                free=True,
            ),
            ProviderInfo(
                "openai",
                "agentcore.providers.openai:OpenAIProvider",
                "",  # from the catalogue
                (),
                "OpenAI Chat Completions, or any OpenAI-compatible server with a base URL",
                wire=True,
                key_env="OPENAI_API_KEY",
                base_url_env="OPENAI_BASE_URL",
                default_base_url="https://api.openai.com/v1",
            ),
            ProviderInfo(
                "openai-responses",
                "agentcore.providers.openai_responses:OpenAIResponsesProvider",
                "",  # from the catalogue
                (),
                "OpenAI Responses API, stateless (reasoning passed back encrypted), or a server that speaks it",
                wire=True,
                key_env="OPENAI_API_KEY",
                base_url_env="OPENAI_BASE_URL",
                default_base_url="https://api.openai.com/v1",
            ),
            ProviderInfo(
                "anthropic",
                "agentcore.providers.anthropic:AnthropicProvider",
                "",  # from the catalogue
                (),
                "Anthropic Messages API",
                wire=True,
                key_env="ANTHROPIC_API_KEY",
                base_url_env="ANTHROPIC_BASE_URL",
                default_base_url="https://api.anthropic.com",
            ),
            ProviderInfo(
                "ollama",
                "agentcore.providers.ollama:OllamaProvider",
                "llama3.2",  # genai-prices does not list Ollama: its library's small tool-calling models
                ("llama3.2", "qwen3", "gpt-oss:20b", "qwen2.5", "mistral"),
                "Ollama's native /api/chat",
                wire=True,
                base_url_env="OLLAMA_HOST",
                default_base_url="http://127.0.0.1:11434",
            ),
        )
    },
    _provider_of,
)
FREE_PROVIDERS = frozenset(name for name, info in REGISTRY.items() if info.free)
WIRE_FORMATS: tuple[str, ...] = tuple(name for name, info in REGISTRY.items() if info.wire)  # the exports' dialects
watch_env(*(info.key_env for info in REGISTRY.values()))  # each key variable's value is scrubbed from output


def local_available() -> tuple[bool, str]:
    """Whether the embedded model can run here, and why not if it cannot."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False, "llama-cpp-python is not installed (the `local` extra)"
    try:
        from .local import find_default_gguf
    except ImportError as exc:
        return False, f"the local provider cannot load: {exc}"
    try:
        find_default_gguf()
    except Exception as exc:  # noqa: BLE001 - any failure means "not available", with the reason
        return False, str(exc)
    return True, "llama-cpp-python and the SmolLM2 GGUF file are installed"


def default_provider() -> tuple[str, str]:
    """`local` when the embedded model is installed, else `scripted`; with the reason."""
    ok, why = local_available()
    if ok:
        return "local", f"local: {why}"
    return "scripted", f"scripted: {why}"


def get_info(name: str, *, code: bool = False) -> ProviderInfo:
    """The provider named (with `code`, the operator's words: a `module:Class` may load; agentcore.registry)."""
    return REGISTRY.resolve(name, code=code)


def create_provider(
    name: str,
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> Provider:
    """Build a provider by registry name. Keys come from the caller or the environment, never from a file.

    The HTTP providers also take `timeout` (per read), `max_retries`, the retry settings, and the
    limits of one call: `deadline` (seconds for the whole call), `max_body_bytes` (a whole body,
    decompressed), `max_stream_events` and `max_stream_bytes`; the defaults are in `_limits`.
    """
    info = get_info(name)
    try:
        cls = info.load()
    except ImportError as exc:
        raise UsageError(f"provider {name!r} cannot be loaded: {exc}") from None
    return cls(model or info.default_model, base_url=base_url, api_key=api_key, **options)


def create_operator_provider(
    name: str,
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> Provider:
    """`create_provider` for an address typed by whoever runs this process (the command line's `--base-url`,
    `--config …@URL`): it carries their environment's key, as an address from anywhere else does not (keys.py)."""
    if api_key is None:
        api_key = server_key(get_info(name), base_url, named_by_operator=True)
    return create_provider(name, model, base_url=base_url, api_key=api_key, **options)


__all__ = [
    "FREE_PROVIDERS",
    "REGISTRY",
    "WIRE_FORMATS",
    "BaseProvider",
    "ModelRequest",
    "ModelResponse",
    "Provider",
    "ProviderInfo",
    "Settings",
    "WireExchange",
    "create_operator_provider",
    "create_provider",
    "default_provider",
    "get_info",
    "local_available",
]
