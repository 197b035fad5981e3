"""Keeping credentials out of everything written, printed, stored or shown.

Two nets. By name and shape: credential headers, fields named like credentials, and text
shaped like a key (`Bearer …`, `sk-…`). By value: every key in use in this process (read
from a key variable of the environment, given to a provider, typed in the app, taken from
st.secrets, sent in a credential header) is registered here, held in memory only, and
`scrub_text` removes it in each form it takes in text (as is, JSON-escaped, URL-encoded,
HTML-escaped, inside base64 as in basic auth), whatever its shape, from whatever it is
given: a server's answer, an error message, a file or a line about to be written.

Values shorter than MIN_SECRET_LENGTH are not registered: removing every "local" or "test"
from a transcript would remove words, not keys, and a key that short protects nothing.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

# Header names whose values are credentials; matched case-insensitively.
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie", "set-cookie", "x-goog-api-key"}
)
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
KEY_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY")
SECRET_FIELD = re.compile(r"(api[-_]?key|secret|token|password|authorization|cookie)$", re.IGNORECASE)
_SECRET_SHAPES = (
    ("Bearer", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    ("Basic", re.compile(r"\bBasic\s+[A-Za-z0-9+/=]{8,}")),
    ("sk-", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")),
)
# the kind each net's find is masked as where an import or an export says which kinds it masked (secrets/detectors.py)
REGISTERED_KIND = "registered secret"
SHAPE_KINDS = {"Bearer": "Bearer token", "Basic": "Basic auth", "sk-": "sk- key"}
# the walk goes as deep as any reader reads (a run inside a pinned test sits a level deeper than in a transcript:
# one rule for both); message lists are skipped, whatever their depth
_SCRUB_DEPTH = 100
_CONVERSATION_KEYS = frozenset({"messages", "contents", "input", "content"})


class _Registry:
    """The secret values of this process and the forms they take in text, matched by one compiled pattern."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: set[str] = set()
        self.forms: tuple[str, ...] = ()  # longest first, so a longer encoding wins where two start together
        self.pattern: re.Pattern[str] | None = None
        # the forms as JSON text writes them (json.dumps, ensure_ascii=False): searched once in a value's JSON
        self.escaped: re.Pattern[str] | None = None
        self.envs: tuple[str, ...] = KEY_ENVS
        self.env_seen: tuple[str | None, ...] = ()

    def add(self, value: str) -> None:
        with self.lock:
            if value in self.values:
                return
            self.values.add(value)
            forms = set(self.forms) | {f for f in _encodings(value) if len(f) >= MIN_SECRET_LENGTH}
            self.forms = tuple(sorted(forms, key=lambda f: (-len(f), f)))
            escaped = {json.dumps(f, ensure_ascii=False)[1:-1] for f in self.forms}
            # before the pattern: whoever sees the new pattern sees these forms too
            self.escaped = re.compile("|".join(map(re.escape, sorted(escaped))))
            self.pattern = re.compile("|".join(map(re.escape, self.forms)))

    def current(self) -> re.Pattern[str] | None:
        """The pattern of every registered form, after registering what the watched variables hold now."""
        seen = tuple(os.environ.get(name) for name in self.envs)
        if seen != self.env_seen:  # a few lookups per call; the pattern is rebuilt only when a value is new
            for value in seen:
                register_secret(value)
            self.env_seen = seen
        return self.pattern


_registry = _Registry()


def register_secret(value: Any) -> None:
    """Remember a credential's value (in memory only) so that `scrub_text` removes it wherever it appears."""
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) >= MIN_SECRET_LENGTH and value != REDACTED and value not in _registry.values:
        _registry.add(value)
        # its hexadecimal form, lower and upper case: a server that echoes the key it received as hex bytes
        # (an error page, a debug header) must not carry it into a transcript
        hexed = value.encode("utf-8", "surrogatepass").hex()
        for form in (hexed, hexed.upper()):
            if form not in _registry.values:
                _registry.add(form)


def register_headers(headers: dict[str, str] | Any) -> None:
    """Register the values of the credential headers of an outgoing request, and the token after a scheme."""
    for key, value in dict(headers).items():
        if _secret_header(key.lower()) and isinstance(value, str):
            register_secret(value)
            scheme, _, token = value.strip().partition(" ")
            if token and scheme.isalpha():
                register_secret(token)


