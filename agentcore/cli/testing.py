"""`agentcore pin`, `agentcore test` and `agentcore bench import`: a run kept as a test file, public benchmark
tasks written as test files, and test files run as a pass/fail matrix with a scoreboard per configuration."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import AgentcoreError, UsageError

EXIT_PASS, EXIT_FAIL = 0, 1


def _source_run(ref: str, db: str | None):
    """A run from a transcript file, or else from the runs database by id."""
    from ..store.runs import Store
    from ..transcript import load

    if Path(ref).is_file():
        return load(ref)
    try:
        return Store(db).load_run(ref)
    except AgentcoreError as exc:
        raise UsageError(f"{ref}: not a transcript file, nor a run in the database: {exc}") from None


def refuse_overwrite(path: Path, option: str, force: bool) -> None:
    """A UsageError when `path` exists and --force was not given: a test file may be someone's edited work."""
    if not force and (path.exists() or path.is_symlink()):
        raise UsageError(f"{option} {path}: the file exists; give --force to write over it")


def cmd_pin(args: argparse.Namespace) -> int:
    """Write a test file from a run, with the expectations it meets proposed."""
    from ..exports import export_test
    from ..testing import pinned
    from ..transcript import write_atomic

    out = Path(args.out)
    refuse_overwrite(out, "-o", getattr(args, "force", False))
    run = _source_run(args.run, getattr(args, "db", None))
    test = pinned.propose(run, args.name)
    text = export_test(test, yaml_format=out.suffix.lower() in pinned.YAML_SUFFIXES)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, text)
    except OSError as exc:
        raise UsageError(f"-o {out}: cannot write: {exc.strerror or exc}") from None
    expect = test.expect
    calls = len(expect.tool_calls.calls) if expect.tool_calls else 0
    print(f"pinned run {run.id} as {out}: {calls} tool calls in order, {len(run.steps)} steps")
    print(f"run it: agentcore test {out}")
    return EXIT_PASS


