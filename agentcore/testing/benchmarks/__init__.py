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
from ..expectations import BenchmarkRef, PinnedTest
from .episode import INSTALL, Episode, Skipped

__all__ = ["GROUND_TRUTH", "INSTALL", "Episode", "Skipped", "check_available", "episode", "passes_doing_nothing"]


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


def passes_doing_nothing(test: PinnedTest) -> bool | None:
    """Whether the benchmark's own grader passes the task when the model makes no call: each user turn
    answered with an empty reply, on an untouched environment. None for a test that names no benchmark.

    A scoreboard's floor: a configuration that passes such a task has shown nothing by it.
    """
    if test.benchmark is None:
        return None
    from ...messages import AssistantMessage, UserMessage
    from ...run import Run, RunConfig

    untouched = episode(test.benchmark)
    run = Run.start(test.prompt, RunConfig(system_prompt=test.system_prompt))
    for i, text in enumerate([test.prompt, *test.turns]):
        untouched.begin_turn(i)
        if i:
            run.append(UserMessage(content=text))
        run.append(AssistantMessage(content=""))
    return untouched.grade(run) is None
