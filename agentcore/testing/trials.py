"""Repeated trials of one cell: a test run N times on one configuration, and what the N runs say together.

A model is not deterministic: one run passing or failing is one sample. With `--trials N` each cell runs N
times (each trial a fresh environment for a benchmark task) and reads:

- `passed` of `trials`: the count, always shown as counts (4/6), never a bare percentage;
- pass@1, the mean (4/6); pass^N, whether all N passed; pass@N, whether any did;
- flaky: the trials disagree (some passed, some failed);
- the spread of steps, tokens, cost and time: median and range;
- a 95% interval for the pass rate by Wilson's score method (Wilson 1927; Newcombe 1998, method 3), which
  stays inside [0, 1] and says something at N = 3.

The cell passes when its pass rate is at least the threshold (1.0 by default: every trial).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..accounting import run_cost
from .pinned import Failure

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for `passed` of `n` (no continuity correction); (0, 1) for n = 0."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= passed <= n:
        raise ValueError(f"{passed} passed of {n} trials")
    p = passed / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if passed == 0 else max(0.0, centre - half)  # exact at the ends, not a rounding error away
    high = 1.0 if passed == n else min(1.0, centre + half)
    return low, high


def pass_hat_k(passed: int, n: int, k: int) -> float:
    """τ-bench's pass^k of one task from `passed` of `n` trials: the chance that k trials drawn without
    replacement all pass, C(passed, k) / C(n, k); for k = n, 1 when every trial passed, else 0."""
    if not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n, got k={k}, n={n}")
    return math.comb(passed, k) / math.comb(n, k)


@dataclass(frozen=True)
class Spread:
    """The median and range of one measure over the trials; None where a trial has no value."""

    median: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, values: list[float | None]) -> Spread:
        known = [v for v in values if v is not None]
        if not known or len(known) < len(values):
            return cls(None, None, None)  # a cost unknown for one trial is unknown for the spread
        return cls(statistics.median(known), min(known), max(known))

    def words(self, unit: str = "", digits: int = 0) -> str:
        if self.median is None:
            return "unknown"

        def shown(v: float) -> str:
            return f"{v:,.{digits}f}{unit}"

        if shown(self.low) == shown(self.high):  # a range that rounds to one figure says that figure once
            return shown(self.median)
        return f"{shown(self.median)} ({shown(self.low)}–{shown(self.high)})"


@dataclass(frozen=True)
class TrialStats:
    """What a cell's trials say together."""

    passed: int
    trials: int
    steps: Spread
    tokens: Spread
    cost_usd: Spread
    wall_s: Spread

    @property
    def pass_at_1(self) -> float:
        return self.passed / self.trials if self.trials else 0.0

    @property
    def all_passed(self) -> bool:  # pass^N
        return self.passed == self.trials

    @property
    def any_passed(self) -> bool:  # pass@N
        return self.passed > 0

    @property
    def flaky(self) -> bool:
        return 0 < self.passed < self.trials

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passed, self.trials)

    def words(self) -> str:
        """In one line: `4/6 passed, flaky · pass@1 0.67, pass^6 no, pass@6 yes · 95% Wilson 0.30–0.90 · ...`."""
        low, high = self.interval
        n = self.trials
        head = f"{self.passed}/{n} passed" + (", flaky" if self.flaky else "")
        rates = f"pass@1 {self.pass_at_1:.2f}, pass^{n} {'yes' if self.all_passed else 'no'}, "
        rates += f"pass@{n} {'yes' if self.any_passed else 'no'}"
        spread = (
            f"steps {self.steps.words()} · tokens {self.tokens.words()} · cost {self.cost_usd.words(digits=4)}"
            f" · time {self.wall_s.words(' s', 1)}"
        )
        return f"{head} · {rates} · 95% Wilson interval {low:.2f}–{high:.2f} · {spread}"


def stats(trials: list) -> TrialStats:
    """The TrialStats of a cell's trial cells (agentcore.testing.runner.Cell)."""
    runs = [t.run for t in trials]
    return TrialStats(
        passed=sum(t.passed for t in trials),
        trials=len(trials),
        steps=Spread.of([len(r.steps) if r is not None else None for r in runs]),
        tokens=Spread.of([r.usage.total_tokens if r is not None else None for r in runs]),
        cost_usd=Spread.of([run_cost(r) if r is not None else None for r in runs]),
        wall_s=Spread.of([t.wall_s for t in trials]),
    )


def threshold_failure(passed: int, n: int, threshold: float) -> Failure | None:
    """Why a cell's trials fail it (a pass rate under the threshold), or None when they pass it."""
    if n and passed / n >= threshold:
        return None
    return Failure("trials", f"{passed}/{n} passed, under the pass threshold of {threshold:g}")