def split_url(url: str) -> urllib.parse.SplitResult:
    """The URL's parts, for any text: a stored one whose userinfo reads `[redacted]`, or a hostile one, split by
    hand where the standard parser refuses it; never raises."""
    try:
        return urllib.parse.urlsplit(url)
    except ValueError:  # a bracketed host that is no IPv6 address: split by hand, never raise on a hostile URL
        scheme, sep, rest = url.partition("://")
        if not sep:
            scheme, rest = "", url
        rest, _, fragment = rest.partition("#")
        rest, _, query = rest.partition("?")
        netloc, slash, path = rest.partition("/")
        return urllib.parse.SplitResult(scheme, netloc, slash + path, query, fragment)


_SETTING_QUERY = frozenset({"api-version", "api_version", "version", "model", "format", "alt", "stream", "region"})


def register_url(url: str) -> None:
    """Register the credentials a URL carries: its userinfo, and the value of each query parameter but the few that
    are settings (`api-version=2024-10-21`, which would otherwise be scrubbed as a date from every text)."""
    parts = split_url(url)
    userinfo = parts.netloc.rpartition("@")[0]
    # as written and decoded: httpx sends the decoded pair as basic auth, and error messages quote the URL
    for value in (userinfo, *userinfo.split(":", 1)):
        register_secret(value)
        register_secret(urllib.parse.unquote(value))
    for pair in filter(None, parts.query.split("&")):
        name, equals, value = pair.partition("=")
        if equals and urllib.parse.unquote_plus(name).lower() in _SETTING_QUERY:
            continue
        for secret in (value, urllib.parse.unquote_plus(value)) if equals else (name, urllib.parse.unquote_plus(name)):
            register_secret(secret)


def redacted_url(url: str) -> str:
    """The URL as it may be shown or written: its userinfo and every query value replaced by `[redacted]`."""
    parts = split_url(url)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{REDACTED}@{host}" if "@" in parts.netloc else host
    # a query's names are kept, so a reader can tell which parameter was sent; its values can be keys
    query = "&".join(
        f"{pair.partition('=')[0]}={REDACTED}" if "=" in pair else pair and REDACTED for pair in parts.query.split("&")
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment and REDACTED))


def watch_env(*names: str | None) -> None:
    """Also register the value of each of these environment variables whenever text is scrubbed."""
    with _registry.lock:
        _registry.envs = tuple(dict.fromkeys([*_registry.envs, *(n for n in names if n)]))


def forget_secrets() -> None:
    """Drop every registered value (the environment's are registered again on the next scrub); for tests."""
    with _registry.lock:
        _registry.values.clear()
        _registry.forms, _registry.pattern, _registry.escaped, _registry.env_seen = (), None, None, ()


