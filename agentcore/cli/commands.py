"""The `agentcore` subcommands that read or report: scenarios, tools, show, runs, compare, validate, cost, export."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from ..tools import Tool

EXIT_PROVIDER = 4
NAME_COLUMN = 32  # `agentcore tools` pads names to the longest up to this; a longer one still gets two spaces


def shorten(text: str | None, limit: int = 300) -> str:
    """One line of text, cut at `limit` characters with the full length said."""
    text = (text or "").replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def cmd_scenarios(args: argparse.Namespace) -> int:
    from ..providers.scripted import SCENARIOS

    for s in SCENARIOS.values():
        print(f"{s.name:<11} {s.description}")
        print(f"{'':<11} tools: {', '.join(s.tools)} · prompt: {s.prompt!r}")
    return 0


def select_tools(args: argparse.Namespace, names: str | None, default: str | Iterable[str] = ()) -> list[Tool]:
    """The tools `--tools` names, built-in and MCP alike; without it, the `default` built-in ones and every MCP tool;
    `none` (or nothing) offers none.

    An MCP tool has one name wherever it is listed or chosen: one whose name a built-in tool has is
    `SERVER__NAME`, whether or not that built-in tool is chosen, as the app names it. Each server's
    notes (no tools offered, part of its listing left out) are one line each on stderr.
    """
    from ..mcp.client import connect, mcp_tools
    from ..mcp.config import servers_from_args
    from ..toolbox import TOOLBOX, get_tools

    configs = servers_from_args(args)
    remote = mcp_tools(configs, taken=list(TOOLBOX)) if configs else []
    for config in configs:
        connection = connect(config)
        for note in connection.notes:
            print(f"agentcore: note: MCP server {connection.name}: {note}", file=sys.stderr)
    if names is None:
        return [*get_tools(default if isinstance(default, str) else list(default)), *remote]
    if names.strip().lower() == "none":  # the model is offered no tool and can only answer
        return []
    offered = {**TOOLBOX, **{t.name: t for t in remote}}
    wanted = list(dict.fromkeys(n.strip() for n in names.split(",") if n.strip()))
    unknown = [n for n in wanted if n not in offered]
    if unknown:
        listed = ", ".join(offered)
        raise UsageError(f"unknown tool {unknown[0]!r}; available: {shorten(listed, 1000)}")
    return [offered[n] for n in wanted]


def cmd_tools(args: argparse.Namespace) -> int:
    from ..mcp.config import servers_from_args
    from ..toolbox import TOOLBOX

    served = bool(servers_from_args(args))  # then the servers' tools, each with its server and its schema
    shown = select_tools(args, None) if served else list(TOOLBOX.values())
    for connection in dict.fromkeys(c for t in shown if (c := getattr(t, "connection", None)) is not None):
        print(f"# {connection.name} speaks {connection.speaks}", file=sys.stderr)  # the listing stays the tools
    width = min(max((len(t.name) for t in shown), default=0), NAME_COLUMN)
    for t in shown:
        said = f" [{t.spec().source}]" if served else " [sequential]" if t.sequential else ""
        print(f"{t.name:<{width}}  {t.description}{said}")
        if served or args.schema:
            print(json.dumps(t.parameters, indent=2))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ..transcript import load

    _print_run(load(args.file))
    return 0


def _print_run(run) -> None:
    from ..accounting import step_usage
    from ..messages import AssistantMessage, ToolMessage

    c = run.config
    print(f"run {run.id} · {c.provider}/{c.model} · {len(run.steps)} steps · stop: {run.ending}")
    if run.parent:
        print(f"forked from run {run.parent.run_id} at step {run.parent.step}")
    for line in run.link_lines:  # an imported session's origin and subagents
        print(line)
    step_at = {s.message_count: s for s in run.steps}
    tool_runs = {t.tool_call_id: t for s in run.steps for t in s.tool_runs}
    for i, m in enumerate(run.messages):
        if i in step_at:
            s = step_at[i]
            usage, estimated = step_usage(run, s.index)  # a step that recorded none: estimated from its text
            est = "~" if estimated else ""
            print(
                f"\n── step {s.index} · {est}{usage.input_tokens} in / {est}{usage.output_tokens} out · "
                f"{s.latency_ms:.0f} ms ──"
            )
            for effect in s.hook_effects:  # what a hook changed, before and after
                before, after = (shorten(json.dumps(v), 200) for v in (effect.before, effect.after))
                print(f"  ⚑ {effect.words}: {before} → {after}")
        if isinstance(m, AssistantMessage):
            if m.content:
                print(f"[{i}] assistant: {m.content}")
            for call in m.tool_calls:
                print(f"[{i}] assistant → {call.name}({call.arguments_text}) [{call.id}]")
        elif isinstance(m, ToolMessage):
            mark = "error" if m.is_error else "result"
            t = tool_runs.get(m.tool_call_id)
            badge = f" [{t.badge}]" if t is not None and t.badge else ""  # mocked, a hook's, a person's decision
            print(f"[{i}] tool {m.name} {mark}{badge}: {shorten(m.content, 500)}")
        else:
            print(f"[{i}] {m.role}: {m.content}")
    if run.final_output is not None:
        print(f"\nfinal output: {json.dumps(run.final_output)}")
    if run.error:
        print(f"\nerror: {run.error}")
    earlier = [h for h in run.halts if h != run.halt]  # pauses the run went on from: breakpoints hit on the way
    if earlier:
        print("\n" + "\n".join(f"step {h.step}: {h.words}" for h in earlier))
    if run.halt is not None:
        print(f"\n{run.halt.words}")


def _print_forks(store: Any, run_id: str) -> None:
    """The runs forked from this one, each with the step it was forked at and the models that answered it."""
    children = store.children(run_id)
    if children:
        print(f"\nforks ({len(children)}):")
    for child in children:
        print(
            f"  {child.id} at step {child.parent_step} · {child.models_label} · {child.steps} steps · "
            f"{child.stop_reason or 'open'} · {shorten(child.title, 80)}"
        )


def cmd_runs(args: argparse.Namespace) -> int:
    """`agentcore runs list|show|export|import|delete|copy`, over the runs database."""
    from ..accounting import COST_FORMAT
    from ..errors import TranscriptError
    from ..exports import export_run, export_zip
    from ..sessions import read_import, store_imported
    from ..store.runs import Store
    from ..transcript import read_file, write_atomic

    action = args.runs_command
    if action == "copy":
        source, target = Store(args.source), Store(args.target)
        copied, skipped = target.copy_from(source)
        print(f"copied {copied} runs, skipped {skipped} already in {target.location} (from {source.location})")
        return 0
    store = Store(getattr(args, "db", None))
    if action == "list":
        for r in store.list_runs(args.search, args.provider, args.limit):
            cost = "?" if r.cost_usd is None else f"${r.cost_usd:{COST_FORMAT}}"
            mixed = " (mixed)" if r.mixed else ""
            print(
                f"{r.id}  {r.updated_at[:19]}  {r.models_label}{mixed}  {r.steps} steps  {r.stop_reason or 'open'}  "
                f"{r.total_tokens} tokens  {cost}  {shorten(r.title, 60)}"
            )
    elif action == "show":
        _print_run(store.read_run(args.id))
        _print_forks(store, args.id)
    elif action == "export":
        runs = [store.load_run(i) for i in args.ids]
        if args.otlp:
            return cmd_send_otlp(runs, args)
        if len(runs) > 1 or (args.out or "").endswith(".zip"):
            if not args.out:
                raise UsageError("exporting several runs writes a zip: give --out FILE.zip")
            write_atomic(args.out, export_zip(runs, (args.format,), content=args.content))
        else:
            linked = [store.load_run(link.run_id) for link in runs[0].subagents if store.exists(link.run_id)]
            text = export_run(runs[0], args.format, content=args.content, subagents=linked)
            if args.out:
                write_atomic(args.out, text + "\n")
            else:
                print(text)
    elif action == "import":
        path = Path(args.file)
        try:
            raw = read_file(path)
        except TranscriptError as exc:
            raise UsageError(f"{path}: {exc}") from None
        imported = read_import(raw, str(path), path.parent)
        run, *subagents = store_imported(store, imported)
        print(f"imported {path} as run {run.id} ({len(run.messages)} messages, {len(run.steps)} steps)")
        for sub in subagents:
            link = sub.spawned_by
            where = f" from run {link.run_id} step {link.step}" if link else ""
            print(f"  subagent run {sub.id}{where} ({len(sub.messages)} messages, {len(sub.steps)} steps)")
        if imported.notes:
            print(f"  {imported.notes}")
    elif action == "delete":
        store.delete_run(args.id)
        print(f"deleted run {args.id}")
    return 0


MAX_COMPARE_RUNS = 100


def cmd_compare(args: argparse.Namespace) -> int:
    """Run 2 to 4 configurations on one prompt concurrently; print the summary table, write the bundle."""
    from dataclasses import replace

    from ..compare import Comparison, format_table, parse_spec
    from ..compare_report import ExpectedAnswer, format_repeats, repeated_summary
    from ..providers import create_operator_provider, get_info
    from ..providers.scripted import SCENARIOS

    specs = [replace(parse_spec(text), temperature=args.temperature) for text in args.config or []]
    for spec in specs:
        get_info(spec.provider)  # an unknown provider is bad usage (exit 2), not one column's provider error
    if args.from_step is not None:
        if getattr(args, "test", None) is not None:
            raise UsageError("--test plays a test from its prompt; --from forks a stored run: give one")
        return _compare_from(args, specs)
    if args.from_steps is not None or args.db is not None:
        raise UsageError("--steps and --db go with --from RUN_ID:K")
    test = _compare_test(args)
    play = None
    if test is not None:
        from ..testing import users

        play = users.playing(test)  # a user who cannot be simulated is bad usage, before any model is paid for
        args.prompt, args.system, args.max_steps = test.prompt, test.system_prompt, test.max_steps
    if not args.prompt:
        raise UsageError("compare needs a prompt, or --from RUN_ID:K, or --test FILE")
    # without --tools, a scripted scenario needs its own tools to play; other providers get none unless asked
    scenarios = [SCENARIOS.get(s.model or "weather") for s in specs if s.provider == "scripted"]
    names = list(dict.fromkeys(n for sc in scenarios if sc is not None for n in sc.tools))
    tools = select_tools(args, args.tools, test.tools if test is not None else names)
    runs = getattr(args, "runs", 1)
    if not 1 <= runs <= MAX_COMPARE_RUNS:
        raise UsageError(f"--runs is a whole number from 1 to {MAX_COMPARE_RUNS}, not {runs}")
    texts = [t for t in (getattr(args, "expect", None) or []) if t.strip()]
    expected = ExpectedAnswer(tuple(texts), "--expect", args.prompt) if texts else None

    def made() -> Comparison:
        return Comparison(
            args.prompt,
            specs,
            system_prompt=args.system,
            tools=tools,
            max_steps=args.max_steps,
            expected=expected,
            factory=create_operator_provider,
            play=play,
        )

    comparison = made()
    times = f", {runs} runs each" if runs > 1 else ""
    print(
        f"comparing {len(specs)} configurations concurrently{times}: {', '.join(c.label for c in comparison.columns)}"
    )
    done: list[Comparison] = []
    for k in range(runs):
        comparison = comparison if k == 0 else made()
        comparison.start("run")
        try:
            comparison.wait()
        except KeyboardInterrupt:
            comparison.cancel()
            comparison.wait()
            done.append(comparison)
            break
        done.append(comparison)
    if args.out:
        from ..exports import export_bundle
        from ..transcript import write_atomic

        write_atomic(args.out, export_bundle(comparison.bundle()))
    if len(done) == 1:
        print(format_table(comparison.summary()))
        slowest = max(c.wall_s for c in comparison.columns)
        total = sum(c.wall_s for c in comparison.columns)
        print(f"\nwall time {comparison.wall_s:.2f} s · slowest configuration {slowest:.2f} s · sum {total:.2f} s")
    else:  # every run's row, each named by its run: the summary below reads these rows, not one run's
        stopped = f" (stopped after {len(done)} of {runs})" if len(done) < runs else ""
        print(f"\neach of the {len(done)} runs{stopped}, configuration by configuration")
        rows = [
            row | {"config": f"run {k} of {len(done)}: {row['config']}"}
            for k, c in enumerate(done, 1)
            for row in c.summary()
        ]
        print(format_table(rows))
        slowest = max(c.wall_s for c in done)
        print(
            f"\nwall time {sum(c.wall_s for c in done):.2f} s for {len(done)} runs, one after another"
            f" · slowest run {slowest:.2f} s"
        )
    if len(done) > 1 or expected is not None:
        rows = [
            repeated_summary(
                column.label,
                [c.columns[j].run for c in done],
                [c.columns[j].wall_s for c in done],
                comparison.expected,
            )
            for j, column in enumerate(comparison.columns)
        ]
        print(f"\nover {len(done)} run{'s' if len(done) != 1 else ''} of each configuration")
        print(format_repeats(rows))
        for row in rows:
            print(f"  {row['config']}: runs {', '.join(row['run_ids'])}")
    if play is not None:
        _print_conversations(done)
    return _compare_ended(comparison, args.out, done)


def _compare_test(args: argparse.Namespace) -> Any:
    """The pinned test `--test FILE` names (None without it); its prompt and system prompt are the comparison's."""
    if getattr(args, "test", None) is None:
        return None
    from ..errors import TranscriptError
    from ..testing import pinned

    if args.prompt or args.system:
        raise UsageError("--test gives the prompt and the system prompt: give neither")
    try:
        return pinned.load(args.test)
    except TranscriptError as exc:
        raise UsageError(str(exc)) from None


