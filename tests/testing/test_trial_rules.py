"""The rules of repeated trials, the matrix and its scoreboard at their limits, on cells and runs made here: what
a cell's trials say together, when a cell passes its threshold, which trial stands for it, how many failed and
errored, the scoreboard's totals and lines, the bounds a test run is held to, and which runs a judge and a
benchmark's grader are asked of."""

from __future__ import annotations

import dataclasses
import re
import threading
import time

import pytest
from support.judge_server import JudgeServer, says
from support.runs import priced_run

from agentcore.errors import ProviderError, UsageError
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall, UserMessage, Violation
from agentcore.providers import create_provider
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.steps import FINAL_ANSWER_TOOL
from agentcore.testing import benchmarks
from agentcore.testing.expectations import BenchmarkRef, Expectations, JudgeExpect
from agentcore.testing.judges import Judging
from agentcore.testing.pinned import Failure, PinnedTest
from agentcore.testing.runner import (
    MAX_TRIALS,
    Cell,
    Matrix,
    combine_trials,
    departure_step,
    junit_xml,
    parse_config,
    reference_departure,
    reference_turn,
    replay_failures,
    results_json,
    run_cell,
    run_matrix,
    said_call,
)
from agentcore.testing.scoreboard import Score, floor_line, scoreboard, table, time_line
from agentcore.testing.trials import Spread, TrialStats, pass_hat_k, stats, threshold_failure, wilson
from agentcore.tools import tool

WRONG = Failure("answer", "'381' does not contain '391'")
DOWN = Failure("setup", "the provider did not start")


def _cell(test="t", config="c", *, failures=(), run: Run | None = None, wall_s=0.0) -> Cell:
    return Cell(test, config, run=run, failures=list(failures), wall_s=wall_s)


def _errored(reply: str = "boom") -> Cell:
    run = Run.start("hi", RunConfig(provider="openai", model="gpt-4o-mini"))
    run.stop_reason, run.error = "error", reply
    return _cell(failures=[Failure("run", reply)], run=run)


# -- the statistics --------------------------------------------------------------------------------------------


def test_pass_hat_k_is_asked_of_k_from_1_to_n_only():
    assert pass_hat_k(2, 3, 1) == pytest.approx(2 / 3) and pass_hat_k(3, 3, 3) == 1
    for k in (0, 4):
        with pytest.raises(ValueError, match=f"k={k}, n=3"):
            pass_hat_k(2, 3, k)


def test_the_wilson_interval_takes_a_count_from_0_to_n_and_nothing_of_no_trials():
    assert wilson(0, 1)[0] == 0.0 and wilson(1, 1)[1] == 1.0
    assert wilson(1, 2) == pytest.approx((0.0945, 0.9055), abs=1e-4)  # Wilson's interval of 1 in 2
    assert wilson(2, 0) == wilson(0, -1) == (0.0, 1.0)
    for passed in (-1, 4):
        with pytest.raises(ValueError, match=f"{passed} passed of 3 trials"):
            wilson(passed, 3)


def test_one_trial_narrows_the_wilson_interval_and_no_trials_leave_it_whole():
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(1, 1) == pytest.approx((0.2065, 1.0), abs=1e-4)
    assert wilson(0, 1) == pytest.approx((0.0, 0.7935), abs=1e-4)


def test_a_spread_of_nothing_is_unknown_and_one_of_values_says_its_median_and_range():
    assert Spread.of([]) == Spread(None, None, None) and Spread.of([None]).words() == "unknown"
    assert Spread.of([4, 1, 2, 10]) == Spread(3, 1, 10)  # the median of an even count: the middle two's mean
    assert Spread.of([1234.5, 1000]).words(" s", 1) == "1,117.2 s (1,000.0 s–1,234.5 s)"


@pytest.mark.parametrize(
    ("passed", "trials", "flaky", "every", "any_"),
    [(0, 3, False, False, False), (1, 3, True, False, True), (2, 3, True, False, True), (3, 3, False, True, True)],
)
def test_trials_are_flaky_only_when_some_passed_and_some_failed(passed, trials, flaky, every, any_):
    unknown = Spread.of([])
    s = TrialStats(passed, trials, unknown, unknown, unknown, unknown)
    assert (s.flaky, s.all_passed, s.any_passed, s.pass_at_1) == (flaky, every, any_, passed / trials)


def test_no_trials_pass_at_a_rate_of_nothing():
    unknown = Spread.of([])
    assert TrialStats(0, 0, unknown, unknown, unknown, unknown).pass_at_1 == 0.0


