"""Running pinned tests: each test against each configuration, concurrently, as a pass/fail matrix.

A configuration is `replay` (the model's turns come from the pinned run and the tools run for
real: deterministic and offline), `ground-truth` (a benchmark task's reference calls, played through
the same loop, tools and grader as a model) or a live one, `PROVIDER[:MODEL][@BASE_URL]` as compare
writes it. A test with scripted user turns sends each when the model has answered the one before.
Every cell runs on its own thread with its own provider and agent, as compare's columns do, so the
matrix lasts as long as its slowest cell.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .. import toolbox
from ..accounting import run_cost
from ..compare import ColumnSpec, column_labels, parse_spec
from ..errors import AgentcoreError, UsageError
from ..hooks.guard import call_key
from ..loop import Agent
from ..messages import AssistantMessage, ToolCall, ToolMessage, UserMessage, first_difference
from ..providers import create_provider, get_info
from ..providers.reference import GROUND_TRUTH, ReferenceProvider
from ..providers.scripted import ScriptedProvider
from ..request import settings_refusal
from ..run import Run, RunConfig
from ..secrets import scrub_text
from ..steps import FINAL_ANSWER_TOOL
from ..tools import Tool
from . import benchmarks, users
from .benchmarks import Episode
from .judges import Judging, Verdict, judge_test
from .pinned import Failure, PinnedTest, check
from .trials import TrialStats, threshold_failure
from .trials import stats as trial_stats

REPLAY = "replay"
MAX_WORKERS = 16
Factory = Callable[..., Any]


def parse_config(text: str) -> ColumnSpec:
    """`replay`, `ground-truth`, or `PROVIDER[:MODEL][@BASE_URL]`; an unknown provider is a UsageError."""
    spec = parse_spec(text)
    if spec.provider not in (REPLAY, GROUND_TRUTH):
        get_info(spec.provider)
    elif spec.model or spec.base_url:
        raise UsageError(f"config {text!r}: {spec.provider} takes no model or base URL")
    return spec


@dataclass
class Cell:
    """One test on one configuration: the run it made and the expectations it missed."""

    test: str
    config: str
    run: Run | None = None
    failures: list[Failure] = field(default_factory=list)
    wall_s: float = 0.0
    departed_at: int | None = None  # the step where the run left the pinned run's path
    # a benchmark task's cell that left the reference: what the reference did at that step, in words
    reference_move: str | None = None
    # with trials: each trial's own cell, in the order they were started; this cell stands for them all (its run,
    # failures and departure are the first failing trial's, else the first trial's)
    trials: list[Cell] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)  # each judge's verdict on the run (agentcore.testing.judges)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def errored(self) -> bool:
        """Whether the cell failed for want of a verdict: its provider could not start, or failed during the run
        (with trials: every trial did)."""
        if self.trials:
            return bool(self.failures) and all(t.errored for t in self.trials)
        return bool(self.failures) and (self.run is None or self.run.stop_reason == "error")

    @functools.cached_property
    def stats(self) -> TrialStats:
        """What the cell's trials say together (one trial: itself); read once the cell has ended, and kept:
        the scoreboard, the matrix, JUnit and JSON each read it."""
        return trial_stats(self.trials or [self])

    @property
    def flaky(self) -> bool:
        return self.stats.flaky

    @property
    def first_failure(self) -> str | None:
        return str(self.failures[0]) if self.failures else None

    @property
    def trial_counts(self) -> str:
        """How many of the trials failed and how many errored, in words (`1 failed and 1 errored of 3 trials`): a cell
        mixing both says both; "" for a cell without trials, or whose every trial passed."""
        failing = [t for t in self.trials if not t.passed]
        if not failing:
            return ""
        errored = sum(t.errored for t in failing)
        failed = len(failing) - errored
        counts = [f"{failed} failed"] if failed else []
        counts += [f"{errored} errored"] if errored else []
        return f"{' and '.join(counts)} of {len(self.trials)} trials"

    @property
    def reasons(self) -> list[tuple[str, int]]:
        """Why the failing trials failed, each reason with how many trials it stopped, most frequent first (one
        trial: its own first failure): what a cell under its threshold says beside its count."""
        failing = [t for t in (self.trials or [self]) if not t.passed]
        counted = Counter(t.first_failure or "" for t in failing)
        return sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))


MAX_TRIALS = 1000  # trials of one cell at most


def combine_trials(trials: list[Cell], threshold: float) -> Cell:
    """One cell standing for its trials: it passes when their pass rate is at least `threshold`."""
    first = trials[0]
    shown = next((t for t in trials if not t.passed), first)
    cell = Cell(
        first.test,
        first.config,
        run=shown.run,
        wall_s=sum(t.wall_s for t in trials),
        departed_at=shown.departed_at,
        reference_move=shown.reference_move,
        trials=list(trials),
        verdicts=shown.verdicts,
    )
    passed = sum(t.passed for t in trials)
    below = threshold_failure(passed, len(trials), threshold)
    cell.failures = [] if below is None else [below, *shown.failures]
    return cell


def departure_step(pinned: Run, run: Run) -> int | None:
    """The step of `run` whose model call or tools first made its messages differ from the pinned run's; None if none."""
    at = first_difference(pinned.messages, run.messages)
    if at >= len(pinned.messages) and at >= len(run.messages):
        return None
    if not run.steps:
        return None
    started = [s.index for s in run.steps if s.message_count <= at]
    return started[-1] if started else 1


