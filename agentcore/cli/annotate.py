"""`agentcore annotate` labels a step or a tool call of a stored run; `agentcore errors` counts the labels.

`annotate --make-test FILE` also writes the pinned test that expects the annotation's correct call at
its step (agentcore.testing.labelled): it fails on the labelled run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..annotations import LABELS, by_scanner, labels_said, make_annotation, ordered_counts
from ..errors import TranscriptError, UsageError
from ..transcript import read_json

DB_HELP = "the runs database: a SQLite file or a postgresql:// URL (default: $AGENTCORE_DB or ~/.agentcore/runs.db)"


def add_annotate(sub: Any) -> None:
    """The `annotate` and `errors` subcommands."""
    p = sub.add_parser("annotate", help="label a step or a tool call of a stored run (an error analysis)")
    p.add_argument("run", metavar="RUN_ID", help="a stored run's id")
    p.add_argument("--step", type=int, required=True, metavar="N", help="the step to label (1, 2, ...)")
    p.add_argument("--call", metavar="ID", help="one tool call of that step's reply, by its id")
    p.add_argument(
        "--label", action="append", default=[], choices=LABELS, metavar="LABEL", help=f"repeatable: {', '.join(LABELS)}"
    )
    p.add_argument("--tag", action="append", default=[], metavar="TEXT", help="a free label of your own; repeatable")
    p.add_argument("--score", type=float, help="a number")
    p.add_argument("--note", default="", help="what went wrong, in words")
    p.add_argument(
        "--correct-call", metavar="JSON", help='the call the model should have made: {"name": ..., "arguments": {...}}'
    )
    p.add_argument("--make-test", metavar="FILE", help="also write the test that expects the correct call there")
    p.add_argument("--force", action="store_true", help="with --make-test: write over an existing file")
    p.add_argument("--db", help=DB_HELP)
    p.set_defaults(func=cmd_annotate)

    p = sub.add_parser("errors", help="count the labels on the stored runs' steps, most frequent failure first")
    p.add_argument("--provider", help="only runs this provider answered a step of")
    p.add_argument("--model", help="only runs this model answered a step of")
    p.add_argument("--owner", help="only this person's runs")
    p.add_argument("--tag", help="only runs with a step labelled with this free label")
    p.add_argument(
        "--source",
        metavar="SOURCE",
        help="whose labels: people, scanners (every scanner's findings), or one scanner's name; default: all",
    )
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.add_argument("--db", help=DB_HELP)
    p.set_defaults(func=cmd_errors)


def _correct_call(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data = read_json(text)
    except TranscriptError as exc:  # not JSON, or nested too deep
        raise UsageError(f"--correct-call: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError('--correct-call: a JSON object, {"name": "get_weather", "arguments": {"city": "Paris"}}')
    return data


def cmd_annotate(args: argparse.Namespace) -> int:
    """Keep the annotation; with --make-test, write the test it makes."""
    from ..exports import export_test
    from ..store.runs import Store
    from ..testing import pinned
    from ..testing.labelled import from_annotation
    from ..transcript import write_atomic

    annotation = make_annotation(
        step=args.step,
        tool_call_id=args.call,
        labels=args.label,
        tags=args.tag,
        score=args.score,
        note=args.note,
        correct_call=_correct_call(args.correct_call),
    )
    if args.make_test:  # before anything is kept: a refused file leaves no label behind
        from .testing import refuse_overwrite

        refuse_overwrite(Path(args.make_test), "--make-test", args.force)
    store = Store(args.db)
    # the test is made before the annotation is kept: one that cannot be a test (no correct call, or one the run
    # already makes) keeps nothing, so the command can be given again, corrected, without labelling twice
    test = from_annotation(store.read_run(args.run), annotation) if args.make_test else None
    kept = store.annotate(args.run, annotation)
    print(f"annotated {kept.target} of run {args.run}: {kept.summary()} (id {kept.id}, by {kept.author})")
    if test is not None:
        out = Path(args.make_test)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(out, export_test(test, yaml_format=out.suffix.lower() in pinned.YAML_SUFFIXES))
        except OSError as exc:
            why = exc.strerror or exc
            raise UsageError(f"--make-test {out}: cannot write: {why} (the annotation {kept.id} is kept)") from None
        print(f"wrote {out}: it expects {kept.correct_call.text} at step {kept.step}; run it: agentcore test {out}")
    return 0


def cmd_errors(args: argparse.Namespace) -> int:
    """Print each label and how many annotations carry it, over the runs the filters keep, then where each is."""
    from ..store.runs import Store
    from ..store.scanners import MAX_LISTED

    labelled = Store(args.db).annotated_runs(
        provider=args.provider, model=args.model, owner=args.owner, tag=args.tag, source=args.source
    )
    annotations = [a for _, found in labelled for a in found]
    ordered = ordered_counts(annotations)
    found = sum(map(by_scanner, annotations))
    if args.json:
        counts = {"runs": len(labelled), "annotations": len(annotations), "labels": dict(ordered)}
        counts |= {
            "label_total": sum(n for _, n in ordered),
            "with_several_labels": sum(len(a.all_labels) > 1 for a in annotations),
        }
        sources = {"people": len(annotations) - found, "scanners": found}
        print(json.dumps({**counts, "sources": sources}, indent=2))
        return 0
    if not annotations:
        filtered = any(getattr(args, k) for k in ("provider", "model", "owner", "tag", "source"))
        print("no labelled steps match these filters" if filtered else "no labelled steps")
        return 0
    # the counts below add up to the labels, not the annotations: an annotation may carry several (as the page says)
    print(f"{labels_said(annotations, len(labelled))} ({len(annotations) - found} by people, {found} by scanners)")
    width = max(len(k) for k, _ in ordered)
    for label, n in ordered:
        kind = "" if label in LABELS else "  (free label)"
        print(f"  {label:<{width}}  {n:>4}{kind}")
    # where each one is, to open with runs show RUN_ID: the first MAX_LISTED, then how many more
    where = [(r.id, a) for r, found in labelled for a in found]
    print("where they are:")
    for run_id, a in where[:MAX_LISTED]:
        print(f"  run {run_id} {a.target}: {', '.join(a.all_labels) or 'no label'} (by {a.author or 'unknown'})")
    if len(where) > MAX_LISTED:
        print(f"  … and {len(where) - MAX_LISTED:,} more not listed (narrow them with --provider, --tag or --source)")
    return 0
