"""Tools from MCP servers, through the official `mcp` SDK (the `mcp` extra).

A server is a `ServerConfig`: a command (stdio) or a URL (streamable HTTP, with headers).
`connect` starts it once per process and keeps it: its SDK session lives in an asyncio loop
on a background thread of its own, and the sync loop of agentcore reaches it through
`Connection.call`. Its tools become `MCPTool`s, which follow the rules of every tool:
arguments are checked against the server's `inputSchema` before the call, the call has a
time limit, `isError` becomes an error result, and a server that dies or hangs is an error
result the model can read, not a hung step; the next call starts a dead server again.

A server is untrusted input: its names, descriptions and schemas are bounded before they
reach a model, its text is capped like any tool output, and each JSON-RPC message it
exchanges is kept (the last `WIRE_KEEP`, each cut to a bounded size: limits.py) for the wire
view with secrets removed. Its HTTP replies are bounded as they are read (bounded_http.py), and
what the SDK logs about it is one line on stderr (logs.py). Its tools are read from every page of
`tools/list`, each on its own, and only if it offers tools (listing.py); what is left out is a note.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import hashlib
import itertools
import json
import re
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .. import __version__
from ..errors import AgentcoreError, UsageError
from ..messages import ToolCall
from ..providers.base import WireExchange
from ..secrets import scrub
from ..tool_output import cap_output, describe, utf8_safe
from ..tools import Tool, ToolOutcome, ToolSpec
from . import logs
from .config import ServerConfig, servers_from_args
from .limits import file_tail, kept
from .listing import mend_listing, read_tools

CONNECT_TIMEOUT_S = 20.0
CONNECTION_CLOSED = -32000  # the SDK's MCPError code for a connection that ended, not an answer from the server
WIRE_KEEP = 500
STDERR_LINES = 5  # of a server that could not start: the end of what it said, where the reason usually is
MAX_DESCRIPTION_CHARS = 2000
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
# the agentcore tool call a tools/call request is made for: the SDK writes the request in the task
# that asked, so the record of the message can say which call it belongs to
_TOOL_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("mcp_tool_call_id", default=None)


class MCPServerError(AgentcoreError):
    """An MCP server that cannot be started, reached or listed."""


def require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UsageError("MCP servers need the official SDK: pip install 'agentcore[mcp]'") from None


# -- one server: its session on a loop of its own ------------------------------------


class _Recorded:
    """A transport stream that keeps each message going through it, for the wire view."""

    def __init__(self, stream: Any, keep: Any, direction: str) -> None:
        self._stream, self._keep, self._direction = stream, keep, direction

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __aiter__(self) -> _Recorded:
        return self

    async def __anext__(self) -> Any:
        item = await self._stream.__anext__()
        self._keep(self._direction, item)
        return item

    async def receive(self) -> Any:
        item = await self._stream.receive()
        self._keep(self._direction, item)
        return item

    async def send(self, item: Any) -> None:
        self._keep(self._direction, item)
        await self._stream.send(item)

    async def __aenter__(self) -> _Recorded:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)


async def negotiate(session: Any) -> None:
    """Open the session in the newest protocol both sides speak: a `server/discover` probe at 2026-07-28 (the
    stateless revision), then, from a server that does not answer it as a modern server, the `initialize`
    handshake (2025-11-25 and before), as the spec's dual-era clients do.

    A server that answers the handshake with the versions it speaks and none is this client's is refused in one
    line naming them (MCPServerError).
    """
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
    from pydantic import ValidationError as SchemaMismatch

    try:
        await session.discover()
        return
    except (MCPError, RuntimeError, SchemaMismatch):
        pass  # no modern answer (an unknown method, a bare error, no mutual version): the handshake era
    try:
        await session.initialize()
    except MCPError as exc:
        supported = _supported_versions(exc)
        if supported is None:
            raise
        ours = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
        raise MCPServerError(
            f"it speaks MCP {', '.join(supported[:8]) or 'no version it names'}; agentcore speaks {', '.join(ours)}"
        ) from None


def _supported_versions(exc: Any) -> list[str] | None:
    """The versions a -32022 (unsupported protocol version) error names; None for any other error."""
    error = getattr(exc, "error", None)
    if getattr(exc, "code", None) != -32022 or error is None:
        return None
    data = getattr(error, "data", None)
    supported = data.get("supported") if isinstance(data, dict) else None
    return [str(v)[:40] for v in supported if isinstance(v, str)] if isinstance(supported, list) else []


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class Connection:
    """One running MCP server: its SDK session held by a task on a background event loop."""

    def __init__(self, config: ServerConfig) -> None:
        require_sdk()
        self.config = config
        self.name = config.name or "mcp"
        self.server_info: dict[str, Any] = {}
        # the protocol the session speaks: its era ("2026-07-28": stateless, `server/discover`; "handshake":
        # `initialize`) and version, which the app's MCP panel and `agentcore tools` show
        self.era: str | None = None
        self.protocol_version: str | None = None
        self.tools: list[Any] = []  # the SDK's Tool objects from tools/list
        self.wire: deque[dict[str, Any]] = deque(maxlen=WIRE_KEEP)
        self._call_ids: dict[Any, str] = {}  # JSON-RPC id of a tools/call in flight -> tool call id
        self.notes: list[str] = []  # one line each: why it has no tools, or what of its listing was left out
        self.starts = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._hold: asyncio.Future[Any] | None = None
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        self._stderr: Any = None

    @property
    def speaks(self) -> str:
        """The protocol in a few words: `MCP 2026-07-28 (stateless, server/discover)`; empty before it started."""
        if self.protocol_version is None:
            return ""
        how = "stateless, server/discover" if self.era == "stateless" else "initialize handshake"
        return f"MCP {self.protocol_version} ({how})"

    # the JSON-RPC record

    def _keep(self, direction: str, item: Any) -> None:
        message = getattr(item, "message", None)
        if message is not None:
            body = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        else:
            body = {"transport_error": describe(item)} if isinstance(item, BaseException) else {"item": repr(item)}
        rpc_id = body.get("id") if isinstance(body, dict) else None
        entry = {"server": self.name, "direction": direction, "at": time.time(), "message": kept(scrub(body))}
        call_id = _TOOL_CALL_ID.get() if direction == "→" else self._call_ids.pop(rpc_id, None)
        if call_id is not None:
            entry["tool_call_id"] = call_id
            if direction == "→" and rpc_id is not None:
                self._call_ids[rpc_id] = call_id
        self.wire.append(entry)

    def exchange(self, tool_call_id: str) -> list[dict[str, Any]]:
        """The recorded `tools/call` request made for this tool call, and the server's response."""
        return [w for w in list(self.wire) if w.get("tool_call_id") == tool_call_id]

    # starting and stopping

    @property
    def alive(self) -> bool:
        return self._hold is not None and not self._hold.done() and self._session is not None

    def start(self) -> None:
        """Start the server (again, if it died), initialize the session and list its tools."""
        with self._lock:
            if self.alive:
                return
            self._shutdown()
            self.starts += 1
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=f"mcp-{self.name}", daemon=True)
            thread.start()
            logs.watch(thread, self)
            self._loop = loop
            ready = asyncio.run_coroutine_threadsafe(self._begin(), loop)
            try:
                ready.result(CONNECT_TIMEOUT_S)
            except BaseException as exc:  # noqa: BLE001 - every way a start fails is said the same way
                self._shutdown()
                why = "it did not answer in time" if isinstance(exc, TimeoutError) else describe(_leaf(exc))
                said = self.stderr_tail().splitlines()[-STDERR_LINES:]  # a process that died says why on stderr
                if said:
                    why += f"; its stderr ends: {' | '.join(line.strip() for line in said)}"
                raise MCPServerError(f"MCP server {self.name} ({self.config.label}) could not start: {why}") from None

    async def _begin(self) -> None:
        self._stop = asyncio.Event()
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._hold = asyncio.ensure_future(self._serve(started))
        self._hold.add_done_callback(lambda f: f.cancelled() or f.exception())  # its error is said by start()
        done, _ = await asyncio.wait({started, self._hold}, return_when=asyncio.FIRST_COMPLETED)
        if started.done():
            return started.result()
        exc = self._hold.exception() or MCPServerError("the session ended before it began")
        raise exc

    def _transport(self) -> Any:
        c = self.config
        if c.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            from .bounded_http import http_client

            client = http_client(dict(c.headers) or None)
            return streamable_http_client(c.url, http_client=client), client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self._stderr = tempfile.TemporaryFile("w+b")  # binary, so that its end can be read alone
        params = StdioServerParameters(command=c.command or "", args=list(c.args), env=dict(c.env) or None, cwd=c.cwd)
        return stdio_client(params, errlog=self._stderr), None

    def _received(self, direction: str, item: Any) -> None:
        """Keep a message from the server; then leave out of a tool listing each tool MCP's types refuse."""
        self._keep(direction, item)  # first: the wire view shows what the server sent
        for note in mend_listing(item):
            if note not in self.notes:
                self.notes.append(note)

    async def _serve(self, started: asyncio.Future[None]) -> None:
        from mcp import ClientSession, types

        transport, client = self._transport()
        async with contextlib.AsyncExitStack() as stack:
            if client is not None:
                await stack.enter_async_context(client)
            read, write = await stack.enter_async_context(transport)
            session = ClientSession(
                _Recorded(read, self._received, "←"),
                _Recorded(write, self._keep, "→"),
                client_info=types.Implementation(name="agentcore", version=__version__),
            )
            session = await stack.enter_async_context(session)
            await negotiate(session)
            self.protocol_version = session.protocol_version
            self.era = "stateless" if session.discover_result is not None else "handshake"
            info = session.server_info
            self.server_info = info.model_dump(mode="json") if info is not None else {}
            if self.config.name is None:
                self.name = _NAME_CHARS.sub("_", info.name if info is not None else "")[:32] or "mcp"
            self.notes = []
            self.tools, notes = await read_tools(session, session.server_capabilities)
            self.notes += [n for n in notes if n not in self.notes]
            self._session = session
            started.set_result(None)
            assert self._stop is not None
            await self._stop.wait()

    def _shutdown(self) -> None:
        """Stop the session and its loop, waiting a few seconds at most."""
        loop, hold = self._loop, self._hold
        self._session, self._loop, self._hold = None, None, None
        if loop is None:
            return
        if hold is not None and self._stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._stop.set)
            waiting = asyncio.run_coroutine_threadsafe(asyncio.wait({hold}, timeout=5), loop)
            with contextlib.suppress(BaseException):
                waiting.result(6)
        loop.call_soon_threadsafe(loop.stop)

    def close(self) -> None:
        """Stop the server; a later call starts it again."""
        with self._lock:
            self._shutdown()

    def stderr_tail(self, chars: int = 400) -> str:
        """The last lines a stdio server wrote to its stderr, for error messages."""
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            return scrub(file_tail(self._stderr, chars).strip())
        return ""

    # calling

    def call(self, name: str, arguments: dict[str, Any], timeout_s: float, tool_call_id: str | None = None) -> Any:
        """`tools/call` on the server; raises TimeoutError, or MCPServerError when the server is gone."""
        if not self.alive:
            self.start()
        loop, session, hold = self._loop, self._session, self._hold
        if loop is None or session is None or hold is None:
            raise MCPServerError(f"MCP server {self.name} is not running")

        async def race() -> Any:
            _TOOL_CALL_ID.set(tool_call_id)
            task = asyncio.ensure_future(session.call_tool(name, arguments))
            done, _ = await asyncio.wait({task, hold}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                return task.result()
            task.cancel()
            if hold in done:
                raise MCPServerError(f"MCP server {self.name} ended during the call")
            raise TimeoutError

        try:
            return asyncio.run_coroutine_threadsafe(race(), loop).result(timeout_s + 5)
        except (TimeoutError, MCPServerError):
            raise
        except Exception as exc:  # noqa: BLE001 - the SDK's errors (closed connection, protocol error) alike
            exc = _leaf(exc)
            if getattr(exc, "code", None) not in (None, CONNECTION_CLOSED):
                raise MCPServerError(f"MCP server {self.name} refused the call: {describe(exc)}") from None
            self.close()  # the connection is gone (a process that died, a server that went away): restart next time
            raise MCPServerError(f"MCP server {self.name} ended during the call ({describe(exc)})") from None


# -- the tools ---------------------------------------------------------------------


class _AnyArguments(BaseModel):
    model_config = ConfigDict(extra="allow")


def content_text(result: Any) -> str:
    """A `tools/call` result's content as the text the model reads."""
    parts = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {block.mime_type}, about {len(block.data) * 3 // 4} bytes, not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif kind == "resource":
            text = getattr(block.resource, "text", None)
            parts.append(text if text is not None else f"[resource {block.resource.uri}, binary, not shown]")
        else:
            parts.append(f"[{kind or 'unknown'} content, not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


@dataclass(frozen=True)
class MCPTool(Tool):
    """A tool that a server offers: the call goes to the server as `tools/call`."""

    connection: Connection | None = field(default=None, compare=False, repr=False)
    remote_name: str = ""
    refused: str | None = None  # why the server's inputSchema cannot be used; every call is then an error result

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters, source=self.source)

    @property
    def source(self) -> str:
        """Which server the tool came from, as a transcript records it: `mcp:NAME`."""
        return f"mcp:{self.connection.name if self.connection else '?'}"

    def exchange_for(self, tool_call_id: str) -> WireExchange | None:
        """This call's `tools/call` request and the server's response as a wire exchange; None if none was sent."""
        if self.connection is None:
            return None
        recorded = self.connection.exchange(tool_call_id)
        sent = [w["message"] for w in recorded if w["direction"] == "→"]
        if not sent:
            return None
        answered = [w["message"] for w in recorded if w["direction"] == "←"]
        # scrubbed again: a secret registered after the message was kept is removed too
        return WireExchange(
            url=scrub(self.connection.config.label),
            request=scrub(sent[0]),
            response=scrub(answered[0]) if answered else None,
        )

    def execute(self, call: ToolCall) -> ToolOutcome:
        """Check the arguments against the server's schema, call the server with a time limit."""
        from ..schemas import SchemaError, schema_errors

        started = time.perf_counter()

        def done(content: str, error: str | None = None) -> ToolOutcome:
            text = cap_output(utf8_safe(scrub(content)), self.max_output_chars)
            spent = (time.perf_counter() - started) * 1000
            return ToolOutcome(text, is_error=error is not None, duration_ms=spent, error=error)

        if call.arguments_invalid:
            return done(
                f"Error: the arguments for {self.name} are not a JSON object: {call.raw_arguments!r}. "
                f"Call {self.name} again with arguments that match its schema.",
                "invalid_json",
            )
        if self.refused is not None:
            return done(
                f"Error: {self.name} cannot be called: its server's inputSchema was refused: {self.refused}. "
                "The call was not made.",
                "invalid_schema",
            )
        try:
            problems = schema_errors(self.parameters, call.arguments)
        except SchemaError as exc:
            return done(
                f"Error: the arguments for {self.name} could not be checked: its inputSchema cannot be applied: "
                f"{exc}. The call was not made.",
                "invalid_schema",
            )
        if problems:
            said = "; ".join(f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}" for e in problems[:5])
            return done(
                f"Error: invalid arguments for {self.name}: {said}. Fix them and call it again.", "invalid_arguments"
            )
        assert self.connection is not None and self.timeout_s is not None
        try:
            result = self.connection.call(self.remote_name, call.arguments, self.timeout_s, call.id)
        except TimeoutError:
            return done(f"Error: {self.name} timed out after {self.timeout_s:g} s and was cancelled.", "timeout")
        except MCPServerError as exc:
            tail = self.connection.stderr_tail()
            return done(
                f"Error: {self.name} failed: {exc}" + (f" (its stderr: {tail})" if tail else ""), "server_error"
            )
        text = content_text(result)
        if result.is_error:
            return done(text if text.startswith("Error:") else f"Error: {text}", "tool_error")
        return done(text)


def _tool(connection: Connection, remote: Any, name: str) -> MCPTool:
    """An MCPTool of one listed tool; one whose schema cannot be used is offered with no parameters, and says why.

    A refused schema (a `$ref` out of it, a reference loop, a pattern too large: see agentcore.schemas) goes
    to no provider and checks nothing: the tool's description and each call's error result give the reason.
    """
    from ..schemas import SchemaError, check_schema

    schema = remote.input_schema
    description = utf8_safe(remote.description or remote.title or "")[:MAX_DESCRIPTION_CHARS]
    refused = None
    try:
        check_schema(schema)
        ToolSpec(name=name, parameters=schema)  # bounds the nesting, as for every tool
    except (SchemaError, ValidationError) as exc:
        refused = utf8_safe(scrub(" ".join(str(exc).split())))[:MAX_DESCRIPTION_CHARS]
        schema = {"type": "object", "properties": {}}
        description = f"{description} (Not callable: its inputSchema was refused: {refused})".strip()
    return MCPTool(
        name=name,
        description=description,
        fn=lambda **kwargs: connection.call(remote.name, kwargs, connection.config.timeout_s),
        args_model=_AnyArguments,
        timeout_s=connection.config.timeout_s,
        _schema=schema,
        connection=connection,
        remote_name=remote.name,
        refused=refused,
    )


_OPEN: dict[ServerConfig, Connection] = {}
_OPEN_LOCK = threading.Lock()


def connect(config: ServerConfig) -> Connection:
    """The process's connection to this server, started the first time and again if it died."""
    with _OPEN_LOCK:
        connection = _OPEN.get(config) or _OPEN.setdefault(config, Connection(config))
    connection.start()
    return connection


@atexit.register
def close_all() -> None:
    """Stop every server this process started."""
    with _OPEN_LOCK:
        connections = list(_OPEN.values())
        _OPEN.clear()
    for connection in connections:
        connection.close()


def mcp_tools(configs: list[ServerConfig], taken: Iterable[str] = ()) -> list[MCPTool]:
    """The tools of these servers under unique names: one two of them share (or a `taken` one) becomes `SERVER__NAME`.

    A name cleaned to the characters a model accepts, or cut to 64 of them, can still meet another: the
    later one gets a short suffix drawn from its server and its own name (`a<b` and `a>b`: `S__a_b`, `S__a_b_1f2e3d`).
    """
    connections = [connect(c) for c in configs]
    seen: set[str] = set()
    for c in connections:  # two servers that call themselves the same are told apart
        base, n = c.name, 2
        while c.name in seen:
            c.name, n = f"{base}_{n}", n + 1
        seen.add(c.name)
    used = set(taken)
    counts: dict[str, int] = {n: 1 for n in used}
    for c in connections:
        for t in c.tools:
            counts[t.name] = counts.get(t.name, 0) + 1
    tools = []
    for c in connections:
        for remote in c.tools:
            plain = _NAME_CHARS.sub("_", remote.name)[:64] or "tool"
            name = plain if counts[remote.name] == 1 and plain == remote.name else f"{c.name}__{plain}"[:64]
            made = _tool(c, remote, _unused(name, f"{c.name}/{remote.name}", used))
            if made is not None:
                used.add(made.name)
                tools.append(made)
    return tools


def _unused(name: str, key: str, used: set[str]) -> str:
    """`name`, or when another tool has it, `name` cut and followed by a suffix drawn from `key` (never a count)."""
    if name not in used:
        return name
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    candidates = (f"{name[: 63 - width]}_{digest[:width]}" for width in (6, 12, 24))  # longer if a shorter is taken
    fallback = (f"{name[:50]}_{digest[:6]}_{n}" for n in itertools.count(2))
    return next(c for c in itertools.chain(candidates, fallback) if c not in used)


def with_mcp_tools(args: Any, tools: list[Tool]) -> list[Tool]:
    """These tools and those of the MCP servers the command line names (a clashing name gets its server's)."""
    configs = servers_from_args(args)
    if not configs:
        return list(tools)
    return [*tools, *mcp_tools(configs, taken=[t.name for t in tools])]