def test_a_cells_trials_read_in_one_line_their_counts_rates_interval_and_spreads():
    runs = [priced_run([(1000, 200, 0, 50.0)]), priced_run([(1000, 200, 0, 50.0), (3000, 100, 0, 50.0)])]
    trials = [_cell(run=runs[0], wall_s=0.25), _cell(run=runs[1], wall_s=1.0, failures=[WRONG])]
    s = stats(trials)
    assert (s.passed, s.trials) == (1, 2)
    assert (s.steps, s.tokens) == (Spread(1.5, 1, 2), Spread(2750, 1200, 4300))
    assert s.wall_s == Spread(0.625, 0.25, 1.0) and s.cost_usd.low < s.cost_usd.high
    said = s.words()
    assert said.startswith(
        "1/2 passed, flaky · pass@1 0.50, pass^2 no, pass@2 yes · 95% Wilson interval 0.09–0.91 · "
        "steps 2 (1–2) · tokens 2,750 (1,200–4,300) · cost "
    )
    assert said.endswith(" · time 0.6 s (0.2 s–1.0 s)")
    assert stats([_cell(failures=[DOWN])]).cost_usd.words() == "unknown"  # a trial that made no run


@pytest.mark.parametrize(
    ("passed", "n", "threshold", "holds"),
    [(3, 6, 0.5, True), (2, 6, 0.5, False), (6, 6, 1.0, True), (5, 6, 1.0, False), (0, 0, 0.5, False)],
)
def test_a_cell_passes_at_its_threshold_exactly_and_fails_under_it(passed, n, threshold, holds):
    found = threshold_failure(passed, n, threshold)
    assert (found is None) == holds
    if not holds:
        assert str(found) == f"trials: {passed}/{n} passed, under the pass threshold of {threshold:g}"


# -- a cell and its trials -------------------------------------------------------------------------------------


def test_the_first_failing_trial_stands_for_the_cell_with_the_threshold_first_and_every_trials_time():
    first, failing, other = _cell(wall_s=1.0), _cell(failures=[WRONG], wall_s=2.0), _cell(failures=[DOWN], wall_s=4.0)
    failing.departed_at, failing.reference_move = 2, "it answered, with no call left to make"
    cell = combine_trials([first, failing, other], 1.0)
    assert [str(f) for f in cell.failures] == [
        "trials: 1/3 passed, under the pass threshold of 1",
        str(WRONG),
    ]
    assert (cell.departed_at, cell.reference_move, cell.wall_s) == (2, failing.reference_move, 7.0)
    assert cell.trials == [first, failing, other]
    passing = combine_trials([first, failing, other], 1 / 3)
    assert passing.passed and passing.departed_at == 2  # passed at its threshold: still the failing trial shown
    alike = combine_trials([first, _cell(wall_s=3.0)], 1.0)
    assert alike.passed and alike.failures == [] and alike.wall_s == 4.0


def test_a_cell_errored_only_when_it_failed_for_want_of_a_verdict():
    assert _cell(failures=[DOWN]).errored  # no run: the provider did not start
    assert _errored().errored  # the run ended in an error
    finished = priced_run([(10, 2, 0, 5.0)])
    assert not _cell(failures=[WRONG], run=finished).errored  # a run that answered wrong
    assert not _cell(run=finished).errored and not _cell().errored  # no failure, no error
    both = combine_trials([_errored(), _errored()], 1.0)
    assert both.errored
    assert not combine_trials([_errored(), _cell(failures=[WRONG], run=finished)], 1.0).errored
    assert not combine_trials([_cell(), _cell()], 1.0).errored


def test_a_cell_counts_its_failed_and_errored_trials_and_says_none_when_all_passed():
    wrong = _cell(failures=[WRONG], run=priced_run([(10, 2, 0, 5.0)]))
    assert _cell().trial_counts == "" and combine_trials([_cell(), _cell()], 1.0).trial_counts == ""
    assert combine_trials([_cell(), wrong], 1.0).trial_counts == "1 failed of 2 trials"
    assert combine_trials([_errored(), _cell()], 1.0).trial_counts == "1 errored of 2 trials"
    assert combine_trials([wrong, _errored(), _cell()], 1.0).trial_counts == "1 failed and 1 errored of 3 trials"


def test_a_cells_reasons_are_counted_most_frequent_first_then_in_order_of_their_words():
    b, a = Failure("b", "x"), Failure("a", "x")
    trials = [_cell(failures=[b]), _cell(failures=[a]), _cell(), _cell(failures=[b]), _cell(failures=[WRONG])]
    assert combine_trials(trials, 1.0).reasons == [("b: x", 2), ("a: x", 1), (str(WRONG), 1)]
    assert _cell(failures=[WRONG, DOWN]).reasons == [(str(WRONG), 1)]  # one trial: its first failure
    assert _cell().reasons == []


# -- where a run left its reference or its pinned run ------------------------------------------------------------


