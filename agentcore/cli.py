"""The `agentcore` command line: run a loop, list scenarios and tools, show and validate transcripts."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from .errors import AgentcoreError, UsageError

EXIT_ANSWER, EXIT_USAGE, EXIT_MAX_STEPS, EXIT_PROVIDER = 0, 2, 3, 4
EXIT_CANCELLED = 130


def _short(text: str | None, limit: int = 300) -> str:
    text = (text or "").replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


class Printer:
    """Prints each step of a run as it happens."""

    def __init__(self, out=None) -> None:
        self.out = out or sys.stdout
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
                args = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
                w(f"  → {call.name}({args})  [{call.id}]\n")
        elif event.kind == "tool_finished":
            o = event.outcome
            mark = "✗" if o.is_error else "✓"
            w(f"  {mark} {event.tool_call.name} ({o.duration_ms:.0f} ms): {_short(o.content)}\n")
        elif event.kind == "error":
            w(f"error: {event.error}\n")
        self.out.flush()


def _build_run(args: argparse.Namespace):
    from . import toolbox
    from .loop import Agent, Run, RunConfig
    from .providers import create_provider, default_provider, get_info
    from .providers.scripted import get_scenario

    if args.replay:
        return _build_replay(args)
    provider_name = args.provider
    if provider_name is None:
        provider_name, why = default_provider()
        print(f"provider: {why}", file=sys.stderr)
    info = get_info(provider_name)
    scenario = None
    final_schema = None
    tool_names = args.tools
    if provider_name == "scripted":
        scenario = get_scenario(args.scenario or args.model)
        if tool_names is None:
            tool_names = ",".join(scenario.tools)
        final_schema = scenario.final_answer_schema
    elif args.scenario:
        raise UsageError("--scenario only applies to --provider scripted")
    if args.final_schema:
        try:
            final_schema = json.loads(Path(args.final_schema).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--final-schema {args.final_schema}: {exc}") from None
    tools = toolbox.get_tools(tool_names or "")
    model = args.model or (scenario.name if scenario else info.default_model)
    options: dict[str, Any] = {}
    if scenario:
        options["scenario"] = scenario.name
    provider = create_provider(provider_name, model, base_url=args.base_url, **options)
    config = RunConfig(
        provider=provider_name,
        model=provider.model,
        base_url=args.base_url,
        scenario=scenario.name if scenario else None,
        system_prompt=args.system,
        tools=[t.spec() for t in tools],
        max_steps=args.max_steps,
        concurrency=not args.sequential_tools,
        temperature=args.temperature,
        final_answer_schema=final_schema,
    )
    prompt = args.prompt if args.prompt is not None else (scenario.prompt if scenario else None)
    if not prompt:
        raise UsageError("a prompt is required (or a scripted --scenario, which has its own)")
    run = Run.start(prompt, config)
    agent = Agent(provider, tools, observers=[Printer()])
    return agent, run


def _build_replay(args: argparse.Namespace):
    """Replay the assistant turns of a saved transcript; the tools run for real."""
    from . import toolbox
    from .loop import Agent, Run
    from .messages import AssistantMessage
    from .providers.scripted import ScriptedProvider
    from .transcript import load

    source = load(args.replay)
    turns = [m for m in source.messages if isinstance(m, AssistantMessage)]
    names = args.tools.split(",") if args.tools else [t.name for t in source.config.tools if t.name in toolbox.TOOLBOX]
    tools = toolbox.get_tools(names)
    config = source.config.model_copy(update={"provider": "scripted", "model": "replay", "max_steps": args.max_steps})
    first_user = next((m.content for m in source.messages if m.role == "user"), None)
    run = Run.start(args.prompt or first_user or "", config, title=f"replay of {source.title or source.id}")
    return Agent(ScriptedProvider(replay=turns), tools, observers=[Printer()]), run


def cmd_run(args: argparse.Namespace) -> int:
    from . import transcript

    agent, run = _build_run(args)
    saver = None
    if args.out:
        out = Path(args.out)

        def saver(event) -> None:
            if event.kind in ("phase_finished", "error", "run_finished"):
                transcript.save(run, out)

        agent.observers.append(saver)
    print(f"user: {run.messages[-1].content}")
    cancel = threading.Event()
    try:
        agent.run(run, cancel)
    except KeyboardInterrupt:
        run.stop_reason = "cancelled"
    if args.out:
        transcript.save(run, args.out)
    usage = run.usage
    est = " (estimated)" if any(s.estimated for s in run.steps) else ""
    print(
        f"\nstop: {run.stop_reason} after {len(run.steps)} steps · "
        f"{usage.input_tokens} input + {usage.output_tokens} output tokens{est}"
    )
    if run.stop_reason == "error":
        print(f"error: {run.error}", file=sys.stderr)
        return EXIT_PROVIDER
    return {"answer": EXIT_ANSWER, "structured": EXIT_ANSWER, "max_steps": EXIT_MAX_STEPS}.get(
        run.stop_reason or "", EXIT_CANCELLED
    )


def cmd_scenarios(args: argparse.Namespace) -> int:
    from .providers.scripted import SCENARIOS

    for s in SCENARIOS.values():
        print(f"{s.name:<11} {s.description}")
        print(f"{'':<11} tools: {', '.join(s.tools)} · prompt: {s.prompt!r}")
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    from .toolbox import TOOLBOX

    for t in TOOLBOX.values():
        flags = " [sequential]" if t.sequential else ""
        print(f"{t.name:<13}{t.description}{flags}")
        if args.schema:
            print(json.dumps(t.parameters, indent=2))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .messages import AssistantMessage, ToolMessage
    from .transcript import load

    run = load(args.file)
    c = run.config
    print(f"run {run.id} · {c.provider}/{c.model} · {len(run.steps)} steps · stop: {run.stop_reason}")
    if run.parent:
        print(f"forked from run {run.parent.run_id} at step {run.parent.step}")
    step_at = {s.message_count: s for s in run.steps}
    for i, m in enumerate(run.messages):
        if i in step_at:
            s = step_at[i]
            kind = "estimated" if s.estimated else "exact"
            print(
                f"\n── step {s.index} · {s.usage.input_tokens} in / {s.usage.output_tokens} out ({kind}) · "
                f"{s.latency_ms:.0f} ms ──"
            )
        if isinstance(m, AssistantMessage):
            if m.content:
                print(f"[{i}] assistant: {m.content}")
            for call in m.tool_calls:
                args_text = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
                print(f"[{i}] assistant → {call.name}({args_text}) [{call.id}]")
        elif isinstance(m, ToolMessage):
            mark = "error" if m.is_error else "result"
            print(f"[{i}] tool {m.name} {mark}: {_short(m.content, 500)}")
        else:
            print(f"[{i}] {m.role}: {m.content}")
    if run.final_output is not None:
        print(f"\nfinal output: {json.dumps(run.final_output)}")
    if run.error:
        print(f"\nerror: {run.error}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .transcript import load

    run = load(args.file)
    print(f"ok: {args.file} is a valid transcript ({len(run.messages)} messages, {len(run.steps)} steps)")
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as argparse does, without the usage dump
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="agentcore", description="Step, debug and measure the ReAct agent loop.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("run", help="run the loop on a prompt and print each step")
    p.add_argument("prompt", nargs="?", help="the user prompt (a scripted scenario has its own)")
    p.add_argument("--provider", help="local, scripted, openai, anthropic or ollama (default: local if installed)")
    p.add_argument("--model", help="the model name, or a GGUF path for local")
    p.add_argument("--base-url", help="the server's base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--scenario", help="the scripted provider's scenario (see `agentcore scenarios`)")
    p.add_argument("--tools", help="comma-separated toolbox tools (see `agentcore tools`)")
    p.add_argument("--system", help="the system prompt")
    p.add_argument("--max-steps", type=int, default=10, help="the step budget (default 10)")
    p.add_argument("--temperature", type=float, help="sampling temperature")
    p.add_argument("--sequential-tools", action="store_true", help="run the tool calls of a turn one at a time")
    p.add_argument("--final-schema", help="a JSON Schema file: the run ends when the model fills it")
    p.add_argument("--out", help="write the transcript JSON here, as the run goes")
    p.add_argument("--replay", help="replay the assistant turns of this transcript; the tools run for real")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("scenarios", help="list the scripted provider's scenarios")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("tools", help="list the built-in tools")
    p.add_argument("--schema", action="store_true", help="print each tool's JSON Schema")
    p.set_defaults(func=cmd_tools)

    p = sub.add_parser("show", help="print a transcript readably")
    p.add_argument("file")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("validate", help="check a transcript file")
    p.add_argument("file")
    p.set_defaults(func=cmd_validate)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "max_steps", 1) is not None and getattr(args, "max_steps", 1) < 1:
            raise UsageError("--max-steps must be at least 1")
        return args.func(args)
    except UsageError as exc:
        print(f"agentcore: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AgentcoreError as exc:
        print(f"agentcore: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("agentcore: interrupted", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
