"""Who may see which runs: the one rule every reader of the runs database goes through.

A class names its teachers in AGENTCORE_TEACHERS: user names, and `Header: value` entries for a proxy
that says who teaches in a header of its own (`X-Forwarded-Groups: teachers`). With
AGENTCORE_PRIVATE_RUNS=1 a student's runs are that student's and the teachers' only: a student sees
their own runs and nobody else's, on every page, in the CLI and in exports, and a run they may not
see reads as one that does not exist (its title included). Teachers see every run. Without private
runs everyone sees everything, as before.

The Store applies `Viewer.clause` to every query that reads runs, so any reader (the app's pages, the
CLI, an MCP server) gets the same answer without a rule of its own.
"""

from __future__ import annotations

import getpass
import hmac
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

TEACHERS_ENV = "AGENTCORE_TEACHERS"
PRIVATE_RUNS_ENV = "AGENTCORE_PRIVATE_RUNS"
PROXY_SECRET_ENV = "AGENTCORE_PROXY_SECRET"
PROXY_SECRET_HEADER = "X-Agentcore-Proxy-Secret"


@dataclass(frozen=True)
class Teachers:
    """AGENTCORE_TEACHERS read: the names that teach, and the (header, value) pairs that mark a teacher."""

    names: frozenset[str]
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_env(cls, text: str | None = None) -> Teachers:
        """`alice, bob, X-Forwarded-Groups: teachers`: names, and `Header: value` entries."""
        text = os.environ.get(TEACHERS_ENV, "") if text is None else text
        names, headers = set(), []
        for entry in (e.strip() for e in text.split(",")):
            if ":" in entry:
                header, _, value = entry.partition(":")
                if header.strip() and value.strip():
                    headers.append((header.strip().lower(), value.strip()))
            elif entry:
                names.add(entry)
        return cls(frozenset(names), tuple(headers))

    def includes(self, name: str, headers: Mapping[str, str] | None = None) -> bool:
        """Whether `name` teaches: listed by name, or a request header holds a listed value (one of a list's)."""
        if name in self.names:
            return True
        lowered = {k.lower(): v for k, v in (headers or {}).items()}
        for header, value in self.headers:
            given = lowered.get(header)
            if given is not None and value in (v.strip() for v in given.split(",")):
                return True
        return False


def is_teacher(name: str, headers: Mapping[str, str] | None = None) -> bool:
    """Whether this user teaches, by AGENTCORE_TEACHERS."""
    return Teachers.from_env().includes(name, headers)


def private_runs() -> bool:
    """Whether the deployment keeps each student's runs to that student and the teachers (AGENTCORE_PRIVATE_RUNS=1)."""
    return os.environ.get(PRIVATE_RUNS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Viewer:
    """Someone reading the runs database: their name, and whether they teach."""

    name: str
    teacher: bool = False

    @property
    def sees_everyone(self) -> bool:
        """Whether every run is visible to this viewer: runs are not private, or they teach."""
        return self.teacher or not private_runs()

    def may_see(self, owner: str | None) -> bool:
        """Whether a run saved by `owner` is visible to this viewer."""
        return self.sees_everyone or owner == self.name

    @property
    def scope(self) -> tuple[str, ...]:
        """What this viewer may see, as a key: () for every run, else ("owner", name). A cache shared between
        sessions keys what it holds by it, so no viewer is handed what another read."""
        return () if self.sees_everyone else ("owner", self.name)

    def clause(self, column: str = "owner") -> tuple[str, tuple[str, ...]]:
        """The SQL condition (with its parameters) that keeps the rows of runs this viewer may see; "" for all."""
        if self.sees_everyone:
            return "", ()
        return f"{column} = ?", (self.name,)


def loopback(host: str | None) -> bool:
    """Whether a listening address is reachable from this machine alone (127.0.0.0/8, ::1, localhost)."""
    text = (host or "").strip().strip("[]")
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False  # "", 0.0.0.0's words, a host name: every interface, or one we cannot vouch for


def proxy_refusal(user_header: str, headers: Mapping[str, str], listening_on: str | None) -> str | None:
    """Why a request may not be trusted to name its user in `user_header`, in one line; None when it may.

    A server that takes its users' names from a header believes whoever reaches it: only its proxy may. So it
    listens on loopback (the proxy on the same machine), or the proxy adds the secret AGENTCORE_PROXY_SECRET
    holds in the X-Agentcore-Proxy-Secret header, which a client that goes around the proxy does not know.
    """
    from ..secrets import register_secret

    secret = os.environ.get(PROXY_SECRET_ENV, "").strip()
    if secret:
        register_secret(secret)
        given = {k.lower(): v for k, v in headers.items()}.get(PROXY_SECRET_HEADER.lower(), "")
        if hmac.compare_digest(given.encode(), secret.encode()):
            return None
        return f"refused: this request did not come through the server's proxy (no valid {PROXY_SECRET_HEADER})"
    if loopback(listening_on):
        return None
    return (
        f"refused: this server takes its users' names from the {user_header} header but listens on "
        f"{listening_on or 'every address'}, where anyone can send that header; listen on 127.0.0.1 behind the "
        f"proxy, or set {PROXY_SECRET_ENV} and have the proxy send it in {PROXY_SECRET_HEADER}"
    )


# -- a person's name --------------------------------------------------------------------


_NAME = re.compile(r"\w[\w .@+-]{0,63}")


def valid_name(text: str | None) -> str:
    """A person's name as the runs store records it; ValueError (one line) for anything else.

    1 to 64 letters, digits, spaces and `. _ @ + -`, starting with a letter or digit: a name typed in
    the app or sent in a header is only ever a name, never markup or a path.
    """
    name = (text or "").strip()
    if not _NAME.fullmatch(name):
        raise ValueError("a name is 1 to 64 letters, digits, spaces or . _ @ + -, starting with a letter or digit")
    return name


def default_owner() -> str:
    """Whose runs this process saves: AGENTCORE_USER, else the login name."""
    try:
        return os.environ.get("AGENTCORE_USER") or getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        return "anonymous"
