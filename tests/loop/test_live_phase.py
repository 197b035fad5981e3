"""What the page shows of a running phase: the streamed text and the time so far, read while the loop runs on its own
thread, afresh for each phase; and the scripted model's pace, which streams a reply a word at a time."""

from __future__ import annotations

import os
import threading

import pytest
from streamlit.testing.v1 import AppTest

from agentcore import Agent, Run, RunConfig, ScriptedProvider
from agentcore.errors import UsageError
from agentcore.loop import Event
from agentcore.messages import AssistantMessage, ToolCall
from agentcore.providers.base import BaseProvider, ModelRequest, ModelResponse, Usage
from agentcore.providers.scripted import PACE_ENV
from agentcore.store.runs import Store
from agentcore.toolbox import TOOLBOX
from ui.live import SHOWN_CHARS, PhaseJob, PhaseProgress, streamed_tail


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _event(kind: str, phase: str | None = "model", **fields) -> Event:
    return Event(kind, "run-1", 1, phase, **fields)


def test_streamed_deltas_accumulate_and_the_elapsed_time_grows():
    clock = Clock()
    progress = PhaseProgress("model", clock)
    progress.observe(_event("phase_started"))
    progress.observe(_event("text_delta", text="The weather "))
    clock.now += 1.5
    first = progress.now()
    progress.observe(_event("text_delta", text="in Paris "))
    progress.observe(_event("text_delta", text="is mild."))
    clock.now += 2.7
    second = progress.now()
    assert (first.phase, first.text, first.elapsed_s) == ("model", "The weather ", 1.5)
    assert (second.text, second.elapsed_s) == ("The weather in Paris is mild.", pytest.approx(4.2))


def test_each_phase_starts_afresh_with_its_own_time_and_no_text():
    clock = Clock()
    progress = PhaseProgress("model", clock)
    progress.observe(_event("phase_started"))
    progress.observe(_event("text_delta", text="Looking it up."))
    clock.now += 3.0
    progress.observe(_event("phase_started", "tools"))
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    progress.observe(_event("tool_started", "tools", tool_call=call))
    clock.now += 0.5
    tools = progress.now()
    assert (tools.phase, tools.text, tools.elapsed_s, tools.tools) == ("tools", "", 0.5, ("get_weather",))
    progress.observe(_event("phase_started"))  # the next step's model phase
    clock.now += 0.25
    model = progress.now()
    assert (model.phase, model.text, model.elapsed_s, model.tools) == ("model", "", 0.25, ())


def test_the_model_phase_counts_from_the_start_of_the_job_when_a_summary_comes_first():
    clock = Clock()
    progress = PhaseProgress("model", clock)  # made when the job starts
    clock.now += 2.0  # a context policy's summary call, before the loop says the model phase started
    progress.observe(_event("phase_started"))
    clock.now += 1.0
    assert progress.now().elapsed_s == 3.0


def test_a_wait_for_the_embedded_model_is_part_of_the_progress():
    progress = PhaseProgress()
    progress.on_wait(2)
    assert progress.now().ahead == 2
    progress.on_wait(0)
    assert progress.now().ahead == 0


class GatedProvider(BaseProvider):
    """Streams half its reply, then waits for the test to open the gate before streaming the rest."""

    name = "gated"

    def __init__(self) -> None:
        super().__init__("gated")
        self.gate = threading.Event()

    def complete(self, request: ModelRequest, on_text=None) -> ModelResponse:
        assert on_text is not None
        on_text("Half of ")
        assert self.gate.wait(30)
        on_text("the reply.")
        return ModelResponse(
            message=AssistantMessage(content="Half of the reply."), usage=Usage(input_tokens=3, output_tokens=4)
        )


def _until(check, what: str) -> None:
    done = threading.Event()
    for _ in range(3000):
        if check():
            return
        done.wait(0.01)
    raise AssertionError(f"never saw {what}")


