"""The `agentcore` command line: the parser, and the entry point that runs one subcommand.

`run` is in run_command.py; the subcommands that read or report (show, runs, compare, cost, export, ...) are in
commands.py.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
from typing import Any

from pydantic import ValidationError

from ..errors import AgentcoreError, UsageError
from ..hooks.examples import HOOKS
from ..hooks.guard import LOOP_GUARDS
from ..mcp.config import add_mcp_arguments
from ..messages import MAX_COUNT
from ..providers import REGISTRY, WIRE_FORMATS
from ..toolbox import DEFAULT_TOOLS
from ..transcript import describe_validation, one_line
from .annotate import add_annotate
from .blame import add_blame
from .commands import (
    cmd_compare,
    cmd_cost,
    cmd_export,
    cmd_runs,
    cmd_scenarios,
    cmd_send_otlp,
    cmd_show,
    cmd_tools,
    cmd_validate,
)
from .judge import add_judge
from .library import add_library
from .proxy_command import add_proxy
from .run_command import EXIT_CANCELLED, EXIT_USAGE, cmd_run
from .terminal import guarded


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as argparse does, without the usage dump
        raise UsageError(message)


_BUILT: dict[tuple[tuple[str, ...], tuple[str, ...]], argparse.ArgumentParser] = {}


def parser() -> argparse.ArgumentParser:
    """The command line, built once a process for the providers and hooks registered as it is asked for (their
    names are in its help): a build is a few hundred `add_argument` calls, several milliseconds, and parsing leaves
    the parser as it was."""
    names = (tuple(REGISTRY), tuple(HOOKS))
    if names not in _BUILT:
        _BUILT[names] = build_parser()
    return _BUILT[names]


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per job."""
    parser = _Parser(prog="agentcore", description="Step, debug and measure the ReAct agent loop.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_run(sub)
    _add_listings(sub)
    _add_runs(sub)
    _add_compare(sub)
    _add_transcript_tools(sub)
    _add_testing(sub)
    add_blame(sub)
    add_annotate(sub)
    add_library(sub)
    add_judge(sub)
    add_proxy(sub)
    _add_mcp(sub)
    return parser


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run the loop on a prompt and print each step")
    p.add_argument("prompt", nargs="?", help="the user prompt (a scripted scenario has its own)")
    p.add_argument(
        "--provider",
        help=f"{', '.join(REGISTRY)}, or module:Class of an installed module (default: local if installed)",
    )
    p.add_argument("--model", help="the model name, or a GGUF path for local")
    p.add_argument("--base-url", help="the server's base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--scenario", help="the scripted provider's scenario (see `agentcore scenarios`)")
    p.add_argument(
        "--tools",
        help="comma-separated tools, built-in or from the MCP servers given (see `agentcore tools`); none offers "
        f"none (default: {','.join(DEFAULT_TOOLS)} and the MCP servers' tools; a scenario's own)",
    )
    p.add_argument("--system", help="the system prompt")
    p.add_argument("--max-steps", type=int, default=10, help="the step budget (default 10)")
    p.add_argument("--temperature", type=float, help="sampling temperature")
    p.add_argument("--max-tokens", type=int, help="the most tokens the model may write per step")
    p.add_argument(
        "--thinking-budget",
        type=int,
        metavar="N",
        help="reasoning: Anthropic's extended thinking with N budget tokens (Ollama: think; Responses: summaries)",
    )
    p.add_argument(
        "--reasoning-effort",
        choices=("none", "minimal", "low", "medium", "high", "xhigh", "max"),
        help="reasoning effort: the Responses API's, Anthropic's adaptive thinking, Ollama's think level",
    )
    p.add_argument(
        "--no-stream", action="store_true", help="ask for whole responses (some servers give usage only then)"
    )
    p.add_argument("--sequential-tools", action="store_true", help="run the tool calls of a turn one at a time")
    p.add_argument(
        "--loop-guard",
        choices=LOOP_GUARDS,
        help="repeated identical calls: off; warn (they run again); guard (answered from the run, then the model "
        "is asked without tools). Default: guard for local, warn elsewhere",
    )
    p.add_argument(
        "--hook",
        action="append",
        default=[],
        metavar="NAME",
        help="a hook around the model call, repeatable: "
        + "; ".join(f"{name}: {h.description.rstrip('.')}" for name, h in HOOKS.items())
        + "; or module:attribute, a NamedHook of an installed module",
    )
    p.add_argument(
        "--break",
        dest="breakpoint",
        action="append",
        default=[],
        metavar="SPEC",
        help="stop the run at a breakpoint, repeatable: step:N, tool:NAME, args:$.PATH=VALUE, args:$.PATH~PATTERN, "
        "tokens:N, cost:USD, repeat, tool-error; a run that hits one is saved and exits 5",
    )
    p.add_argument(
        "--mock",
        metavar="FILE",
        help="mock rules, a JSON or YAML list of {tool, when, result | error}: a matching call is not run and "
        "the model reads the rule's result",
    )
    p.add_argument("--final-schema", help="a JSON Schema file: the run ends when the model fills it")
    p.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a context policy, repeatable: keep_tool_results=K, truncate_tool_results=N, drop_turns_older_than=K, "
        "summarize_older_than=K, cache_breakpoints=on (Anthropic)",
    )
    p.add_argument("--out", help="write the transcript JSON here, as the run goes")
    p.add_argument(
        "--db",
        help="the runs database the run is saved in as it goes, a SQLite file or a postgresql:// URL "
        "(default: $AGENTCORE_DB or ~/.agentcore/runs.db)",
    )
    p.add_argument("--no-db", action="store_true", help="do not save the run in the runs database")
    p.add_argument("--replay", help="replay the assistant turns of this transcript; the tools run for real")
    add_mcp_arguments(p)
    p.set_defaults(func=cmd_run)


