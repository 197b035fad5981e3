"""Keeping credentials out of everything written: headers, request bodies, transcripts, the database."""

from __future__ import annotations

import json
import os
import re
from typing import Any

# Header names whose values are credentials; matched case-insensitively.
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie", "set-cookie", "x-goog-api-key"}
)
REDACTED = "[redacted]"
KEY_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY")
_SECRET_KEY = re.compile(r"(api[-_]?key|secret|token|password|authorization|cookie)$", re.IGNORECASE)
_SECRET_SHAPES = (
    ("Bearer", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    ("Basic", re.compile(r"\bBasic\s+[A-Za-z0-9+/=]{8,}")),
    ("sk-", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")),
)
_SCRUB_DEPTH = 5
_CONVERSATION_KEYS = frozenset({"messages", "contents", "input", "content"})


def redact_headers(headers: dict[str, str] | Any) -> dict[str, str]:
    """Copy headers with every credential replaced by `[redacted]`."""
    out: dict[str, str] = {}
    for key, value in dict(headers).items():
        lowered = key.lower()
        secret = lowered in SECRET_HEADERS or "api-key" in lowered or "token" in lowered or "secret" in lowered
        out[key] = REDACTED if secret else str(value)
    return out


def scrub(value: Any, depth: int = 0) -> Any:
    """Belt and braces on top of header redaction: blank credential-named values near the top of JSON data.

    Headers and settings sit a few levels down (a step's wire exchange, a request body's
    fields); the walk skips message lists and stops below that depth: conversation text is
    covered by `scrub_text`, and walking it would make every save of a long run slow.
    """
    if depth > _SCRUB_DEPTH:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _CONVERSATION_KEYS:
                out[k] = v  # conversation text, however long: covered by scrub_text
            elif k in ("request_headers", "response_headers") and isinstance(v, dict):
                out[k] = redact_headers(v)
            elif isinstance(v, str) and isinstance(k, str) and (k.lower() in SECRET_HEADERS or _SECRET_KEY.search(k)):
                out[k] = REDACTED
            else:
                out[k] = scrub(v, depth + 1)
        return out
    if isinstance(value, list):
        return [scrub(v, depth + 1) for v in value]
    return value


def scrub_text(text: str) -> str:
    """Remove from serialised JSON every key found in the environment and anything shaped like a key."""
    for name in KEY_ENVS:
        key = os.environ.get(name, "")
        if len(key) >= 8:
            text = text.replace(json.dumps(key)[1:-1], REDACTED)
    for marker, pattern in _SECRET_SHAPES:
        if marker in text:  # a substring test is far cheaper than the regex over a long transcript
            text = pattern.sub(REDACTED, text)
    return text