def _print_conversations(done: list[Any]) -> None:
    """Each column's conversation in one line (its user turns by author, goal met or not, who ended it, the
    simulator's fidelity) and each breach of the simulator under it."""
    from ..testing import users

    print("\nconversations")
    for k, comparison in enumerate(done, 1):
        which = f"run {k} of {len(done)}: " if len(done) > 1 else ""
        for column in comparison.columns:
            print(f"{which}{column.label}: {users.report(column.run) or 'no conversation (the column did not start)'}")
            for b in column.run.conversation.breaches if column.run.conversation is not None else []:
                print(f"  simulator, message {b.message}: {b.rule}: {b.why}")


def _compare_ended(comparison: Any, out: str | None, done: list[Any] | None = None) -> int:
    """Each failed configuration's error in one line (with --runs, of every run, each named by its run), the
    bundle's path, and the exit status (4 when any failed)."""
    from ..transcript import one_line

    done = done or [comparison]
    failed = []
    for k, each in enumerate(done, 1):
        which = f"run {k} of {len(done)}: " if len(done) > 1 else ""
        failed += [(which, c) for c in each.columns if c.state == "error"]
    for which, column in failed:
        print(f"error: {which}{column.label}: {one_line(column.error or '')}", file=sys.stderr)
    if out:
        print(f"bundle: {out}" + (f" (run {len(done)} of {len(done)}, the last)" if len(done) > 1 else ""))
    return EXIT_PROVIDER if failed else 0