def test_a_references_move_is_shown_whole_up_to_300_characters_then_cut():
    assert said_call(None) == "it answered, with no call left to make"
    fits = ToolCall(id="1", name="f", arguments={"k": "é" * 288})  # f({"k": "…"}) is 300 characters
    assert len(said_call(fits)) == 300 and said_call(fits).endswith('é"})') and "\\u" not in said_call(fits)
    over = ToolCall(id="1", name="f", arguments={"k": "é" * 289})
    assert said_call(over) == 'f({"k": "' + "é" * 289 + '"…'  # 300 characters, the last of them "…"
    assert said_call(ToolCall(id="1", name="f", arguments={"b": 1, "a": 2})) == 'f({"a": 2, "b": 1})'


def _run_of(*turns) -> Run:
    run = Run.start("go", RunConfig(provider="scripted", model="m"))
    run.messages = [UserMessage(content="go")]
    for t in turns:
        run.messages.append(t)
    return run


def test_a_run_leaves_its_reference_at_a_call_it_did_not_make_next_or_an_answer_before_its_last_call():
    a, b = ToolCall(id="1", name="a", arguments={}), ToolCall(id="2", name="b", arguments={"x": 1})
    reference = [[a, b]]
    kept = _run_of(AssistantMessage(content="", tool_calls=[a]), AssistantMessage(content="", tool_calls=[b]))
    assert reference_turn(reference, kept) is None
    early = _run_of(AssistantMessage(content="", tool_calls=[a]), AssistantMessage(content="done"))
    assert reference_turn(reference, early) == (2, b)  # answered with b still to call
    other = _run_of(AssistantMessage(content="", tool_calls=[b]))
    assert reference_turn(reference, other) == (1, a)
    extra = _run_of(AssistantMessage(content="", tool_calls=[a, b, a]))
    assert reference_turn(reference, extra) == (1, None)  # a call past the reference's last
    second = _run_of(AssistantMessage(content="", tool_calls=[a, b]), UserMessage(content="more"))
    second.messages.append(AssistantMessage(content="", tool_calls=[a]))
    assert reference_turn(reference, second) == (2, None)  # a turn the reference has no calls for
    answered = _run_of(*kept.messages[1:], AssistantMessage(content="done"))
    assert reference_turn(reference, answered) is None  # an answer once every reference call is made
    each_turn = _run_of(AssistantMessage(content="", tool_calls=[a]), UserMessage(content="again"))
    each_turn.messages.append(AssistantMessage(content="", tool_calls=[a]))
    assert reference_turn([[a], [a]], each_turn) is None  # a user turn starts its count of calls made anew


def test_a_runs_departure_from_its_reference_is_the_step_of_its_first_wrong_move_and_none_while_it_keeps_to_it():
    a, b = ToolCall(id="1", name="a", arguments={}), ToolCall(id="2", name="b", arguments={"x": 1})
    kept = _run_of(AssistantMessage(content="", tool_calls=[a]), AssistantMessage(content="", tool_calls=[b]))
    assert reference_departure([[a, b]], kept) is None
    assert reference_departure([[a, b]], _run_of(AssistantMessage(content="", tool_calls=[b]))) == 1
    early = _run_of(AssistantMessage(content="", tool_calls=[a]), AssistantMessage(content="done"))
    assert reference_departure([[a, b]], early) == 2
    assert reference_departure([[a]], kept) == 2  # a call where the reference answered


def test_a_move_made_before_the_first_user_message_belongs_to_no_turn_of_the_reference():
    a = ToolCall(id="1", name="a", arguments={})
    called = Run.start("go", RunConfig(provider="scripted", model="m"))
    called.messages = [AssistantMessage(content="", tool_calls=[a])]
    assert reference_turn([[a]], called) == (1, None)  # the reference made no call there
    answered = Run.start("go", RunConfig(provider="scripted", model="m"))
    answered.messages = [AssistantMessage(content="hello"), UserMessage(content="go")]
    answered.messages.append(AssistantMessage(content="", tool_calls=[a]))
    assert reference_turn([[a]], answered) is None  # an answer where the reference had nothing to call


def test_a_replayed_run_that_differs_says_where_and_cuts_each_text_at_100_characters():
    pinned = _run_of(AssistantMessage(content="x" * 100), AssistantMessage(content="y" * 101))
    same = _run_of(*pinned.messages[1:])
    assert replay_failures(pinned, same) == []
    short = _run_of(pinned.messages[1])
    assert [f.message for f in replay_failures(pinned, short)] == [
        "the run ended at message 2; the pinned run went on to 3"
    ]
    changed = _run_of(pinned.messages[1], AssistantMessage(content="z" * 100))
    (said,) = replay_failures(pinned, changed)
    assert said.message == f"message 2 (assistant) differs from the pinned run: {'z' * 100!r}, was '{'y' * 99}…"
    longer = _run_of(*pinned.messages[1:], AssistantMessage(content="more"))
    assert replay_failures(pinned, longer)[0].message.endswith(", was nothing")


# -- the matrix, and the bounds a test run is held to ----------------------------------------------------------------


