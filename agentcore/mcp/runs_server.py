"""The runs library and the loop as an MCP server: a coding agent lists, reads, forks, steps and compares runs.

`agentcore mcp-server` serves it over stdio (default) or Streamable HTTP (`--http HOST:PORT`, loopback unless
told otherwise), with the official SDK's server API. Its tools take JSON-Schema inputs and give structured
outputs; a run made or changed through it is saved in the runs database and shows in the app like any other,
owned by the server's user (`AGENTCORE_USER`, else the login name), or over HTTP by the header the deployment
names (`--user-header`, as the app's `AGENTCORE_USER_HEADER`), which a call must then carry.

Safety as in the app: no tool takes an API key (a provider reads its key from the server's environment), a
run someone else owns is never changed (stepping it steps one's own fork of it), every text it returns is
bounded (a long message is cut with a note, long lists keep their newest items and say how many are left
out), and bad arguments are one-line tool errors: the server goes on.
"""

import functools
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from ..errors import AgentcoreError, UsageError
from ..messages import AssistantMessage, Message, ToolMessage

SERVER_NAME = "agentcore-runs"
MAX_TEXT = 2_000  # characters of one message, tool argument or result a tool returns
MAX_MESSAGES = 60  # messages get_run returns (the newest), unless a step is asked for
MAX_STEPS_LISTED = 200  # step rows get_run returns
MAX_LIST = 200  # runs list_runs returns
MAX_EDIT_CHARS = 2_000_000  # the JSON of the messages fork_run takes
MAX_DRIVEN_STEPS = 100  # model calls run_to_end makes in one call
USER_HEADER_ENV = "AGENTCORE_USER_HEADER"

T = TypeVar("T")


# -- what the tools return: bounded, plain data ------------------------------------------------


def _cut(text: str | None, most: int = MAX_TEXT) -> str | None:
    """The text, or its first `most` characters and how many more there were."""
    if text is None or len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most:,} more characters not shown)"


def message_data(i: int, m: Message) -> dict[str, Any]:
    """One message as the tools give it: its index, role and text (cut), its calls with their arguments (cut)."""
    data: dict[str, Any] = {"index": i, "role": m.role, "content": _cut(getattr(m, "content", None))}
    if isinstance(m, AssistantMessage) and m.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": _cut(c.arguments_text)} for c in m.tool_calls]
    if isinstance(m, ToolMessage):
        data |= {"tool_call_id": m.tool_call_id, "name": m.name, "is_error": m.is_error}
    return data


def _summary_data(summary: Any) -> dict[str, Any]:
    return {
        "run_id": summary.id,
        "title": _cut(summary.title, 200),
        "models": summary.models_label,
        "steps": summary.steps,
        "stop_reason": summary.stop_reason,
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": summary.cost_usd,
        "owner": summary.owner,
        "updated_at": summary.updated_at,
        "parent": {"run_id": summary.parent_id, "step": summary.parent_step} if summary.parent_id else None,
    }


def _step_data(run: Any, n: int, costs: list[float | None]) -> dict[str, Any]:
    step = run.steps[n - 1]
    model = run.answered_by(step)
    return {
        "step": step.index,
        "model": f"{model.provider}:{model.model}",
        "input_tokens": step.usage.input_tokens,
        "output_tokens": step.usage.output_tokens,
        "cache_read_tokens": step.usage.cache_read_tokens,
        "cache_write_tokens": step.usage.cache_write_tokens,
        "estimated": step.estimated,
        "cost_usd": costs[n - 1] if n - 1 < len(costs) else None,
        "latency_ms": round(step.latency_ms, 1),
        "finish_reason": step.finish_reason,
        "tool_calls": [t.name for t in step.tool_runs],
        "tool_errors": sum(t.is_error for t in step.tool_runs),
    }


