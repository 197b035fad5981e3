"""`agentcore blame RUN_ID`: which step broke a stored run. Forks it before each chosen step, continues each fork
N times, grades the continuations, prints each fork step's pass rate with its interval and the step to blame."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import AgentcoreError, UsageError
from .annotate import DB_HELP


def add_blame(sub: Any) -> None:
    """The `blame` subcommand."""
    p = sub.add_parser(
        "blame", help="which step broke a run: fork before each step, continue each fork N times, compare pass rates"
    )
    p.add_argument("run_id", metavar="RUN_ID", help="a stored run that fails")
    grade = p.add_mutually_exclusive_group(required=True)
    grade.add_argument(
        "--test", metavar="FILE", help="a pinned test file: each continuation must meet its expectations"
    )
    grade.add_argument("--expect", metavar="TEXT", help="a text each continuation's answer must hold")
    p.add_argument(
        "--config",
        metavar="PROVIDER[:MODEL][@BASE_URL]",
        help="the configuration the forks go on with (default: the run's own); for scripted the model is the scenario",
    )
    p.add_argument("--temperature", type=float, help="the forks' sampling temperature (default: the run's own)")
    p.add_argument("--trials", type=int, default=10, metavar="N", help="continuations of each fork (default 10)")
    chosen = p.add_mutually_exclusive_group()
    chosen.add_argument("--steps", dest="blame_steps", metavar="K1,K2", help="fork before these steps only")
    chosen.add_argument(
        "--bisect", action="store_true", help="find the fall in about log2(steps) forks, if the rate falls once"
    )
    p.add_argument(
        "--max-calls",
        type=int,
        default=200,
        metavar="N",
        help="refuse when the forks may make more model calls than this (default 200)",
    )
    p.add_argument("--json", metavar="FILE", help="write the rates, the blamed step and the fork run ids here")
    p.add_argument("--db", help=DB_HELP + "; every fork is saved there under the run")
    p.set_defaults(func=cmd_blame)


def _steps(text: str | None) -> list[int] | None:
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise UsageError(f"--steps {text[:80]!r}: expected step numbers separated by commas, e.g. 2,3,4")
    return [int(p) for p in parts]


def _grader(args: argparse.Namespace) -> Any:
    from ..testing import pinned
    from ..testing.blame import Grader

    if args.expect is not None:
        return Grader.of_text(args.expect)
    test = pinned.load(args.test)
    return Grader(test.expect, f"the test {test.name or args.test}")


def cmd_blame(args: argparse.Namespace) -> int:
    """Count the model calls, refuse past --max-calls, run the forks, save them, print the rates and the blame."""
    from ..providers import create_operator_provider, create_provider
    from ..store.runs import Store
    from ..testing.blame import blame, plan
    from ..testing.runner import parse_config
    from ..transcript import write_atomic

    if args.max_calls < 1:
        raise UsageError("--max-calls must be at least 1")
    steps = _steps(args.blame_steps)
    grader = _grader(args)
    spec = parse_config(args.config) if args.config else None
    if spec is not None and spec.provider in ("replay", "ground-truth"):
        raise UsageError(f"--config {args.config}: a fork goes on with a model, not {spec.provider}")
    try:
        store = Store(args.db)
    except (AgentcoreError, OSError) as exc:
        raise UsageError(f"the runs database: {exc}") from None
    if store.summary(args.run_id) is None:
        raise UsageError(f"no run {args.run_id[:80]!r} in {store.location}")
    run = store.read_run(args.run_id)
    if grader.failures(run):  # cost first: what the forks will take, before any is made
        print(f"blame run {run.id}: {plan(run, steps, args.trials, args.bisect).words()}; ceiling {args.max_calls:,}")
    # an address typed here carries this environment's key; the run's own address is not typed by whoever runs this
    factory = create_operator_provider if spec is not None else create_provider
    found = blame(
        run,
        grader,
        spec=spec,
        trials=args.trials,
        steps=steps,
        bisect=args.bisect,
        max_calls=args.max_calls,
        factory=factory,
        temperature=args.temperature,
    )
    for fork in found.runs:
        store.save_run(fork)
    _print(found)
    if found.runs:
        print(
            f"\n{len(found.runs)} forks saved in {store.location} under run {run.id}; list them: agentcore runs show ID"
        )
    if args.json:
        write_atomic(args.json, json.dumps(found.to_dict(), indent=1, ensure_ascii=False) + "\n")
        print(f"json: {args.json}")
    return 0


def _print(found: Any) -> None:
    from .commands import shorten

    if found.run_passed:
        print(f"run {found.run_id} passes {found.grader}: nothing to blame")
        return
    print(f"run {found.run_id} fails {found.grader}: {shorten(found.run_failure or '', 200)}")
    print(f"forks on {found.config}, {found.plan.trials} trials each, in {found.wall_s:.1f} s:\n")
    for r in found.rates:
        print(f"  {r.words()}")
    print("  the run itself: fails")
    if found.plan.bisect:
        print(f"\nbisection read {found.forks} forks of the {len(found.plan.steps)} steps")
        if not found.monotone:
            print("note: the rates do not fall steadily, so bisection may have missed the fall: run without --bisect")
    if found.alike and found.plan.trials > 1:
        print(
            "note: every trial of each fork made the same run: the model answers alike each time (temperature 0, a "
            "fixed seed such as the embedded model's default, or a scripted model), so each fork's trials are one "
            "sample; give --temperature above 0, and no fixed seed, to sample"
        )
    if found.blamed is None:
        top = found.rates[0] if found.rates else None
        print(
            "\nno step to blame: "
            + (f"forks from step {top.step} on fail as the run does" if top is not None else "no fork was read")
        )
        return
    read = {r.step for r in found.rates}
    to = f"step {found.next_point}'s fork" if found.next_point in read else "the run itself"
    print(f"\nblamed: step {found.blamed} (the rate falls by {found.fall:.2f} from its fork to {to})")
    if found.reply is not None:
        print(f"  the run's step {found.blamed}: {shorten(found.reply.text, 300)}")
    for reply in found.instead:
        print(f"  passing continuations there ({reply.count}): {shorten(reply.text, 300)}")
    if not found.monotone and not found.plan.bisect:
        print("note: the rates do not fall steadily: more than one step may matter")
    sys.stdout.flush()
