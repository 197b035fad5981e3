"""LLM judges on the command line: what `agentcore test` says of its judges' verdicts and records of them, and
`agentcore judge agreement`, a judge's agreement with people's labels (agentcore.testing.agreement)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# cli.annotate's words, not imported from it: `agentcore test` (cli.testing, which annotate imports) imports this module
DB_HELP = "the runs database: a SQLite file or a postgresql:// URL (default: $AGENTCORE_DB or ~/.agentcore/runs.db)"


def after_judging(matrix: Any, tests: list, files: list[Path], store: Any, *, record: bool = True) -> None:
    """Say each judge's verdict per cell; keep each call in the library (a run linked to the run it judged, its
    verdict a label there); record the new verdicts on unchanged pinned runs in their test files."""
    from ..exports import export_test
    from ..testing import pinned
    from ..testing.judges import keep_in_store
    from ..testing.judges import record as recorded_in
    from ..transcript import write_atomic
    from .commands import shorten

    cells = [c for row in matrix.cells for c in row if c.verdicts or any(t.verdicts for t in c.trials)]
    if not cells:
        return
    print("\njudges")
    for cell in cells:
        for v in cell.verdicts:
            how = "recorded verdict, no call" if v.reused else "called"
            call = f" · its call: run {v.judge_run_id}" if v.judge_run_id else ""
            print(f"  {v.judge.name} on {cell.test} × {cell.config}: {v.said} ({how}){call}")
            if v.reason:
                print(f"    {shorten(v.reason, 300)}")
    if store is not None:
        for cell in cells:
            for trial in cell.trials or [cell]:
                if trial.run is not None:
                    keep_in_store(store, trial.run, trial.verdicts)
    if not record:
        return
    for i, (test, path) in enumerate(zip(tests, files, strict=True)):
        made = [v for cell in matrix.cells[i] for t in (cell.trials or [cell]) for v in t.verdicts]
        updated = recorded_in(test, made)
        if updated is None:
            continue
        write_atomic(path, export_test(updated, yaml_format=Path(path).suffix.lower() in pinned.YAML_SUFFIXES))
        new = sum(r not in test.verdicts for r in updated.verdicts)
        print(f"recorded {new} verdict{'s' if new != 1 else ''} on the pinned run in {path}: a replay reuses it")


def add_judge(sub: Any) -> None:
    """The `judge` subcommand: `judge agreement`."""
    p = sub.add_parser("judge", help="LLM judges: how far a judge agrees with people's labels")
    judge = p.add_subparsers(dest="judge_command", required=True)
    q = judge.add_parser(
        "agreement", help="a judge's verdicts beside people's labels: agreement, Cohen's kappa, TPR/TNR, confusion"
    )
    q.add_argument("--judge", required=True, metavar="NAME", help="the judge's name (its labels' author: judge:NAME)")
    q.add_argument(
        "--labels",
        default="people",
        metavar="people|AUTHOR",
        help="whose labels are the reference: people (everyone's, the default) or one person's name",
    )
    q.add_argument("--json", metavar="FILE", help="also write the figures as JSON here")
    q.add_argument("--db", help=DB_HELP)
    q.set_defaults(func=cmd_judge_agreement)


def cmd_judge_agreement(args: argparse.Namespace) -> int:
    """Print the judge's agreement with the labels; write them as JSON with --json."""
    from ..store.runs import Store
    from ..testing.agreement import judge_report
    from ..transcript import write_atomic

    report = judge_report(Store(args.db).annotations_by_run(), args.judge, args.labels)
    print(report.text())
    if args.json:
        write_atomic(args.json, json.dumps(report.to_dict(), indent=2) + "\n")
        print(f"json: {args.json}")
    return 0