def _add_listings(sub: Any) -> None:
    p = sub.add_parser("scenarios", help="list the scripted provider's scenarios")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("tools", help="list the built-in tools")
    p.add_argument("--schema", action="store_true", help="print each tool's JSON Schema")
    add_mcp_arguments(p)
    p.set_defaults(func=cmd_tools)

    p = sub.add_parser("show", help="print a transcript readably")
    p.add_argument("file")
    p.set_defaults(func=cmd_show)


def _add_runs(sub: Any) -> None:
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        help="the runs database: a SQLite file or a postgresql:// URL (default: $AGENTCORE_DB or ~/.agentcore/runs.db)",
    )
    p = sub.add_parser("runs", parents=[db], help="the runs library: list, show, export, import, delete, copy")
    runs = p.add_subparsers(dest="runs_command", required=True, parser_class=_Parser)
    q = runs.add_parser("list", parents=[db], help="list the stored runs, newest first")
    q.add_argument("--search", help="words to find in the id, title, model or first prompt")
    q.add_argument("--provider", help="only runs of this provider")
    q.add_argument("--limit", type=int, default=50)
    q = runs.add_parser("show", parents=[db], help="print a stored run")
    q.add_argument("id")
    q = runs.add_parser(
        "export", parents=[db], help="write a run as JSON, as a provider's request body, or as a replay page (html)"
    )
    q.add_argument("ids", nargs="+", metavar="ID")
    q.add_argument(
        "--format",
        default="json",
        choices=["json", *WIRE_FORMATS, "html", "otlp-json", "atif"],
        help="otlp-json: the run's OpenTelemetry GenAI trace, a file Jaeger UI, Tempo and Phoenix load; atif: an ATIF "
        "v1.7 trajectory, its stored subagent runs embedded",
    )
    q.add_argument("--out", help="write here instead of stdout (several runs: a .zip)")
    _add_otlp_options(q)
    q = runs.add_parser(
        "import",
        parents=[db],
        help="store a transcript, an OpenAI/Anthropic message list, an ATIF trajectory, a Claude Code session or a "
        "Codex rollout (subagents as linked runs)",
    )
    q.add_argument("file")
    q = runs.add_parser("delete", parents=[db], help="delete a stored run")
    q.add_argument("id")
    q = runs.add_parser("copy", help="copy every run one database lacks from another (SQLite to PostgreSQL, say)")
    q.add_argument("--from", dest="source", required=True, metavar="DB", help="a SQLite file or postgresql:// URL")
    q.add_argument("--to", dest="target", required=True, metavar="DB", help="a SQLite file or postgresql:// URL")
    p.set_defaults(func=cmd_runs)


