"""Credentials found by a maintained detector and masked by kind, in every imported and every exported text.

secrets.py removes what agentcore alone knows from everything written: a key registered at run time in each of
its encodings, URL userinfo, text shaped like an `sk-` key or a Bearer token. Coding-agent sessions carry every
other kind of credential too (cloud keys, repository tokens, private keys), so an import and every export also
run the plugins of detect-secrets (DETECTORS_VERSION) chosen below, and mask each value a tool call's
arguments hold under a name like `password` or `token`. A masked value reads `[redacted: KIND]`: its kind is
shown, never its text, and the same run masks the same way in every export.

The plugins are chosen, not all taken. The high-entropy-string plugins are left out: they would mask every hash,
id and checksum a session prints. So are the public-IP plugin (an address is not a credential), the NPM plugin
(`//.+/:_authToken=`: superlinear, and it masks the rest of the line), Artifactory's (its password shape matches
upper-case words) and the assignment rules of IBM, SoftLayer and Cloudant that the keyword plugin covers; OpenAI's is left to agentcore's own `sk-` rule, which masks what it finds first. Two
shapes detect-secrets 1.5 lacks are added as plugins of its own kind: Google API keys and Hugging Face tokens.

Cost: each plugin's patterns were read for backtracking. All but two run over a whole text in one pass, and only
over a text that holds one of their markers. The JSON Web Token pattern backtracks over a run of `eyJ` with no
dot, so a linear pattern of agentcore's finds each candidate and the plugin's own check (`is_formally_valid`)
judges it, which also masks a token's signature, not only its first two parts. The keyword plugin's patterns
backtrack over a long word, so it reads only the line after each place a credential's name is assigned, at most
SNIPPET characters of it.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from detect_secrets.filters.heuristic import (
    is_not_alphanumeric_string,
    is_prefixed_with_dollar_sign,
    is_sequential_string,
    is_templated_secret,
)
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, DENYLIST, KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from . import (
    REGISTERED_KIND,
    SECRET_FIELD,
    SHAPE_KINDS,
    key_shapes,
    registered_pattern,
    scrub_text_by_kind,
)

DETECTORS_VERSION = importlib.metadata.version("detect-secrets")
SNIPPET = 200  # characters the keyword plugin reads from a credential's name on: its assignment and value
MIN_VALUE = 4  # a shorter value is not masked: "[redacted]" in place of every "abc" would hide words, not keys
FIELD_KIND = KeywordDetector.secret_type  # a tool argument named like a credential: the keyword plugin's kind


class GoogleApiKeyDetector(RegexBasedDetector):
    """Google API keys (`AIza…`), which detect-secrets 1.5 has no plugin for."""

    secret_type = "Google API Key"
    denylist = (re.compile(r"AIza[0-9A-Za-z_-]{35}"),)


class HuggingFaceTokenDetector(RegexBasedDetector):
    """Hugging Face access tokens (`hf_…`), which detect-secrets 1.5 has no plugin for."""

    secret_type = "Hugging Face Token"
    denylist = (re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{34,40}(?![A-Za-z0-9])"),)


_GITLAB_PREFIXES = ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr13489", "glcbt-", "glimt-", "glptt-", "glagent-")
_GITLAB_PREFIXES += ("gloas-",)
# each plugin with the markers (lower case) one of which a window holds for the plugin to read it
_PLUGINS: tuple[tuple[BasePlugin, tuple[str, ...]], ...] = (
    (AWSKeyDetector(), ("akia", "abia", "acca", "asia", "a3t", "aws")),
    (AzureStorageKeyDetector(), ("accountkey=",)),
    (BasicAuthDetector(), ("://",)),
    (DiscordBotTokenDetector(), (".",)),
    (GitHubTokenDetector(), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (GitLabTokenDetector(), _GITLAB_PREFIXES),
    (GoogleApiKeyDetector(), ("aiza",)),
    (HuggingFaceTokenDetector(), ("hf_",)),
    (MailchimpDetector(), ("-us",)),
    (PrivateKeyDetector(), ("private key", "putty-user-key")),
    (PypiTokenDetector(), ("pypi-ag",)),
    (SendGridDetector(), ("sg.",)),
    (SlackDetector(), ("xox", "hooks.slack.com")),
    (SquareOAuthDetector(), ("sq0csp-",)),
    (StripeDetector(), ("k_live_",)),
    (TelegramBotTokenDetector(), (":",)),
    (TwilioKeyDetector(), ("ac", "sk")),
)
_PREFIX_GROUPS = (GitHubTokenDetector, GitLabTokenDetector)  # their groups capture a token's prefix
_KEYWORD = KeywordDetector()
# where the keyword plugin may match: a credential's name, the rest of its word and an assignment after it
_NAMES = "|".join(DENYLIST)
# (read in the text made lower case where that keeps its length, as it nearly always does: a pattern that ignores
# case is several times slower)
_NAME_ASSIGNED = re.compile(rf"(?:{_NAMES})\w{{0,64}}?[\]'\"]{{0,2}}\s{{0,16}}(?:[:=!(>]|\.assign)")
# the keyword plugin's one pattern that puts the value before the name: `"value" == password`
_COMPARED_TO_NAME = re.compile(rf"[!=]=\s{{0,16}}\w{{0,64}}?(?:{_NAMES})")
# a line of a dotenv or INI file (`export DB_PASSWORD=…`, `aws_secret_access_key = …`), which the keyword plugin
# reads as detect-secrets reads a config file: the value needs no quotes there
_ASSIGNMENT_LINE = re.compile(r"^[ \t]*(?:export[ \t]+)?[A-Za-z_][\w.-]{0,100}[ \t]*=[ \t]*[^\s=][^\n]{0,200}", re.M)
# a string field of JSON text, for secrets.SECRET_FIELD's names (`"token": "…"`), which the keyword plugin lacks
_JSON_FIELD = re.compile(r'"([\w-]{1,64})"\s{0,16}:\s{0,16}"((?:[^"\\\n]|\\.){1,1000})"')
_FIELD_MARKERS = ("key", "secret", "token", "password", "authorization", "cookie")
_KEYWORD_MARKERS = ("key", "pass", "pwd", "secret", "contrase")  # one is in each name of the plugin's DENYLIST
# a token's three parts (header and payload are JSON, base64url), starting only where a run of its characters does
_JWT = re.compile(
    r"(?<![A-Za-z0-9_=-])eyJ[A-Za-z0-9_=-]{1,8192}\.[A-Za-z0-9_=-]{1,8192}(?:\.[A-Za-z0-9_.+/=-]{0,8192})?"
)
_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d.*?(?:Private-MAC: \S*|\Z)",
    re.DOTALL,
)
_OWN_KINDS = (JwtTokenDetector, KeywordDetector)
# what passes over text no plugin and no shape of secrets.py could find anything in, as most text is: every marker
# of more than two characters (a substring test each, far cheaper than one pattern of them all that ignores case),
# and for the plugins whose markers are shorter the starts of their shapes
_ALL_MARKERS = tuple(
    dict.fromkeys(
        [m for _, markers in _PLUGINS for m in markers if len(m) > 2]
        + [*_KEYWORD_MARKERS, *_FIELD_MARKERS, "eyj", "sk-", "bearer", "basic"]
    )
)
_SHORT_MARKED = re.compile(r"\d{8}:|[MNO][\w-]{23}|(?:AC|SK)[a-z0-9]{32}")
PLUGINS = tuple(sorted(type(plugin).__name__ for plugin, _ in _PLUGINS) + [k.__name__ for k in _OWN_KINDS])
KINDS = tuple(sorted({plugin.secret_type for plugin, _ in _PLUGINS} | {k.secret_type for k in _OWN_KINDS}))


def find_secrets(text: str) -> list[tuple[str, str]]:
    """Each credential the chosen plugins find in `text`, as (kind, value), in no particular order."""
    lowered = text.lower()
    return _found(text, lowered) if _may_hold(text, lowered) else []


def _may_hold(text: str, lowered: str) -> bool:
    """Whether any plugin, or the JSON-field rule, could find something in `text`: most text holds no marker."""
    return any(m in lowered for m in _ALL_MARKERS) or _SHORT_MARKED.search(text) is not None


def _found(text: str, lowered: str) -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for plugin, markers in _PLUGINS:
        if any(m in lowered for m in markers):
            for value in _values(plugin, text):
                found.setdefault(value, plugin.secret_type)
    if "eyj" in lowered:
        for candidate in _JWT.findall(text):
            if JwtTokenDetector.is_formally_valid(candidate):
                found.setdefault(candidate, JwtTokenDetector.secret_type)
    if any(m in lowered for m in _KEYWORD_MARKERS):
        for value in _keyword_values(text, lowered):
            found.setdefault(value, _KEYWORD.secret_type)
    # JSON text: tool arguments as a model wrote them, spaced or not around the colon (`"token" : "…"`)
    if '"' in text and any(m in lowered for m in _FIELD_MARKERS):
        for name, value in _JSON_FIELD.findall(text):
            if SECRET_FIELD.search(name) and _field_value(value):
                found.setdefault(value, FIELD_KIND)
    return [(kind, value) for value, kind in found.items() if len(value) >= MIN_VALUE and "[redacted" not in value]


def _values(plugin: BasePlugin, text: str) -> Iterator[str]:
    # a plugin yields its patterns' groups where they have any: the secret part of `aws_secret_access_key = "…"`
    # or of `scheme://user:password@`, but only the `ghp` of a GitHub token, whose whole match is the secret
    if isinstance(plugin, _PREFIX_GROUPS):
        for pattern in plugin.denylist:
            yield from (m.group() for m in pattern.finditer(text))
    else:
        yield from plugin.analyze_string(text)


def _keyword_values(text: str, lowered: str) -> Iterator[str]:
    """What the keyword plugin finds, read only near each assignment to a credential's name, and in each line
    shaped like a dotenv or INI file's."""
    if len(lowered) != len(text):  # a character whose lower case is longer: search the text as it is, case ignored
        named = re.compile(_NAME_ASSIGNED.pattern, re.IGNORECASE).finditer(text)
        compared = re.compile(_COMPARED_TO_NAME.pattern, re.IGNORECASE).finditer(text)
    else:
        named, compared = _NAME_ASSIGNED.finditer(lowered), _COMPARED_TO_NAME.finditer(lowered)
    snippets = [text[m.start() : m.start() + SNIPPET].split("\n", 1)[0] for m in named]
    snippets += [text[max(0, m.end() - SNIPPET) : m.end()].rsplit("\n", 1)[-1] for m in compared]
    lines = [(line, CONFIG_DENYLIST_REGEX_TO_GROUP) for line in _ASSIGNMENT_LINE.findall(text)]
    for snippet, patterns in [*((s, None) for s in dict.fromkeys(snippets)), *lines]:
        for value in _KEYWORD.analyze_string(snippet, patterns):
            if not (
                is_templated_secret(value)
                or is_prefixed_with_dollar_sign(value)
                or is_not_alphanumeric_string(value)
                or is_sequential_string(value)
            ):
                yield value


