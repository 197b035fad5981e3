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
proxy's secret are checked (http). A failure is one line to the client and one line to the log.
"""

import functools
import inspect
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from .. import __version__
from ..errors import AgentcoreError, UsageError
from .args import (
    MAX_LIST,
    Again,
    Configurations,
    EditedMessages,
    GroupBy,
    Labels,
    Limit,
    Mocks,
    Model,
    Note,
    Owner,
    Phase,
    Provider,
    RunId,
    Scanners,
    ShownStep,
    Since,
    Step,
    StepLabel,
    Steps,
    TestConfigurations,
    TestName,
    TestPath,
    Text,
    ToolCallId,
    Trials,
    runs_server_class,
)
from .data import run_data, summary_data
from .http import STORES_KEPT, StorePool
from .limits import ClientRules, Limits
from .tools import compare, drive, inside, own, read
from .tools import run_tests as test_runs
from .tools import scan as scan_runs

SERVER_NAME = "agentcore-runs"
MAX_EDIT_CHARS = 2_000_000  # the JSON of the messages fork_run takes
MAX_DRIVEN_STEPS = 100  # model calls run_to_end makes in one call
USER_HEADER_ENV = "AGENTCORE_USER_HEADER"

T = TypeVar("T")
log = logging.getLogger("agentcore.mcp.server")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 500 else text[:499] + "…"


def _said(exc: BaseException) -> str:
    """A failure as the client reads it: a usage error as it is, a bug with its kind."""
    from pydantic import ValidationError

    if isinstance(exc, AgentcoreError):
        return _one_line(exc)
    if isinstance(exc, ValidationError):
        from ..transcript import describe_validation

        return _one_line(ValueError(describe_validation(exc)))
    return f"{type(exc).__name__}: {_one_line(exc)}"


def _log_to_stderr() -> None:
    """The server's own log: one plain line a record on stderr (the SDK's handler wraps and draws tracebacks)."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("agentcore mcp-server: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.WARNING)
        log.propagate = False


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
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError

    from ..store.access import is_teacher, valid_name
    from ..store.runs import Store

    rules = rules if rules is not None else ClientRules.of()
    limits = limits or Limits()
    pool = stores or StorePool(lambda owner, teacher: Store(db, owner=owner, teacher=teacher), STORES_KEPT)
    _log_to_stderr()
    server = runs_server_class()(
        SERVER_NAME,
        version=__version__,  # serverInfo.version: what a client reads of whom it talks to
        instructions=(
            "agentcore's runs library: list and read runs of the agent loop, fork one at a step (with edited "
            "messages), step it or run it to its end, compare it from a step on other models, label steps, pin a "
            "run as a test and run tests. Runs made here are saved and show in the agentcore app."
        ),
        log_level="WARNING",
    )

    def viewer(ctx: Context | None) -> tuple[str | None, bool | None]:
        """Who this call is: the server's user, or over HTTP with a user header the name the request carries."""
        if not user_header:
            return user, None
        headers = (ctx.headers if ctx is not None else None) or {}
        try:
            owner = valid_name(headers.get(user_header.lower()) or headers.get(user_header))
        except ValueError:
            raise UsageError(
                f"not signed in: this server takes the user's name from the {user_header} header"
            ) from None
        return owner, is_teacher(owner, headers)

    @contextmanager
    def user_store(ctx: Context | None) -> Iterator[Store]:
        """The runs database as this call's user sees it, for the length of the call: with private runs on, their
        own runs (every run for a teacher, AGENTCORE_TEACHERS), as the app's pages see it (agentcore.store.access)."""
        with pool.lease(*viewer(ctx)) as store:
            yield store

    def tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
        """Any failure as a one-line tool error and one line in the log: bad arguments never take the server down."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:  # its description is the docstring, without the indent
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a bug in one call is that call's error, not the server's end
                said = _said(exc)
                log.warning("tool %s: %s", fn.__name__, said)
                raise ToolError(said) from None

        wrapper.__doc__ = inspect.cleandoc(fn.__doc__ or "")
        return wrapper

    def resource_errors(fn: Callable[..., T]) -> Callable[..., T]:
        """A failed read as one line to the client and one line in the log, never a traceback."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - one read's failure is that read's error
                said = _said(exc)
                log.warning("resource %s: %s", fn.__name__, said)
                raise ResourceError(said) from None

        return wrapper

    @server.tool()
    @tool_errors
    def list_runs(
        text: Text = "",
        provider: Provider = "",
        model: Model = "",
        owner: Owner = "",
        label: StepLabel = "",
        limit: Limit = 20,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The stored runs, newest first, as the app's Runs page filters them: `text` matches id, title, models
        and the first prompt; `provider`, `model`, `owner` and `label` (a step label) keep those runs."""
        wanted = limit if not (model or label) else MAX_LIST * 5
        with user_store(ctx) as store:
            found = store.list_runs(text or None, provider or None, wanted, owner=owner or None)
            if model:
                found = [r for r in found if any(model in m.model for m in r.models)]
            if label:
                labelled = store.annotations_by_run([r.id for r in found])
                found = [r for r in found if any(label in a.labels for a in labelled.get(r.id, []))]
        return {"runs": [summary_data(r) for r in found[:limit]], "more": len(found) > limit}

    @server.tool()
    @tool_errors
    def get_run(run_id: RunId, step: ShownStep = None, ctx: Context | None = None) -> dict[str, Any]:
        """One run: its configuration (provider, model and base URL: where its calls go), stop reason, usage and
        cost, each step's tokens, cost, latency and tool calls, its newest messages (or, with `step`, that step's:
        what it answered, its reply and its tool results), its parent, its forks and its labels. Long texts are
        cut, with a note."""
        with user_store(ctx) as store:
            return run_data(store, read(store, run_id), step)

    @server.tool()
    @tool_errors
    def fork_run(
        run_id: RunId,
        step: Step,
        messages: EditedMessages = None,
        mocks: Mocks = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """A new run from just before `step`'s model call (the run is kept); with `messages` (a whole edited
        message list, in agentcore's transcript form: role, content, tool_calls, tool_call_id), a fork over that
        list, keeping the steps before the first change. `mocks` fix tool results in the fork, each
        {"tool": NAME, "when": ["$.city=Paris"], "result": TEXT} or with "error": TEXT, the first that matches a
        call answering it. The fork is saved; step it with step_run."""
        from ..hooks.specs import MockRule
        from ..messages import MESSAGE_LIST, validate_messages

        if messages is not None and len(json.dumps(messages, default=str)) > MAX_EDIT_CHARS:
            raise UsageError(f"messages: more than {MAX_EDIT_CHARS:,} characters of JSON")
        with user_store(ctx) as store:
            run = read(store, run_id)
            if messages is None:
                fork = run.fork(step)
            else:
                edited = MESSAGE_LIST.validate_python(messages)
                violations = validate_messages(edited)
                if violations:
                    raise UsageError(f"messages: {violations[0]}")
                fork = run.fork_with_messages(edited)
            if mocks is not None:
                fork.config = fork.config.model_copy(update={"mocks": [MockRule.model_validate(m) for m in mocks]})
            store.save_run(fork)
        return {
            "run_id": fork.id,
            "parent": {"run_id": run.id, "step": fork.parent.step},
            "next_phase": fork.next_phase,
        }

    @server.tool()
    @tool_errors
    def step_run(run_id: RunId, phase: Phase = "step", ctx: Context | None = None) -> dict[str, Any]:
        """Run one step of the loop (`step`: the model call and the tools it asked for), or one phase of it, on
        the run's own provider and model; the run is saved, and what it added is returned. Someone else's run is
        stepped as one's own fork of it. A run whose configuration names an address or file this server does
        not call is refused."""

        def how(agent: Any, r: Any, cancel: Any) -> None:
            if phase == "model":
                agent.model_phase(r)
            elif phase == "tools":
                agent.tools_phase(r)
            else:
                agent.step(r)

        with user_store(ctx) as store:
            run = own(store, run_id, rules)
            if run.finished and phase != "tools":
                raise UsageError(f"run {run.id} has ended ({run.ending or 'done'}): fork it to go on")
            return drive(store, run, how, rules, limits)

    @server.tool()
    @tool_errors
    def run_to_end(run_id: RunId, ctx: Context | None = None) -> dict[str, Any]:
        """Run the loop until an answer, a pause or the run's step budget (at most 100 model calls, and this
        server's time for one call); the run is saved and what it added is returned, with `stopped` saying why
        it stopped early."""
        with user_store(ctx) as store:
            run = own(store, run_id, rules)
            if run.finished:
                raise UsageError(f"run {run.id} has ended ({run.ending or 'done'}): fork it to go on")
            most = min(MAX_DRIVEN_STEPS, limits.calls)
            if run.budget_left > most:
                raise UsageError(f"run {run.id} may make {run.budget_left} more calls: step it, at most {most} here")
            return drive(store, run, lambda agent, r, cancel: agent.run(r, cancel), rules, limits)

    @server.tool()
    @tool_errors
    def compare_from(
        run_id: RunId, step: Step, configurations: Configurations, steps: Steps = None, ctx: Context | None = None
    ) -> dict[str, Any]:
        """Fork the run just before `step`'s model call on each configuration (`PROVIDER[:MODEL][@BASE_URL]`,
        2 to 4; for scripted the model is the scenario; a base URL only one this server calls) and go on in
        lockstep, `steps` model calls (default: to the end of the run's budget; 1 asks that step again), within
        this server's model calls and time for one call. Returns that step as the original made it beside each
        configuration's, the summary from there, the forks, each saved under the run, and `stopped` when the
        time ran out first."""
        with user_store(ctx) as store:
            return compare(store, read(store, run_id), step, configurations, steps, rules, limits)

    @server.tool()
    @tool_errors
    def annotate_step(
        run_id: RunId,
        step: Step,
        labels: Labels,
        note: Note = "",
        tool_call_id: ToolCallId = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Label a step (or one tool call of it) of a run, as the app's Annotate form does: labels such as
        `wrong tool`, `wrong arguments`, `good`, with a note. Kept under the server's user; counted by Error
        analysis."""
        from ..annotations import make_annotation

        with user_store(ctx) as store:
            read(store, run_id)
            kept = store.annotate(
                run_id, make_annotation(step=step, tool_call_id=tool_call_id, labels=labels, note=note)
            )
        return {
            "annotation_id": kept.id,
            "run_id": run_id,
            "step": kept.step,
            "labels": kept.labels,
            "author": kept.author,
        }

    @server.tool()
    @tool_errors
    def stats(
        by: GroupBy = "model",
        since: Since = None,
        provider: Provider = "",
        owner: Owner = "",
        text: Text = "",
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The library's figures per group, as `agentcore stats --json` gives them: runs, steps, answered runs,
        input, output and cache tokens, cache hit rate, cost, cost per answered run, p50/p95 step latency, runs
        that hit the step budget or failed. `since` is a day (YYYY-MM-DD): runs created on or after it."""
        from ..store.stats import first_day, library_stats, totals

        day = first_day(since or None, "since")
        with user_store(ctx) as store:
            groups = library_stats(
                store, [by], since=day, provider=provider or None, owner=owner or None, search=text or None
            )
        once = by in ("provider", "model", "day")
        return {
            "by": by,
            "groups": [g.to_dict() for g in groups[:MAX_LIST]],
            "totals": totals(groups) if once else None,
        }

    @server.tool()
    @tool_errors
    def scan(scanners: Scanners = None, again: Again = False, ctx: Context | None = None) -> dict[str, Any]:
        """Run scanners over the runs and keep each finding as a label on the step where it happened (author
        `scanner:NAME`): the built-ins (loop, ignored_error, unknown_tool, step_budget, context, unread_results,
        key_in_reply) or `regex:PATTERN` over replies. Scanning again adds no duplicate; `again` reads every run
        anew. A scan stops when this server's time for one call runs out (`stopped` says so; scanning again goes
        on from there). A Python scanner (`module:function`) is the command line's only: a client does not
        choose code."""
        with user_store(ctx) as store:
            return scan_runs(store, scanners, again, limits)

    @server.tool()
    @tool_errors
    def pin_test(run_id: RunId, path: TestPath, name: TestName = None, ctx: Context | None = None) -> dict[str, Any]:
        """Write a test file from a run (the tool calls it made, in order, and its answer), under the server's
        working folder (`.json`, or `.yaml`); an existing file is not overwritten. Run it with run_tests."""
        from ..exports import export_test
        from ..testing import pinned
        from ..transcript import write_atomic

        out = inside(path)
        if out.suffix.lower() not in (".json", *pinned.YAML_SUFFIXES):
            raise UsageError(f"{path[:200]!r}: a test file is .json or .yaml")
        if out.exists():
            raise UsageError(f"{path[:200]!r} exists: choose another name")
        with user_store(ctx) as store:
            run = read(store, run_id)
        test = pinned.propose(run, name)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, export_test(test, yaml_format=out.suffix.lower() in pinned.YAML_SUFFIXES))
        calls = len(test.expect.tool_calls.calls) if test.expect.tool_calls else 0
        return {"path": str(out), "test": test.name, "tool_calls": calls, "steps": len(run.steps)}

    @server.tool()
    @tool_errors
    def run_tests(
        path: TestPath, configurations: TestConfigurations = None, trials: Trials = 1, ctx: Context | None = None
    ) -> dict[str, Any]:
        """Run the test files at `path` (a file or a folder under the server's working folder) on each
        configuration (default: replay; at most 4), `trials` times each: at most this server's runs and time
        for one call (`stopped` says when the time ran out). Each failing trial's run is saved. Returns one
        record per cell: passed trials, outcomes and run ids."""
        with user_store(ctx) as store:
            return test_runs(store, path, configurations, trials, rules, limits)

    @server.resource("agentcore://runs/{run_id}/transcript", mime_type="application/json")
    @resource_errors
    def transcript(run_id: str, ctx: Context) -> str:
        """A run's transcript, as the app's export writes it (credential-named fields blanked)."""
        from ..exports import export_json

        with user_store(ctx) as store:
            return export_json(read(store, run_id))

    @server.resource("agentcore://runs/{run_id}/replay", mime_type="text/html")
    @resource_errors
    def replay(run_id: str, ctx: Context) -> str:
        """A run's replay page: one self-contained HTML file that steps through it offline."""
        from ..exports import REPLAY, export_run

        with user_store(ctx) as store:
            return export_run(read(store, run_id), REPLAY)

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
    from ..store.runs import Store
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
    stores = StorePool(lambda owner, teacher: Store(db, owner=owner, teacher=teacher), STORES_KEPT)
    server = build_server(db, user_header=header, rules=rules, limits=limits, stores=stores)
    try:
        serve_http(server, host, int(port), allowed_hosts(allow_hosts), header)
    finally:
        stores.close()
