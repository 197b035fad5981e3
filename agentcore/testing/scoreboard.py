"""The scoreboard of a test matrix: per configuration, tasks passed, steps, tokens, cost and time.

What a team choosing a provider reads after a benchmark slice: the same tasks, graded the same way,
on each configuration. `agentcore test` prints it under the matrix; the Tests page draws it as a chart.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..accounting import run_cost
from .runner import Matrix


@dataclass(frozen=True)
class Score:
    """One configuration's totals over every test it ran."""

    config: str
    passed: int
    tests: int
    steps: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None when some run's price is unknown
    wall_s: float  # the runs' own times added up (every trial's), as the JUnit suite reports them: not wall time
    # of the tests passed, those a benchmark's grader passes when the model does nothing
    passed_doing_nothing: int = 0
    trials: int = 1  # each cell's trials
    trials_passed: int = 0  # over every cell of the configuration
    all_trials_passed: int = 0  # the cells whose every trial passed: pass^N over the tasks
    flaky: int = 0  # the cells whose trials disagree

    @property
    def pass_at_1(self) -> float:
        """The mean pass rate over every trial of every cell."""
        return self.trials_passed / (self.tests * self.trials) if self.tests else 0.0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.tests if self.tests else 0.0

    @property
    def cost_text(self) -> str:
        return "unknown" if self.cost_usd is None else f"${self.cost_usd:.4f}"


def scoreboard(matrix: Matrix) -> list[Score]:
    """A Score per configuration, in the matrix's column order."""
    scores = []
    for j, config in enumerate(matrix.configs):
        column = [row[j] for row in matrix.cells]
        runs = [t.run for c in column for t in (c.trials or [c]) if t.run is not None]  # every trial's
        costs = [run_cost(r) for r in runs]
        scores.append(
            Score(
                config=config,
                passed=sum(c.passed for c in column),
                tests=len(column),
                steps=sum(len(r.steps) for r in runs),
                input_tokens=sum(r.usage.input_tokens for r in runs),
                output_tokens=sum(r.usage.output_tokens for r in runs),
                cost_usd=None if None in costs else sum(c for c in costs if c is not None),
                wall_s=sum(c.wall_s for c in column),
                passed_doing_nothing=sum(
                    c.passed for c, free in zip(column, matrix.floor or [None] * len(column), strict=True) if free
                ),
                trials=matrix.trials,
                trials_passed=sum(c.stats.passed for c in column),
                all_trials_passed=sum(c.stats.all_passed for c in column),
                flaky=sum(c.stats.flaky for c in column),
            )
        )
    return scores


def floor_line(matrix: Matrix) -> str | None:
    """The do-nothing floor in one line; None when no test is a benchmark task."""
    if matrix.floor_count is None:
        return None
    free, tasks = matrix.floor_count
    return (
        f"floor: {free} of {tasks} benchmark tasks pass when the model makes no call (the benchmark's own grader "
        "on an untouched environment); only passes above it show skill"
    )


def time_line(matrix: Matrix) -> str | None:
    """What the scoreboard's run time is, beside the matrix's wall time; None when each configuration made one run,
    whose own time is the matrix's."""
    runs = len(matrix.tests) * matrix.trials
    if runs == 1:
        return None
    return (
        f"run time: each configuration's {runs} runs' own times added up; the runs ran concurrently, and the whole "
        f"matrix took {matrix.wall_s:.2f} s"
    )


def table(scores: list[Score], floor: tuple[int, int] | None = None) -> str:
    """The scoreboard as text, one row per configuration; with a floor (tasks passing doing nothing, of how
    many), each configuration's passes above it beside its passes."""
    trials = max((s.trials for s in scores), default=1)
    head = ["configuration", "passed", *(["above floor"] if floor else [])]
    head += ["trials passed", "pass@1", f"pass^{trials}", "flaky"] if trials > 1 else []
    head += ["steps", "input tokens", "output tokens", "cost", "run time"]
    rows = [
        [
            s.config,
            f"{s.passed}/{s.tests} ({s.pass_rate:.0%})",
            *([f"{s.passed - s.passed_doing_nothing}/{s.tests - floor[0]}"] if floor else []),
            *(
                [
                    f"{s.trials_passed}/{s.tests * s.trials}",
                    f"{s.pass_at_1:.2f}",
                    f"{s.all_trials_passed}/{s.tests}",
                    str(s.flaky),
                ]
                if trials > 1
                else []
            ),
            str(s.steps),
            str(s.input_tokens),
            str(s.output_tokens),
            s.cost_text,
            f"{s.wall_s:.1f} s",
        ]
        for s in scores
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
    return "\n".join(lines)
