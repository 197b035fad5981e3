"""The rules of a comparison at their edges: which steps of a stored run a comparison may start from and how many it
may make, the prompt it is about, the title of each fork, what a column says it is doing and the text it streams, the
settings a comparison refuses or keeps, a provider that cannot start, a scripted column's scenario, the times it
reports, a second start while columns are busy, a wait that gives up, a cancel before a lockstep run, and what a
comparison from a prompt has in place of the original."""

from __future__ import annotations

import threading
from typing import ClassVar

import pytest
from support.runs import priced_run, scripted_run

from agentcore import toolbox
from agentcore.compare import ColumnSpec, Comparison, Origin, parse_spec
from agentcore.errors import UsageError
from agentcore.messages import MAX_COUNT, AssistantMessage, ToolCall
from agentcore.providers import create_provider
from agentcore.providers.base import BaseProvider, ModelResponse
from agentcore.run import Run, RunConfig
from agentcore.steps import Event

PROMPT = "What is the weather in Paris?"
SCRIPTED = [parse_spec("scripted:weather"), parse_spec("scripted:weather")]


# -- from a stored run's step k ---------------------------------------------------------------------------------


def test_a_comparison_starts_from_the_runs_first_to_its_last_step_and_no_other() -> None:
    run = scripted_run("research")
    last = len(run.steps)
    assert Origin(run, 1).step == 1 and Origin(run, last).step == last
    for step in (0, last + 1):
        with pytest.raises(UsageError) as refused:
            Origin(run, step)
        assert str(refused.value) == f"run {run.id} has {last} steps: there is no step {step}"


def test_a_run_of_one_step_is_said_in_the_singular() -> None:
    run = priced_run([(100, 10, 0, 50.0)])
    assert len(run.steps) == 1
    with pytest.raises(UsageError, match=rf"^run {run.id} has 1 step: there is no step 2$"):
        Origin(run, 2)


def test_the_steps_a_fork_makes_are_a_whole_number_from_one_to_the_most_a_count_holds() -> None:
    run = scripted_run("research")
    assert Origin(run, 2, 1).budget == 2 and Origin(run, 2, MAX_COUNT).steps == MAX_COUNT
    for steps in (0, MAX_COUNT + 1):
        with pytest.raises(UsageError, match=f"a whole number from 1, not {steps}"):
            Origin(run, 2, steps)


def test_a_comparison_from_a_step_is_about_the_runs_first_users_words_not_its_system_prompt() -> None:
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather", system_prompt="You are a forecaster."))
    from agentcore import Agent

    Agent(create_provider("scripted", "weather"), toolbox.get_tools("get_weather")).run(run)
    assert Origin(run, 1).prompt == PROMPT


def test_each_fork_is_titled_by_the_run_or_its_id_the_step_and_the_column() -> None:
    run = scripted_run("research")
    run.title = "Research run"
    spec = parse_spec("scripted:research")
    assert Origin(run, 2).fork(spec, "research", "b").title == "Research run · from step 2 · b"
    run.title = None
    assert Origin(run, 2).fork(spec, "research", "b").title == f"{run.id} · from step 2 · b"


def test_a_comparison_from_a_prompt_has_no_original_and_no_step_rows() -> None:
    comparison = Comparison(PROMPT, SCRIPTED, tools=toolbox.get_tools("get_weather"))
    assert comparison.original_label == "" and comparison.step_rows() == []
    assert comparison.first_step == 1


# -- what a column says -----------------------------------------------------------------------------------------


def test_a_column_says_what_it_is_doing_and_streams_the_text_of_the_model_phase_it_is_in() -> None:
    comparison = Comparison(PROMPT, SCRIPTED, tools=toolbox.get_tools("get_weather"))
    column = comparison.columns[0]
    said = []
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    for event in [
        Event(kind="phase_started", run_id="r", step=2, phase="model"),
        Event(kind="text_delta", run_id="r", step=2, text="Sun"),
        Event(kind="text_delta", run_id="r", step=2, text="ny"),
        Event(kind="phase_started", run_id="r", step=2, phase="tools"),
        Event(kind="tool_started", run_id="r", step=2, tool_call=call),
        Event(kind="phase_finished", run_id="r", step=2, phase="tools"),  # not a phase starting: no change
        Event(kind="tool_started", run_id="r", step=2),  # a tool event without its call changes nothing
        Event(kind="error", run_id="r", step=3),
        Event(kind="phase_started", run_id="r", step=4, phase="model"),
    ]:
        column._observe(event)
        said.append((column.activity, column.live_text))
    assert said == [
        ("step 2: calling the model", ""),
        ("step 2: calling the model", "Sun"),
        ("step 2: calling the model", "Sunny"),
        ("step 2: running tools", "Sunny"),
        ("step 2: running get_weather", "Sunny"),
        ("step 2: running get_weather", "Sunny"),
        ("step 2: running get_weather", "Sunny"),
        ("step 3: provider error", "Sunny"),
        ("step 4: calling the model", ""),
    ]


