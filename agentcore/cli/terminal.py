"""What the command line prints: text, never control sequences, and never a known secret.

`shown` is the one function every piece of output passes through. `guarded` puts it in front
of stdout and stderr while a command runs, so the Printer, `show`, `runs show`, the listings,
warnings and error lines all reach the terminal through it, and so does any print added later.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from ..secrets import scrub_text

# C0 controls but tab and newline, DEL, C1 controls, the bidi controls that reorder what is
# shown, and lone surrogates (which no terminal encoding can write)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if char < " ":
        return _NAMED.get(char, f"\\x{ord(char):02x}")
    # a four-digit \u escape for the rest: JSON text on stdout holds DEL, C1 and bidi characters raw, and this
    # form keeps it valid JSON that reads back the same
    return f"\\u{ord(char):04x}"


def visible(text: str) -> str:
    """The text with control characters, escape sequences and bidi overrides written as escapes (`\\x1b`, `\\u202e`)."""
    return _UNSAFE.sub(_escape, text)


def shown(text: str) -> str:
    """What the terminal gets for `text`: every known secret removed, every control character made visible."""
    return visible(scrub_text(text))


class _ShownStream:
    """A text stream that passes everything written to it through `shown` on to another."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(shown(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno: the stream's own
        return getattr(self.stream, name)


def shown_stream(stream: Any) -> Any:
    """`stream`, with everything written to it passed through `shown` (once, however often this is called)."""
    return stream if stream is None or isinstance(stream, _ShownStream) else _ShownStream(stream)


F = TypeVar("F", bound=Callable[..., Any])


def guarded(entry: F) -> F:
    """Decorate a command-line entry point: while it runs, stdout and stderr are written through `shown`."""

    @functools.wraps(entry)
    def run(*args: Any, **kwargs: Any) -> Any:
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = shown_stream(sys.stdout), shown_stream(sys.stderr)
        try:
            return entry(*args, **kwargs)
        finally:
            sys.stdout, sys.stderr = saved

    return run  # type: ignore[return-value]
