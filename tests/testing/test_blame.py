"""Which step broke a run: forks before each step of the wrong_city run, continued on city_by_city, name step 3."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import pytest
from support.runs import scripted_run

from agentcore import Run, RunConfig, ScriptedProvider
from agentcore.compare import parse_spec
from agentcore.errors import UsageError
from agentcore.messages import AssistantMessage, ToolCall
from agentcore.steps import StepRecord
from agentcore.testing.blame import (
    Blame,
    ForkRate,
    Grader,
    Plan,
    Reply,
    _fall,
    _monotone,
    blame,
    own_spec,
    plan,
    said,
)
from agentcore.testing.expectations import CallExpect, Expectations, Trajectory

RIGHT = parse_spec("scripted:city_by_city")


@pytest.fixture(scope="module")
def failing():
    """A run whose step 3 asks for Kyoto instead of Tokyo, so its answer lacks Tokyo."""
    return scripted_run("wrong_city")


def test_forks_before_the_wrong_call_pass_and_forks_after_it_fail_so_step_3_is_blamed(failing):
    found = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=3)
    assert not found.run_passed and "Tokyo" in found.run_failure
    assert [(r.step, r.passed, r.trials) for r in found.rates] == [(1, 3, 3), (2, 3, 3), (3, 3, 3), (4, 0, 3)]
    assert [r.rate for r in found.rates] == [1.0, 1.0, 1.0, 0.0]
    assert found.blamed == 3 and found.fall == 1.0 and found.next_point == 4 and found.monotone
    assert found.reply.text == 'Next, the weather in Kyoto. → get_weather({"city": "Kyoto"})'
    assert [(r.text, r.count) for r in found.instead] == [
        ('Next, the weather in Tokyo. → get_weather({"city": "Tokyo"})', 3)
    ]
    assert found.alike  # a scripted model answers alike each time


def test_each_rate_carries_its_wilson_interval(failing):
    found = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=5, steps=[3, 4])
    three, four = found.rates
    assert three.interval == pytest.approx((0.5655, 1.0), abs=1e-4)
    assert four.interval == pytest.approx((0.0, 0.4345), abs=1e-4)


def test_every_continuation_is_a_fork_of_the_run_with_its_history_as_sent(failing):
    found = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=2)
    assert len(found.runs) == 8
    for rate in found.rates:
        cut = failing.steps[rate.step - 1].message_count
        mine = [r for r in found.runs if r.id in rate.run_ids]
        assert len(mine) == 2
        for fork in mine:
            assert fork.parent.run_id == failing.id and fork.parent.step == rate.step
            assert fork.messages[:cut] == failing.messages[:cut]
            assert fork.config.provider == "scripted" and fork.config.scenario == "city_by_city"


def test_bisection_names_step_3_in_fewer_forks(failing):
    every = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=2)
    halved = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=2, bisect=True)
    assert halved.blamed == every.blamed == 3
    assert halved.forks == 3 < every.forks == 4
    assert len(halved.runs) == 6 and halved.monotone
    assert [r.step for r in halved.rates] == [1, 3, 4]


def test_on_the_runs_own_model_every_fork_fails_and_no_step_is_blamed(failing):
    found = blame(failing, Grader.of_text("Tokyo"), trials=1)
    assert found.config == "scripted:wrong_city" and [r.rate for r in found.rates] == [0.0] * 4
    assert found.blamed is None and found.fall == 0.0 and found.monotone


def test_rates_that_rise_past_their_intervals_are_said_not_to_fall_steadily():
    rates = [ForkRate(k, passed, 20, (), False) for k, passed in ((1, 19), (2, 2), (3, 18), (4, 0))]
    assert not _monotone(rates, run_passed=False)  # step 3's 18/20 lies wholly above step 2's 2/20
    assert _fall(rates, False, 4) == (3, 0.9, 4)  # the biggest fall, from step 3's fork to step 4's
    noisy = [ForkRate(k, passed, 20, (), False) for k, passed in ((1, 12), (2, 14), (3, 16), (4, 0))]
    assert _monotone(noisy, run_passed=False)  # a rise inside the noise is no rise
    assert _monotone(noisy[:1], run_passed=False) and not _monotone(noisy[3:], run_passed=True)


def test_a_run_that_passes_is_told_so_and_no_fork_is_made(failing):
    found = blame(failing, Grader.of_text("Paris"), spec=RIGHT, trials=50)  # over the ceiling, were it run
    assert found.run_passed and found.blamed is None and found.runs == []


def test_a_pinned_tests_expectations_grade_the_continuations(failing):
    expect = Expectations(
        tool_calls=Trajectory(
            mode="contains", calls=[CallExpect(name="get_weather", args={"equals": {"city": "Tokyo"}})]
        )
    )
    found = blame(failing, Grader(expect, "the test tokyo"), spec=RIGHT, trials=1)
    assert [r.rate for r in found.rates] == [1.0, 1.0, 1.0, 0.0] and found.blamed == 3
    assert "tool_calls" in found.rates[-1].failure


def test_the_model_calls_are_counted_first_and_refused_past_the_ceiling(failing):
    counted = plan(failing, None, 10)
    assert counted.calls == 10 * (4 + 3 + 2 + 1) and counted.most == 10 * (10 + 9 + 8 + 7)
    assert plan(failing, [2, 4], 3).calls == 3 * (3 + 1)
    assert plan(failing, None, 10, bisect=True).forks == 3
    with pytest.raises(UsageError, match="over the ceiling of 50"):
        blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=10, max_calls=50)
    assert blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=10, max_calls=100).blamed == 3


@pytest.mark.parametrize(
    ("steps", "trials", "bisect", "words"),
    [
        ([5], 1, False, "there is no step 5"),
        ([0], 1, False, "there is no step 0"),
        (None, 0, False, "--trials is a whole number"),
        ([2], 1, True, "give one"),
    ],
)
def test_bad_choices_are_one_clear_error(failing, steps, trials, bisect, words):
    with pytest.raises(UsageError, match=words):
        plan(failing, steps, trials, bisect)


def test_the_runs_own_configuration_goes_on_with_its_scenario(failing):
    spec = own_spec(failing)
    assert (spec.provider, spec.model, spec.base_url) == ("scripted", "wrong_city", None)


def test_a_temperature_is_set_on_every_fork(failing):
    found = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=1, steps=[4], temperature=0.7)
    assert found.config == "scripted:city_by_city · temperature 0.7"
    assert all(r.config.temperature == 0.7 for r in found.runs)
    assert isinstance(found.runs[0].messages[-1], AssistantMessage)


# -- the rules at their limits ------------------------------------------------------------------------------------

TOKYO_CALLED = Expectations(
    tool_calls=Trajectory(mode="contains", calls=[CallExpect(name="get_weather", args={"equals": {"city": "Tokyo"}})])
)


def hand_made(*replies: AssistantMessage) -> Run:
    """A run with a step for each reply, recorded as the loop records them: each step's call saw the messages before it."""
    run = Run.start("Where next?", RunConfig(provider="openai", model="gpt-4.1"))
    for index, reply in enumerate(replies, start=1):
        run.steps.append(StepRecord(index=index, provider="openai", model="gpt-4.1", message_count=len(run.messages)))
        run.messages.append(reply)
    return run