def test_the_matrix_marks_each_cell_in_a_column_at_least_five_wide_with_the_do_nothing_column_for_tasks():
    flaky = combine_trials([_cell(), _cell(failures=[WRONG])], 0.5)
    stopped = _cell(failures=[Failure("stopped", "not run: the test run was stopped")])
    cells = [[_cell(), _cell(failures=[WRONG], run=priced_run([(1, 1, 0, 1.0)]))], [stopped, _cell(failures=[DOWN])]]
    matrix = Matrix(["t", "a-long-test"], ["c", "d"], cells, floor=[None, True])
    assert matrix.floor_count == (1, 1)
    assert matrix.table().splitlines() == [
        "test         c        d      no call",
        "t            pass     FAIL",
        "a-long-test  STOPPED  ERROR  pass",
    ]
    assert Matrix(["t"], ["c"], [[flaky]], floor=[None]).table().splitlines() == [
        "test  c",
        "t     1/2 pass flaky",
    ]
    assert Matrix(["t"], ["c"], [[flaky]], floor=[None]).floor_count is None


def test_a_test_run_takes_1_to_1000_trials_and_a_threshold_above_0_up_to_1():
    needs = PinnedTest(name="n", prompt="hi", tools=["missing_tool"])  # refused after the bounds are checked
    spec = [parse_config("scripted")]
    for trials, threshold in ((1, 1.0), (MAX_TRIALS, 1.0), (2, 1e-9)):
        with pytest.raises(UsageError, match="needs the tool 'missing_tool'"):
            run_matrix([needs], spec, tools=[], trials=trials, pass_threshold=threshold)
    for trials, threshold, said in ((0, 1.0, "--trials"), (MAX_TRIALS + 1, 1.0, "--trials"), (2, 0, "--pass")):
        with pytest.raises(UsageError, match=said):
            run_matrix([needs], spec, tools=[], trials=trials, pass_threshold=threshold)
    with pytest.raises(UsageError, match="--pass-threshold .* not 1.0001"):
        run_matrix([needs], spec, tools=[], pass_threshold=1.0001)
    with pytest.raises(UsageError, match="at least one test and one configuration"):
        run_matrix([], spec)
    with pytest.raises(UsageError, match="at least one test and one configuration"):
        run_matrix([needs], [])


# -- the scoreboard ----------------------------------------------------------------------------------------------


def _board_matrix() -> Matrix:
    """Two tests on two configurations, two trials a cell; the first test a task that passes doing nothing."""
    cheap = [priced_run([(100, 10, 0, 5.0)]), priced_run([(200, 20, 0, 5.0), (300, 30, 0, 5.0)])]
    dear = [priced_run([(1000, 100, 0, 5.0)], model="an-unpriced-model"), priced_run([(10, 1, 0, 5.0)])]
    cells = [
        [
            combine_trials([_cell(run=cheap[0], wall_s=1.0), _cell(run=cheap[1], wall_s=2.0)], 1.0),
            combine_trials([_cell(run=dear[0], wall_s=0.5), _cell(failures=[DOWN])], 1.0),
        ],
        [
            combine_trials([_cell(wall_s=0.25), _cell(failures=[WRONG], wall_s=0.25)], 0.5),
            combine_trials([_cell(run=dear[1], wall_s=3.0), _cell(wall_s=1.0)], 1.0),
        ],
    ]
    return Matrix(["task", "plain"], ["cheap", "dear"], cells, wall_s=2.5, floor=[True, None], trials=2)


def test_the_scoreboard_adds_up_each_configurations_runs_trials_and_passes_above_the_floor():
    cheap, dear = scoreboard(_board_matrix())
    assert (cheap.config, cheap.passed, cheap.tests, cheap.steps) == ("cheap", 2, 2, 3)
    assert (cheap.input_tokens, cheap.output_tokens, cheap.wall_s) == (600, 60, 3.5)
    assert (cheap.trials, cheap.trials_passed, cheap.all_trials_passed, cheap.flaky) == (2, 3, 1, 1)
    assert cheap.passed_doing_nothing == 1 and cheap.cost_usd > 0
    assert (dear.passed, dear.passed_doing_nothing, dear.steps, dear.input_tokens) == (1, 0, 2, 1010)
    assert dear.cost_usd is None and dear.cost_text == "unknown"  # one run's price is unknown
    assert (dear.trials_passed, dear.all_trials_passed, dear.flaky, dear.wall_s) == (3, 1, 1, 4.5)
    assert cheap.pass_at_1 == 3 / 4 and cheap.pass_rate == 1.0


def test_a_score_of_no_tests_is_0_and_a_known_cost_is_shown_to_four_places():
    empty = Score("c", passed=0, tests=0, steps=0, input_tokens=0, output_tokens=0, cost_usd=0.00012, wall_s=0.0)
    assert (empty.pass_at_1, empty.pass_rate, empty.cost_text) == (0.0, 0.0, "$0.0001")