def test_the_text_streamed_so_far_is_read_from_another_thread_while_the_phase_runs():
    provider = GatedProvider()
    run = Run.start("Say something.", RunConfig(provider="gated", model="gated"))
    progress = PhaseProgress("model")
    agent = Agent(provider, observers=[progress.observe])
    job = PhaseJob(run, lambda: agent.model_phase(run), progress)
    job.start()
    _until(lambda: progress.now().text == "Half of ", "the first half streamed")
    assert not job.wait(0)  # the phase is still running, and its text is already there to show
    assert len(run.messages) == job.before == 1
    provider.gate.set()
    assert job.wait(30)
    assert job.failure is None
    assert progress.now().text == "Half of the reply." == run.messages[-1].content


def test_a_step_reports_its_model_phase_then_its_tools_phase():
    run = Run.start("What is the weather in Paris?", RunConfig(scenario="weather", model="weather"))
    progress = PhaseProgress("model")
    seen = []
    agent = Agent(
        ScriptedProvider(scenario="weather"),
        [TOOLBOX["get_weather"]],
        observers=[progress.observe, lambda e: seen.append(progress.now()) if e.kind == "phase_finished" else None],
    )
    agent.step(run)
    model, tools = seen
    assert model.phase == "model" and model.text == run.messages[1].content
    assert tools.phase == "tools" and tools.text == "" and tools.tools == ("get_weather",)


def test_a_failure_of_the_phase_is_kept_for_the_page_and_the_job_still_ends():
    def drive() -> None:
        raise UsageError("the tools are not valid")

    job = PhaseJob(Run.start("Hi.", RunConfig()), drive, PhaseProgress())
    job.start()
    assert job.wait(30)
    assert isinstance(job.failure, UsageError)