def _compare_from(args: argparse.Namespace, specs: list[Any]) -> int:
    """`compare --from RUN_ID:K`: fork the stored run before step K on each configuration, step them in lockstep,
    save every fork, and print step K as the original made it beside each configuration's, then the summary."""
    from ..compare import Comparison, Origin, format_table
    from ..compare_report import format_step_rows
    from ..providers import create_operator_provider
    from ..store.runs import Store
    from ..toolbox import built_in

    if args.prompt:
        raise UsageError("--from compares a stored run from its step K: give no prompt")
    run_id, colon, step = args.from_step.rpartition(":")
    if not colon or not run_id or not step.strip().isdigit():
        raise UsageError(f"--from {args.from_step!r}: expected RUN_ID:K, e.g. 3f2a9c1b7d4e:4")
    store = Store(args.db)
    if store.summary(run_id) is None:  # a run this user may not see (private runs) reads as none
        raise UsageError(f"no run {run_id!r} in {store.location}")
    source = store.read_run(run_id)
    origin = Origin(source, int(step), args.from_steps)
    names = [t.name for t in built_in(source.config.tools)]
    tools = select_tools(args, args.tools, names)
    lacking = [t.name for t in source.config.tools if t.name not in {x.name for x in tools}]
    if lacking:
        print(
            f"agentcore: note: run {run_id}'s tools {', '.join(lacking)} are not here: a call to them comes back "
            "as an error",
            file=sys.stderr,
        )
    from ..testing import users

    play = users.going_on(origin)  # a conversation with a simulated user goes on with one on every column
    comparison = Comparison.from_step(origin, specs, tools=tools, factory=create_operator_provider, play=play)
    made = (
        "to the end of its budget" if origin.steps is None else f"{origin.steps} step{'s' if origin.steps != 1 else ''}"
    )
    if play is not None:
        made = f"the conversation to its end with a simulated user ({users.label(source.conversation.user)})"
    print(
        f"from step {origin.step} of run {run_id} ({shorten(source.title or '', 60)}), {made} on each of "
        f"{len(specs)} configurations concurrently: {', '.join(c.label for c in comparison.columns)}"
    )
    try:
        if play is not None:
            comparison.run_all()
        else:
            comparison.step_to_end()
    except KeyboardInterrupt:
        comparison.cancel()
        comparison.wait()
    for column in comparison.columns:
        users.save_conversation(store, column.run)
    if args.out:
        from ..exports import export_bundle
        from ..transcript import write_atomic

        write_atomic(args.out, export_bundle(comparison.bundle()))
    print(f"\nstep {origin.step}, as the original made it and as each configuration made it again:\n")
    print(format_step_rows(comparison.step_rows()))
    print(f"\nfrom step {origin.step} on:\n")
    print(format_table(comparison.summary()))
    if play is not None:
        _print_conversations([comparison])
    print("\nforks saved in " + store.location + ":")
    for column in comparison.columns:
        print(f"  {column.label}: run {column.run.id} (parent {run_id} @ step {origin.step})")
    return _compare_ended(comparison, args.out)