def replaying(*kinds: str) -> Callable[..., ScriptedProvider]:
    """A factory whose providers replay, one per trial in turn, the `good` run's replies or the `bad` one's (whose
    step 3 asks for Kyoto): with one worker, the trials' order is the order of `kinds`."""
    transcripts = {
        name: [m for m in scripted_run(scenario).messages if isinstance(m, AssistantMessage)]
        for name, scenario in (("good", "city_by_city"), ("bad", "wrong_city"))
    }
    order = iter(kinds)

    def factory(provider: str, model: str | None, **_: object) -> ScriptedProvider:
        return ScriptedProvider("city_by_city", replay=transcripts[next(order)])

    return factory


def blame_of(rates: list[ForkRate]) -> Blame:
    return Blame("r", "scripted", "g", Plan(tuple(r.step for r in rates), 2, False, 0, 0), rates, run_passed=False)


def test_blames_records_are_values_that_cannot_be_changed(failing):
    records = [
        Grader.of_text("Tokyo"),
        plan(failing, None, 1),
        ForkRate(1, 1, 1, (), True),
        Reply("text"),
    ]
    for record in records:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, dataclasses.fields(record)[0].name, None)


def test_a_plans_words_show_20_steps_and_an_ellipsis_only_past_them():
    def shown(steps: int) -> str:
        words = Plan(tuple(range(1, steps + 1)), 1, False, steps, steps).words()
        return words.split("before steps ")[1].split(", 1 trials each")[0]

    first_twenty = ", ".join(map(str, range(1, 21)))
    assert shown(20) == first_twenty
    assert shown(21) == first_twenty + ", …"


def test_a_run_without_steps_is_refused_and_a_run_of_one_step_is_planned_and_named_in_the_singular():
    empty = Run.start("Hello?", RunConfig(provider="openai", model="gpt-4.1"))
    with pytest.raises(UsageError, match=f"run {empty.id} has no steps: there is nothing to fork"):
        plan(empty, None, 1)
    one = hand_made(AssistantMessage(content="Hello."))
    assert plan(one, None, 3) == Plan((1,), 3, False, 3, 3 * one.config.max_steps)
    with pytest.raises(UsageError, match=f"^run {one.id} has 1 step: there is no step 2$"):
        plan(one, [2], 1)
    two = hand_made(AssistantMessage(content="Hello."), AssistantMessage(content="Again."))
    with pytest.raises(UsageError, match=f"^run {two.id} has 2 steps: there is no step 3$"):
        plan(two, [3], 1)


