"""The held calls of a running proxy, from another process (the app's Held calls page, a script).

The proxy writes its address and its owner to the runs database's settings as it starts; `proxy_of` gives the
address to that owner alone, so no one else's requests are shown or released. `Control` lists and releases the
held calls through the proxy's control paths (which answer only to a client on the proxy's machine), and
`fork_held` keeps a held call's conversation as a stored run to go on with on any provider.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..errors import UsageError
from ..run import ForkOrigin, Run, RunConfig
from ..secrets import scrub
from ..sessions.builder import first_words
from .dialects import DIALECTS, read_request

PROXY_URL_KEY = "proxy.url"
PROXY_OWNER_KEY = "proxy.owner"
CONTROL_PATH = "/agentcore/holds"


def announce(store: Any, url: str) -> None:
    """Say in the runs database where the proxy listens, and whose it is."""
    store.set_meta(PROXY_URL_KEY, url)
    store.set_meta(PROXY_OWNER_KEY, store.owner)


def proxy_of(store: Any) -> str | None:
    """The address of the proxy that records into this database, when it is the store's user's; else None."""
    url = store.get_meta(PROXY_URL_KEY)
    return url if url and store.get_meta(PROXY_OWNER_KEY) == store.owner else None


class Control:
    """A running proxy's held calls, over its control paths."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def holds(self) -> list[dict[str, Any]]:
        """The calls held now, oldest first: id, run_id, step, reason, dialect, request (scrubbed), since."""
        found = self._call("GET", CONTROL_PATH)
        return [scrub(h) for h in found if isinstance(h, dict)] if isinstance(found, list) else []

    def release(
        self, hold_id: str, action: str, body: Any = None, text: str | None = None, texts: dict[int, str] | None = None
    ) -> None:
        """Send a held call as it is, send `body` in its place or the request with its messages' new `texts` (edit),
        or answer it with `text`."""
        order: dict[str, Any] = {"action": action}
        if body is not None:
            order["body"] = body
        if texts is not None:
            order["texts"] = {str(i): new for i, new in texts.items()}
        if text is not None:
            order["text"] = text
        self._call("POST", f"{CONTROL_PATH}/{hold_id}", order)

    def _call(self, method: str, path: str, order: Any = None) -> Any:
        try:
            reply = httpx.request(method, f"{self.url}{path}", json=order, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise UsageError(
                f"the proxy at {self.url} does not answer ({type(exc).__name__}): is it running?"
            ) from None
        try:
            data = reply.json()
        except ValueError:
            data = None
        if reply.status_code != 200:
            error = data.get("error") if isinstance(data, dict) else None
            said = error.get("message") if isinstance(error, dict) else error
            raise UsageError(str(said or f"the proxy answered {reply.status_code}")[:300])
        return data


def fork_held(store: Any, hold: dict[str, Any]) -> Run:
    """The held call's conversation (as the agent sent it) as a stored run, ready for its next model call: forked
    from the held call's run when that run is stored."""
    dialect = next((d for d in DIALECTS if d.name == hold.get("dialect")), None)
    request = hold.get("request")
    if dialect is None or not isinstance(request, dict):
        raise UsageError("the held call has no request to fork")
    conversation = read_request(dialect, request)
    if conversation.unread:
        raise UsageError(f"the held call's messages do not read: {conversation.unread}")
    if not conversation.messages:
        raise UsageError("the held call goes on from a response the proxy keeps, not the messages: fork its run")
    step = int(hold.get("step") or 1)
    parent = ForkOrigin(run_id=str(hold["run_id"]), step=step) if step > 1 and store.exists(hold["run_id"]) else None
    system = conversation.messages[0].content if conversation.messages[0].role == "system" else None
    config = RunConfig(provider=dialect.name, model=conversation.model, system_prompt=system, tools=conversation.tools)
    title = f"{first_words(conversation.messages, 'held call')} (fork of a held call)"
    run = Run(config=config, messages=conversation.messages, parent=parent, title=title[:200])
    store.save_run(run)
    return run