def _encodings(value: str) -> Iterator[str]:
    """The forms a value takes in text that agentcore writes or a server sends back."""
    yield value
    yield json.dumps(value)[1:-1]
    yield json.dumps(value, ensure_ascii=False)[1:-1]
    yield urllib.parse.quote(value, safe="")
    yield urllib.parse.quote_plus(value, safe="")
    yield html.escape(value)
    raw = value.encode("utf-8")
    for offset in range(3):
        # inside any base64 text ("user:key" in basic auth), whatever stands before the value:
        # the characters that depend on the value's own bits only, at each of the three alignments
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
        start = -(-8 * offset // 6)
        end = 8 * (offset + len(raw)) // 6
        yield encoded[start:end]
        yield encoded[start:end].replace("+", "-").replace("/", "_")


def redact_headers(headers: dict[str, str] | Any) -> dict[str, str]:
    """Copy headers with every credential replaced by `[redacted]`."""
    return {key: REDACTED if _secret_header(key.lower()) else str(value) for key, value in dict(headers).items()}


def _secret_header(lowered: str) -> bool:
    return lowered in SECRET_HEADERS or "api-key" in lowered or "token" in lowered or "secret" in lowered


def redact_fields(value: Any, depth: int = 0) -> Any:
    """Belt and braces on top of header redaction: blank credential-named values anywhere in JSON data.

    Headers and settings sit a few levels down (a step's wire exchange, a request body's fields, an edited call's
    original arguments), under a run or under a pinned test's run alike; the walk skips message lists: conversation
    text is covered by `scrub_text`, and walking it would make every save of a long run slow.
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
            elif isinstance(v, str) and isinstance(k, str) and (k.lower() in SECRET_HEADERS or SECRET_FIELD.search(k)):
                out[k] = REDACTED
            else:
                out[k] = redact_fields(v, depth + 1)
        return out
    if isinstance(value, list):
        return [redact_fields(v, depth + 1) for v in value]
    return value


def scrub_text(text: str) -> str:
    """The text with every registered secret, in each of its forms, and anything shaped like a key replaced."""
    return _scrub_text(text, _registry.current())


def _scrub_text(text: str, pattern: re.Pattern[str] | None) -> str:
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    for marker, shape in _SECRET_SHAPES:
        if marker in text:  # a substring test is far cheaper than the regex over a long transcript
            text = shape.sub(REDACTED, text)
    return text


def registered_pattern() -> re.Pattern[str] | None:
    """The one pattern of every registered secret's every form (None while none is registered), for
    `scrub_text_by_kind`: asked once for many texts, as `scrub` does, since each ask reads the environment."""
    return _registry.current()


def scrub_text_by_kind(text: str, pattern: re.Pattern[str] | None) -> tuple[str, list[tuple[str, str]]]:
    """`scrub_text` with `registered_pattern()`, each removal written as `scrub_text` writes it (REDACTED: a run
    saved, then exported, reads as one exported at once); and what was removed, as (kind, value), for a tally of
    kinds (REGISTERED_KIND, SHAPE_KINDS)."""
    removed: list[tuple[str, str]] = []

    def masked(kind: str) -> Callable[[re.Match[str]], str]:
        def write(match: re.Match[str]) -> str:
            removed.append((kind, match.group()))
            return REDACTED

        return write

    if pattern is not None:
        text = pattern.sub(masked(REGISTERED_KIND), text)
    for marker, shape in _SECRET_SHAPES:
        if marker in text:
            text = shape.sub(masked(SHAPE_KINDS[marker]), text)
    return text, removed


def key_shapes(text: str) -> list[str]:
    """What `scrub_text` would remove from `text`, by kind: "registered secret", "sk-", "Bearer" or "Basic".

    A Bearer or Basic token made of letters alone is left out: it is a word ("Basic arithmetic"), not a key.
    """
    found = []
    pattern = _registry.current()
    if pattern is not None and pattern.search(text):
        found.append("registered secret")
    for marker, shape in _SECRET_SHAPES:
        if marker in text:
            for match in shape.finditer(text):
                token = match.group().split()[-1]
                if marker == "sk-" or any(c.isdigit() for c in token):
                    found.append(marker)
                    break
    return found


def scrub(value: Any) -> Any:
    """`scrub_text` over every string in a value: text, JSON-like data, or a pydantic model.

    What holds no secret comes back as the same object; what does is copied, never changed in place.
    """
    # the registry is asked once per value, not once per string: it reads the environment each time
    pattern = _registry.current()
    return _scrub(value, _Patterns(pattern, _registry.escaped))


class _Patterns(NamedTuple):
    forms: re.Pattern[str] | None  # every registered form of every secret
    escaped: re.Pattern[str] | None  # the same forms as JSON text writes them


_PLAIN_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _may_hold_secret(data: dict | list | tuple, patterns: _Patterns) -> bool:
    # One search of the data's JSON text instead of a walk through every string of a large answer. JSON
    # writes each character on its own, so a string holding a form holds it escaped in the text, and a
    # marker of a key's shape (plain ASCII) as it is. Data JSON cannot write is walked.
    try:
        text = _PLAIN_JSON.encode(data)
    except (TypeError, ValueError, RecursionError):
        return True
    if patterns.escaped is not None and patterns.escaped.search(text):
        return True
    return any(marker in text for marker, _ in _SECRET_SHAPES)


def _scrub(value: Any, patterns: _Patterns) -> Any:
    if isinstance(value, str):
        clean = _scrub_text(value, patterns.forms)
        return value if clean == value else clean
    if isinstance(value, _CONTAINERS):
        return _scrub_data(value, patterns) if _may_hold_secret(value, patterns) else value
    fields = getattr(type(value), "model_fields", None)
    if fields is not None and hasattr(value, "model_copy"):
        changes = {}
        for name in fields:
            old = getattr(value, name)
            new = _scrub(old, patterns)
            if new is not old:
                changes[name] = new
        return value.model_copy(update=changes) if changes else value
    return value


_CONTAINERS = (dict, list, tuple)


def _scrub_data(root: dict | list | tuple, patterns: _Patterns) -> Any:
    # an explicit stack, not recursion: a server's JSON may be nested as deep as its parser allowed
    stack: list[tuple[Any, Iterator[tuple[Any, Any]], list[tuple[Any, Any]], Any]] = [(root, _pairs(root), [], None)]
    while True:
        node, pairs, done, key = stack[-1]
        for k, v in pairs:
            if isinstance(v, _CONTAINERS):
                stack.append((v, _pairs(v), [], k))
                break
            done.append((k, _scrub(v, patterns)))
        else:
            stack.pop()
            built = _rebuilt(node, done, patterns)
            if not stack:
                return built
            stack[-1][2].append((key, built))


def _pairs(node: dict | list | tuple) -> Iterator[tuple[Any, Any]]:
    return iter(node.items()) if isinstance(node, dict) else enumerate(node)


def _rebuilt(node: dict | list | tuple, done: list[tuple[Any, Any]], patterns: _Patterns) -> Any:
    if isinstance(node, dict):
        done = [(_scrub(k, patterns) if isinstance(k, str) else k, v) for k, v in done]
        if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(done, node.items(), strict=True)):
            return node
        return dict(done)
    if all(v is old for (_, v), old in zip(done, node, strict=True)):
        return node
    return type(node)(v for _, v in done)


class StreamScrubber:
    """Passes streamed text on scrubbed, holding back a tail that could be the start of a secret.

    A key can arrive split over two deltas; what is held back goes out with the next delta,
    or at `close()` once the stream has ended. Text shaped like a key (`sk-…`, `Bearer …`) is
    held while it may go on, as a model writes it a few characters at a time, at most
    MOST_HELD characters.
    """

    def __init__(self, sink: Callable[[str], Any]) -> None:
        self.sink = sink
        self.held = ""

    def __call__(self, delta: str) -> None:
        text = self.held + delta
        pattern = _registry.current()
        cut = len(text)
        if pattern is not None:
            whole = 0  # the hold starts after the last whole secret, so that no secret is cut in two
            for found in pattern.finditer(text):
                whole = found.end()
            cut -= _partial_tail(text[whole:], _registry.forms)
        cut = min(cut, _shape_hold(text))
        self.held = text[cut:]
        if cut:
            self.sink(scrub_text(text[:cut]))

    def close(self) -> None:
        """The stream ended: pass on what was held back."""
        if self.held:
            held, self.held = self.held, ""
            self.sink(scrub_text(held))


MOST_HELD = 1024  # characters of key-shaped text held back at most: no key is longer
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=-")
_SCHEMES = ("Bearer", "Basic")
_LONGEST_MARKER = max(map(len, _SCHEMES))


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _shape_hold(text: str) -> int:
    """Where the end of `text` that may still grow into text shaped like a key starts (len(text): nowhere).

    Within the last MOST_HELD characters: the trailing run of a key's characters is held when it holds `sk-` at a
    word's start or follows `Bearer ` or `Basic `; a last word that begins one of them is held too. Text with no
    such marker near its end costs one substring search, whatever streams.
    """
    end = len(text)
    floor = max(0, end - MOST_HELD)
    window = text[floor:]
    if "sk-" in window or any(scheme in window for scheme in _SCHEMES):
        start = end
        while start > floor and text[start - 1] in _KEY_CHARS:
            start -= 1
        marker = text.find("sk-", start)
        while marker != -1:
            if marker == 0 or not _word_char(text[marker - 1]):
                return marker
            marker = text.find("sk-", marker + 1)
        gap = start
        while gap > floor and text[gap - 1].isspace():
            gap -= 1
        word = gap
        while word > floor and _word_char(text[word - 1]):
            word -= 1
        if gap < start or start == end:  # a scheme, then space, then (maybe) its token
            if text[word:gap] in _SCHEMES and (word == 0 or not _word_char(text[word - 1])):
                return word
    last = end
    while last > max(floor, end - _LONGEST_MARKER - 1) and _word_char(text[last - 1]):
        last -= 1
    tail = text[last:]
    if tail and any(m.startswith(tail) for m in ("sk", *_SCHEMES)) and (last == 0 or not _word_char(text[last - 1])):
        return last
    return end


def _partial_tail(text: str, forms: Iterable[str]) -> int:
    """The length of the longest end of `text` that is the start of a form, not the whole of it."""
    longest = 0
    for form in forms:
        tail = text[-(len(form) - 1) :]
        at = tail.find(form[0])
        while at != -1 and len(tail) - at > longest:
            if form.startswith(tail[at:]):
                longest = len(tail) - at
                break
            at = tail.find(form[0], at + 1)
    return longest
