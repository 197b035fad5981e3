"""What every tool of the runs server shares: who a call is, the Store they see, and how a failure is said.

A call's viewer is the server's user, or over HTTP with a user header the name each request carries (a request
without a valid one is refused). The Store is leased from the server's pool for the length of the call. A tool's
or resource's failure is one line to the client and one line on the server's stderr, never a traceback, and
never the server's end.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import AgentcoreError, UsageError
from .http import StorePool
from .limits import ClientRules, Limits

T = TypeVar("T")
log = logging.getLogger("agentcore.runs_server")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 500 else text[:499] + "…"


def said(exc: BaseException) -> str:
    """A failure as the client reads it: a usage error as it is, a bug with its kind."""
    from pydantic import ValidationError

    if isinstance(exc, AgentcoreError):
        return _one_line(exc)
    if isinstance(exc, ValidationError):
        from ..transcript import describe_validation

        return _one_line(ValueError(describe_validation(exc)))
    return f"{type(exc).__name__}: {_one_line(exc)}"


def log_to_stderr() -> None:
    """The server's own log: one plain line a record on stderr (the SDK's handler wraps and draws tracebacks)."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("agentcore mcp-server: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.WARNING)
        log.propagate = False


def _one_line_failures(kind: str, error: type[Exception], fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` whose any failure is raised as `error` with one line, and logged as one line under `kind`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a bug in one call is that call's error, not the server's end
            line = said(exc)
            log.warning("%s %s: %s", kind, fn.__name__, line)
            raise error(line) from None

    return wrapper


def tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """Any failure as a one-line tool error and one line in the log: bad arguments never take the server down."""
    from mcp.server.mcpserver.exceptions import ToolError

    wrapper = _one_line_failures("tool", ToolError, fn)
    wrapper.__doc__ = inspect.cleandoc(fn.__doc__ or "")  # a tool's description is its docstring, without the indent
    return wrapper


def resource_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """A failed read as one line to the client and one line in the log, never a traceback."""
    from mcp.server.mcpserver.exceptions import ResourceError

    return _one_line_failures("resource", ResourceError, fn)


@dataclass(frozen=True)
class Shared:
    """What each group of the server's tools is given: the server to add them to, whose calls they are, the
    Stores those viewers read, what a client may name (`rules`) and what one call may do (`limits`)."""

    server: Any  # the SDK's MCPServer (args.runs_server_class)
    pool: StorePool
    rules: ClientRules
    limits: Limits
    user: str | None = None
    user_header: str | None = None

    def tool(self, fn: Callable[..., T]) -> Callable[..., T]:
        """Add `fn` as a tool: its name, its description (the docstring) and its input schema (the signature)."""
        return self.server.tool()(tool_errors(fn))

    def resource(self, uri: str, mime_type: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Add a function as the resource template `uri`."""
        return lambda fn: self.server.resource(uri, mime_type=mime_type)(resource_errors(fn))

    def viewer(self, ctx: Any) -> tuple[str | None, bool | None]:
        """Who this call is: the server's user, or over HTTP with a user header the name the request carries."""
        from ..store.access import is_teacher, valid_name

        if not self.user_header:
            return self.user, None
        headers = (ctx.headers if ctx is not None else None) or {}
        try:
            owner = valid_name(headers.get(self.user_header.lower()) or headers.get(self.user_header))
        except ValueError:
            raise UsageError(
                f"not signed in: this server takes the user's name from the {self.user_header} header"
            ) from None
        return owner, is_teacher(owner, headers)

    @contextmanager
    def store(self, ctx: Any) -> Iterator[Any]:
        """The runs database as this call's user sees it, for the length of the call: with private runs on, their
        own runs (every run for a teacher, AGENTCORE_TEACHERS), as the app's pages see it (agentcore.store.access)."""
        with self.pool.lease(*self.viewer(ctx)) as store:
            yield store