def test_a_refused_choice_names_the_lowest_step_the_run_lacks(failing):
    with pytest.raises(UsageError, match=f"^run {failing.id} has 4 steps: there is no step 0$"):
        plan(failing, [5, 0], 1)
    with pytest.raises(UsageError, match=f"^run {failing.id} has 4 steps: there is no step 5$"):
        plan(failing, [6, 5, 2], 1)


def test_with_bisection_the_calls_counted_are_those_of_the_dearest_forks_it_may_choose(failing):
    counted = plan(failing, None, 10, bisect=True)  # 3 forks of the 4 steps: at most steps 1, 2 and 3's
    assert counted.calls == 10 * (4 + 3 + 2) and counted.most == 10 * (10 + 9 + 8)


def test_alike_holds_only_where_some_fork_had_two_trials_and_every_such_fork_made_one_run():
    one_trial = ForkRate(1, 1, 1, ("a",), False)
    assert not blame_of([one_trial, ForkRate(2, 0, 1, ("b",), False)]).alike  # no fork had two trials
    assert blame_of([one_trial, ForkRate(2, 2, 2, ("b", "c"), True)]).alike  # the one-trial fork does not count
    assert not blame_of([ForkRate(1, 2, 2, ("a", "b"), True), ForkRate(2, 1, 2, ("c", "d"), False)]).alike


def test_said_reads_each_steps_reply_from_the_first_to_the_last_and_none_outside_them(failing):
    assert said(failing, 1) == 'Next, the weather in Paris. → get_weather({"city": "Paris"})'
    assert said(failing, 4).startswith("The weather, city by city")
    assert said(failing, 0) is None and said(failing, 5) is None and said(failing, -1) is None


def test_said_is_none_for_a_step_whose_reply_is_not_in_the_list():
    run = hand_made(AssistantMessage(content="First."), AssistantMessage(content="Second."))
    assert said(run, 2) == "Second."
    run.messages.pop()  # step 2's call saw the prompt and step 1's reply; its own reply is no longer kept
    assert run.steps[1].message_count == len(run.messages)
    assert said(run, 2) is None and said(run, 1) == "First."


def test_said_writes_a_calls_arguments_with_their_own_letters_and_keys_sorted():
    call = ToolCall(id="c1", name="get_weather", arguments={"unit": "°C", "city": "Zürich"})
    run = hand_made(AssistantMessage(content="Looking.", tool_calls=[call]))
    assert said(run, 1) == 'Looking. → get_weather({"city": "Zürich", "unit": "°C"})'


def test_a_provider_that_cannot_be_made_ends_each_trial_as_an_error_on_the_forks_model(failing):
    def no_key(provider: str, model: str | None, **_: object) -> ScriptedProvider:
        raise UsageError("no API key for this provider")

    found = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=2, steps=[2, 4], factory=no_key)
    assert [(r.step, r.passed, r.trials) for r in found.rates] == [(2, 0, 2), (4, 0, 2)]
    assert len(found.runs) == 4 and found.blamed is None
    for fork in found.runs:
        assert (fork.stop_reason, fork.error) == ("error", "no API key for this provider")
        assert fork.config.provider == "scripted" and fork.config.model == "city_by_city"
        assert fork.parent.run_id == failing.id


def test_trials_that_made_different_runs_are_not_alike(failing):
    found = blame(
        failing,
        Grader(TOKYO_CALLED, "tokyo"),
        spec=RIGHT,
        trials=2,
        steps=[1],
        factory=replaying("good", "bad"),
        max_workers=1,
    )
    assert [(r.step, r.passed, r.trials, r.alike) for r in found.rates] == [(1, 1, 2, False)]
    assert not found.alike
    same = blame(
        failing,
        Grader(TOKYO_CALLED, "tokyo"),
        spec=RIGHT,
        trials=2,
        steps=[1],
        factory=replaying("bad", "bad"),
        max_workers=1,
    )
    assert [(r.passed, r.alike) for r in same.rates] == [(0, True)] and same.alike


def test_the_fall_to_the_run_itself_is_measured_past_its_last_step():
    rates = [ForkRate(1, 4, 4, (), True), ForkRate(2, 4, 4, (), True)]
    assert _fall(rates, False, 2) == (2, 1.0, 3)  # the run fails at its own step 2: the point past it is 3
    assert _fall(rates, True, 2) == (None, 0.0, None)