def _add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="run one prompt on 2 to 4 configurations side by side, concurrently; or a stored run from step K (--from)",
    )
    p.add_argument("prompt", nargs="?", help="the user prompt, the same for every configuration (not with --from)")
    p.add_argument(
        "--test",
        metavar="FILE",
        help="play a pinned test's conversation on each configuration: its prompt, system prompt, tools, step budget "
        "and scripted turns, then its simulated user (`user:`), drawn with the same seed on each configuration",
    )
    p.add_argument(
        "--from",
        dest="from_step",
        metavar="RUN_ID:K",
        help="fork the stored run just before step K's model call on each configuration, and go on from there",
    )
    p.add_argument(
        "--steps",
        dest="from_steps",
        type=int,
        metavar="N",
        help="with --from: the model calls each fork makes (default: to the end of the run's step budget; "
        "1 asks step K again)",
    )
    p.add_argument(
        "--db",
        help="with --from: the runs database the run is read from and every fork saved in "
        "(default: $AGENTCORE_DB or ~/.agentcore/runs.db)",
    )
    p.add_argument(
        "--config",
        action="append",
        metavar="PROVIDER[:MODEL][@BASE_URL]",
        help="a configuration (2 to 4 of them); for scripted the model is the scenario, e.g. scripted:weather",
    )
    p.add_argument(
        "--tools",
        help="comma-separated tools for all, built-in or MCP (default: the scripted scenarios' tools and every MCP tool)",
    )
    p.add_argument("--system", help="the system prompt, the same for every configuration")
    p.add_argument("--max-steps", type=int, default=10, help="the step budget of each configuration (default 10)")
    p.add_argument("--temperature", type=float, help="sampling temperature for every configuration")
    p.add_argument("--out", help="write the comparison bundle JSON here (of the last run, with --runs)")
    p.add_argument("--runs", type=int, default=1, metavar="N", help="run each configuration N times (default 1)")
    p.add_argument(
        "--expect",
        action="append",
        metavar="TEXT",
        help="a text the answer should hold, repeatable: each run is counted by whether its answer holds them all",
    )
    add_mcp_arguments(p)
    p.set_defaults(func=cmd_compare)


def _add_transcript_tools(sub: Any) -> None:
    p = sub.add_parser("validate", help="check a transcript file")
    p.add_argument("file")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("cost", help="tokens, cost, the quadratic fit and what-if savings of a transcript")
    p.add_argument("file", nargs="?")
    p.add_argument("--price-as", help="price the same tokens as PROVIDER:MODEL, e.g. openai:gpt-4o-mini")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--list-models", action="store_true", help="list the models --price-as accepts")
    p.set_defaults(func=cmd_cost)

    p = sub.add_parser(
        "export", help="print a transcript as a provider's request body, or as a replay page (--format html)"
    )
    p.add_argument("file")
    p.add_argument(
        "--format",
        choices=(*WIRE_FORMATS, "html", "otlp-json", "atif"),
        help="the wire format; html: one self-contained page that steps through the run; otlp-json: the run's "
        "OpenTelemetry GenAI trace; atif: an ATIF v1.7 trajectory (required unless --otlp is given)",
    )
    p.add_argument("--model", help="the model named in the body (default: the run's, or the provider's default)")
    _add_otlp_options(p)
    p.set_defaults(func=cmd_export_noted)


def _add_otlp_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--otlp",
        metavar="URL",
        help="send the run's OpenTelemetry trace to this OTLP/HTTP endpoint (a base such as http://127.0.0.1:6006 "
        "gets /v1/traces); headers from OTEL_EXPORTER_OTLP_HEADERS",
    )
    p.add_argument(
        "--content",
        action="store_true",
        help="with otlp-json or --otlp: include the messages, system prompt, tool definitions, arguments and results",
    )


def cmd_export_noted(args: argparse.Namespace) -> int:
    """`agentcore export`, then a note on stderr when the body leaves out reasoning another provider made."""
    from ..messages import reasoning_note
    from ..transcript import load

    if args.otlp:
        return cmd_send_otlp([load(args.file)], args)
    if args.format is None:
        raise UsageError("export needs --format (or --otlp URL)")
    code = cmd_export(args)
    note = reasoning_note(load(args.file).messages, args.format)
    if note:
        print(f"agentcore: note: {note}", file=sys.stderr)
    return code


