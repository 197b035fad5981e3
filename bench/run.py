"""`make bench`: every figure, agentcore beside its peers, in one run; prints a table of medians and ratios.

    .venv/bin/python bench/run.py            # every figure
    .venv/bin/python bench/run.py 1 2        # only figures 1 and 2

The peers (LangChain, LangGraph, pydantic-ai) live in bench/.venv, which `make bench` creates;
they run as subprocesses of bench/.venv/bin/python and are never imported here.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from common import ROOT, Row, call_public, progress, rows_from_result, unavailable  # noqa: E402

HEADER = ["figure", "case", "median", "ratio", "note"]


def local_model_rows() -> list[Row]:
    """Figure 5, from bench/local_model.py: load time, prompt and generation tokens/s, step latency."""
    figure = "5. local model (SmolLM2-135M)"
    if not (ROOT / "bench" / "local_model.py").exists():
        return [unavailable(figure, "load, tokens/s, step latency", "bench/local_model.py is not there yet")]
    progress("local model")
    try:
        return rows_from_result(figure, "SmolLM2-135M", call_public(importlib.import_module("local_model")))
    except Exception as exc:  # noqa: BLE001 - another module's failure becomes a row, not a crash
        return [unavailable(figure, "load, tokens/s, step latency", f"{type(exc).__name__}: {exc}"[:200])]


_ANSWER_STYLES = [
    "agentcore: a call required first, results written into the assistant's open turn as plain lines (the default)",
    "chatml-function-calling (before)",
]


def figures() -> dict[str, Callable[[], list[Row]]]:
    """The figures by number, each imported only when it runs."""
    return {
        "1": lambda: importlib.import_module("loop_overhead").measure(),
        "2": lambda: importlib.import_module("wire_encoding").measure(),
        "3": lambda: importlib.import_module("import_time").measure(sys.executable),
        "4": lambda: importlib.import_module("concurrency").measure(),
        "5": local_model_rows,
        "6": lambda: importlib.import_module("app_render").measure(),
        "7": lambda: importlib.import_module("isolation").measure(),
        "8": lambda: importlib.import_module("step_latency").measure(),
        "9": lambda: importlib.import_module("class_load").measure(),
        # the default and the format before it; `bench/answer_rate.py` alone prints every style tried
        "10": lambda: importlib.import_module("answer_rate").measure(styles=_ANSWER_STYLES),
        "11": lambda: importlib.import_module("library_stats").measure(),
    }


def machine() -> str:
    """One line about where the numbers were taken."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        kb = next(int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
        ram = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{os.cpu_count()} CPUs ({cpu}), {ram} RAM, Python {platform.python_version()}"


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", help="figure numbers to run (default: all)")
    args = parser.parse_args(argv)
    available = figures()
    unknown = [f for f in args.figures if f not in available]
    if unknown:
        parser.error(f"unknown figure {', '.join(unknown)}; choose from {', '.join(available)}")
    os.chdir(ROOT)
    started = time.perf_counter()
    rows: list[Row] = []
    for number in args.figures or list(available):
        rows += available[number]()
    print(f"machine: {machine()}")
    print(f"took {time.perf_counter() - started:.0f} s; medians of repeated runs\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
