"""The runs library and the loop as an MCP server: a coding agent lists, reads, forks, steps and compares runs.

`agentcore mcp-server` serves it over stdio (default) or Streamable HTTP (`--http HOST:PORT`, loopback unless
told otherwise), with the official SDK's server API. Its tools take JSON-Schema inputs and give structured
outputs; a run made or changed through it is saved in the runs database and shows in the app like any other,
owned by the server's user (`AGENTCORE_USER`, else the login name), or over HTTP by the header the deployment
names (`--user-header`, as the app's `AGENTCORE_USER_HEADER`), which every call and resource read must then
carry.

Safety as in the app: no tool takes an API key (a provider reads its key from the server's environment), a
run someone else owns is never changed (stepping it steps one's own fork of it), every text it returns is
bounded (data). A shared server's client is not its operator: it names no file, model path or address of
the server's, an upstream's failure reaches it without the upstream's reply, and each call's work is bounded in
time and model calls (limits, tools). Over HTTP each user's Store is pooled, and Host, Origin and the
proxy's secret are checked (http). A failure is one line to the client and one line to the log (context).

build_server adds the tools in four groups (groups), each given the one context its calls share.
"""

import os
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import UsageError
from .args import runs_server_class
from .context import Shared, log_to_stderr
from .http import STORES_KEPT, StorePool
from .limits import ClientRules, Limits

SERVER_NAME = "agentcore-runs"
USER_HEADER_ENV = "AGENTCORE_USER_HEADER"
INSTRUCTIONS = (
    "agentcore's runs library: list and read runs of the agent loop, fork one at a step (with edited messages), "
    "step it or run it to its end, compare it from a step on other models, label steps, pin a run as a test and "
    "run tests. Runs made here are saved and show in the agentcore app."
)


def store_pool(db: str | None) -> StorePool:
    """Each user's Store over the runs database `db`, STORES_KEPT of them kept open."""
    from ..store.runs import Store

    return StorePool(lambda owner, teacher: Store(db, owner=owner, teacher=teacher), STORES_KEPT)


def build_server(
    db: str | None = None,
    *,
    user: str | None = None,
    user_header: str | None = None,
    rules: ClientRules | None = None,
    limits: Limits | None = None,
    stores: StorePool | None = None,
) -> Any:
    """The runs server over the runs database `db` (default: $AGENTCORE_DB or ~/.agentcore/runs.db).

    Runs are owned by `user` (default: AGENTCORE_USER, else the login name); with `user_header`, by the name
    each HTTP request carries in that header, and a request without a valid one is refused. `rules` say which
    configurations a client may name (default: the providers' own and operator-set addresses), `limits` what
    one call may do, and `stores` keeps each user's Store (default: a pool of STORES_KEPT).
    """
    from .groups import add_driving, add_library, add_reading, add_tests

    log_to_stderr()
    # serverInfo.version: what a client reads of whom it talks to
    server = runs_server_class()(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    shared = Shared(
        server,
        stores or store_pool(db),
        rules if rules is not None else ClientRules.of(),
        limits or Limits(),
        user=user,
        user_header=user_header,
    )
    for add in (add_reading, add_driving, add_library, add_tests):
        add(shared)
    return server


def serve(
    db: str | None = None,
    http: str | None = None,
    *,
    user_header: str | None = None,
    allow_base_urls: Sequence[str] = (),
    allow_hosts: Sequence[str] = (),
    limits: Limits | None = None,
) -> None:
    """Serve over stdio, or over Streamable HTTP at `http` (`HOST:PORT` or `PORT`, loopback by default) at /mcp.

    Over HTTP with a user header on an address other than loopback, the proxy's secret is required
    (AGENTCORE_PROXY_SECRET, as for the app); Host and Origin are checked on every address.
    """
    from .http import allowed_hosts, serve_http

    header = user_header or os.environ.get(USER_HEADER_ENV, "").strip() or None
    rules = ClientRules.of(allow_base_urls)
    if http is None:
        server = build_server(db, rules=rules, limits=limits)
        server.run("stdio")
        return
    host, _, port = http.rpartition(":")
    if not port.isdigit():
        raise UsageError(f"--http {http!r}: expected HOST:PORT or PORT, e.g. 127.0.0.1:8766")
    host = host.strip("[]") or "127.0.0.1"
    stores = store_pool(db)
    server = build_server(db, user_header=header, rules=rules, limits=limits, stores=stores)
    try:
        serve_http(server, host, int(port), allowed_hosts(allow_hosts), header)
    finally:
        stores.close()
