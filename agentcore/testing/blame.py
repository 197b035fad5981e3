"""Which step broke a run: fork it before each chosen step, continue each fork N times, and see where the chance
of passing falls.

A fork before step k keeps the history exactly as step k's model call was sent (compare.Origin, as Compare from
step k forks) and makes step k and everything after it again. Its N continuations are graded like a pinned test
(testing.pinned.check): a test file's expectations, or a text the answer must hold. The fork before step k makes
step k again and the fork before step k+1 keeps the run's own step k, so where the pass rate falls most between
them, the run's own step k is to blame; past the last step stands the run itself, graded once.

Each pass rate comes with Wilson's 95% interval (testing.trials.wilson), as `agentcore test --trials` gives it.
Bisection finds the fall in about log2(steps) forks when the rate falls once and stays down, and says when the
rates it read do not fall steadily. The model calls are counted before any is made and refused past a ceiling.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..accounting import run_cost
from ..compare import ColumnSpec, Origin
from ..errors import AgentcoreError, UsageError
from ..loop import Agent
from ..messages import AssistantMessage
from ..request import settings_refusal
from ..run import Run
from .expectations import AnswerExpect, Expectations
from .pinned import Failure, check
from .runner import MAX_TRIALS, MAX_WORKERS
from .trials import wilson

MAX_CALLS = 200  # model calls one blame makes unless its caller raises the ceiling
Factory = Callable[..., Any]


@dataclass(frozen=True)
class Grader:
    """What a continuation must do to pass: a pinned test's expectations, or a text its answer holds."""

    expect: Expectations
    source: str  # in words: `the test weather-in-paris`, `an answer holding "Tokyo"`

    @classmethod
    def of_text(cls, text: str) -> Grader:
        """The expectation that the answer holds `text`."""
        if not text.strip():
            raise UsageError("--expect needs a text the answer should hold")
        return cls(Expectations(answer=AnswerExpect(contains=[text])), f"an answer holding {text!r}")

    def failures(self, run: Run) -> list[Failure]:
        return check(self.expect, run, run_cost(run))


@dataclass(frozen=True)
class Plan:
    """The forks one blame makes and the model calls they take, counted before any is made."""

    steps: tuple[int, ...]  # the fork steps chosen (with bisection: every step it may choose among)
    trials: int
    bisect: bool
    calls: int  # each fork's trials × the steps the run made from there: what the forks take if they go as it went
    most: int  # each fork's trials × the steps its budget leaves: what they take if every one uses it all

    @property
    def forks(self) -> int:
        """The forks it makes at most: each chosen step, or with bisection about log2(steps) + 1."""
        if not self.bisect or len(self.steps) == 1:
            return len(self.steps)
        return min(len(self.steps), 1 + math.ceil(math.log2(len(self.steps))))

    def words(self) -> str:
        which = "by bisection among steps" if self.bisect else "before steps"
        shown = ", ".join(map(str, self.steps[:20])) + (", …" if len(self.steps) > 20 else "")
        return (
            f"{self.forks} forks {which} {shown}, {self.trials} trials each: {self.calls:,} model calls as the run "
            f"went (at most {self.most:,} if every continuation uses its whole budget)"
        )


def plan(run: Run, steps: Sequence[int] | None, trials: int, bisect: bool = False) -> Plan:
    """The forks and the model calls of a blame of `run`; bad input is a UsageError naming it."""
    have = len(run.steps)
    if have == 0:
        raise UsageError(f"run {run.id} has no steps: there is nothing to fork")
    if not 1 <= trials <= MAX_TRIALS:
        raise UsageError(f"--trials is a whole number from 1 to {MAX_TRIALS}, not {trials}")
    if bisect and steps:
        raise UsageError("--steps and --bisect choose the forks two ways: give one")
    chosen = tuple(sorted(set(steps))) if steps else tuple(range(1, have + 1))
    wrong = [k for k in chosen if not 1 <= k <= have]
    if wrong:
        raise UsageError(f"run {run.id} has {have} step{'s' if have != 1 else ''}: there is no step {wrong[0]}")
    went = {k: trials * (have - k + 1) for k in chosen}
    most = {k: trials * (Origin(run, k).budget - k + 1) for k in chosen}
    count = Plan(chosen, trials, bisect, 0, 0).forks
    # with bisection, the dearest forks it could choose
    return Plan(
        chosen,
        trials,
        bisect,
        sum(sorted(went.values(), reverse=True)[:count]),
        sum(sorted(most.values(), reverse=True)[:count]),
    )