def reference_departure(reference: list[list[ToolCall]], run: Run) -> int | None:
    """The step whose calls first left the reference's (a call it did not make next, or an answer before
    the turn's last reference call); None when the run kept to it."""
    found = reference_turn(reference, run)
    return None if found is None else found[0]


def reference_turn(reference: list[list[ToolCall]], run: Run) -> tuple[int, ToolCall | None] | None:
    """Where the run left the reference: the step, and the call the reference made there (None where the
    reference had no call left in that turn, so it answered); None when the run kept to it."""
    turn, done, step = -1, 0, 0
    for m in run.messages:
        if isinstance(m, UserMessage):
            turn, done = turn + 1, 0
        elif isinstance(m, AssistantMessage):
            step += 1
            want = reference[turn] if 0 <= turn < len(reference) else []
            calls = [c for c in m.tool_calls if c.name != FINAL_ANSWER_TOOL]
            if not calls and done < len(want):
                return step, want[done]
            for call in calls:
                if done >= len(want) or call_key(call) != call_key(want[done]):
                    return step, want[done] if done < len(want) else None
                done += 1
    return None


def said_call(call: ToolCall | None) -> str:
    """A reference's move in words: `get_balance({})`, or that it answered."""
    if call is None:
        return "it answered, with no call left to make"
    text = f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)})"
    return text if len(text) <= 300 else text[:299] + "…"


def _tools(test: PinnedTest, tools: Sequence[Tool] | None) -> list[Tool]:
    if test.benchmark is not None:
        return []  # a benchmark's tools are bound to each run's own environment (see prepare)
    if tools is None:
        return toolbox.get_tools(test.tools)
    by_name = {t.name: t for t in tools}
    missing = [n for n in test.tools if n not in by_name]
    if missing:
        raise UsageError(f"test {test.name!r} needs the tool {missing[0]!r}, which was not given")
    return [by_name[n] for n in test.tools]


def prepare(
    test: PinnedTest, spec: ColumnSpec, *, tools: Sequence[Tool] | None = None, factory: Factory | None = None
) -> tuple[Agent, Run, Episode | None]:
    """The agent, the fresh run and (for a benchmark task) its fresh episode for one cell.

    A provider that cannot start raises (an AgentcoreError).
    """
    chosen = _tools(test, tools)
    episode = benchmarks.episode(test.benchmark) if test.benchmark is not None else None
    if episode is not None:
        chosen = [t for t in episode.tools if t.name in episode.offered(0)]
    if spec.provider == GROUND_TRUTH:
        if episode is None:
            raise UsageError(f"test {test.name!r} is not a benchmark task: ground-truth plays a benchmark's calls")
        answers = [episode.reference_answer(i) for i in range(1 + len(test.turns))]
        provider: Any = ReferenceProvider(episode.reference(), answers)
    elif spec.provider == REPLAY:
        if test.pinned is None:
            raise UsageError(f"test {test.name!r} has no pinned run to replay")
        turns = [m for m in test.pinned.messages if isinstance(m, AssistantMessage)]
        provider = ScriptedProvider(replay=turns)
    else:
        options = {"scenario": spec.model} if spec.provider == "scripted" and spec.model else {}
        provider = (factory or create_provider)(spec.provider, spec.model, base_url=spec.base_url, **options)
    config = RunConfig.made_for(
        provider.name,
        getattr(provider, "model", None) or spec.model or "",
        chosen,
        spec.base_url,
        system_prompt=test.system_prompt,
        max_steps=test.max_steps,
        temperature=test.temperature,
        final_answer_schema=test.final_answer_schema,
        mocks=list(test.mocks),
        hooks=test.hooks,
        # a benchmark's tools keep state: the same call may rightly answer anew, so repeats run (and are counted)
        loop_guard="warn" if episode is not None else None,
    )
    run = Run.start(test.prompt, config, title=f"test {test.name} · {spec.name}")
    return Agent(provider, chosen), run, episode


