"""`agentcore stats` adds up the stored runs' figures per group; `agentcore scan` runs scanners over stored runs."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from ..accounting import COST_FORMAT
from ..annotations import JUDGE_PREFIX
from ..store.stats import GROUP_BY, first_day
from .annotate import DB_HELP

# the columns `stats` prints, in order: (heading, GroupStats attribute or callable)
COLUMNS = (
    "runs",
    "steps",
    "answered",
    "input",
    "output",
    "cache read",
    "cache write",
    "hit rate",
    "cost ($)",
    "$/answered",
    "p50 ms",
    "p95 ms",
    "budget",
    "failed",
)


def add_library(sub: Any) -> None:
    """The `stats` and `scan` subcommands."""
    p = sub.add_parser("stats", help="runs, tokens, cache hit rate, cost and step latency across the stored runs")
    p.add_argument("--by", choices=GROUP_BY, default="model", help="the group each row adds up (default: model)")
    p.add_argument("--since", metavar="DATE", help="only runs created on or after this day, YYYY-MM-DD")
    p.add_argument("--provider", help="only the steps this provider answered")
    p.add_argument("--owner", help="only this person's runs")
    p.add_argument("--search", metavar="TEXT", help="only runs whose id, title, model or first prompt hold TEXT")
    p.add_argument("--json", action="store_true", help="print the groups and the totals as JSON")
    p.add_argument("--db", help=DB_HELP)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("scan", help="run scanners over the stored runs; each finding becomes a label on its step")
    p.add_argument(
        "--scanner",
        action="append",
        metavar="NAME",
        help="repeatable: a built-in (see --list), module:function, regex:PATTERN, or judge:NAME (an LLM judge named "
        "in the --judges files); default: every built-in",
    )
    p.add_argument(
        "--judges",
        action="append",
        metavar="PATH",
        help='repeatable: test files (their expect.judge), judges files ({"judges": [...]}) or folders of them',
    )
    p.add_argument("--budget", type=int, default=20, metavar="N", help="a judge's calls at most, per scan (default 20)")
    p.add_argument("--since", metavar="DATE", help="only runs created on or after this day, YYYY-MM-DD")
    p.add_argument("--provider", help="only runs this provider answered a step of")
    p.add_argument("--owner", help="only this person's runs")
    p.add_argument(
        "--again", action="store_true", help="read every run, even one each scanner already read as it stands"
    )
    p.add_argument(
        "--processes",
        type=int,
        metavar="N",
        help="read the runs of a large scan on N processes (default: one a core; 1: this one alone)",
    )
    p.add_argument("--list", action="store_true", help="list the built-in scanners and stop")
    p.add_argument("--json", action="store_true", help="print what the scan did as JSON")
    p.add_argument("--db", help=DB_HELP)
    p.set_defaults(func=cmd_scan)


def _cells(g: Any) -> list[str]:
    def money(v: float | None) -> str:
        return "unpriced" if v is None else f"{v:{COST_FORMAT}}"

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:,.1f}"

    mark = "~" if g.estimated else ""  # tokens (and so cost) partly estimated
    rate = g.cache_hit_rate
    return [
        f"{g.runs:,}",
        f"{g.steps:,}",
        f"{g.answered_runs:,}",
        f"{mark}{g.input_tokens:,}",
        f"{mark}{g.output_tokens:,}",
        f"{g.cache_read_tokens:,}",
        f"{g.cache_write_tokens:,}",
        "-" if rate is None else f"{rate:.1%}",
        mark + money(g.cost_usd),
        "-" if g.cost_per_answered_run is None else mark + money(g.cost_per_answered_run),
        ms(g.latency_ms(0.5)),
        ms(g.latency_ms(0.95)),
        f"{g.budget_runs:,}",
        f"{g.failed_runs:,}",
    ]


def cmd_stats(args: argparse.Namespace) -> int:
    """Print each group's figures, as a table or as JSON."""
    from ..store.runs import Store
    from ..store.stats import library_stats, totals

    groups = library_stats(
        Store(args.db),
        [args.by],
        since=first_day(args.since),
        provider=args.provider,
        owner=args.owner,
        search=args.search,
    )
    once = args.by in ("provider", "model", "day")  # each step counted in one group: the groups add up
    if args.json:
        data = {"by": args.by, "groups": [g.to_dict() for g in groups], "totals": totals(groups) if once else None}
        print(json.dumps(data, indent=2))
        return 0
    if not groups:
        print("no stored runs match these filters")
        return 0
    rows = [[args.by, *COLUMNS], *([g.key[args.by], *_cells(g)] for g in groups)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    if any(g.estimated for g in groups):
        print("~ partly estimated: some steps' usage is an estimate (recorded as one, or estimated from what was sent)")
    if not once:
        print(f"a run with several {args.by}s counts in each of them: the rows do not add up to the library")
    return 0


def _judges(named: list[str], args: argparse.Namespace) -> list:
    """The judges `judge:NAME` names, from the --judges files; a one-line UsageError for one they do not name."""
    from ..errors import UsageError
    from ..testing.judges import load_judges

    if not named:
        return []
    if args.budget < 1:
        raise UsageError("--budget is a judge's calls at most: a whole number from 1")
    if not args.judges:
        raise UsageError(f"{named[0][:80]} needs --judges PATH: a test file or a judges file that names the judge")
    found = load_judges(args.judges)
    missing = [n for n in named if n.removeprefix(JUDGE_PREFIX) not in found]
    if missing:
        known = ", ".join(found) or "none"
        raise UsageError(f"{missing[0][:80]}: no judge of that name in {', '.join(args.judges)} (judges: {known})")
    return [found[n.removeprefix(JUDGE_PREFIX)] for n in named]


def _judge_scan(store: Any, judges: list, ids: list[str], args: argparse.Namespace) -> None:
    """Each judge over the runs, within the budget; what it said, and where."""
    from ..testing.judges import judge_library

    for judge in judges:
        r = judge_library(store, judge, ids, budget=args.budget, again=args.again)
        said = ", ".join(f"{n} {k}" for k, n in r.said.items())
        print(f"judge:{judge.name}: {r.calls} calls of a budget of {args.budget}: {said}")
        if r.skipped:
            print(f"  {r.skipped:,} runs skipped: judged already as they stand (--again judges them once more)")
        if r.nothing:
            print(f"  {r.nothing:,} runs with nothing to judge ({judge.on})")
        if r.errors:
            print(f"  {r.errors:,} calls failed: their runs are left to the next scan")
        if r.left:
            print(f"  {r.left:,} runs left unjudged: the budget is spent (scan again, or raise --budget)")
        for run_id, step, verdict, call in r.found[:1000]:
            print(f"  run {run_id} step {step}: {verdict} · the judge's call: run {call}")


def cmd_scan(args: argparse.Namespace) -> int:
    """Scan the runs the filters keep and keep each finding as a label; print what each scanner found."""
    from ..errors import UsageError
    from ..store.runs import Store
    from ..store.scanners import BUILTINS, resolve_scanner, scan_library

    if args.list:
        width = max(map(len, BUILTINS.built_in))
        for name in BUILTINS.built_in:
            print(f"  {name:<{width}}  {BUILTINS[name].description}")
        return 0
    if args.processes is not None and args.processes < 1:
        raise UsageError("--processes is how many processes read the runs: a whole number from 1")
    named = list(dict.fromkeys(args.scanner or BUILTINS.built_in))
    judges = _judges([s for s in named if s.startswith(JUDGE_PREFIX)], args)
    scanners = [resolve_scanner(s, code=True) for s in named if not s.startswith(JUDGE_PREFIX)]  # the operator's
    store = Store(args.db)
    ids = store.run_ids(provider=args.provider, owner=args.owner, since=first_day(args.since))
    if judges:
        _judge_scan(store, judges, ids, args)
        if not scanners:
            return 0
    tty = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if tty and (done == total or done % 100 == 0):
            print(f"\rscanned {done:,} of {total:,} runs", end="\n" if done == total else "", file=sys.stderr)

    report = scan_library(store, scanners, ids, progress, again=args.again, processes=args.processes)
    if args.json:
        print(json.dumps(dataclasses.asdict(report), indent=2))
        return 0
    skipped = f" ({report.skipped:,} skipped: each scanner had read them as they stand)" if report.skipped else ""
    print(f"scanned {report.runs:,} runs{skipped}: {report.added:,} findings added, {report.removed:,} removed")
    if report.runs:
        width = max(len(s.name) for s in scanners)
        for scanner in scanners:
            print(f"  {scanner.name:<{width}}  {report.findings[scanner.name]:>5} findings on the runs read")
    for run_id, step, scanner, labels in report.found:  # where each one is: open it with runs show RUN_ID
        print(f"  run {run_id} step {step}: {scanner}: {labels}")
    if report.not_listed:
        print(
            f"  … and {report.not_listed:,} more findings not listed (agentcore errors --source scanners counts them)"
        )
    return 0