# -- what a comparison refuses and keeps ------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_a_comparison_needs_a_prompt_with_words(prompt) -> None:
    with pytest.raises(UsageError, match="a comparison needs a prompt"):
        Comparison(prompt, SCRIPTED)


def test_a_comparison_makes_one_step_at_least() -> None:
    with pytest.raises(UsageError, match="max steps must be at least 1"):
        Comparison(PROMPT, SCRIPTED, max_steps=0)
    assert all(c.run.config.max_steps == 1 for c in Comparison(PROMPT, SCRIPTED, max_steps=1).columns)


def test_each_column_is_sent_the_system_prompt_and_an_empty_one_is_none() -> None:
    kept = Comparison(PROMPT, SCRIPTED, system_prompt="You are a forecaster.")
    assert [c.run.config.system_prompt for c in kept.columns] == ["You are a forecaster."] * 2
    assert Comparison(PROMPT, SCRIPTED, system_prompt="").system_prompt is None


def test_a_provider_that_cannot_start_is_its_columns_error_named_by_provider_and_kind() -> None:
    def factory(name, model=None, **options):
        if name == "openai":
            raise RuntimeError("no socket")
        return create_provider(name, model, **options)

    comparison = Comparison(PROMPT, [parse_spec("openai:gpt-x"), parse_spec("scripted:weather")], factory=factory)
    broken, scripted = comparison.columns
    assert broken.setup_error == "openai: RuntimeError: no socket" and broken.state == "error"
    assert scripted.setup_error is None


def test_a_scripted_columns_scenario_is_its_model_and_no_other_provider_has_one() -> None:
    comparison = Comparison(PROMPT, [parse_spec("scripted:research"), parse_spec("openai:gpt-x@http://127.0.0.1:9/v1")])
    assert [c.run.config.scenario for c in comparison.columns] == ["research", None]


# -- driving the columns ----------------------------------------------------------------------------------------


def test_the_times_a_comparison_reports_are_the_seconds_its_columns_took() -> None:
    comparison = Comparison(PROMPT, SCRIPTED, tools=toolbox.get_tools("get_weather"))
    comparison.run_all()
    assert all(0 < c.wall_s < 60 for c in comparison.columns)
    assert 0 < comparison.wall_s < 60 and comparison.wall_s >= max(c.wall_s for c in comparison.columns) / 2


class Gate(BaseProvider):
    """Calls get_weather once the test opens the gate."""

    name: ClassVar[str] = "gate"

    def __init__(self, model: str, entered: threading.Event, gate: threading.Event) -> None:
        super().__init__(model)
        self.entered, self.gate = entered, gate

    def complete(self, request, on_text=None) -> ModelResponse:
        self.entered.set()
        self.gate.wait(timeout=20)
        return ModelResponse(message=AssistantMessage(content="done"))


def test_a_busy_comparison_is_not_started_again_and_a_wait_gives_up_at_its_timeout() -> None:
    entered, gate = threading.Event(), threading.Event()
    provider = Gate("gate", entered, gate)
    comparison = Comparison(
        PROMPT,
        [ColumnSpec("gate"), ColumnSpec("gate")],
        factory=lambda name, model=None, **options: provider,
    )
    assert comparison.start("run") is True
    assert entered.wait(timeout=20)
    assert comparison.start("run") is False
    assert comparison.wait(timeout=0.2) is False  # given up: the columns are still busy
    assert comparison.wall_s == 0.0  # the wall time is the finished action's, not yet known
    gate.set()
    assert comparison.wait(timeout=20) is True


def test_a_cancelled_comparison_steps_no_column_to_its_end() -> None:
    comparison = Comparison(PROMPT, SCRIPTED, tools=toolbox.get_tools("get_weather"))
    comparison.cancel()
    comparison.step_to_end()
    assert [len(c.run.steps) for c in comparison.columns] == [0, 0]
    fresh = Comparison(PROMPT, SCRIPTED, tools=toolbox.get_tools("get_weather"))
    fresh.step_to_end()
    assert all(c.run.stop_reason == "answer" for c in fresh.columns)