def cmd_test(args: argparse.Namespace) -> int:
    """Run every test file on every configuration; print the matrix; exit 0 all pass, 1 any fails."""
    from ..providers import create_operator_provider
    from ..testing import pinned, scoreboard
    from ..testing.runner import GROUND_TRUTH, REPLAY, junit_xml, parse_config, results_json, run_matrix
    from .commands import shorten

    files = pinned.find_tests(args.paths)
    if not files:
        raise UsageError(f"no test files (*.json, *.yaml) in {', '.join(args.paths)}")
    tests = [pinned.load(f) for f in files]
    if args.diff:
        if len(tests) != 1:
            raise UsageError("--diff compares a run with one test file's pinned run: name one file")
        return _print_diff(tests[0], args.diff, getattr(args, "db", None))
    specs = [parse_config(text) for text in args.config or [REPLAY]]
    tools = _tools(args, tests)
    trials = getattr(args, "trials", 1)
    times = f", {trials} trials each" if trials > 1 else ""
    print(f"running {len(tests)} tests × {len(specs)} configurations concurrently{times}")
    from ..testing.judges import Judging

    matrix = run_matrix(
        tests,
        specs,
        tools=tools,
        trials=trials,
        pass_threshold=getattr(args, "pass_threshold", 1.0),
        factory=create_operator_provider,  # the --config addresses are typed by whoever runs this
        users_mode=_users_mode(args),
        judging=Judging(rejudge=getattr(args, "rejudge", False)),  # a judge's model is named by a file: no operator key
    )
    print(matrix.table())
    _print_conversations(matrix)
    if trials > 1:
        share = f"{matrix.pass_threshold:.0%}"
        print(f"\ntrials (a cell passes when at least {share} of its {trials} trials pass)")
        alike = []
        for row in matrix.cells:
            for cell in row:
                print(f"{cell.test} × {cell.config}: {cell.stats.words()}")
                # a scripted, replayed or reference cell answers alike by design, and a trial that errored made no
                # answer to compare: neither says anything of how a model samples
                by_design = cell.config.partition(":")[0] in ("scripted", REPLAY, GROUND_TRUTH)
                runs = [t.run for t in cell.trials if t.run is not None and not t.errored]
                if not by_design and len(runs) == trials and all(r.messages == runs[0].messages for r in runs[1:]):
                    alike.append(cell)
        if alike:
            print(
                f"note: in {len(alike)} of {len(tests) * len(specs)} cells every trial made the same run: a model that "
                "decodes greedily (temperature 0, the embedded model's default) answers alike each time, so its "
                "trials are one sample; set `temperature` in the test file to sample"
            )
    store = None if args.no_db else _store(getattr(args, "db", None))  # the experiment is kept, pass or fail
    by_name = dict(zip([t.name for t in tests], files, strict=True))
    tasks = {t.name for t in tests if t.benchmark is not None}  # no pinned run: the reference calls are the path
    shown = [c for c in (c for row in matrix.cells for c in row) if not c.passed or c.flaky]
    for cell in shown:
        verdict = "FLAKY" if cell.passed else "ERROR" if cell.errored else "FAIL"
        if cell.trials:  # the threshold, how many trials failed and how many errored; then why, each with its count
            said = [cell.first_failure] if not cell.passed else []
            print(f"\n{verdict} {cell.test} × {cell.config}: {' · '.join([*said, cell.trial_counts])}")
            for reason, count in cell.reasons:
                print(f"  {count} of {len(cell.trials)} trials: {shorten(reason, 300)}")
        else:
            print(f"\n{verdict} {cell.test} × {cell.config}: {cell.first_failure}")
        if cell.departed_at is not None:
            path = "the reference calls" if cell.test in tasks else "the pinned run"
            print(f"  departed from {path} at step {cell.departed_at}")
            if cell.reference_move is not None:
                print(f"  the reference there: {cell.reference_move}")
        if store is None:
            continue
        for k, trial in enumerate(cell.trials or [cell]):  # each failing trial's run, to open where it departed
            if trial.passed or trial.run is None:
                continue
            trial.run.title = f"{trial.run.title} (failed)"
            store.save_run(trial.run)
            which = f"trial {k + 1} " if cell.trials else ""
            if cell.test in tasks:
                print(f"  {which}saved as run {trial.run.id}; show it: agentcore runs show {trial.run.id}")
            else:
                print(
                    f"  {which}saved as run {trial.run.id}; "
                    f"diff: agentcore test {by_name[cell.test]} --diff {trial.run.id}"
                )
    from .judge import after_judging

    after_judging(matrix, tests, files, store, record=not getattr(args, "no_record", False))
    passed = sum(c.passed for row in matrix.cells for c in row)
    print(f"\n{passed} of {len(tests) * len(specs)} passed in {matrix.wall_s:.2f} s")
    print("\nscoreboard\n" + scoreboard.table(scoreboard.scoreboard(matrix), matrix.floor_count))
    for line in (scoreboard.time_line(matrix), scoreboard.floor_line(matrix)):
        if line:
            print(line)
    if store is not None:
        _save_conversations(store, matrix)
        from ..testing.experiments import from_matrix

        kept = store.save_experiment(from_matrix(matrix, [Path(p) for p in args.paths]))
        print(f"experiment {kept.id} kept; list them: agentcore experiments")
    from ..transcript import write_atomic

    if args.junit:
        write_atomic(args.junit, junit_xml(matrix))
        print(f"junit: {args.junit}")
    if getattr(args, "json", None):
        write_atomic(args.json, results_json(matrix))
        print(f"json: {args.json}")
    return EXIT_PASS if matrix.passed else EXIT_FAIL


def _users_mode(args: argparse.Namespace) -> str:
    if getattr(args, "replay_users", False) and getattr(args, "resimulate", False):
        raise UsageError("--replay-users and --resimulate say opposite things: give one")
    return (
        "replay"
        if getattr(args, "replay_users", False)
        else "simulate"
        if getattr(args, "resimulate", False)
        else "auto"
    )


def _print_conversations(matrix) -> None:
    """Each conversation's turns, whether its goal was met and who ended it, the simulator's fidelity beside the
    agent's pass: a failure of the user is not read as one of the agent."""
    from ..testing import users

    lines = []
    for row in matrix.cells:
        for cell in row:
            for k, trial in enumerate(cell.trials or [cell]):
                said = users.report(trial.run) if trial.run is not None else None
                if said:
                    which = f" trial {k + 1}" if cell.trials else ""
                    verdict = "pass" if trial.passed else "FAIL"
                    lines.append(f"{cell.test} × {cell.config}{which}: agent {verdict} · {said}")
                    for b in trial.run.conversation.breaches:
                        judge = f" (judge's run {b.judge_run})" if b.judge_run else ""
                        lines.append(f"  simulator, message {b.message}: {b.rule}: {b.why}{judge}")
    if lines:
        print("\nconversations\n" + "\n".join(lines))


def _save_conversations(store, matrix) -> None:
    """Every conversation with a simulated or replayed user is kept, pass or fail, with the simulator's runs."""
    from ..testing.users import save_conversation

    for row in matrix.cells:
        for cell in row:
            for trial in cell.trials or [cell]:
                if trial.run is None or trial.run.conversation is None:
                    continue
                sims = save_conversation(store, trial.run)  # a failing run is saved with the others too
                said = f" with its simulator's runs {', '.join(s.id for s in sims)}" if sims else ""
                print(f"conversation {cell.test} × {cell.config} kept as run {trial.run.id}{said}")