def own_spec(run: Run) -> ColumnSpec:
    """The run's own configuration, as a fork goes on with it: provider, model (a scenario's), base URL."""
    going_on = run.config.next_model
    return ColumnSpec(going_on.provider, going_on.model or None, run.config.base_url)


@dataclass(frozen=True)
class ForkRate:
    """One fork step's continuations: how many passed of how many, and the runs they made."""

    step: int
    passed: int
    trials: int
    run_ids: tuple[str, ...]
    alike: bool  # every trial made the same run: the model answered alike each time
    failure: str | None = None  # the most frequent reason a continuation failed

    @property
    def rate(self) -> float:
        return self.passed / self.trials if self.trials else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passed, self.trials)

    def words(self) -> str:
        low, high = self.interval
        return f"step {self.step}: {self.passed}/{self.trials} passed · rate {self.rate:.2f} · 95% {low:.2f}–{high:.2f}"


@dataclass(frozen=True)
class Reply:
    """A step's reply in words (its text and calls), and how many passing continuations made it."""

    text: str
    count: int = 1


@dataclass
class Blame:
    """What a blame found: each fork's rate, the run's own verdict, and the step where the rate fell most."""

    run_id: str
    config: str
    grader: str
    plan: Plan
    rates: list[ForkRate]  # in step order
    run_passed: bool  # the run itself, graded: the point past its last step
    run_failure: str | None = None
    blamed: int | None = None  # the step whose own reply, once kept, made the rate fall most
    fall: float = 0.0  # how far the rate fell there
    next_point: int | None = None  # the fork step (or the run itself, past its last) the fall is measured to
    monotone: bool = True  # the rates read never rise from one fork step to a later one
    reply: Reply | None = None  # the blamed step's own reply
    instead: list[Reply] = field(default_factory=list)  # what passing continuations did at that step
    runs: list[Run] = field(default_factory=list)  # every continuation, each a fork with its parent step
    wall_s: float = 0.0
    stopped: bool = False  # the caller's cancel came before every trial ended: the counts are of those that did

    @property
    def forks(self) -> int:
        return len(self.rates)

    @property
    def alike(self) -> bool:
        """Whether every trial of every fork with more than one made the same run (greedy decoding, a script)."""
        several = [r for r in self.rates if r.trials > 1]
        return bool(several) and all(r.alike for r in several)

    def to_dict(self) -> dict[str, Any]:
        """The blame as JSON data: the plan, each fork's counts and interval, the blamed step and its replies."""
        return {
            "run_id": self.run_id,
            "config": self.config,
            "grader": self.grader,
            "run_passed": self.run_passed,
            "run_failure": self.run_failure,
            "trials": self.plan.trials,
            "bisect": self.plan.bisect,
            "max_calls": self.plan.calls,
            "forks": self.forks,
            "rates": [
                {
                    "step": r.step,
                    "passed": r.passed,
                    "trials": r.trials,
                    "rate": r.rate,
                    "wilson_95": list(r.interval),
                    "alike": r.alike,
                    "failure": r.failure,
                    "run_ids": list(r.run_ids),
                }
                for r in self.rates
            ],
            "blamed_step": self.blamed,
            "fall": self.fall,
            "fall_to": self.next_point,
            "monotone": self.monotone,
            "reply": self.reply.text if self.reply else None,
            "instead": [{"reply": r.text, "count": r.count} for r in self.instead],
            "wall_s": round(self.wall_s, 3),
            "stopped": self.stopped,
        }