def play(
    agent: Agent,
    run: Run,
    test: PinnedTest,
    episode: Episode | None = None,
    cancel: threading.Event | None = None,
    draw: users.Draw | None = None,
) -> None:
    """Run the test's prompt, then each scripted user turn once the model has answered the one before, then its user's
    (users.play); a benchmark task's episode offers each turn its own tools."""
    if episode is None:
        users.play(agent, run, test, draw, cancel)
        return
    offered = {t.name: t for t in episode.tools}

    def begin_turn(i: int) -> None:
        episode.begin_turn(i)
        agent.tools = {n: offered[n] for n in episode.offered(i)}
        run.config = run.config.model_copy(update={"tools": [t.spec() for t in agent.tools.values()]})

    users.play(agent, run, test, draw, cancel, begin_turn)


def run_cell(
    test: PinnedTest,
    spec: ColumnSpec,
    *,
    tools: Sequence[Tool] | None = None,
    factory: Factory | None = None,
    cancel: threading.Event | None = None,
    judging: Judging | None = None,
    draw: users.Draw | None = None,
) -> Cell:
    """Run one test on one configuration and check its expectations; a provider that cannot start fails the cell.

    `cancel` set before the cell starts leaves it not run; set during its run, the run stops after its phase.
    """
    cell = Cell(test.name, spec.name)
    if cancel is not None and cancel.is_set():
        cell.failures = [Failure("stopped", "not run: the test run was stopped")]
        return cell
    started = time.perf_counter()
    try:
        agent, run, episode = prepare(test, spec, tools=tools, factory=factory)
    except UsageError:
        raise  # bad input (a tool unknown, nothing to replay) stops the whole matrix
    except AgentcoreError as exc:
        cell.failures = [Failure("setup", str(exc))]
        return cell
    refused = settings_refusal(run, run.config.provider, run.config.model)
    if refused:  # settings the model refuses: the cell is not run, as when its provider cannot start
        cell.failures = [Failure("setup", refused)]
        return cell
    try:
        play(agent, run, test, episode, cancel, draw)
    except AgentcoreError as exc:  # a message list the provider refuses, before any call
        run.stop_reason, run.error = "error", str(exc)
    cell.run = run
    cell.wall_s = time.perf_counter() - started
    if run.stop_reason == "cancelled":
        steps = f"{len(run.steps)} step" + ("" if len(run.steps) == 1 else "s")
        cell.failures = [Failure("stopped", f"stopped after {steps}: the test run was stopped")]
        return cell
    cell.failures = check(test.expect, run, run_cost(run))
    if test.expect.judge and run.stop_reason != "error":  # a judge reads what the run did; a failed run did nothing
        cell.verdicts = judge_test(test, run, judging)
        cell.failures += [v.failure for v in cell.verdicts if v.failure is not None]
    if episode is not None:
        if test.expect.benchmark and run.stop_reason != "error":
            why = episode.grade(run)
            if why is not None:
                cell.failures.append(Failure(f"benchmark ({test.benchmark.name})", why))
        try:
            found = reference_turn(episode.reference(), run)
        except (ValueError, SyntaxError):
            found = None  # no reference to depart from
        if found is not None:
            cell.departed_at, cell.reference_move = found[0], said_call(found[1])
    if test.pinned is not None:
        cell.departed_at = departure_step(test.pinned, run)
        if spec.provider == REPLAY:
            cell.failures[:0] = replay_failures(test.pinned, run)
    return cell