def _add_testing(sub: Any) -> None:
    from .testing import cmd_bench_import, cmd_experiments, cmd_pin, cmd_test

    db_help = "the runs database (default: $AGENTCORE_DB or ~/.agentcore/runs.db)"
    p = sub.add_parser("pin", help="write a test file from a run, proposing the expectations it meets")
    p.add_argument("run", metavar="RUN_ID_OR_TRANSCRIPT", help="a stored run's id, or a transcript file")
    p.add_argument("-o", "--out", required=True, help="the test file to write (.json, or .yaml with PyYAML)")
    p.add_argument("--force", action="store_true", help="write over an existing file")
    p.add_argument("--name", help="the test's name (default: the run's title)")
    p.add_argument("--db", help=db_help)
    p.set_defaults(func=cmd_pin)

    p = sub.add_parser("test", help="run test files on configurations; print the matrix; exit 1 if any fails")
    p.add_argument("paths", nargs="+", metavar="PATH", help="test files, or folders of them")
    p.add_argument(
        "--config",
        action="append",
        metavar="replay|ground-truth|PROVIDER[:MODEL][@BASE_URL]",
        help="a configuration, repeatable (default: replay, the pinned run's turns with the tools run for real; "
        "ground-truth plays a benchmark task's reference calls)",
    )
    p.add_argument("--trials", type=int, default=1, metavar="N", help="run every cell N times (default 1)")
    p.add_argument(
        "--pass-threshold",
        type=float,
        default=1.0,
        metavar="P",
        help="the share of its trials a cell must pass (default 1.0: every trial)",
    )
    p.add_argument("--junit", metavar="FILE", help="write the results as JUnit XML here")
    p.add_argument("--json", metavar="FILE", help="write one record per cell (trial counts, outcomes, run ids) here")
    p.add_argument("--db", help=db_help + "; each failing run is saved there")
    p.add_argument("--no-db", action="store_true", help="do not save failing runs")
    p.add_argument("--diff", metavar="RUN_ID", help="print a saved run's diff against the test file's pinned run")
    p.add_argument(
        "--replay-users",
        action="store_true",
        help="a simulated user's turns replayed from the pinned conversation, with no simulator call",
    )
    p.add_argument(
        "--resimulate", action="store_true", help="a simulated user draws new turns even where a conversation is pinned"
    )
    p.add_argument("--rejudge", action="store_true", help="call each judge even where a recorded verdict fits the run")
    p.add_argument("--no-record", action="store_true", help="do not record new judges' verdicts in the test files")
    add_mcp_arguments(p)
    p.set_defaults(func=cmd_test)

    p = sub.add_parser("experiments", help="the test matrices kept in the runs database: list, show one, diff two")
    p.add_argument("--db", help=db_help)
    p.add_argument("--limit", type=int, default=50, metavar="N", help="list the newest N (default 50)")
    exp = p.add_subparsers(dest="experiments_command")
    q = exp.add_parser("show", help="one experiment, cell by cell")
    q.add_argument("id", help="its id, or a unique start of it")
    q.add_argument("--db", help=db_help)
    q = exp.add_parser("diff", help="what changed between two experiments, cell by cell")
    q.add_argument("a", help="the earlier experiment's id")
    q.add_argument("b", help="the later experiment's id")
    q.add_argument("--db", help=db_help)
    p.set_defaults(func=cmd_experiments)

    p = sub.add_parser("bench", help="public benchmark tasks (BFCL multi-turn, AgentDojo) as pinned test files")
    bench = p.add_subparsers(dest="bench_command", required=True)
    q = bench.add_parser("import", help="write a test file per task; tasks that cannot be built are listed")
    q.add_argument("benchmark", choices=["bfcl", "agentdojo"])
    q.add_argument("--category", default="multi_turn_base", help="BFCL: multi_turn_base (default), _miss_param, ...")
    q.add_argument("--suite", default="banking", help="AgentDojo: banking (default), slack, travel or workspace")
    q.add_argument("--ids", nargs="+", metavar="TASK_ID", help="these tasks only (default: all, or --limit)")
    q.add_argument("--limit", type=int, metavar="N", help="the first N tasks")
    q.add_argument("--max-steps", type=int, metavar="N", help="each user turn's step budget (default: the benchmark's)")
    q.add_argument("-o", "--out", required=True, metavar="DIR", help="the folder to write the test files into")
    q.set_defaults(func=cmd_bench_import)


