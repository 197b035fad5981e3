"""What a tool's run gives the model: its value as capped text, or its failure as an error result's text."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel


def render_output(value: Any) -> str:
    """Turn a tool's return value into the text the model reads."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def describe(exc: BaseException) -> str:
    """An exception as `Type: message`, even when its str() fails."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - an exception whose str() fails still names its type
        return type(exc).__name__


def utf8_safe(text: str) -> str:
    """The text with any lone surrogate shown as U+FFFD, so every later write of the run succeeds."""
    # a lone surrogate (from undecodable bytes, or a JSON \ud800 escape) cannot be encoded as UTF-8,
    # so it would break every later write of the run: show it as U+FFFD instead
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def cap_output(text: str, limit: int) -> str:
    """Cut text longer than `limit` characters and say so where the model will see it."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[truncated: showing {limit} of {len(text)} characters]"


def raised(name: str, exc: BaseException) -> tuple[str, str]:
    """The error text and kind for a tool that raised."""
    return utf8_safe(f"Error: {name} raised {describe(exc)}"), "exception"


def shown(name: str, value: Any, max_chars: int) -> tuple[str, str | None]:
    """A tool's return value as the capped text the model reads, or the error for a value that cannot be shown."""
    try:
        text = render_output(value)
    except Exception as exc:  # noqa: BLE001 - a value that cannot be shown is the tool's failure, not the loop's
        return f"Error: {name} returned a value that cannot be shown as text: {describe(exc)}", "exception"
    return cap_output(utf8_safe(text), max_chars), None
