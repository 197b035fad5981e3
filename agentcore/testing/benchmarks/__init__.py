"""Public benchmarks as pinned tests: BFCL multi-turn (`bfcl-eval`) and AgentDojo (`agentdojo`).

A benchmark test file names its task (`benchmark: {name, task_id, category}`); when it runs, the task's
tools, its environment and its grader come from the installed package, so a file stays small and
copies none of the benchmark's code. Each run gets an `Episode`: a fresh environment from the task's
initial configuration, the package's tools bound to it, the reference calls per user turn (which the
`ground-truth` configuration plays), and the package's own grader.
"""

from __future__ import annotations

from ...errors import UsageError
from ...providers.reference import GROUND_TRUTH
from ..pinned import BenchmarkRef, PinnedTest
from .episode import INSTALL, Episode, Skipped

__all__ = ["GROUND_TRUTH", "INSTALL", "Episode", "Skipped", "check_available", "episode"]


def episode(ref: BenchmarkRef) -> Episode:
    """A fresh episode of the task; a missing package or an unknown task is a UsageError."""
    try:
        if ref.name == "bfcl":
            from . import bfcl as module
        else:
            from . import agentdojo as module
    except ModuleNotFoundError as exc:
        raise UsageError(f"{INSTALL[ref.name]} ({exc.name} is missing)") from None
    return module.episode(ref)


def check_available(test: PinnedTest) -> None:
    """Raise a UsageError, before any run, when a benchmark test's package or task is missing."""
    if test.benchmark is not None:
        episode(test.benchmark)
