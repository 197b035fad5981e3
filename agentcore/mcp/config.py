"""MCP server configuration: the `mcpServers` file shape, `${VAR}` expansion, and the command-line options.

Nothing here starts a server or needs the `mcp` SDK; agentcore.mcp connects what these describe.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..secrets import redacted_url, register_headers, register_secret, register_url
from ..tools import DEFAULT_TIMEOUT_S

_SECRET_ENV = re.compile(r"(key|token|secret|password|auth)", re.IGNORECASE)
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server: `command` and `args` (stdio) or `url` and `headers` (streamable HTTP)."""

    name: str | None = None  # None: the name the server gives itself in `initialize`
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S  # each tool call's limit

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise UsageError(f"MCP server {self.name or ''}: give either a command or a url")
        register_headers(dict(self.headers))
        for key, value in self.env:
            if _SECRET_ENV.search(key):
                register_secret(value)
        if self.url is not None:
            register_url(self.url)

    @property
    def label(self) -> str:
        """Where the server is, for messages: its URL without credentials, or its command line."""
        return redacted_url(self.url) if self.url is not None else shlex.join([self.command or "", *self.args])


def stdio_server(command_line: str, name: str | None = None) -> ServerConfig:
    """A stdio server from one command line, split as a shell would: `--mcp-stdio "CMD ARGS"`."""
    try:
        words = shlex.split(command_line)
    except ValueError as exc:
        raise UsageError(f"--mcp-stdio {command_line!r}: {exc}") from None
    if not words:
        raise UsageError("--mcp-stdio needs a command")
    return ServerConfig(name=name, command=words[0], args=tuple(words[1:]))


def http_server(url: str, headers: dict[str, str] | None = None, name: str | None = None) -> ServerConfig:
    """A streamable HTTP server at `url`; header values are registered as secrets."""
    if not re.match(r"https?://", url):
        raise UsageError(f"--mcp-url {redacted_url(url)!r}: an MCP URL starts with http:// or https://")
    return ServerConfig(name=name, url=url, headers=tuple((headers or {}).items()))


def _expand(value: Any, where: str, *, secret: bool = False) -> str:
    """A config string with each `${VAR}` replaced by the environment's value, so secrets stay out of the file.

    With `secret`, each value put in is registered as a secret: a variable in a URL is there to keep it out of the file.
    """
    if not isinstance(value, str):
        raise UsageError(f"{where}: must be a string")

    def lookup(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise UsageError(f"{where}: the environment variable {m.group(1)} is not set")
        if secret:
            register_secret(os.environ[m.group(1)])
        return os.environ[m.group(1)]

    return _ENV_REF.sub(lookup, value)


def parse_config(data: Any, where: str = "MCP config") -> list[ServerConfig]:
    """The servers of a config in the common `{"mcpServers": {NAME: {...}}}` shape.

    Keys other MCP clients add (`disabled` is honoured; others such as `autoApprove`) are
    ignored, so one file serves several clients. `timeout` (seconds per call) is agentcore's.
    """
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise UsageError(f'{where}: expected {{"mcpServers": {{"name": {{...}}}}}}')
    configs = []
    for name, entry in servers.items():
        at = f"{where}: mcpServers.{name}"
        if not isinstance(entry, dict):
            raise UsageError(f"{at}: must be an object")
        if entry.get("disabled") is True:
            continue
        kind = entry.get("type", "http" if "url" in entry else "stdio")
        timeout = entry.get("timeout", DEFAULT_TIMEOUT_S)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
            raise UsageError(f"{at}.timeout: a number of seconds from 0 to 3600")
        if kind == "stdio" and isinstance(entry.get("command"), str):
            args = entry.get("args", [])
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise UsageError(f"{at}.args: must be a list of strings")
            env = {k: _expand(v, f"{at}.env.{k}") for k, v in (entry.get("env") or {}).items()}
            cwd = entry.get("cwd")
            configs.append(
                ServerConfig(name, entry["command"], tuple(args), tuple(env.items()), cwd, timeout_s=float(timeout))
            )
        elif kind in ("http", "streamable-http", "streamableHttp") and isinstance(entry.get("url"), str):
            headers = {k: _expand(v, f"{at}.headers.{k}") for k, v in (entry.get("headers") or {}).items()}
            config = http_server(_expand(entry["url"], f"{at}.url", secret=True), headers, name)
            configs.append(replace(config, timeout_s=float(timeout)))
        elif kind == "sse":
            raise UsageError(f"{at}: the old SSE transport is not supported; use the server's streamable HTTP URL")
        else:
            raise UsageError(f"{at}: needs a string `command` (stdio) or `url` (streamable HTTP)")
    return configs


def load_config(path: str | Path) -> list[ServerConfig]:
    """The servers of a JSON config file in the `mcpServers` shape."""
    from ..errors import TranscriptError
    from ..transcript import read_file, read_json

    try:
        data = read_json(read_file(path))
    except TranscriptError as exc:
        raise UsageError(f"MCP config {path}: {exc}") from None
    return parse_config(data, f"MCP config {path}")


def add_mcp_arguments(parser: Any) -> None:
    """The options that name MCP servers, for every subcommand that takes tools."""
    parser.add_argument(
        "--mcp-stdio", action="append", metavar='"CMD ARGS"', help="an MCP server to start over stdio (repeatable)"
    )
    parser.add_argument("--mcp-url", action="append", metavar="URL", help="a streamable HTTP MCP server (repeatable)")
    parser.add_argument(
        "--mcp-header",
        action="append",
        metavar="NAME: VALUE",
        help="a header sent to every --mcp-url server, e.g. 'Authorization: Bearer ...' (kept out of all output)",
    )
    parser.add_argument("--mcp-config", metavar="FILE", help='MCP servers in a JSON file: {"mcpServers": {...}}')


def servers_from_args(args: Any) -> list[ServerConfig]:
    """The MCP servers the command line names, in the order given: config file, stdio, then URLs."""
    headers = {}
    for line in getattr(args, "mcp_header", None) or []:
        key, colon, value = line.partition(":")
        if not colon or not key.strip():
            raise UsageError(f"--mcp-header {line!r}: write it as 'Name: value'")
        headers[key.strip()] = value.strip()
    configs = load_config(args.mcp_config) if getattr(args, "mcp_config", None) else []
    configs += [stdio_server(line) for line in getattr(args, "mcp_stdio", None) or []]
    configs += [http_server(url, headers) for url in getattr(args, "mcp_url", None) or []]
    if headers and not getattr(args, "mcp_url", None):
        raise UsageError("--mcp-header applies to --mcp-url servers; give one")
    return configs