def test_rates_that_rise_or_stay_level_blame_no_step_and_the_least_fall_does():
    def rates(*passed: int) -> list[ForkRate]:
        return [ForkRate(k, n, 4, (), True) for k, n in enumerate(passed, start=1)]

    assert _fall(rates(0, 2), True, 2) == (None, 0.0, None)  # rising to the run, which passes
    assert _fall(rates(2, 2), False, 3) == (2, 0.5, 4)  # level, then down to the run that fails
    assert _fall(rates(4, 3), True, 2) == (1, 0.25, 2)


def test_intervals_that_only_touch_are_no_rise():
    every = ForkRate(1, 5, 5, (), True)  # its interval ends at exactly 1.0, the passing run's verdict
    assert every.interval[1] == 1.0 and _monotone([every], run_passed=True)
    most = ForkRate(1, 4, 5, (), True)  # its interval ends below 1.0: the passing run lies wholly above it
    assert most.interval[1] < 1.0 and not _monotone([most], run_passed=True)


def test_bisection_stops_at_the_first_fork_when_it_never_passes(failing):
    found = blame(failing, Grader.of_text("Tokyo"), trials=2, bisect=True)  # the run's own model: Kyoto each time
    assert [(r.step, r.passed) for r in found.rates] == [(1, 0)] and len(found.runs) == 2
    assert found.blamed is None


def test_bisection_counts_a_fork_at_exactly_half_the_first_forks_rate_as_fallen(failing):
    # step 1's fork passes 2 of 2; step 3's 1 of 2, half of it: the fall lies before step 3, so step 2 is read next
    at_half = replaying("good", "good", "good", "bad", "good", "good")
    found = blame(
        failing, Grader(TOKYO_CALLED, "tokyo"), spec=RIGHT, trials=2, bisect=True, factory=at_half, max_workers=1
    )
    assert [(r.step, r.passed) for r in found.rates] == [(1, 2), (2, 2), (3, 1)]
    # step 3's fork passing 2 of 2 lies above half: the fall lies after it, so step 4 is read next
    above = replaying("good", "good", "good", "good", "good", "good")
    found = blame(
        failing, Grader(TOKYO_CALLED, "tokyo"), spec=RIGHT, trials=2, bisect=True, factory=above, max_workers=1
    )
    assert [(r.step, r.passed) for r in found.rates] == [(1, 2), (3, 2), (4, 0)]


def test_the_replies_instead_are_those_of_the_blamed_forks_passing_continuations(failing):
    found = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=2, steps=[3, 4])
    assert found.blamed == 3 and found.next_point == 4
    assert [(r.text, r.count) for r in found.instead] == [
        ('Next, the weather in Tokyo. → get_weather({"city": "Tokyo"})', 2)
    ]


def failing_on(model: str) -> Run:
    """The wrong_city run, recorded as made on OpenAI's `model`."""
    run = scripted_run("wrong_city")
    run.config = run.config.model_copy(update={"provider": "openai", "model": model})
    return run


def must_not_call(provider: str, model: str | None, **_: object) -> ScriptedProvider:
    raise AssertionError("a refused blame makes no model call")


def test_the_settings_are_checked_against_the_specs_model_else_the_runs_own():
    tokyo, o3_refuses = Grader.of_text("Tokyo"), "o3 takes the default temperature"  # o3: temperature 1 only
    with pytest.raises(UsageError, match=o3_refuses):
        blame(failing_on("o3"), tokyo, spec=parse_spec("openai"), temperature=0.5, factory=must_not_call)
    with pytest.raises(UsageError, match=o3_refuses):
        blame(failing_on("gpt-4.1"), tokyo, spec=parse_spec("openai:o3"), temperature=0.5, factory=must_not_call)
    found = blame(
        failing_on("o3"),
        tokyo,
        spec=parse_spec("openai:gpt-4.1"),
        temperature=0.5,
        trials=1,
        steps=[4],
        factory=replaying("bad"),
    )
    assert found.config == "openai:gpt-4.1 · temperature 0.5" and [r.passed for r in found.rates] == [0]


def test_a_run_that_passes_reads_no_rate_so_none_rises_and_nothing_was_stopped(failing):
    found = blame(failing, Grader.of_text("Paris"), spec=RIGHT, trials=1)
    assert found.rates == [] and found.monotone and not found.stopped
    assert found.to_dict()["monotone"] is True and found.to_dict()["stopped"] is False


def test_the_wall_time_is_the_time_the_forks_took(failing):
    started = time.perf_counter()
    found = blame(failing, Grader.of_text("Tokyo"), spec=RIGHT, trials=1, steps=[4])
    took = time.perf_counter() - started
    assert 0 < found.wall_s <= took