class Tally:
    """The credentials a masking met, each value once however often it recurs, by kind: what a note counts.

    A value is held as its hash, and only while the tally lives (one import).
    """

    def __init__(self) -> None:
        self.kinds: dict[int, str] = {}

    def masked(self, kind: str, value: str) -> str:
        """The mask of `value`, a credential of `kind`, counted once."""
        self.kinds.setdefault(hash(value), kind)
        return f"[redacted: {kind}]"

    @property
    def counts(self) -> Counter[str]:
        """How many distinct values of each kind were masked."""
        return Counter(self.kinds.values())


def mask_text(text: str, tally: Tally | None = None) -> str:
    """`text` with every credential masked as `[redacted: KIND]`, each counted in `tally`."""
    return _mask_text(text, Tally() if tally is None else tally, registered_pattern())


def _mask_text(text: str, tally: Tally, registered: re.Pattern[str] | None) -> str:
    if not (_may_hold(text, text.lower()) or registered is not None and registered.search(text)):
        return text
    text, removed = scrub_text_by_kind(text, registered)
    for kind, value in removed:
        tally.masked(kind, value)
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        text = _PRIVATE_KEY_BLOCK.sub(lambda m: tally.masked(PrivateKeyDetector.secret_type, m.group()), text)
    found = _found(text, text.lower())
    if not found:
        return text
    kinds = dict((value, kind) for kind, value in found)
    pattern = re.compile("|".join(map(re.escape, sorted(kinds, key=lambda v: (-len(v), v)))))
    return pattern.sub(lambda m: tally.masked(kinds[m.group()], m.group()), text)


