"""`agentcore run`: build a run from the command line, step it to its end, and print each step as it happens."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import AgentcoreError, TranscriptError, UsageError
from ..hooks.examples import check_hook_names
from ..hooks.guard import guard_line
from ..providers import WIRE_FORMATS
from ..toolbox import DEFAULT_TOOLS
from ..transcript import describe_validation, read_file, read_json
from .commands import select_tools, shorten
from .terminal import shown_stream

EXIT_ANSWER, EXIT_USAGE, EXIT_MAX_STEPS, EXIT_PROVIDER, EXIT_BREAKPOINT = 0, 2, 3, 4, 5
EXIT_CANCELLED = 130


class Printer:
    """Prints each step of a run as it happens, as text: no control sequence and no known secret gets through."""

    def __init__(self, out=None) -> None:
        self.out = shown_stream(out or sys.stdout)
        self.streamed = False

    def __call__(self, event) -> None:
        w = self.out.write
        if event.kind == "step_started":
            w(f"\n── step {event.step} ──\n")
        elif event.kind == "text_delta":
            if not self.streamed:
                w("assistant: ")
                self.streamed = True
            w(event.text)
            self.out.flush()
        elif event.kind == "phase_finished" and event.phase == "model":
            m = event.message
            if self.streamed:
                w("\n")
            elif m.content:
                w(f"assistant: {m.content}\n")
            self.streamed = False
            for call in m.tool_calls:
                w(f"  → {call.name}({call.arguments_text})  [{call.id}]\n")
        elif event.kind == "tool_finished":
            o = event.outcome
            mark = "✗" if o.is_error else "✓"
            how = " [mocked]" if event.text == "mocked" else ""
            w(f"  {mark} {event.tool_call.name}{how} ({o.duration_ms:.0f} ms): {shorten(o.content)}\n")
        elif event.kind == "error":
            w(f"error: {event.error}\n")
        elif event.kind == "hook_effect":
            w(f"  ⚑ {event.text}\n")
        elif event.kind == "halted":
            w(f"{event.error}\n")
        self.out.flush()


def _build_run(args: argparse.Namespace):
    from ..loop import Agent, check_final_schema
    from ..providers import create_operator_provider, default_provider, get_info
    from ..providers.scripted import get_scenario
    from ..run import Run, RunConfig

    check_hook_names(args.hook, code=True)  # the operator's words: a module:attribute of theirs may load
    if args.replay:
        return _build_replay(args)
    provider_name = args.provider
    if provider_name is None:
        provider_name, why = default_provider()
        print(f"provider: {why}", file=sys.stderr)
    info = get_info(provider_name, code=True)  # the operator's words: a module:Class of theirs may load
    scenario = None
    final_schema = None
    if provider_name == "scripted":
        scenario = get_scenario(args.scenario or args.model)
        final_schema = scenario.final_answer_schema
    elif args.scenario:
        raise UsageError("--scenario only applies to --provider scripted")
    if args.final_schema:
        try:
            final_schema = read_json(read_file(args.final_schema))  # within every reader's limits
        except TranscriptError as exc:
            raise UsageError(f"--final-schema {args.final_schema}: {exc}") from None
        check_final_schema(final_schema, f"--final-schema {args.final_schema}")
    # a scenario has its own tools; any other run is offered the app's default ones
    tools = select_tools(args, args.tools, scenario.tools if scenario else DEFAULT_TOOLS)
    model = args.model or (scenario.name if scenario else info.default_model)
    options: dict[str, Any] = {}
    if scenario:
        options["scenario"] = scenario.name
    if provider_name == "local":  # loading a large GGUF takes seconds: say so as it happens
        options["on_progress"] = lambda line: print(line, file=sys.stderr, flush=True)
    if getattr(args, "no_stream", False):
        if provider_name not in WIRE_FORMATS:
            raise UsageError(f"--no-stream applies to the {', '.join(WIRE_FORMATS)} providers")
        options["stream"] = False
    provider = create_operator_provider(provider_name, model, base_url=args.base_url, **options)
    config = RunConfig.made_for(
        provider_name,
        provider.model,
        tools,
        args.base_url,
        system_prompt=args.system,
        max_steps=args.max_steps,
        concurrency=not args.sequential_tools,
        temperature=args.temperature,
        max_tokens=getattr(args, "max_tokens", None),
        final_answer_schema=final_schema,
        thinking_budget=args.thinking_budget,
        reasoning_effort=args.reasoning_effort,
        loop_guard=args.loop_guard,
        hooks=args.hook,
        breakpoints=_breakpoints(args),
        mocks=_read_mocks(args.mock),
    )
    prompt = args.prompt if args.prompt is not None else (scenario.prompt if scenario else None)
    if not prompt:
        raise UsageError("a prompt is required (or a scripted --scenario, which has its own)")
    run = Run.start(prompt, config)
    agent = Agent(provider, tools, observers=[Printer()])  # the run's config carries max_tokens to every call
    return agent, run


def _build_replay(args: argparse.Namespace):
    """Replay the assistant turns of a saved transcript; the tools run for real."""
    from .. import toolbox
    from ..loop import Agent, check_final_schema
    from ..messages import AssistantMessage
    from ..providers.scripted import ScriptedProvider
    from ..run import Run
    from ..transcript import load

    source = load(args.replay)
    turns = [m for m in source.messages if isinstance(m, AssistantMessage)]
    names = [t.name for t in toolbox.built_in(source.config.tools)]
    tools = select_tools(args, args.tools or None, names)
    if source.config.final_answer_schema is not None:  # a transcript's schema is untrusted: refused before the run
        check_final_schema(source.config.final_answer_schema, f"{args.replay}: final_answer_schema")
    update = {"provider": "scripted", "model": "replay", "max_steps": args.max_steps}
    if args.loop_guard:
        update["loop_guard"] = args.loop_guard
    if args.hook:
        update["hooks"] = list(dict.fromkeys(args.hook))
    if args.breakpoint:
        update["breakpoints"] = _breakpoints(args)
    if args.mock:
        update["mocks"] = _read_mocks(args.mock)
    config = source.config.model_copy(update=update)
    first_user = next((m.content for m in source.messages if m.role == "user"), None)
    run = Run.start(args.prompt or first_user or "", config, title=f"replay of {source.title or source.id}")
    check_hook_names(config.hooks)  # a transcript's hooks are names of registered ones, or refused
    return Agent(ScriptedProvider(replay=turns), tools, observers=[Printer()]), run


def _breakpoints(args: argparse.Namespace) -> list[str]:
    """The --break specs, each checked: a bad one is bad usage, named in one line."""
    from ..hooks.specs import parse_breakpoint

    specs = []
    for spec in args.breakpoint:
        try:
            specs.append(parse_breakpoint(spec).spec)
        except UsageError as exc:
            raise UsageError(f"--break: {exc}") from None
    return list(dict.fromkeys(specs))


MAX_MOCK_RULES = 1000  # RunConfig.mocks' own limit
MOCK_FILE_VALUES = 64 * MAX_MOCK_RULES  # a rule is a tool, a few conditions and a result: far fewer values each


def _read_mocks(path: str | None) -> list[Any]:
    """The mock rules of a --mock file: a JSON or YAML list of {tool, when, result | error}."""
    if path is None:
        return []
    from pydantic import TypeAdapter

    from ..errors import TranscriptError
    from ..hooks.specs import MockRule
    from ..transcript import read_file, read_json

    where = f"--mock {path}"
    try:
        raw = read_file(path)
        if path.endswith((".yaml", ".yml")):
            try:
                from ..testing.yaml_file import read_yaml
            except ModuleNotFoundError:
                raise UsageError(
                    f"{where}: a YAML file needs PyYAML (pip install pyyaml); JSON needs nothing"
                ) from None
            data = read_yaml(raw, max_nodes=MOCK_FILE_VALUES)
        else:
            data = read_json(raw)
    except OSError as exc:
        raise UsageError(f"{where}: cannot read: {exc.strerror or exc}") from None
    except TranscriptError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if isinstance(data, dict) and "mocks" in data:
        data = data["mocks"]
    if isinstance(data, list) and len(data) > MAX_MOCK_RULES:  # refused before a rule is validated
        raise UsageError(f"{where}: {len(data):,} rules; a run takes at most {MAX_MOCK_RULES}")
    try:
        return TypeAdapter(list[MockRule]).validate_python(data)
    except ValidationError as exc:
        raise UsageError(f"{where}: {describe_validation(exc)}") from None


def cmd_run(args: argparse.Namespace) -> int:
    from ..exports import export_json
    from ..transcript import write_atomic

    agent, run = _build_run(args)
    if args.policy:  # what each model call sends; the history is kept whole
        from ..policies import policies_from

        run.config = run.config.model_copy(update={"policies": policies_from(args.policy)})
    saver = None
    if args.out:
        out = Path(args.out)

        def save_out() -> None:  # the Runs page's export: credential-named fields are blanked here too
            write_atomic(out, export_json(run))

        try:  # an unwritable --out is bad input, found before any model call is paid for
            save_out()
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot write: {exc.strerror or exc}") from None

        def saver(event) -> None:
            if event.kind in ("phase_finished", "error", "run_finished"):
                save_out()

        agent.observers.append(saver)
    store = None
    if not args.no_db:
        from ..store.runs import Store

        try:
            store = Store(args.db)
            store.save_run(run)
        except (AgentcoreError, OSError) as exc:
            if args.db:  # asked for by name: a database that cannot be used is bad input
                raise UsageError(f"--db: {exc}") from None  # the message names the database, its password masked
            print(f"agentcore: warning: not saving to the runs database: {exc}", file=sys.stderr)
            store = None
        else:
            agent.observers.append(store.saver(run))
    print(f"user: {run.messages[-1].content}")
    cancel = threading.Event()
    try:
        agent.run(run, cancel)
    except KeyboardInterrupt:
        run.stop_reason = "cancelled"
        print(f"agentcore: interrupted at step {len(run.steps)}; every completed phase is saved", file=sys.stderr)
    if args.out:
        save_out()
    if store is not None:  # the run's end (a Ctrl-C included) is saved, not only its phases
        store.save_run(run)
    guarded = guard_line(run)
    if guarded:
        print(guarded)
    mocked = sum(t.source == "mocked" for s in run.steps for t in s.tool_runs)
    if mocked:
        print(f"mocked: {mocked} tool call{'s' if mocked != 1 else ''} answered by a mock rule, not run")
    usage = run.usage
    est = " (~ partly estimated)" if any(s.estimated for s in run.steps) else ""
    steps = len(run.steps)
    print(
        f"\nstop: {run.ending or ('paused' if run.paused else None)} after {steps} step{'s' if steps != 1 else ''} · "
        f"{usage.input_tokens} input + {usage.output_tokens} output tokens{est}"
    )
    if run.stop_reason == "error":
        print(f"error: {run.error}", file=sys.stderr)
        return EXIT_PROVIDER
    if run.paused and run.halt is not None and run.halt.breakpoint is not None:
        kept = [f"run {run.id} in the runs database"] if store is not None else []
        kept += [str(args.out)] if args.out else []
        where = f"; saved as {' and '.join(kept)}" if kept else ""
        print(f"breakpoint: {run.halt.breakpoint} hit at step {run.halt.step}{where}")
        return EXIT_BREAKPOINT
    return {"answer": EXIT_ANSWER, "structured": EXIT_ANSWER, "max_steps": EXIT_MAX_STEPS}.get(
        run.stop_reason or "", EXIT_CANCELLED
    )