def run_data(store: Any, run: Any, step: int | None = None) -> dict[str, Any]:
    """A run as get_run gives it: what it is, its steps, its newest messages (or one step's), its lineage and labels."""
    from ..compare_report import priced_steps

    costs = priced_steps(run)
    usage = run.usage
    data: dict[str, Any] = {
        "run_id": run.id,
        "title": _cut(run.title, 200),
        "config": {
            "provider": run.config.provider,
            "model": run.config.scenario or run.config.model,
            "max_steps": run.config.max_steps,
            "tools": [t.name for t in run.config.tools],
            "system_prompt": _cut(run.config.system_prompt),
        },
        "stop_reason": run.stop_reason,
        "error": _cut(run.error),
        "next_phase": run.next_phase,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        "cost_usd": None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        "parent": {"run_id": run.parent.run_id, "step": run.parent.step} if run.parent else None,
        "children": [
            {"run_id": c.id, "step": c.parent_step, "models": c.models_label} for c in store.children(run.id)[:50]
        ],
        "labels": [
            {"step": a.step, "labels": a.labels, "note": _cut(a.note, 500), "author": a.author}
            for a in store.annotations(run.id)[:100]
        ],
    }
    numbers = range(1, len(run.steps) + 1)
    shown = list(numbers)[-MAX_STEPS_LISTED:]
    data["steps"] = [_step_data(run, n, costs) for n in shown]
    if len(shown) < len(run.steps):
        data["steps_note"] = f"the first {len(run.steps) - len(shown)} steps are left out"
    messages = run.messages
    if step is None:
        first = max(0, len(messages) - MAX_MESSAGES)
        data["messages"] = [message_data(i, messages[i]) for i in range(first, len(messages))]
        if first:
            data["messages_note"] = f"messages 0-{first - 1} are left out: ask for a step to read its messages"
        return data
    if not 1 <= step <= len(run.steps):
        raise UsageError(f"run {run.id} has {len(run.steps)} steps: there is no step {step}")
    record = run.steps[step - 1]
    end = run.steps[step].message_count if step < len(run.steps) else len(messages)
    start = max(0, record.message_count - 1)  # what the call answered, its reply and the results that followed
    data["step"] = _step_data(run, step, costs) | {"messages_sent": record.message_count}
    data["messages"] = [message_data(i, messages[i]) for i in range(start, min(end, start + MAX_MESSAGES))]
    return data


# -- the server --------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 500 else text[:499] + "…"