def test_the_scoreboards_table_has_trial_columns_past_one_trial_and_passes_above_the_floor_with_one():
    matrix = _board_matrix()
    scores = scoreboard(matrix)
    lines = table(scores, matrix.floor_count).splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "configuration",
        "passed",
        "above floor",
        "trials passed",
        "pass@1",
        "pass^2",
        "flaky",
        "steps",
        "input tokens",
        "output tokens",
        "cost",
        "run time",
    ]
    assert lines[2].split() == ["dear", "1/2", "(50%)", "1/1", "3/4", "0.75", "1/2", "1", "2", "1010", "101"] + [
        "unknown",
        "4.5",
        "s",
    ]
    assert lines[1].startswith("cheap          2/2 (100%)  1/1 ")
    one = Score("c", passed=1, tests=1, steps=1, input_tokens=5, output_tokens=1, cost_usd=None, wall_s=0.04)
    assert table([one]).splitlines() == [
        "configuration  passed      steps  input tokens  output tokens  cost     run time",
        "c              1/1 (100%)  1      5             1              unknown  0.0 s",
    ]


def test_the_floor_and_time_lines_are_said_only_where_they_mean_something():
    matrix = _board_matrix()
    assert floor_line(matrix).startswith("floor: 1 of 1 benchmark tasks pass when the model makes no call")
    assert floor_line(Matrix(["t"], ["c"], [[_cell()]], floor=[None])) is None
    assert time_line(matrix) == (
        "run time: each configuration's 4 runs' own times added up; the runs ran concurrently, and the whole "
        "matrix took 2.50 s"
    )
    assert time_line(Matrix(["t"], ["c"], [[_cell()]], wall_s=1.0)) is None
    assert "each configuration's 2 runs'" in time_line(Matrix(["t", "u"], ["c"], [[_cell()], [_cell()]]))
    assert "each configuration's 2 runs'" in time_line(Matrix(["t"], ["c"], [[_cell()]], trials=2))


def test_a_score_a_spread_and_a_cells_statistics_are_values_no_reader_can_change():

    unknown = Spread.of([])
    one = Score("c", passed=1, tests=1, steps=1, input_tokens=5, output_tokens=1, cost_usd=None, wall_s=0.0)
    for value, name in ((one, "passed"), (unknown, "median"), (TrialStats(0, 1, *[unknown] * 4), "passed")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, 2)


def test_the_json_record_keeps_a_tests_letters_as_they_are():

    written = results_json(Matrix(["Zürich"], ["c"], [[_cell("Zürich")]]))
    assert '"test": "Zürich"' in written and "\\u00fc" not in written


# -- one cell: what stops it before, during and after its run ---------------------------------------------------


_WEATHER = PinnedTest(name="weather", prompt="What is the weather in Paris?", tools=["get_weather"])


def test_a_cell_stopped_before_it_starts_makes_no_provider_and_one_not_stopped_runs():

    made: list[str] = []

    def factory(name, model, **options):
        made.append(name)
        return create_provider(name, model, **options)

    stopped = threading.Event()
    stopped.set()
    cell = run_cell(_WEATHER, parse_config("scripted:weather"), factory=factory, cancel=stopped)
    assert (cell.run, made) == (None, [])
    assert [(f.expectation, f.message) for f in cell.failures] == [("stopped", "not run: the test run was stopped")]
    cell = run_cell(_WEATHER, parse_config("scripted:weather"), factory=factory, cancel=threading.Event())
    assert made == ["scripted"] and cell.passed and cell.run.stop_reason == "answer" and cell.wall_s > 0


def test_a_cell_stopped_during_its_run_keeps_the_run_and_says_after_how_many_steps():

    stop = threading.Event()

    @tool(name="get_weather")
    def get_weather(city: str) -> str:
        """The weather, and the test run is stopped while it is asked."""
        stop.set()
        return f"{city}: 18 C"

    cell = run_cell(_WEATHER, parse_config("scripted:weather"), tools=[get_weather], cancel=stop)
    assert cell.run is not None and cell.run.stop_reason == "cancelled" and len(cell.run.steps) == 1
    failures = [(f.expectation, f.message) for f in cell.failures]
    assert failures == [("stopped", "stopped after 1 step: the test run was stopped")]
    assert cell.wall_s > 0
    stop.clear()

    def ask(city: str, at: int) -> AssistantMessage:
        return AssistantMessage(tool_calls=(ToolCall(id=f"c{at}", name="get_weather", arguments={"city": city}),))

    turns = [ask("Paris", 1), ask("Rome", 2), AssistantMessage(content="Mild in both.")]
    calls: list[str] = []

    @tool(name="get_weather")
    def second_stops(city: str) -> str:
        """The weather; the test run is stopped at the second call, a step later."""
        calls.append(city)
        if len(calls) == 2:
            stop.set()
        return f"{city}: 18 C"

    replay = lambda *a, **kw: ScriptedProvider(replay=turns)  # noqa: E731
    cell = run_cell(_WEATHER, parse_config("scripted:weather"), tools=[second_stops], cancel=stop, factory=replay)
    assert [f.message for f in cell.failures] == ["stopped after 2 steps: the test run was stopped"]
    assert len(cell.run.steps) == 2


