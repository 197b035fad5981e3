"""`agentcore stats` and `agentcore scan` on a large runs library: SQLite at 20,000 runs, PostgreSQL at 2,000.

The library is made of copies of seven runs (the scripted weather, runaway, tool error and research scenarios,
and two OpenAI runs with recorded usage, one reading from the prompt cache), spread over 30 days and 4 owners.
It is built once per invocation (SQLite with synchronous=OFF while it is built: the build is not measured).

Measured: `stats --by model` and `--by day` in process (the median of three), the command itself as a person
runs it (a fresh process: imports included), `scan` with every built-in, first (findings written) on one process
and on one a core (as `agentcore scan` reads a large library), and again (nothing to change), the first count of a
library saved before the figure rows were kept (each run's kept JSON read once: a database the schema's migration
just moved up), and of one saved before figures were kept at all (every run read once).

    .venv/bin/python bench/library_stats.py                   # 20,000 SQLite runs, 2,000 PostgreSQL runs
    .venv/bin/python bench/library_stats.py --runs 200000 --pg-runs 20000   # a team's year
    .venv/bin/python bench/library_stats.py --runs 2000 --pg-runs 0
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from common import ROOT, Row, progress, unavailable  # noqa: E402

FIGURE = "11. library stats and scan"
DAYS, OWNERS = 30, ("ada", "bob", "cy", "dee")


def _templates() -> list:
    from agentcore import Agent, Run, RunConfig, create_provider, toolbox
    from agentcore.messages import AssistantMessage, Usage, UserMessage
    from agentcore.providers.scripted import get_scenario
    from agentcore.steps import StepRecord

    runs = []
    for scenario in ("weather", "weather", "runaway", "tool_error", "research"):
        sc = get_scenario(scenario)
        tools = toolbox.get_tools(",".join(sc.tools))
        config = RunConfig(provider="scripted", model=scenario, scenario=scenario, tools=[t.spec() for t in tools])
        run = Run.start(sc.prompt, config)
        Agent(create_provider("scripted", scenario, scenario=scenario), tools).run(run)
        runs.append(run)
    for steps in ([(1000, 100, 0, 400.0), (2000, 100, 1500, 700.0)], [(800, 20, 0, 300.0)]):
        run = Run.start("Hello?", RunConfig(provider="openai", model="gpt-4o-mini"))
        for i, (inp, out, cached, ms) in enumerate(steps, start=1):
            usage = Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=cached)
            run.steps.append(
                StepRecord(index=i, provider="openai", model="gpt-4o-mini", usage=usage, latency_ms=ms,
                           message_count=len(run.messages))
            )  # fmt: skip
            run.messages.append(AssistantMessage(content=f"answer {i}"))
            if i < len(steps):
                run.messages.append(UserMessage(content="and then?"))
        run.stop_reason = "answer"
        runs.append(run)
    return runs


def build(store, n: int) -> float:
    """Save `n` copies of the templates into `store`; returns the seconds it took."""
    from agentcore.run import Run

    templates = _templates()
    start = time.perf_counter()
    for i in range(n):
        template = templates[i % len(templates)]
        day = 1 + i % DAYS
        created = f"2026-11-{day:02d}T12:00:00.000+00:00"
        run = template.model_copy(update={"id": Run().id, "created_at": created})
        store.save_run(run, owner=OWNERS[i % len(OWNERS)])
        if i and i % 2000 == 0:
            progress(f"  built {i:,} of {n:,} runs")
    return time.perf_counter() - start


def _timed(fn: Callable[[], object], times: int = 1) -> float:
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        fn()
        taken.append(time.perf_counter() - start)
    return statistics.median(taken)


def _kept(rows: list[Row], row: Row) -> None:
    """Keep a row, and say it at once: a long run shows each figure as it is taken."""
    rows.append(row)
    progress("  " + " | ".join(row.cells()))


def measure_store(location: str, n: int, label: str) -> list[Row]:
    """Build a library of `n` runs at `location` and time stats and scan on it."""
    from agentcore.store.runs import Store
    from agentcore.store.scanners import BUILTINS, scan_library, scan_processes
    from agentcore.store.stats import library_stats

    store = Store(location)
    if store.backend == "sqlite":
        store._backend.execute("PRAGMA synchronous=OFF")  # the build is not what is measured
    progress(f"{label}: building {n:,} runs")
    built = build(store, n)
    if store.backend == "sqlite":
        store._backend.execute("PRAGMA synchronous=FULL")
    rows: list[Row] = []
    _kept(rows, Row(FIGURE, f"{label}: build {n:,} runs (not a measured path)", built, "s"))
    progress(f"{label}: stats")
    by_model = _timed(lambda: library_stats(store, ["model"]), 3)
    _kept(rows, Row(FIGURE, f"{label}: stats --by model, in process", by_model, "s", note=f"{n:,} runs"))
    _kept(
        rows, Row(FIGURE, f"{label}: stats --by day, in process", _timed(lambda: library_stats(store, ["day"]), 3), "s")
    )
    cli = [sys.executable, "-m", "agentcore", "stats", "--db", location, "--by", "model", "--json"]
    taken = _timed(lambda: subprocess.run(cli, cwd=ROOT, check=True, capture_output=True))
    _kept(rows, Row(FIGURE, f"{label}: `agentcore stats --by model --json`, a fresh process", taken, "s"))
    progress(f"{label}: scan")
    scanners = list(BUILTINS.values())
    ids = store.run_ids()
    report = None

    def scan(processes: int | None = None) -> None:
        nonlocal report
        report = scan_library(store, scanners, ids, processes=processes)

    alone = _timed(lambda: scan(1))
    note = f"{report.added:,} findings"
    _kept(rows, Row(FIGURE, f"{label}: scan, every built-in, first, on one process", alone, "s", note=note))
    with store._transaction() as db:  # the library unscanned again
        db.execute("DELETE FROM scans")
        db.execute("DELETE FROM annotations WHERE author LIKE ?", ("scanner:%",))
    first = _timed(scan)
    note = f"{report.added:,} findings; one process took {alone / first:.2f}x as long"
    used = scan_processes(scanners, len(ids), None)  # as `agentcore scan` reads them: one a core, if enough runs
    what = (
        f"{label}: scan, every built-in, first, as agentcore scan reads it ({used} process{'es' if used > 1 else ''})"
    )
    _kept(rows, Row(FIGURE, what, first, "s", note=note))
    again = _timed(scan)
    _kept(rows, Row(FIGURE, f"{label}: scan again (nothing changes)", again, "s", note=f"{report.added} added"))
    with store._transaction() as db:  # a library saved before the figure rows: each run's JSON is read once
        db.execute("UPDATE runs SET figured = NULL")
    migrated = _timed(lambda: library_stats(store, ["model"]))
    _kept(rows, Row(FIGURE, f"{label}: stats on a library saved before the figure rows (once)", migrated, "s"))
    with store._transaction() as db:  # a library saved before figures were kept: each run is read once
        db.execute("UPDATE runs SET figures = NULL")
    backfill = _timed(lambda: library_stats(store, ["model"]))
    _kept(rows, Row(FIGURE, f"{label}: stats on a library without kept figures (once)", backfill, "s"))
    store.close()
    return rows


def measure(runs: int = 20_000, pg_runs: int = 2_000) -> list[Row]:
    """The figure's rows: SQLite at `runs` runs, PostgreSQL at `pg_runs` (a throwaway cluster, when installed);
    0 skips either."""
    rows = []
    if runs:
        with tempfile.TemporaryDirectory(prefix="agentcore-library-") as folder:
            rows += measure_store(str(Path(folder) / "runs.db"), runs, "SQLite")
    if pg_runs:
        rows += _postgres(pg_runs)
    return rows


def _postgres(n: int) -> list[Row]:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from support.pg import Cluster, _bin_dir
        from support.servers import free_port
    except ImportError as exc:
        return [unavailable(FIGURE, "PostgreSQL", f"tests/support/pg.py cannot be imported: {exc}")]
    bin_dir = _bin_dir()
    if bin_dir is None:
        return [unavailable(FIGURE, "PostgreSQL", "PostgreSQL is not installed (Debian: apt-get install postgresql)")]
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="agentcore-pg-")), bin_dir, free_port())
    cluster.start()
    try:
        return measure_store(cluster.new_database(), n, "PostgreSQL")
    finally:
        cluster.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="SQLite library size (0: skip; default 20,000)")
    parser.add_argument("--pg-runs", type=int, default=2_000, help="PostgreSQL library size (0: skip; default 2,000)")
    args = parser.parse_args()
    for row in measure(args.runs, args.pg_runs):
        print(" | ".join(row.cells()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