def _add_mcp(sub: Any) -> None:
    p = sub.add_parser("mcp-demo", help="serve the bundled demo MCP tools over stdio, or streamable HTTP with --http")
    p.add_argument("--http", type=int, metavar="PORT", help="serve over streamable HTTP at http://HOST:PORT/mcp")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on with --http (default 127.0.0.1)")
    p.set_defaults(func=cmd_mcp_demo)
    p = sub.add_parser(
        "mcp-server",
        help="serve the runs library and the loop to MCP clients (Claude Code, Codex, ...): stdio, or --http",
    )
    p.add_argument("--db", help="the runs database (default: $AGENTCORE_DB or ~/.agentcore/runs.db)")
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve over Streamable HTTP at http://HOST:PORT/mcp (a bare PORT listens on 127.0.0.1 only)",
    )
    p.add_argument(
        "--user-header",
        metavar="NAME",
        help="with --http: each request's user is this header's value, as the app's AGENTCORE_USER_HEADER "
        "(default: that variable); a request without it is refused, and so is one without the proxy's "
        "AGENTCORE_PROXY_SECRET where that is set (required off loopback)",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="with --http: a Host (and Origin) name to answer besides loopback and the bound address, such as "
        "the proxy's public name; repeatable (also AGENTCORE_MCP_ALLOWED_HOSTS)",
    )
    p.add_argument(
        "--allow-base-url",
        action="append",
        default=[],
        metavar="URL",
        help="a base URL a client's configuration may name, besides each provider's own and the one set in "
        "its environment (OPENAI_BASE_URL, ...); repeatable (also AGENTCORE_MCP_ALLOW_BASE_URLS)",
    )
    p.add_argument(
        "--call-seconds",
        type=float,
        default=300.0,
        metavar="S",
        help="the wall time one tool call may take: a comparison, a test run, a scan (default 300)",
    )
    p.set_defaults(func=cmd_mcp_server)


def cmd_mcp_server(args: argparse.Namespace) -> int:
    from ..mcp.client import require_sdk
    from ..runs_server.limits import Limits
    from ..runs_server.server import serve
    from ..store.runs import Store

    require_sdk()
    if not args.call_seconds > 0:
        raise UsageError(f"--call-seconds is a number of seconds above 0, not {args.call_seconds:g}")
    Store(args.db).close()  # a database that cannot be opened is one line now, not a failure on the first call
    serve(
        args.db,
        args.http,
        user_header=args.user_header,
        allow_base_urls=args.allow_base_url,
        allow_hosts=args.allow_host,
        limits=Limits(seconds=args.call_seconds),
    )
    return 0


def cmd_mcp_demo(args: argparse.Namespace) -> int:
    from ..mcp.client import require_sdk
    from ..mcp.demo import serve

    require_sdk()
    serve(args.http, args.host)
    return 0


# option: (dest, least, most); a count outside its range is bad usage, not a database or provider error
_COUNTS = {
    "--max-steps": ("max_steps", 1, MAX_COUNT),
    "--max-tokens": ("max_tokens", 1, MAX_COUNT),
    "--thinking-budget": ("thinking_budget", 1, MAX_COUNT),
    "--limit": ("limit", 1, 1_000_000),
    "--steps": ("from_steps", 1, MAX_COUNT),
}


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse counts outside their range and a temperature that is not a finite number, naming the option."""
    for option, (dest, least, most) in _COUNTS.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        if value < least:
            raise UsageError(f"{option} must be at least {least}")
        if value > most:
            raise UsageError(f"{option} must be at most {most}")
    temperature = getattr(args, "temperature", None)
    if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
        raise UsageError(f"--temperature must be a finite number of at least 0, not {temperature}")


@guarded  # everything printed, errors included, is text without a control sequence or a known secret
def main(argv: list[str] | None = None) -> int:
    if isinstance(sys.stdout, io.TextIOWrapper):  # a lone surrogate in a shown transcript prints as an escape
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        args = parser().parse_args(argv)
        check_arguments(args)
        return args.func(args)
    except AgentcoreError as exc:
        print(f"agentcore: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except ValidationError as exc:  # an option's value the run's config refuses
        print(f"agentcore: error: {describe_validation(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("agentcore: interrupted", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"agentcore: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