def test_a_provider_that_cannot_start_fails_the_cells_setup_and_bad_input_stops_the_matrix():

    def down(*args, **options):
        raise ProviderError("no server at 127.0.0.1:9", provider="openai")

    cell = run_cell(_WEATHER, parse_config("openai:gpt-4o-mini"), factory=down)
    assert cell.run is None and cell.errored
    assert [(f.expectation, f.message) for f in cell.failures] == [("setup", "openai: no server at 127.0.0.1:9")]

    def refused(*args, **options):
        raise UsageError("no such model")

    with pytest.raises(UsageError, match="no such model"):
        run_cell(_WEATHER, parse_config("openai:gpt-4o-mini"), factory=refused)


def test_a_message_list_the_provider_refuses_before_any_call_ends_the_cells_run_in_error():

    class Refusing(ScriptedProvider):
        def preflight(self, request):
            return [Violation(0, "a system message must come first")]

    cell = run_cell(_WEATHER, parse_config("scripted:weather"), factory=lambda *a, **kw: Refusing("weather"))
    assert cell.run is not None and cell.run.stop_reason == "error"
    assert cell.run.error == "message 0: a system message must come first" and cell.run.steps == []
    assert not cell.passed


def _replayed(*turns: AssistantMessage, prompt: str = "What is the weather in Paris?", steps: int = 20) -> Run:

    @tool(name="get_weather")
    def get_weather(city: str) -> str:
        """The weather."""
        return f"{city}: 18 C"

    run = Run.start(prompt, RunConfig(provider="scripted", model="replay", max_steps=steps))
    return Agent(ScriptedProvider(replay=list(turns)), [get_weather]).run(run)


def _asks(city: str, at: int) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=f"c{at}", name="get_weather", arguments={"city": city}),))


def test_a_run_departs_from_its_pinned_run_at_the_step_whose_call_or_tools_first_differ():

    done = AssistantMessage(content="Mild.")
    pinned = _replayed(_asks("Paris", 1), _asks("Rome", 2), done)  # messages: user, a1, t1, a2, t2, answer
    assert [s.message_count for s in pinned.steps] == [1, 3, 5]
    assert departure_step(pinned, _replayed(_asks("Paris", 1), _asks("Rome", 2), done)) is None
    assert departure_step(pinned, _replayed(_asks("Oslo", 1), _asks("Rome", 2), done)) == 1  # message 1
    assert departure_step(pinned, _replayed(_asks("Paris", 1), _asks("Oslo", 2), done)) == 2  # message 3, exactly
    assert departure_step(pinned, _replayed(_asks("Paris", 1), _asks("Rome", 2), AssistantMessage(content="x"))) == 3
    assert departure_step(pinned, _replayed(_asks("Paris", 1), done)) == 2  # ended a step early
    assert departure_step(pinned, _replayed(done, prompt="Weather in Oslo?")) == 1  # the prompt: before any step
    cut = _replayed(_asks("Paris", 1), _asks("Rome", 2), done, steps=1)  # the pinned run's first three messages
    assert len(cut.messages) == 3 and departure_step(pinned, cut) == 1  # the pinned run went on past its last step
    longer = _replayed(_asks("Paris", 1), _asks("Rome", 2), _asks("Oslo", 3), done)
    assert departure_step(pinned, longer) == 3  # it called again where the pinned run answered
    unrun = Run.start("Weather in Oslo?", RunConfig(provider="scripted", model="replay"))
    assert departure_step(pinned, unrun) is None  # no step to blame


