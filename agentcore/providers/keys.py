"""Where a server's key may go: the one rule every front end meets before a provider is built.

A key the server holds (its provider's key variable in the environment, st.secrets, a secrets file) is the
operator's. It goes to its provider's own address, or to the base URL the operator set in the environment
(`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, …), and nowhere else: an address named by a page user, an MCP client,
a stored run, an imported session or a test file is called with the key that person gave, or with none. On a
class server a student who types a listening port as the Base URL learns nothing of the teacher's key.

Two ways past the rule, each said out loud. On the command line the person running it is the operator: an
address they type (`--base-url`, `--config …@URL`) is theirs to send their own key to, and the CLI says so with
`named_by_operator=True`. A deployment that wants every address to get its key sets
AGENTCORE_SERVER_KEY_TO_ANY_ADDRESS=1, a name that says what it does.

Addresses are compared whole, after normalising what does not change where a request goes (the scheme's and
host's case, a default port, a trailing slash): `https://api.openai.com.example.net/v1`, a userinfo part, a
query or another path are other addresses.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import ProviderInfo

ANY_ADDRESS_ENV = "AGENTCORE_SERVER_KEY_TO_ANY_ADDRESS"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def address(url: str | None) -> str | None:
    """A base URL in the one form two spellings of the same address share; None for text that is no http(s) URL."""
    if not url or not url.strip():
        return None
    text = url.strip()
    if "://" not in text:  # OLLAMA_HOST is often written as host:port
        text = f"http://{text}"
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    userinfo = parts.netloc.rpartition("@")[0]
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    netloc = (f"{userinfo}@" if userinfo else "") + host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return urllib.parse.urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, parts.fragment))


def operator_addresses(info: ProviderInfo) -> tuple[str, ...]:
    """The addresses a server's key for this provider may go to: its own, and the one its operator set."""
    found = [address(info.default_base_url), address(os.environ.get(info.base_url_env or ""))]
    return tuple(dict.fromkeys(a for a in found if a))


def any_address() -> bool:
    """Whether the deployment sends its keys wherever a caller points (AGENTCORE_SERVER_KEY_TO_ANY_ADDRESS=1)."""
    return os.environ.get(ANY_ADDRESS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def may_carry_server_key(info: ProviderInfo, base_url: str | None, *, named_by_operator: bool = False) -> bool:
    """Whether a call to `base_url` (None: the provider's configured address) may carry the server's key."""
    if base_url is None or not base_url.strip() or named_by_operator or any_address():
        return True
    return address(base_url) in operator_addresses(info)


@dataclass(frozen=True)
class KeyChoice:
    """The key a call will carry and, in words a page can show, where it came from or why there is none."""

    key: str | None
    source: str
    server_key_refused: bool = False  # the server holds a key that this address may not have


def choose_key(
    info: ProviderInfo,
    base_url: str | None,
    *,
    given: str | None = None,
    named_by_operator: bool = False,
    stored: Callable[[str], str | None] | None = None,
) -> KeyChoice:
    """The key a call to `base_url` carries: the one its caller `given`, else the server's where the rule lets it.

    `stored` looks a key variable up in a store of the server's other than the environment (the app's st.secrets);
    `named_by_operator` says the address was typed by whoever runs this process (the command line).
    """
    if info.key_env is None:
        return KeyChoice(None, "no key needed")
    if given:
        return KeyChoice(given, "typed (kept for this page load only)")
    server, where = os.environ.get(info.key_env) or None, f"from the environment ({info.key_env})"
    if server is None and stored is not None:
        server, where = stored(info.key_env) or None, f"from st.secrets ({info.key_env})"
    if server is None:
        return KeyChoice(None, f"missing: type it above or set {info.key_env}")
    if not may_carry_server_key(info, base_url, named_by_operator=named_by_operator):
        allowed = " or ".join(operator_addresses(info)) or "its provider's own address"
        return KeyChoice(
            None,
            f"none for this address: the server's key goes only to {allowed}; type a key of your own to send one",
            server_key_refused=True,
        )
    return KeyChoice(server, where)


def server_key(info: ProviderInfo, base_url: str | None, *, named_by_operator: bool = False) -> str | None:
    """The environment's key for this provider where a call to `base_url` may carry it, else None."""
    return choose_key(info, base_url, named_by_operator=named_by_operator).key