def build_server(db: str | None = None, *, user: str | None = None, user_header: str | None = None) -> Any:
    """The runs server over the runs database `db` (default: $AGENTCORE_DB or ~/.agentcore/runs.db).

    Runs are owned by `user` (default: AGENTCORE_USER, else the login name); with `user_header`, by the name
    each HTTP request carries in that header, and a request without a valid one is refused.
    """
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError

    from ..store.access import is_teacher
    from ..store.runs import Store, valid_name

    server = MCPServer(
        SERVER_NAME,
        instructions=(
            "agentcore's runs library: list and read runs of the agent loop, fork one at a step (with edited "
            "messages), step it or run it to its end, compare it from a step on other models, label steps, pin a "
            "run as a test and run tests. Runs made here are saved and show in the agentcore app."
        ),
        log_level="WARNING",
    )
    stores: dict[str, Store] = {}

    def store_for(ctx: Context | None) -> Store:
        """The runs database as this call's user sees it: with private runs on, their own runs (every run for a
        teacher, AGENTCORE_TEACHERS), as the app's pages see it (agentcore.store.access)."""
        owner, teacher = user, None
        if user_header:
            headers = (ctx.headers if ctx is not None else None) or {}
            try:
                owner = valid_name(headers.get(user_header.lower()) or headers.get(user_header))
            except ValueError:
                raise UsageError(
                    f"not signed in: this server takes the user's name from the {user_header} header"
                ) from None
            teacher = is_teacher(owner, headers)
        key = f"{owner or ''}\n{teacher}"
        if key not in stores:
            stores[key] = Store(db, owner=owner, teacher=teacher)
        return stores[key]

    def tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
        """Any failure as a one-line tool error: bad arguments never take the server down."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:  # its description is the docstring, without the indent
            try:
                return fn(*args, **kwargs)
            except ToolError:
                raise
            except AgentcoreError as exc:
                raise ToolError(_one_line(exc)) from None
            except ValidationError as exc:
                from ..transcript import describe_validation

                raise ToolError(describe_validation(exc)) from None
            except Exception as exc:  # noqa: BLE001 - a bug in one call is that call's error, not the server's end
                raise ToolError(f"{type(exc).__name__}: {_one_line(exc)}") from None

        wrapper.__doc__ = inspect.cleandoc(fn.__doc__ or "")
        return wrapper

    def read(store: Store, run_id: str) -> Any:
        # a run this user may not see (private runs) reads as one that does not exist
        if not isinstance(run_id, str) or store.summary(run_id) is None:
            raise UsageError(f"no run {str(run_id)[:80]!r} in the runs database")
        return store.read_run(run_id)

    def own(store: Store, run_id: str) -> Any:
        """The run to go on with: one's own as stored, someone else's as one's own fork from its end (saved)."""
        summary = store.summary(run_id) if isinstance(run_id, str) else None
        if summary is None:
            raise UsageError(f"no run {str(run_id)[:80]!r} in the runs database")
        if summary.owner in (None, store.owner):
            return store.load_run(run_id)
        theirs = store.read_run(run_id)
        run = theirs.fork_with_messages(list(theirs.messages), keep_later=True)
        store.save_run(run)
        return run

    @server.tool()
    @tool_errors
    def list_runs(
        text: str = "",
        provider: str = "",
        model: str = "",
        owner: str = "",
        label: str = "",
        limit: int = 20,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The stored runs, newest first, as the app's Runs page filters them: `text` matches id, title, models
        and the first prompt; `provider`, `model`, `owner` and `label` (a step label) keep those runs."""
        if not 1 <= limit <= MAX_LIST:
            raise UsageError(f"limit is a whole number from 1 to {MAX_LIST}, not {limit}")
        store = store_for(ctx)
        wanted = limit if not (model or label) else MAX_LIST * 5
        found = store.list_runs(text or None, provider or None, wanted, owner=owner or None)
        if model:
            found = [r for r in found if any(model in m.model for m in r.models)]
        if label:
            labelled = store.annotations_by_run([r.id for r in found])
            found = [r for r in found if any(label in a.labels for a in labelled.get(r.id, []))]
        return {"runs": [_summary_data(r) for r in found[:limit]], "more": len(found) > limit}

    @server.tool()
    @tool_errors
    def get_run(run_id: str, step: int | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """One run: its configuration, stop reason, usage and cost, each step's tokens, cost, latency and tool
        calls, its newest messages (or, with `step`, that step's: what it answered, its reply and its tool
        results), its parent, its forks and its labels. Long texts are cut, with a note."""
        store = store_for(ctx)
        return run_data(store, read(store, run_id), step)

    @server.tool()
    @tool_errors
    def fork_run(
        run_id: str,
        step: int,
        messages: list[dict[str, Any]] | None = None,
        mocks: list[dict[str, Any]] | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """A new run from just before `step`'s model call (the run is kept); with `messages` (a whole edited
        message list, in agentcore's transcript form: role, content, tool_calls, tool_call_id), a fork over that
        list, keeping the steps before the first change. `mocks` fix tool results in the fork, each
        {"tool": NAME, "when": ["$.city=Paris"], "result": TEXT} or with "error": TEXT, the first that matches a
        call answering it. The fork is saved; step it with step_run."""
        from ..messages import MESSAGE_LIST, validate_messages

        store = store_for(ctx)
        run = read(store, run_id)
        if messages is None:
            fork = run.fork(step)
        else:
            if len(json.dumps(messages, default=str)) > MAX_EDIT_CHARS:
                raise UsageError(f"messages: more than {MAX_EDIT_CHARS:,} characters of JSON")
            edited = MESSAGE_LIST.validate_python(messages)
            violations = validate_messages(edited)
            if violations:
                raise UsageError(f"messages: {violations[0]}")
            fork = run.fork_with_messages(edited)
        if mocks is not None:
            from ..hooks.specs import MockRule

            if len(mocks) > 1000:
                raise UsageError("mocks: at most 1,000 rules")
            fork.config = fork.config.model_copy(update={"mocks": [MockRule.model_validate(m) for m in mocks]})
        store.save_run(fork)
        return {
            "run_id": fork.id,
            "parent": {"run_id": run.id, "step": fork.parent.step},
            "next_phase": fork.next_phase,
        }

    def drive(store: Store, run: Any, how: Callable[[Any, Any], None]) -> dict[str, Any]:
        from ..hooks.examples import check_hook_names
        from ..loop import Agent
        from ..providers import create_provider
        from ..toolbox import built_in

        config = run.config
        model = (config.scenario or config.model) if config.provider == "scripted" else config.model
        provider = create_provider(config.provider, model or None, base_url=config.base_url)
        check_hook_names(config.hooks)
        tools = built_in(config.tools)
        before = len(run.messages)
        how(Agent(provider, tools), run)
        store.save_run(run)
        data = run_data(store, run)
        data["messages"] = [message_data(i, run.messages[i]) for i in range(before, len(run.messages))][-MAX_MESSAGES:]
        data["new_messages"] = len(run.messages) - before
        return data

    @server.tool()
    @tool_errors
    def step_run(
        run_id: str, phase: Literal["step", "model", "tools"] = "step", ctx: Context | None = None
    ) -> dict[str, Any]:
        """Run one step of the loop (`step`: the model call and the tools it asked for), or one phase of it, on
        the run's own provider and model; the run is saved, and what it added is returned. Someone else's run is
        stepped as one's own fork of it."""
        store = store_for(ctx)
        run = own(store, run_id)
        if run.finished and phase != "tools":
            raise UsageError(f"run {run.id} has ended ({run.ending or 'done'}): fork it to go on")

        def how(agent: Any, r: Any) -> None:
            if phase == "model":
                agent.model_phase(r)
            elif phase == "tools":
                agent.tools_phase(r)
            else:
                agent.step(r)

        return drive(store, run, how)

    @server.tool()
    @tool_errors
    def run_to_end(run_id: str, ctx: Context | None = None) -> dict[str, Any]:
        """Run the loop until an answer, a pause or the run's step budget (at most 100 model calls in one call);
        the run is saved and what it added is returned."""
        store = store_for(ctx)
        run = own(store, run_id)
        if run.finished:
            raise UsageError(f"run {run.id} has ended ({run.ending or 'done'}): fork it to go on")
        if run.budget_left > MAX_DRIVEN_STEPS:
            raise UsageError(
                f"run {run.id} may make {run.budget_left} more calls: step it, at most {MAX_DRIVEN_STEPS} here"
            )
        return drive(store, run, lambda agent, r: agent.run(r))

    @server.tool()
    @tool_errors
    def compare_from(
        run_id: str, step: int, configurations: list[str], steps: int | None = None, ctx: Context | None = None
    ) -> dict[str, Any]:
        """Fork the run just before `step`'s model call on each configuration (`PROVIDER[:MODEL][@BASE_URL]`,
        2 to 4; for scripted the model is the scenario) and go on in lockstep, `steps` model calls (default: to
        the end of the run's budget; 1 asks that step again). Returns that step as the original made it beside
        each configuration's, the summary from there, and the forks, each saved under the run."""
        from ..compare import Comparison, Origin, parse_spec
        from ..providers import get_info

        store = store_for(ctx)
        run = read(store, run_id)
        specs = [parse_spec(text) for text in configurations]
        for spec in specs:
            get_info(spec.provider)  # an unknown provider is a bad argument, before any fork is made
        comparison = Comparison.from_step(Origin(run, step, steps), specs)
        comparison.step_to_end()
        for column in comparison.columns:
            store.save_run(column.run)

        def bounded(row: dict[str, Any]) -> dict[str, Any]:
            row = dict(row)
            for key in ("reply", "error", "final_answer"):
                if isinstance(row.get(key), str):
                    row[key] = _cut(row[key])
            if "tool_calls" in row:
                row["tool_calls"] = [_cut(c, 500) for c in row["tool_calls"]]
            return row

        return {
            "step": [bounded(r) for r in comparison.step_rows()],
            "summary": [bounded(r) for r in comparison.summary()],
            "forks": [
                {"configuration": c.label, "run_id": c.run.id, "error": _cut(c.error)} for c in comparison.columns
            ],
        }

    @server.tool()
    @tool_errors
    def annotate_step(
        run_id: str,
        step: int,
        labels: list[str],
        note: str = "",
        tool_call_id: str | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Label a step (or one tool call of it) of a run, as the app's Annotate form does: labels such as
        `wrong tool`, `wrong arguments`, `good`, with a note. Kept under the server's user; counted by Error
        analysis."""
        from ..annotations import make_annotation

        store = store_for(ctx)
        read(store, run_id)
        kept = store.annotate(run_id, make_annotation(step=step, tool_call_id=tool_call_id, labels=labels, note=note))
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
        by: Literal["provider", "model", "day", "owner", "label", "tag"] = "model",
        since: str | None = None,
        provider: str = "",
        owner: str = "",
        text: str = "",
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The library's figures per group, as `agentcore stats --json` gives them: runs, steps, answered runs,
        input, output and cache tokens, cache hit rate, cost, cost per answered run, p50/p95 step latency, runs
        that hit the step budget or failed. `since` is a day (YYYY-MM-DD): runs created on or after it."""
        from ..stats import first_day, library_stats, totals

        day = first_day(since or None, "since")
        groups = library_stats(
            store_for(ctx), [by], since=day, provider=provider or None, owner=owner or None, search=text or None
        )
        once = by in ("provider", "model", "day")
        return {
            "by": by,
            "groups": [g.to_dict() for g in groups[:MAX_LIST]],
            "totals": totals(groups) if once else None,
        }

    @server.tool()
    @tool_errors
    def scan(scanners: list[str] | None = None, again: bool = False, ctx: Context | None = None) -> dict[str, Any]:
        """Run scanners over the runs and keep each finding as a label on the step where it happened (author
        `scanner:NAME`): the built-ins (loop, ignored_error, unknown_tool, step_budget, context, unread_results,
        key_in_reply) or `regex:PATTERN` over replies. Scanning again adds no duplicate; `again` reads every run
        anew. A Python scanner (`module:function`) is the command line's only: a client does not choose code."""
        import dataclasses

        from ..scanners import BUILTINS, resolve_scanner, scan_library

        names = list(dict.fromkeys(scanners or BUILTINS))
        code = [n for n in names if n not in BUILTINS and not n.startswith("regex:")]
        if code:
            raise UsageError(f"scanner {code[0][:80]!r}: a built-in ({', '.join(BUILTINS)}) or regex:PATTERN")
        store = store_for(ctx)
        report = scan_library(store, [resolve_scanner(n) for n in names], store.run_ids(), None, again=again)
        return dataclasses.asdict(report)

    def inside(path: str) -> Path:
        """A test path under the server's working folder: a client names files there and nowhere else."""
        root = Path.cwd().resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise UsageError(f"{path[:200]!r} is outside the server's folder {root}")
        return target

    @server.tool()
    @tool_errors
    def pin_test(run_id: str, path: str, name: str | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """Write a test file from a run (the tool calls it made, in order, and its answer), under the server's
        working folder (`.json`, or `.yaml`); an existing file is not overwritten. Run it with run_tests."""
        from ..exports import export_test
        from ..testing import pinned
        from ..transcript import write_atomic

        store = store_for(ctx)
        run = read(store, run_id)
        out = inside(path)
        if out.suffix.lower() not in (".json", *pinned.YAML_SUFFIXES):
            raise UsageError(f"{path[:200]!r}: a test file is .json or .yaml")
        if out.exists():
            raise UsageError(f"{path[:200]!r} exists: choose another name")
        test = pinned.propose(run, name)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, export_test(test, yaml_format=out.suffix.lower() in pinned.YAML_SUFFIXES))
        calls = len(test.expect.tool_calls.calls) if test.expect.tool_calls else 0
        return {"path": str(out), "test": test.name, "tool_calls": calls, "steps": len(run.steps)}

    @server.tool()
    @tool_errors
    def run_tests(
        path: str, configurations: list[str] | None = None, trials: int = 1, ctx: Context | None = None
    ) -> dict[str, Any]:
        """Run the test files at `path` (a file or a folder under the server's working folder) on each
        configuration (default: replay), `trials` times each; each failing trial's run is saved. Returns one
        record per cell: passed trials, outcomes and run ids."""
        from ..testing import pinned
        from ..testing.runner import REPLAY, parse_config, results_json, run_matrix

        store = store_for(ctx)
        files = pinned.find_tests([str(inside(path))])
        if not files:
            raise UsageError(f"no test files (*.json, *.yaml) in {path[:200]!r}")
        tests = [pinned.load(f) for f in files]
        specs = [parse_config(text) for text in configurations or [REPLAY]]
        matrix = run_matrix(tests, specs, trials=trials)
        for row in matrix.cells:
            for cell in row:
                for trial in cell.trials or [cell]:
                    if not trial.passed and trial.run is not None:
                        store.save_run(trial.run)
        records = json.loads(results_json(matrix))["cells"]
        passed = sum(c.passed for row in matrix.cells for c in row)
        return {"passed": passed, "cells": len(records), "trials": trials, "results": records}

    @server.resource("agentcore://runs/{run_id}/transcript", mime_type="application/json")
    def transcript(run_id: str) -> str:
        """A run's transcript, as the app's export writes it (credential-named fields blanked)."""
        from ..exports import export_json

        store = store_for(None) if not user_header else Store(db, owner=user)
        return export_json(read(store, run_id))

    @server.resource("agentcore://runs/{run_id}/replay", mime_type="text/html")
    def replay(run_id: str) -> str:
        """A run's replay page: one self-contained HTML file that steps through it offline."""
        from ..exports import REPLAY, export_run

        store = store_for(None) if not user_header else Store(db, owner=user)
        return export_run(read(store, run_id), REPLAY)

    return server


def serve(db: str | None = None, http: str | None = None, *, user_header: str | None = None) -> None:
    """Serve over stdio, or over Streamable HTTP at `http` (`HOST:PORT` or `PORT`, loopback by default) at /mcp."""
    header = user_header or os.environ.get(USER_HEADER_ENV, "").strip() or None
    server = build_server(db, user_header=header if http else None)
    if http is None:
        server.run("stdio")
        return
    host, _, port = http.rpartition(":")
    if not port.isdigit():
        raise UsageError(f"--http {http!r}: expected HOST:PORT or PORT, e.g. 127.0.0.1:8766")
    server.run("streamable-http", host=host or "127.0.0.1", port=int(port))
