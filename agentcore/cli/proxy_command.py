"""`agentcore proxy`: the recording proxy (agentcore.proxy) on the command line, until interrupted."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import UsageError
from .annotate import DB_HELP


def add_proxy(sub: Any) -> None:
    """The `proxy` subcommand."""
    p = sub.add_parser(
        "proxy", help="a recording proxy between any agent and its provider: each call a step of a stored run"
    )
    p.add_argument(
        "--listen", default="127.0.0.1:8787", metavar="HOST:PORT", help="where to listen (default %(default)s)"
    )
    p.add_argument(
        "--upstream",
        default="openai",
        help="openai, anthropic, ollama or a server's URL: where every call goes, fixed (default %(default)s)",
    )
    p.add_argument("--db", help=DB_HELP)
    p.add_argument(
        "--pause",
        action="append",
        metavar="never|always|SPEC",
        help="hold calls before they are sent: never (the default), always, or a breakpoint, repeatable "
        "(step:N, tool:NAME, args:$.PATH=VALUE, tokens:N, cost:USD, repeat)",
    )
    p.add_argument("--hold-limit", type=float, default=600.0, metavar="S", help="seconds a call is held at most")
    p.add_argument("--allow-remote", action="store_true", help="listen on an address other machines reach")
    p.add_argument("--token", help="with --allow-remote: the secret each client sends as x-agentcore-proxy-token")
    p.set_defaults(func=cmd_proxy)


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets) as a host and a port; a UsageError when it is not one."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"--listen {text[:80]!r}: HOST:PORT, e.g. 127.0.0.1:8787")
    return host, int(port)


def cmd_proxy(args: Any) -> int:
    from ..proxy import ProxyConfig, ProxyServer
    from ..store import Store

    host, port = listen_address(args.listen)
    config = ProxyConfig(
        upstream=args.upstream,
        host=host,
        port=port,
        pause=args.pause or "never",
        hold_limit=args.hold_limit,
        allow_remote=args.allow_remote,
        token=args.token,
    )
    proxy = ProxyServer(config, Store(args.db))
    holds = ", ".join(args.pause or ["never"])
    print(
        f"agentcore proxy on {proxy.url}, forwarding to {proxy.recorder.upstream}; holds: {holds}. "
        "Point an agent's base URL here (docs/proxy.md); Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )
    try:
        proxy.serve_forever()
    finally:
        proxy.close()
    return 0