def cmd_experiments(args: argparse.Namespace) -> int:
    """List the experiments kept, newest first; show one; or diff two cell by cell."""
    from ..testing.experiments import diff

    store = _store_or_fail(getattr(args, "db", None))
    what = getattr(args, "experiments_command", None)
    if what == "show":
        e = store.experiment(args.id)
        print(e.summary())
        print(f"files: {', '.join(e.files)}")
        print(f"agentcore {e.version or 'unknown'}" + (f" · commit {e.commit}" if e.commit else ""))
        for c in e.cells:
            flaky = " flaky" if c.flaky else ""
            runs = ", ".join(r for r in c.run_ids if r)
            print(f"  {'pass' if c.cell_passed else 'FAIL'} {c.test} × {c.config}: {c.counts}{flaky} · runs {runs}")
        return EXIT_PASS
    if what == "diff":
        a, b = store.experiment(args.a), store.experiment(args.b)
        changes = diff(a, b)
        print(f"{a.id} → {b.id}: " + (f"{len(changes)} cells changed" if changes else "no cell changed"))
        for line in changes:
            print(f"  {line}")
        return EXIT_PASS
    found = store.experiments(limit=args.limit)
    if not found:
        print("no experiments yet: each `agentcore test` that writes to this database keeps one")
    for e in found:
        print(e.summary())
    return EXIT_PASS


def _store_or_fail(db: str | None):
    from ..store.runs import Store

    try:
        return Store(db)
    except (AgentcoreError, OSError) as exc:
        raise UsageError(f"the runs database: {exc}") from None


def cmd_bench_import(args: argparse.Namespace) -> int:
    """Write each chosen benchmark task as a test file in a folder; list the tasks that could not be built."""
    from ..testing import benchmarks
    from ..transcript import write_atomic

    if args.limit is not None and args.limit < 1 or args.max_steps is not None and args.max_steps < 1:
        raise UsageError("--limit and --max-steps must be at least 1")
    try:
        if args.benchmark == "bfcl":
            from ..testing.benchmarks import bfcl

            tests, skipped = bfcl.import_tasks(args.category, args.ids, args.limit, args.max_steps)
            where = f"BFCL {args.category}"
        else:
            from ..testing.benchmarks import agentdojo

            tests, skipped = agentdojo.import_tasks(args.suite, args.ids, args.limit, args.max_steps)
            where = f"AgentDojo {args.suite}"
    except ModuleNotFoundError as exc:
        raise UsageError(f"{benchmarks.INSTALL[args.benchmark]} ({exc.name} is missing)") from None
    from ..testing import pinned

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for test in tests:
            write_atomic(out / f"{test.benchmark.name}-{test.benchmark.task_id}.json", pinned.dumps(test))
    except OSError as exc:
        raise UsageError(f"-o {out}: cannot write: {exc.strerror or exc}") from None
    print(f"imported {len(tests)} {where} tasks into {out}")
    for s in skipped:
        print(f"  not imported: {s.task_id}: {s.reason}")
    print(f"check the harness: agentcore test {out} --config {benchmarks.GROUND_TRUTH} --no-db")
    return EXIT_PASS if not skipped else EXIT_FAIL


def _tools(args: argparse.Namespace, tests: list):
    """The toolbox tools the tests name and the MCP servers' tools, as `run` merges them; None without servers."""
    from .. import toolbox
    from ..mcp.config import servers_from_args
    from .commands import select_tools

    if not servers_from_args(args):
        return None  # each test takes its toolbox tools by name, as before
    return select_tools(args, None, sorted({n for t in tests for n in t.tools if n in toolbox.TOOLBOX}))


def _store(db: str | None):
    from ..store.runs import Store

    try:
        return Store(db)
    except (AgentcoreError, OSError) as exc:
        if db:
            raise UsageError(f"--db: {exc}") from None  # the message names the database, its password masked
        print(f"agentcore: warning: failing runs are not saved: {exc}")
        return None


def _print_diff(test, run_id: str, db: str | None) -> int:
    from ..diff import diff_runs
    from ..store.runs import Store
    from .commands import shorten

    if test.pinned is None:
        raise UsageError(f"test {test.name!r} has no pinned run to compare with")
    diff = diff_runs(test.pinned, Store(db).load_run(run_id))
    print(f"pinned run {diff.a_id} vs run {diff.b_id}: {diff.summary()}")
    for row in diff.rows:  # `-` the pinned run's side, `+` the new run's
        if row.kind == "same":
            print(f"  [{row.a_index}] {shorten(row.a_text, 120)}")
            continue
        if row.a_index is not None:
            print(f"- [{row.a_index}] {shorten(row.a_text, 200)}")
        if row.b_index is not None:
            print(f"+ [{row.b_index}] {shorten(row.b_text, 200)}")
    return EXIT_PASS