def cmd_validate(args: argparse.Namespace) -> int:
    from ..transcript import load

    run = load(args.file)
    print(f"ok: {args.file} is a valid transcript ({len(run.messages)} messages, {len(run.steps)} steps)")
    return 0


def cmd_cost(args: argparse.Namespace) -> int:
    from ..accounting import COST_FORMAT, account
    from ..providers.prices import parse_price_as, price_choices
    from ..transcript import load
    from ..whatif import what_ifs

    if args.list_models:
        print("\n".join(price_choices()))
        return 0
    if not args.file:
        raise UsageError("cost needs a transcript FILE.json (or --list-models)")
    run = load(args.file)
    report = account(run, parse_price_as(args.price_as) if args.price_as else None)
    whatifs = what_ifs(run, report) if report.steps else []  # a run without model calls has nothing to trim
    if args.json:
        print(json.dumps({**report.to_dict(), "what_if": [w.to_dict() for w in whatifs]}, indent=2))
        return 0

    def usd(x: float | None) -> str:
        return "-" if x is None else f"{x:{COST_FORMAT}}"

    priced = f"priced as {report.price_label}" if report.priced else f"not priced: {report.price_note}"
    print(f"run {run.id} · {run.config.provider}/{run.config.model} · {len(run.steps)} steps · {priced}")
    print(f"{'step':>4} {'input':>8} {'output':>7} {'cache r':>8} {'cache w':>8} {'cum input':>10} {'cost $':>10}")
    for s in report.steps:
        m = "~" if s.estimated else ""  # an estimate, from the text it sent: the library's one mark for it
        print(
            f"{s.index:>4} {m + str(s.input_tokens):>8} {m + str(s.output_tokens):>7} {s.cache_read_tokens:>8} "
            f"{s.cache_write_tokens:>8} {s.cumulative_input_tokens:>10} {m + usd(s.cost_usd):>10}"
        )
    if any(s.estimated for s in report.steps):
        print("~ estimated: the step recorded no usage, so it is counted from the text it sent")
    f = report.fit
    if f is not None:
        print(f"fit: cumulative input = a + b·n + c·n², a={f.a:.2f} b={f.b:.2f} c={f.c:.2f} R²={f.r2:.5f}")
    print(report.explanation())
    cost = f" · ${report.total_cost_usd:{COST_FORMAT}}" if report.total_cost_usd is not None else ""
    print(f"total: {report.total_input_tokens} input + {report.total_output_tokens} output tokens{cost}")
    print("what-if (recomputed from the recorded messages, no model calls):")
    for w in whatifs:
        cost_part = f", {w.cost_saving_pct:.1f}% lower cost" if w.cost_saving_pct is not None else ""
        print(f"  {w.label}: {w.token_saving_pct:.1f}% fewer input tokens{cost_part}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..exports import export_run
    from ..transcript import load

    print(export_run(load(args.file), args.format, model=args.model, content=args.content))
    return 0


def cmd_send_otlp(runs: list, args: argparse.Namespace) -> int:
    """Send each run's OpenTelemetry trace to the OTLP/HTTP endpoint `--otlp`; content only with `--content`."""
    from ..telemetry import require_otel

    require_otel()
    from ..telemetry.otlp import send_run, traces_url

    for run in runs:
        count = send_run(run, args.otlp, content=args.content)
        kept = "with" if args.content else "without"
        print(f"sent run {run.id} to {traces_url(args.otlp)}: {count} spans, {kept} message content")
    return 0