def secret_kinds(text: str) -> list[str]:
    """The kinds of credential in `text`, each once: what `mask_text` masks, but that a Bearer or Basic token of
    letters alone is a word ("Basic arithmetic"), not a key (secrets.key_shapes)."""
    kinds = {REGISTERED_KIND if k == REGISTERED_KIND else SHAPE_KINDS[k] for k in key_shapes(text)}
    if _PRIVATE_KEY_BLOCK.search(text):
        kinds.add(PrivateKeyDetector.secret_type)
    kinds.update(kind for kind, _ in find_secrets(text))
    return sorted(kinds)


def mask(value: Any, tally: Tally | None = None) -> Any:
    """`mask_text` over every string in a value (text, JSON-like data, a pydantic model such as a Run), and a
    string a dict holds under a credential's name (`password`, `api_key`, `token`) masked whole.

    What holds no credential comes back as the same object; what does is copied, never changed in place.
    """
    return _mask(value, Tally() if tally is None else tally, registered_pattern(), 0)


_DEEPEST = 200  # JSON data is read at most 100 levels deep; a model's fields add a level each


def _mask(value: Any, tally: Tally, registered: re.Pattern[str] | None, depth: int) -> Any:
    if value is None or isinstance(value, int | float) or depth > _DEEPEST:
        return value
    if isinstance(value, str):
        masked = _mask_text(value, tally, registered)
        return value if masked == value else masked
    if isinstance(value, dict):
        pairs = []
        for key, item in value.items():
            new_key = _mask(key, tally, registered, depth + 1)
            if isinstance(item, str) and isinstance(key, str) and SECRET_FIELD.search(key) and _field_value(item):
                pairs.append((new_key, tally.masked(FIELD_KIND, item)))
            else:
                pairs.append((new_key, _mask(item, tally, registered, depth + 1)))
        same = all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    if isinstance(value, list | tuple):
        items = [_mask(item, tally, registered, depth + 1) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else type(value)(items)
    fields = getattr(type(value), "model_fields", None)
    if fields is not None and hasattr(value, "model_copy"):
        changes = {}
        for name in fields:
            old = getattr(value, name)
            new = _mask(old, tally, registered, depth + 1)
            if new is not old:
                changes[name] = new
        return value.model_copy(update=changes) if changes else value
    return value


def _field_value(text: str) -> bool:
    # an empty value, or one already masked, has nothing to hide
    return bool(text.strip()) and not text.startswith("[redacted")


def masked_note(counts: Counter[str]) -> str | None:
    """`counts` in one line for an import's note: "3 secrets masked (2 AWS Access Key, 1 GitHub Token)"."""
    total = sum(counts.values())
    if not total:
        return None
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} secret{'s' if total != 1 else ''} masked ({kinds})"


__all__ = [
    "DETECTORS_VERSION",
    "KINDS",
    "PLUGINS",
    "Tally",
    "find_secrets",
    "mask",
    "mask_text",
    "masked_note",
    "secret_kinds",
]