def said(run: Run, step: int) -> str | None:
    """What `run` replied at `step`, in words: its text, then each call as `name(arguments)`; None if it made none."""
    record = run.steps[step - 1] if 1 <= step <= len(run.steps) else None
    if record is None or record.message_count >= len(run.messages):
        return None
    reply = run.messages[record.message_count]
    if not isinstance(reply, AssistantMessage):
        return None
    calls = [f"{c.name}({json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)})" for c in reply.tool_calls]
    return " → ".join(p for p in [reply.content.strip(), *calls] if p) or "(an empty reply)"


class _Continuations:
    """Forks a run before a step on one configuration and continues each fork to its end, N at a time."""

    def __init__(
        self,
        run: Run,
        spec: ColumnSpec,
        factory: Factory,
        tools: Sequence[Any],
        workers: int,
        cancel: threading.Event | None = None,
    ) -> None:
        self.run, self.spec, self.factory, self.tools, self.cancel = run, spec, factory, list(tools), cancel
        self.workers = max(1, min(workers, MAX_WORKERS))
        self.made: list[Run] = []
        self._lock = threading.Lock()

    def one(self, step: int, trial: int) -> Run:
        """Trial `trial` of the fork before `step`, continued to its end; a provider's failure ends it as an error."""
        origin = Origin(self.run, step)
        try:
            provider = self.factory(self.spec.provider, self.spec.model, base_url=self.spec.base_url)
        except AgentcoreError as exc:
            fork = origin.fork(self.spec, self.spec.model or "", f"blame trial {trial}")
            fork.stop_reason, fork.error = "error", str(exc)
            return fork
        model = getattr(provider, "model", None) or self.spec.model or ""
        fork = origin.fork(self.spec, model, f"blame trial {trial}")
        try:
            Agent(provider, self.tools).run(fork, self.cancel)
        except AgentcoreError as exc:  # a message list the provider refuses, before any call
            fork.stop_reason, fork.error = "error", str(exc)
        return fork

    def rates(self, steps: Sequence[int], trials: int, grader: Grader) -> list[ForkRate]:
        """Each step's fork continued `trials` times, all at once within the worker limit."""
        jobs = [(k, t) for k in steps for t in range(1, trials + 1)]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(jobs)), thread_name_prefix="agentcore-blame") as pool:
            runs = list(pool.map(lambda job: self.one(*job), jobs))
        with self._lock:
            self.made += runs
        found = []
        for k in steps:
            # a trial stopped before its end (the caller's time ran out) is no verdict: it is left out of the count
            mine = [r for (step, _), r in zip(jobs, runs, strict=True) if step == k and r.stop_reason != "cancelled"]
            verdicts = [grader.failures(r) for r in mine]
            reasons = Counter(str(v[0]) for v in verdicts if v)
            found.append(
                ForkRate(
                    step=k,
                    passed=sum(not v for v in verdicts),
                    trials=len(mine),
                    run_ids=tuple(r.id for r in mine),
                    alike=bool(mine) and all(r.messages == mine[0].messages for r in mine[1:]),
                    failure=reasons.most_common(1)[0][0] if reasons else None,
                )
            )
        return found


def _fall(rates: list[ForkRate], run_passed: bool, last_step: int) -> tuple[int | None, float, int | None]:
    """The fork step after which the rate falls most, the fall, and the point it falls to (the run past its last)."""
    points = [(r.step, r.rate) for r in rates] + [(last_step + 1, 1.0 if run_passed else 0.0)]
    best: tuple[int | None, float, int | None] = (None, 0.0, None)
    for (step, rate), (after, later) in zip(points, points[1:], strict=False):
        if rate - later > best[1]:
            best = (step, rate - later, after)
    return best


def _monotone(rates: list[ForkRate], run_passed: bool) -> bool:
    """Whether the rates read, in step order and then the run's own verdict, never rise past their noise: a later
    fork's interval wholly above an earlier one's is a rise."""
    verdict = 1.0 if run_passed else 0.0
    spans = [r.interval for r in rates] + [(verdict, verdict)]
    return not any(later[0] > earlier[1] for i, earlier in enumerate(spans) for later in spans[i + 1 :])


