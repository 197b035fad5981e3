"""Which step broke a run: forks before each step of the wrong_city run, continued on city_by_city, name step 3."""

from __future__ import annotations

import pytest
from support.runs import scripted_run

from agentcore.compare import parse_spec
from agentcore.errors import UsageError
from agentcore.messages import AssistantMessage
from agentcore.testing.blame import ForkRate, Grader, _fall, _monotone, blame, own_spec, plan
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