def replay_failures(pinned: Run, run: Run) -> list[Failure]:
    """In replay the model's turns are the pinned ones: a message that differs was made by the tools or the loop."""
    at = first_difference(pinned.messages, run.messages)
    if at >= len(pinned.messages) and at >= len(run.messages):
        return []
    if at >= len(run.messages):
        return [Failure("replay", f"the run ended at message {at}; the pinned run went on to {len(pinned.messages)}")]
    new = run.messages[at]
    what = f"tool {new.name}" if isinstance(new, ToolMessage) else new.role
    was = f"{pinned.messages[at].text!r}" if at < len(pinned.messages) else "nothing"
    return [
        Failure("replay", f"message {at} ({what}) differs from the pinned run: {_cut(new.text)!r}, was {_cut(was)}")
    ]


def _cut(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


@dataclass
class Matrix:
    """Tests × configurations: every cell, the labels, and how long the whole took."""

    tests: list[str]
    configs: list[str]
    cells: list[list[Cell]]  # [test][config]
    wall_s: float = 0.0
    # per test: whether its benchmark's grader passes it when the model does nothing (None: not a benchmark task)
    floor: list[bool | None] = field(default_factory=list)
    trials: int = 1  # how many times each cell ran
    pass_threshold: float = 1.0  # the share of its trials a cell must pass

    @property
    def floor_count(self) -> tuple[int, int] | None:
        """How many benchmark tasks pass doing nothing, of how many; None when no test is a benchmark task."""
        known = [f for f in self.floor if f is not None]
        return (sum(known), len(known)) if known else None

    @property
    def passed(self) -> bool:
        return all(c.passed for row in self.cells for c in row)

    @property
    def failed(self) -> list[Cell]:
        """Every cell that did not pass: a missed expectation or an error."""
        return [c for row in self.cells for c in row if not c.passed]

    @property
    def errors(self) -> list[Cell]:
        """The cells that ended in an error rather than a missed expectation."""
        return [c for c in self.failed if c.errored]

    def table(self) -> str:
        """The matrix as text: one row per test, one column per configuration, `pass`, `FAIL` or `ERROR`;
        with benchmark tasks, a last column `no call`: the task's verdict when the model does nothing."""
        floor = self.floor if self.floor_count is not None else []
        configs = [*self.configs, *(["no call"] if floor else [])]
        rows = []
        for i, row in enumerate(self.cells):
            marks = [_mark(c) for c in row]
            if floor:
                marks.append("" if floor[i] is None else "pass" if floor[i] else "fail")
            rows.append(marks)
        first = max(len("test"), *(len(t) for t in self.tests))
        widths = [max(len(c), 5, *(len(r[k]) for r in rows)) for k, c in enumerate(configs)]
        lines = ["  ".join(["test".ljust(first), *(c.ljust(w) for c, w in zip(configs, widths, strict=True))])]
        for name, marks in zip(self.tests, rows, strict=True):
            lines.append("  ".join([name.ljust(first), *(m.ljust(w) for m, w in zip(marks, widths, strict=True))]))
        return "\n".join(line.rstrip() for line in lines)


def _mark(cell: Cell) -> str:
    if cell.trials:  # `4/6 pass`, `4/6 FAIL flaky`: the counts, and whether the trials disagree
        s = cell.stats
        verdict = "pass" if cell.passed else "ERROR" if cell.errored else "FAIL"
        return f"{s.passed}/{s.trials} {verdict}" + (" flaky" if s.flaky else "")
    if cell.passed:
        return "pass"
    return "STOPPED" if cell.failures[0].expectation == "stopped" else "ERROR" if cell.errored else "FAIL"


def run_matrix(
    tests: Sequence[PinnedTest],
    specs: Sequence[ColumnSpec],
    *,
    tools: Sequence[Tool] | None = None,
    factory: Factory | None = None,
    max_workers: int = MAX_WORKERS,
    on_cell: Callable[[int, int, Cell], None] | None = None,
    cancel: threading.Event | None = None,
    trials: int = 1,
    pass_threshold: float = 1.0,
    users_mode: users.UsersMode = "auto",
    judging: Judging | None = None,
) -> Matrix:
    """Run every test on every configuration, each cell on its own thread; bad input raises before any run.

    With `trials` N > 1 each cell runs N times (a benchmark task on a fresh environment each time) and stands
    for its trials (Cell.trials): it passes when at least `pass_threshold` of them passed.
    `on_cell(test_row, config_column, cell)` is called as each cell ends (with trials, as its last trial
    ends), from the cell's thread. `cancel`, once set, leaves the trials not yet started not run and stops those
    running after their phase; each is a failed trial that says it was stopped, and every trial that ended is kept.
    `judging` says how the tests' judges are asked (shared by every cell: trials of an unchanged run share a verdict).
    """
    if not tests or not specs:
        raise UsageError("a test run needs at least one test and one configuration")
    judging = judging or Judging()
    if not 1 <= trials <= MAX_TRIALS:
        raise UsageError(f"--trials is a whole number from 1 to {MAX_TRIALS}, not {trials}")
    if not 0 < pass_threshold <= 1:
        raise UsageError(f"--pass-threshold is a share of the trials, above 0 and at most 1, not {pass_threshold:g}")
    for test in tests:  # bad input is found before a model is paid for
        _tools(test, tools)
        benchmarks.check_available(test)
        if test.pinned is None and any(s.provider == REPLAY for s in specs):
            hint = f" (a benchmark task: try --config {GROUND_TRUTH})" if test.benchmark is not None else ""
            raise UsageError(f"test {test.name!r} has no pinned run to replay{hint}")
        if test.benchmark is None and any(s.provider == GROUND_TRUTH for s in specs):
            raise UsageError(f"test {test.name!r} is not a benchmark task: ground-truth plays a benchmark's calls")
    draws = users.draws(tests, users_mode, trials)  # a test whose user cannot be played as asked raises here
    labels = column_labels(specs)
    started = time.perf_counter()
    # trial-major: every cell's first trial before any cell's second, so a Stop leaves whole rounds of the matrix
    jobs = [(i, j, t) for t in range(trials) for i in range(len(tests)) for j in range(len(specs))]
    ended: dict[tuple[int, int], list[Cell | None]] = {(i, j): [None] * trials for i, j, _ in jobs}
    lock = threading.Lock()

    def one(job: tuple[int, int, int]) -> Cell:
        i, j, t = job
        cell = run_cell(tests[i], specs[j], tools=tools, factory=factory, cancel=cancel, judging=judging, draw=draws[t])
        cell.config = labels[j]
        with lock:
            ended[(i, j)][t] = cell
            whole = all(c is not None for c in ended[(i, j)])
        if on_cell is not None and whole:
            trial_cells = [c for c in ended[(i, j)] if c is not None]
            on_cell(i, j, trial_cells[0] if trials == 1 else combine_trials(trial_cells, pass_threshold))
        return cell

    workers = max(1, min(max_workers, len(jobs)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentcore-test") as pool:
        floor = pool.map(benchmarks.passes_doing_nothing, tests)
        list(pool.map(one, jobs))

    def cell(i: int, j: int) -> Cell:
        trial_cells = [c for c in ended[(i, j)] if c is not None]
        return trial_cells[0] if trials == 1 else combine_trials(trial_cells, pass_threshold)

    rows = [[cell(i, j) for j in range(len(specs))] for i in range(len(tests))]
    names = [t.name for t in tests]
    matrix = Matrix(names, labels, rows, time.perf_counter() - started, list(floor))
    matrix.trials, matrix.pass_threshold = trials, pass_threshold
    return matrix


# -- JUnit XML ------------------------------------------------------------------------------

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """Text XML 1.0 can hold, without a known secret: other characters written as escapes."""
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], scrub_text(text))


def junit_xml(matrix: Matrix) -> str:
    """The matrix as JUnit XML: a testsuite per configuration, a testcase per test.

    As CI tools read it (Jenkins' junit-10.xsd, GitLab): a missed expectation is a `<failure>`, a cell
    that could not reach a verdict (its provider did not start, or failed mid-run) an `<error>`, and the
    `failures` and `errors` counts of each suite and of the whole say as much.
    """
    root = ET.Element("testsuites", name="agentcore", tests=str(len(matrix.tests) * len(matrix.configs)))
    root.set("failures", str(len(matrix.failed) - len(matrix.errors)))
    root.set("errors", str(len(matrix.errors)))
    root.set("time", f"{matrix.wall_s:.3f}")
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    for j, config in enumerate(matrix.configs):
        column = [row[j] for row in matrix.cells]
        suite = ET.SubElement(root, "testsuite", name=_xml_text(config), tests=str(len(column)))
        suite.set("failures", str(sum(not c.passed and not c.errored for c in column)))
        suite.set("errors", str(sum(c.errored for c in column)))
        suite.set("skipped", "0")
        suite.set("time", f"{sum(c.wall_s for c in column):.3f}")
        suite.set("timestamp", stamp)
        if matrix.trials > 1:  # the trial counts, as a suite's properties (junit-10.xsd gives a testcase none)
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", name="trials", value=str(matrix.trials))
            ET.SubElement(props, "property", name="pass_threshold", value=f"{matrix.pass_threshold:g}")
            for cell in column:
                s = cell.stats
                ET.SubElement(props, "property", name=_xml_text(f"passed: {cell.test}"), value=f"{s.passed}/{s.trials}")
        for cell in column:
            case = ET.SubElement(
                suite, "testcase", name=_xml_text(cell.test), classname=_xml_text(f"agentcore.{config}")
            )
            case.set("time", f"{cell.wall_s:.3f}")
            if not cell.passed:
                kind, why = ("error", "provider") if cell.errored else ("failure", "expectation")
                verdict = ET.SubElement(case, kind, message=_xml_text(cell.first_failure or ""), type=why)
                verdict.text = _xml_text("\n".join(map(str, cell.failures)))
            elif cell.trials:  # passed at its threshold: each failing trial is a flaky failure, as surefire writes it
                for trial in (t for t in cell.trials if not t.passed):
                    flaky = ET.SubElement(
                        case, "flakyFailure", message=_xml_text(trial.first_failure or ""), type="expectation"
                    )
                    flaky.text = _xml_text("\n".join(map(str, trial.failures)))
            out = [
                f"trial {k + 1}: {'pass' if t.passed else 'FAIL'} · run {t.run.id if t.run else '-'}"
                for k, t in enumerate(cell.trials)
            ]
            if cell.run is not None and not cell.trials:
                steps = f"{len(cell.run.steps)} step" + ("" if len(cell.run.steps) == 1 else "s")
                out.append(f"run {cell.run.id} · {steps} · stop: {cell.run.stop_reason}")
            if out:
                ET.SubElement(case, "system-out").text = _xml_text("\n".join(out))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def results_json(matrix: Matrix) -> str:
    """The matrix as JSON: one record per cell with its trials' counts, each trial's outcome and run id."""
    records = []
    for row in matrix.cells:
        for cell in row:
            s = cell.stats
            low, high = s.interval
            trials = cell.trials or [cell]
            records.append(
                {
                    "test": cell.test,
                    "config": cell.config,
                    "trials": s.trials,
                    "passed": s.passed,
                    "pass_threshold": matrix.pass_threshold,
                    "cell_passed": cell.passed,
                    "flaky": s.flaky,
                    "pass_at_1": s.pass_at_1,
                    "pass_hat_n": s.all_passed,
                    "pass_at_n": s.any_passed,
                    "wilson_95": [low, high],
                    "steps": {"median": s.steps.median, "min": s.steps.low, "max": s.steps.high},
                    "tokens": {"median": s.tokens.median, "min": s.tokens.low, "max": s.tokens.high},
                    "cost_usd": {"median": s.cost_usd.median, "min": s.cost_usd.low, "max": s.cost_usd.high},
                    "wall_s": {"median": s.wall_s.median, "min": s.wall_s.low, "max": s.wall_s.high},
                    "outcomes": [
                        {
                            "passed": t.passed,
                            "run_id": t.run.id if t.run is not None else None,
                            "failure": scrub_text(t.first_failure) if t.first_failure else None,
                            "departed_at": t.departed_at,
                            "conversation": users.report(t.run) if t.run is not None else None,
                        }
                        for t in trials
                    ],
                }
            )
    body = {"trials": matrix.trials, "pass_threshold": matrix.pass_threshold, "cells": records}
    return json.dumps(body, indent=1, ensure_ascii=False) + "\n"