def _bisect(work: _Continuations, steps: tuple[int, ...], trials: int, grader: Grader) -> list[ForkRate]:
    """Forks chosen by bisection: the first step, then halves towards where the rate crosses halfway down."""
    read: dict[int, ForkRate] = {}

    def rate(k: int) -> float:
        if k not in read:
            read[k] = work.rates([k], trials, grader)[0]
        return read[k].rate

    lo, hi = 0, len(steps)  # indices into steps; hi past the end stands for the run itself, a failure
    top = rate(steps[lo])
    if top > 0:
        halfway = top / 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if rate(steps[mid]) > halfway:
                lo = mid
            else:
                hi = mid
    return [read[k] for k in sorted(read)]


def blame(
    run: Run,
    grader: Grader,
    *,
    spec: ColumnSpec | None = None,
    trials: int = 10,
    steps: Sequence[int] | None = None,
    bisect: bool = False,
    max_calls: int = MAX_CALLS,
    factory: Factory | None = None,
    tools: Sequence[Any] | None = None,
    temperature: float | None = None,
    max_workers: int = MAX_WORKERS,
    cancel: threading.Event | None = None,
) -> Blame:
    """Fork `run` before each chosen step, continue each fork `trials` times on `spec` (default: the run's own
    configuration), grade every continuation, and name the step where the pass rate falls most.

    Refuses (UsageError) before any model call when its model calls, counted as the run went, are over
    `max_calls`, or when the configuration refuses the run's settings. A run that passes is not blamed: no fork
    is made. `cancel`, once set, stops the trials running after their phase; a trial stopped is not counted.
    """
    from ..providers import create_provider
    from ..toolbox import built_in

    chosen = plan(run, steps, trials, bisect)
    verdict = grader.failures(run)
    if verdict and chosen.calls > max_calls:
        raise UsageError(
            f"{chosen.words()}: over the ceiling of {max_calls:,}; give fewer --trials or --steps, --bisect, "
            f"or raise --max-calls"
        )
    spec = spec or own_spec(run)
    if temperature is not None:
        spec = ColumnSpec(spec.provider, spec.model, spec.base_url, temperature=temperature)
    probe = Origin(run, chosen.steps[0]).fork(spec, spec.model or "", "check")
    refused = settings_refusal(probe, spec.provider, spec.model or run.config.model)
    if refused:
        raise UsageError(refused)
    label = spec.name + (f" · temperature {spec.temperature:g}" if spec.temperature is not None else "")
    found = Blame(run.id, label, grader.source, chosen, [], not verdict, str(verdict[0]) if verdict else None)
    if found.run_passed:
        return found
    started = time.perf_counter()
    chosen_tools = built_in(run.config.tools) if tools is None else tools
    work = _Continuations(run, spec, factory or create_provider, chosen_tools, max_workers, cancel)
    if bisect:
        found.rates = _bisect(work, chosen.steps, trials, grader)
    else:
        found.rates = work.rates(chosen.steps, trials, grader)
    found.runs = list(work.made)
    found.blamed, found.fall, found.next_point = _fall(found.rates, found.run_passed, len(run.steps))
    found.monotone = _monotone(found.rates, found.run_passed)
    if found.blamed is not None:
        _replies(found, run, grader)
    found.wall_s = time.perf_counter() - started
    found.stopped = cancel is not None and cancel.is_set()
    return found


def _replies(found: Blame, run: Run, grader: Grader) -> None:
    """The blamed step's own reply, and what the passing continuations of its fork replied there instead."""
    k = found.blamed
    own = said(run, k)
    found.reply = Reply(own) if own is not None else None
    ids = set(next(r.run_ids for r in found.rates if r.step == k))
    passing = [r for r in found.runs if r.id in ids and not grader.failures(r)]
    counted = Counter(text for text in (said(r, k) for r in passing) if text is not None)
    found.instead = [Reply(text, n) for text, n in counted.most_common(3)]
