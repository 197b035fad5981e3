"""The MCP SDK's log records as one line on stderr each, never a traceback.

The SDK logs a traceback for each line a server writes on stdout that is not JSON-RPC, for JSON
nested too deeply, for a stream cut off mid-message. With no logging set up, Python prints each
in full on stderr, 9 to 14 lines, even when the call then succeeds. What went wrong reaches the
caller anyway (as the transport error in the JSON-RPC record, or as the call's error), so here
each record of a warning or worse becomes one line naming the server, said once per server and
place in the SDK: a server that writes a thousand stray lines is said to do so once. An
application that sets up logging itself still receives the records of the `mcp` loggers as they are.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import weakref
from typing import Any

from ..secrets import scrub_text
from ..tool_output import describe

# the SDK's loggers: its modules' own, and one its client session calls "client"
SDK_LOGGER = "mcp"
SESSION_LOGGER = "client"
LINE_CHARS = 300
_SAID_MAX = 1000
_PYDANTIC_LINK = re.compile(r"\s*For further information visit \S+")

_servers: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()  # thread id -> its Connection
_said: set[tuple[int, str, int]] = set()
_lock = threading.Lock()
_installed = False


def watch(thread: threading.Thread, connection: Any) -> None:
    """Name `connection`'s server in the lines for the records its SDK session logs on `thread`."""
    install()
    if thread.ident is not None:
        _servers[thread.ident] = connection


def install() -> None:
    """Put the one-line handler on the SDK's loggers, once per process."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    handler = _OneLine(logging.WARNING)
    # a handler on the SDK's logger also keeps Python's last-resort printing of whole tracebacks away
    logging.getLogger(SDK_LOGGER).addHandler(handler)
    # "client" is not the SDK's alone to name: take from it only what our sessions' threads log
    logging.getLogger(SESSION_LOGGER).addFilter(_Ours(handler))


def _one_line(record: logging.LogRecord) -> str:
    """The record as one line naming the server: its message and, for a traceback, only the error itself."""
    connection = _servers.get(record.thread or 0)
    if connection is None:
        where = "MCP client"
    else:  # before `initialize` answers, a server without a configured name is known by where it runs
        named = connection.config.name or connection.server_info
        where = f"MCP server {connection.name if named else connection.config.label}"
    text = record.getMessage()
    if record.exc_info and record.exc_info[1] is not None:
        text += f" ({_PYDANTIC_LINK.sub('', describe(record.exc_info[1]))})"
    text = " ".join(scrub_text(text).split())
    if len(text) > LINE_CHARS:
        text = text[:LINE_CHARS] + "…"
    return f"agentcore: {where}: {text}"


class _OneLine(logging.Handler):
    """Writes each new kind of record as one line on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            connection = _servers.get(record.thread or 0)
            key = (id(connection), record.pathname, record.lineno)  # the name may change once the server gives it
            with _lock:
                if key in _said or len(_said) >= _SAID_MAX:
                    return
                _said.add(key)
            sys.stderr.write(_one_line(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must not fail the call that logged
            self.handleError(record)


class _Ours(logging.Filter):
    """On the SDK session's "client" logger: our sessions' records go to the one-line handler and stop there."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread not in _servers:
            return True
        if record.levelno >= self.handler.level:
            self.handler.handle(record)
        return False