def test_the_junit_record_of_trials_says_each_trial_flaky_failures_and_a_single_runs_steps():
    import xml.etree.ElementTree as ET

    ok, wrong = priced_run([(1, 1, 0, 1.0)]), priced_run([(1, 1, 0, 1.0), (2, 1, 0, 1.0)])
    trials = [_cell(run=ok, wall_s=1.0), _cell(failures=[WRONG], run=wrong, wall_s=2.0), _cell(wall_s=0.5)]
    flaky = combine_trials(trials, 0.6)  # 2 of 3: passes at 0.6
    short = combine_trials([_cell("u", failures=[WRONG]), _cell("u", failures=[DOWN])], 0.6)  # 0 of 2
    matrix = Matrix(["t", "u"], ["c"], [[flaky], [short]], wall_s=4.0)
    matrix.trials, matrix.pass_threshold = 3, 0.6
    root = ET.fromstring(junit_xml(matrix))
    (suite,) = root.iter("testsuite")
    props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
    assert props == [("trials", "3"), ("pass_threshold", "0.6"), ("passed: t", "2/3"), ("passed: u", "0/2")]
    case_t, case_u = suite.iter("testcase")
    (flaky_failure,) = case_t.iter("flakyFailure")
    assert (flaky_failure.get("message"), flaky_failure.get("type")) == (trials[1].first_failure, "expectation")
    assert flaky_failure.text == str(WRONG) and not list(case_t.iter("failure"))
    assert case_t.find("system-out").text.splitlines() == [
        f"trial 1: pass · run {ok.id}",
        f"trial 2: FAIL · run {wrong.id}",
        "trial 3: pass · run -",
    ]
    verdicts = [(child.tag, child.get("type")) for child in case_u if child.tag != "system-out"]
    assert verdicts == [("error", "provider") if short.errored else ("failure", "expectation")]
    assert (root.get("failures"), root.get("errors")) == (
        str(len(matrix.failed) - len(matrix.errors)),
        str(len(matrix.errors)),
    )

    two = Matrix(["t"], ["c"], [[combine_trials(trials[:2], 0.5)]])
    two.trials, two.pass_threshold = 2, 0.5
    assert ("trials", "2") in [(p.get("name"), p.get("value")) for p in ET.fromstring(junit_xml(two)).iter("property")]

    single = Matrix(["t"], ["c"], [[_cell(run=wrong, wall_s=1.25)]])
    root = ET.fromstring(junit_xml(single))
    assert not list(root.iter("properties")) and not list(root.iter("flakyFailure"))
    assert root.find("testsuite/testcase/system-out").text == f"run {wrong.id} · 2 steps · stop: answer"
    assert root.find("testsuite/testcase").get("time") == "1.250"
    one_step = Matrix(["t"], ["c"], [[_cell(run=ok)]])
    assert (
        ET.fromstring(junit_xml(one_step)).find("testsuite/testcase/system-out").text.endswith(" 1 step · stop: answer")
    )
    assert ET.fromstring(junit_xml(Matrix(["t"], ["c"], [[_cell()]]))).find("testsuite/testcase/system-out") is None


def test_a_matrix_tells_of_each_cell_once_as_its_last_trial_ends_and_times_the_whole():
    seen: list[tuple[int, int, Cell]] = []
    tests = [_WEATHER, PinnedTest(name="rome", prompt="What is the weather in Rome?", tools=["get_weather"])]
    specs = [parse_config("scripted:weather")]

    started = time.perf_counter()
    matrix = run_matrix(tests, specs, on_cell=lambda i, j, cell: seen.append((i, j, cell)))
    assert matrix.wall_s <= time.perf_counter() - started  # the matrix's own time, within the call's
    assert sorted((i, j) for i, j, _ in seen) == [(0, 0), (1, 0)]
    for i, j, cell in seen:
        assert cell is matrix.cells[i][j] and cell.trials == [] and cell.run is not None
    assert matrix.wall_s >= max(c.wall_s for row in matrix.cells for c in row) > 0

    seen.clear()
    matrix = run_matrix(tests[:1], specs, trials=3, on_cell=lambda i, j, cell: seen.append((i, j, cell)))
    ((i, j, cell),) = seen  # once, for the cell's three trials together
    assert (i, j, len(cell.trials), cell.stats.passed) == (0, 0, 3, 3)
    assert [t.run.id for t in cell.trials] == [t.run.id for t in matrix.cells[0][0].trials]


def _judge_says(verdict: str, asked: list[str]):
    """A judge's provider factory: each judge it builds is a scripted model that gives `verdict` at once."""

    said = {"verdict": verdict, "reason": "as the rubric asks", "messages": []}
    answer = AssistantMessage(tool_calls=(ToolCall(id="v", name=FINAL_ANSWER_TOOL, arguments=said),))

    def factory(name, model, **options):
        asked.append(name)
        return ScriptedProvider(replay=[answer])

    return factory


def _refusing(*args, **options):
    """A provider that refuses the run's messages before any call: the run ends in an error."""

    class Refusing(ScriptedProvider):
        def preflight(self, request):
            return [Violation(0, "a system message must come first")]

    return Refusing("weather")


def _judged(model: str = "scripted") -> PinnedTest:

    judge = JudgeExpect(name="answered", rubric="The answer gives the weather in Paris.", model=model)
    return _WEATHER.model_copy(update={"expect": Expectations(judge=[judge])})


def test_a_judge_is_asked_of_a_run_that_ended_and_never_of_one_that_errored():

    asked: list[str] = []
    judging = Judging(factory=_judge_says("yes", asked))
    ended = run_cell(_judged(), parse_config("scripted:weather"), judging=judging)
    assert ended.run.stop_reason == "answer" and asked == ["scripted"]
    assert [v.passed for v in ended.verdicts] == [True] and ended.passed
    errored = run_cell(_judged(), parse_config("scripted:weather"), factory=_refusing, judging=judging)
    assert errored.run.stop_reason == "error" and errored.verdicts == [] and asked == ["scripted"]