def test_the_scripted_model_streams_at_its_pace(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr("agentcore.providers.scripted.time.sleep", waits.append)
    run = Run.start("What is the weather in Paris?", RunConfig(scenario="weather", model="weather"))
    pieces: list[str] = []
    provider = ScriptedProvider(scenario="weather", pace_s=0.4)
    Agent(provider, observers=[lambda e: pieces.append(e.text) if e.kind == "text_delta" else None]).model_phase(run)
    words = run.messages[1].content.split()
    assert len(words) > 1 and waits == [0.4] * len(words) and "".join(pieces) == run.messages[1].content


def test_the_scripted_pace_comes_from_the_environment_and_a_bad_one_is_a_one_line_error(monkeypatch):
    monkeypatch.setenv(PACE_ENV, "0.25")
    assert ScriptedProvider(scenario="weather").pace_s == 0.25
    monkeypatch.delenv(PACE_ENV)
    assert ScriptedProvider(scenario="weather").pace_s == 0.0
    for bad in ("slow", "nan", "-1", "1e9"):
        monkeypatch.setenv(PACE_ENV, bad)
        with pytest.raises(UsageError, match=PACE_ENV if bad == "slow" else "between 0 and 10"):
            ScriptedProvider(scenario="weather")


def test_a_phase_left_running_by_an_interrupted_draw_is_followed_to_its_end_and_saved_by_the_next(open_app):
    at = open_app()
    at.button(key="start").click().run()
    session = at.session_state["session"]
    run = session.run
    progress = PhaseProgress("model")
    agent = Agent(ScriptedProvider(scenario="weather"), [TOOLBOX["get_weather"]], observers=[progress.observe])
    job = PhaseJob(run, lambda: agent.model_phase(run), progress)
    session.phase_job = job  # what a click that interrupted the draw following this phase leaves behind
    job.start()
    at.run()
    assert not at.exception, at.exception
    assert session.phase_job is None and session.action is None  # finished, and no other phase started
    assert [m.role for m in run.messages] == ["user", "assistant"]
    assert Store(os.environ["AGENTCORE_DB"]).load_run(run.id).messages == run.messages  # saved once it ended
    assert run.messages[1].content in "\n".join(str(m.value) for m in at.markdown)  # drawn, the box cleared
    assert not [m for m in at.markdown if "model phase ·" in str(m.value)]


def test_a_long_reply_is_shown_by_its_end_while_it_streams():
    assert streamed_tail("short reply") == "short reply"
    long = "a" * 5000 + "the end of the reply"
    shown = streamed_tail(long)
    assert shown.startswith("…") and shown.endswith("the end of the reply") and len(shown) == SHOWN_CHARS + 1


def _box(text: str, phase: str = "model", ahead: int = 0, tools: tuple[str, ...] = ()):
    def script(text, phase, ahead, tools):
        import streamlit as st

        from ui.live import Progress, show_progress

        show_progress(st.empty(), Progress(phase, 4.25, text, ahead, tools))

    return AppTest.from_function(script, args=(text, phase, ahead, tools)).run()


def test_the_box_shows_the_phase_its_time_and_the_end_of_what_streamed():
    at = _box("x" * 5000 + " and the last words")
    head, body = (str(m.value) for m in at.markdown)
    assert head == "**model phase** · 4.2 s · 5,019 characters"
    assert body.startswith("…") and body.endswith("and the last words ▌") and len(body) < 4100
    waiting = _box("", ahead=2)
    assert [str(c.value) for c in waiting.caption] == [
        ":material/hourglass_top: Waiting for the embedded model: 2 calls ahead"
    ]
    tools = _box("", phase="tools", tools=("get_weather", "calculator"))
    assert [str(c.value) for c in tools.caption] == ["Running `get_weather`, `calculator`"]


class _Streaming(BaseProvider):
    """Streams a long reply a word at a time; `wrap` turns what its stream raised into its own ProviderError."""

    name = "streaming"

    def __init__(self, wrap: bool = False) -> None:
        self.wrap, self.sent = wrap, 0

    def complete(self, request: ModelRequest, on_text=None) -> ModelResponse:
        from agentcore.errors import ProviderError

        words = [f"word{k} " for k in range(200)]
        for w in words:
            if on_text is not None:
                try:
                    on_text(w)
                except Exception as exc:
                    if self.wrap:
                        raise ProviderError(f"streaming: the stream broke: {exc!r}") from exc
                    raise
            self.sent += 1
        return ModelResponse(message=AssistantMessage(content="".join(words)), usage=Usage(), finish_reason="stop")


@pytest.mark.parametrize("wrap", [False, True])
def test_a_stop_during_the_model_call_ends_it_at_its_next_piece_and_keeps_nothing_of_it(wrap):
    cancel = threading.Event()
    seen: list[str] = []

    def observe(event: Event) -> None:
        if event.kind == "text_delta":
            seen.append(event.text)
            if len(seen) == 3:
                cancel.set()  # Stop pressed while the reply streams

    provider = _Streaming(wrap)
    run = Run.start("Say a lot", RunConfig(max_steps=3))
    Agent(provider, observers=[observe]).step(run, cancel=cancel)
    assert run.stop_reason == "cancelled" and run.error is None
    assert [m.role for m in run.messages] == ["user"] and run.steps == []  # the cut reply is not kept
    assert provider.sent == 3 and len(seen) == 3  # the call ended at the next piece, not at its end
    again = Run.start("Say a lot", RunConfig(max_steps=3))
    Agent(_Streaming(wrap), observers=[observe]).step(again, cancel=threading.Event())
    assert again.stop_reason == "answer" and len(again.messages[1].content.split()) == 200  # no Stop: all of it


def test_the_playgrounds_stop_reaches_the_running_phase(monkeypatch):
    from ui import actions
    from ui.state import Session

    session = Session()
    monkeypatch.setattr(actions, "get_session", lambda: session)
    actions.stop_phase()  # nothing running: nothing to stop
    job = PhaseJob(Run.start("hi"), lambda: None, PhaseProgress("model"))
    session.phase_job = job
    assert not job.cancel.is_set()
    actions.stop_phase()
    assert job.cancel.is_set()