def test_a_matrix_given_no_judging_shares_one_across_its_trials_and_asks_the_one_it_is_given():

    spec = [parse_config("scripted:weather")]
    with JudgeServer(lambda prompt: says("yes", "it gives the weather", [])) as server:
        test = _judged(server.model())
        matrix = run_matrix([test], spec, trials=3, max_workers=1)  # one trial after another
        assert server.calls == 1 and matrix.cells[0][0].passed  # trials of an unchanged run share one verdict
        built: list[str] = []

        def factory(name, model, **options):
            built.append(name)
            return create_provider(name, model, **options)

        matrix = run_matrix([test], spec, trials=2, max_workers=1, judging=Judging(factory=factory))
        assert built == ["openai"] and server.calls == 2 and matrix.cells[0][0].passed


def test_a_cell_whose_settings_its_model_refuses_is_not_run_and_one_whose_settings_it_takes_is():

    asked: list[int] = []

    class Haiku(ScriptedProvider):
        """The weather scenario, played as a model whose catalogue entry takes the default temperature only."""

        name = "anthropic"

        def complete(self, request, on_text=None):
            asked.append(len(request.messages))
            return super().complete(request, on_text)

    def haiku(*args, **options):
        return Haiku("claude-haiku-5-5", scenario="weather")

    warm = _WEATHER.model_copy(update={"temperature": 0.3})
    cell = run_cell(warm, parse_config("anthropic:claude-haiku-5-5"), factory=haiku)
    assert (cell.run, asked) == (None, []) and cell.errored
    assert [(f.expectation, f.message) for f in cell.failures] == [
        ("setup", "anthropic: claude-haiku-5-5 takes the default temperature (1) only: leave it unset")
    ]
    cell = run_cell(_WEATHER, parse_config("anthropic:claude-haiku-5-5"), factory=haiku)
    assert cell.passed and cell.run.stop_reason == "answer" and asked


# -- a benchmark task's cell, on a task made here ------------------------------------------------------------------


class _Task:
    """A benchmark task made here, in place of one a package gives: one tool, a reference call and an answer for each
    user turn, and a grader that notes each run it is asked about and fails it with `why`."""

    def __init__(self, turns: int, graded: list[Run], why: str | None = None) -> None:
        from agentcore.tools import tool

        @tool(name="get_balance")
        def get_balance() -> str:
            """The account's balance."""
            return "100.00"

        self.tools = [get_balance]
        self.turns, self.graded, self.why = turns, graded, why

    def offered(self, turn: int) -> list[str]:
        return ["get_balance"]

    def begin_turn(self, turn: int) -> None:
        pass

    def reference(self) -> list[list[ToolCall]]:
        return [[ToolCall(id=f"r{i}", name="get_balance", arguments={})] for i in range(self.turns + 1)]

    def reference_answer(self, turn: int) -> str:
        return f"Turn {turn}: your balance is 100.00."

    def grade(self, run: Run) -> str | None:
        self.graded.append(run)
        return self.why


def _task_test(monkeypatch, turns: list[str], graded: list[Run], why: str | None = None, **expect) -> PinnedTest:

    monkeypatch.setattr(benchmarks, "episode", lambda ref: _Task(len(turns), graded, why))
    ref = BenchmarkRef(name="bfcl", task_id="balance_0", category="made_here")
    return PinnedTest(
        name="balance", prompt="What is my balance?", turns=turns, benchmark=ref, expect=Expectations(**expect)
    )


def test_the_ground_truth_says_the_references_answer_to_the_prompt_and_to_each_scripted_turn(monkeypatch):

    for turns in ([], ["And now?", "And once more?"]):
        test = _task_test(monkeypatch, turns, [])
        cell = run_cell(test, parse_config("ground-truth"))
        answers = [m.content for m in cell.run.messages if isinstance(m, AssistantMessage) and not m.tool_calls]
        assert answers == [f"Turn {i}: your balance is 100.00." for i in range(1 + len(turns))]
        assert cell.passed and cell.departed_at is None


def test_the_benchmarks_grader_is_asked_of_a_run_that_ended_when_the_test_expects_it_and_never_of_one_that_errored(
    monkeypatch,
):

    graded: list[Run] = []
    test = _task_test(monkeypatch, [], graded, "the balance was never read", benchmark=True)
    ended = run_cell(test, parse_config("ground-truth"))
    assert ended.run.stop_reason == "answer" and graded == [ended.run]
    assert [(f.expectation, f.message) for f in ended.failures] == [("benchmark (bfcl)", "the balance was never read")]
    errored = run_cell(test, parse_config("scripted"), factory=_refusing)
    assert errored.run.stop_reason == "error" and graded == [ended.run]
    assert "benchmark (bfcl)" not in [f.expectation for f in errored.failures]
    unexpected = run_cell(
        _task_test(monkeypatch, [], graded, "the balance was never read"), parse_config("ground-truth")
    )
    assert unexpected.passed and graded == [ended.run]
