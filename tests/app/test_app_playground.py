"""The app shell and the Playground page, driven through Streamlit's AppTest on the scripted model."""

from __future__ import annotations

import json
import os
import re
from typing import Any, ClassVar

import pytest
from support.app import click, in_menu, menus, open_insert, session, start, texts

from agentcore import providers, transcript
from agentcore.errors import ProviderError
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.base import BaseProvider, ModelRequest, ModelResponse, Usage
from agentcore.registry import Registry
from agentcore.run import Run, RunConfig
from agentcore.secrets import REDACTED, forget_secrets, register_secret
from agentcore.store.runs import LAST_RUN_KEY, Store

# What the test-only provider does on its next calls: "fail", "stop" (press Stop from inside), or "ok".
PLAN: list[str] = []


class PlannedProvider(BaseProvider):
    """A test-only model: answers with a tool call until told otherwise, and can fail or press Stop."""

    name: ClassVar[str] = "planned"

    def __init__(self, model: str | None = None, **_: Any) -> None:
        super().__init__(model or "planned")

    def complete(self, request: ModelRequest, on_text=None) -> ModelResponse:
        what = PLAN.pop(0) if PLAN else "ok"
        if what == "fail":
            raise ProviderError("the service is overloaded", provider="planned", status=529, type="overloaded")
        if what == "stop":
            import streamlit as st

            st.session_state["session"].stop_requested = True  # as if Stop was pressed during this phase
        turns = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turns >= 3:
            message = AssistantMessage(content="All done.")
        else:
            message = AssistantMessage(
                content=f"Turn {turns + 1}.",
                tool_calls=(ToolCall(id=f"p{turns}", name="calculator", arguments={"expression": "1 + 1"}),),
            )
        return ModelResponse(message=message, usage=Usage(input_tokens=10, output_tokens=5))


@pytest.fixture
def app(monkeypatch, open_app):
    registry = Registry("provider", providers.REGISTRY)  # the app's registry, with two test-only entries
    registry.register(
        "planned",
        providers.ProviderInfo("planned", f"{__name__}:PlannedProvider", "planned", ("planned",), "a planned model"),
    )
    registry.register(
        "broken",
        providers.ProviderInfo(
            "broken", "agentcore_no_such_module:Nope", "x", ("x",), "a provider whose module is missing"
        ),
    )
    monkeypatch.setattr(providers, "REGISTRY", registry)
    import ui.sidebar
    import ui.state

    monkeypatch.setattr(ui.state, "REGISTRY", registry)
    monkeypatch.setattr(ui.sidebar, "REGISTRY", registry)
    PLAN.clear()
    return open_app()


def test_the_app_opens_on_the_playground_with_the_scripted_model(app):
    assert app.selectbox(key="cfg_provider").value == "scripted"
    assert app.text_input(key="prompt").value == "What is the weather in Paris, Rome and Tokyo?"
    assert any("Playground" in m.value for m in app.markdown)


def test_stepping_runs_whole_iterations_until_the_answer(app):
    run = start(app)
    assert [m.role for m in run.messages] == ["user"]
    click(app, "step")
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "tool", "tool"]
    assert app.metric[0].value == "1 / 10"
    click(app, "step")
    assert run.stop_reason == "answer"
    assert app.button(key="step").disabled
    # the loop ended on a reply: said as "answered", and not in green, which would claim the reply is right
    said = [m.value for m in app.markdown if "Stop reason" in m.value]
    assert len(said) == 1 and ":blue-badge[answered]" in said[0] and "for you to judge" in said[0]
    # and said as text, not in an alert: st.info and st.success are live regions, and the page's own reads it
    assert not any("Stop reason" in s.value for s in [*app.info, *app.success, *app.warning])
    assert "Here is the weather" in texts(app)


def test_model_and_tools_phases_each_run_half_a_step(app):
    run = start(app)
    click(app, "model_phase")
    assert run.next_phase == "tools" and len(run.steps) == 1
    assert app.button(key="model_phase").disabled
    assert app.radio(key="dec_call_1_0").value == "Approve"  # the pending call is listed for a decision
    click(app, "tools_phase")
    assert [m.role for m in run.messages][-3:] == ["tool", "tool", "tool"]
    assert run.next_phase == "model"


def test_run_to_end_stops_at_the_step_budget(app):
    run = start(app, "runaway", cfg_max_steps=3)
    click(app, "run_to_end")
    assert run.stop_reason == "max_steps"
    assert len(run.steps) == 3
    assert not session(app).running


def test_stop_takes_effect_between_phases(app):
    app.selectbox(key="cfg_provider").set_value("planned").run()
    click(app, "start")
    run = session(app).run
    PLAN.extend(["ok", "stop"])
    click(app, "run_to_end")
    # the phase during which Stop was pressed finished; the next one never started
    assert run.stop_reason == "cancelled"
    assert len(run.steps) == 2 and run.next_phase == "tools"
    assert any("Stop reason: :orange-badge[cancelled]" in m.value for m in app.markdown) and not app.success
    click(app, "step")  # going on after a Stop works
    assert run.stop_reason is None and run.next_phase == "model"


def test_a_provider_error_is_one_message_with_retry_and_loses_nothing(app):
    app.selectbox(key="cfg_provider").set_value("planned").run()
    click(app, "start")
    run = session(app).run
    PLAN.append("fail")
    click(app, "step")
    assert run.stop_reason == "error"
    assert [m.role for m in run.messages] == ["user"]
    errors = [e.value for e in app.error]
    assert any("529 overloaded: the service is overloaded" in e for e in errors)
    click(app, "retry")
    assert run.stop_reason is None and run.error is None
    assert [m.role for m in run.messages] == ["user", "assistant"]


def test_a_provider_that_cannot_load_shows_a_clear_message(app):
    app.selectbox(key="cfg_provider").set_value("broken").run()
    assert not app.exception
    assert any("cannot be loaded" in e.value for e in app.sidebar.error)
    click(app, "start")
    click(app, "step")
    assert any("cannot be loaded" in e.value for e in app.error)
    assert [m.role for m in session(app).run.messages] == ["user"]


def test_editing_an_earlier_message_makes_a_fork_and_keeps_the_original(app, steps_tab):
    run = start(app)
    click(app, "step")
    click(app, "step")
    original = [m.model_copy() for m in run.messages]
    in_menu(app, "edit_0", 0)
    app.text_area(key="edit_content_0").set_value("What is the weather in Oslo?")
    click(app, "edit_save_0")
    assert run.messages == original  # nothing applied yet
    assert app.button(key="step").disabled  # no stepping over unapplied edits
    click(app, "apply_edits")
    fork = session(app).run
    assert fork.id != run.id and fork.parent.run_id == run.id
    assert run.messages == original and run.id in session(app).runs
    # what came after the prompt answered the old one: the fork ends at the edit, and no step saw it
    assert fork.messages == [UserMessage(content="What is the weather in Oslo?")] and fork.steps == []
    steps_tab(app)
    assert any("Lineage" in m.value for m in app.markdown)


def test_editing_tool_call_arguments_after_the_last_model_call_changes_the_run_in_place(app):
    run = start(app)
    click(app, "model_phase")
    in_menu(app, "edit_1", 1)
    app.text_area(key="edit_args_1_0").set_value('{"city": "Lima"}')
    click(app, "edit_save_1")
    click(app, "apply_edits")
    assert session(app).run is run
    click(app, "tools_phase")
    assert json.loads(run.messages[2].content)["city"] == "Lima"


def test_a_violation_is_shown_on_its_message_before_anything_is_sent(app):
    run = start(app)
    click(app, "step")
    in_menu(app, "del_1", 1)  # drop the assistant turn: its three results now answer nothing
    errors = [e.value for e in app.error]
    assert sum("'call_1_0' has no matching tool call" in e for e in errors) == 1
    assert app.button(key="apply_edits").disabled
    assert app.button(key="step").disabled
    click(app, "discard_edits")
    assert len(run.messages) == 5 and not app.button(key="step").disabled


def test_inserting_a_message_goes_through_the_draft(app):
    run = start(app)
    click(app, "step")
    click(app, "step")
    open_insert(app)
    app.number_input(key="ins_pos").set_value(6)
    app.selectbox(key="ins_role").set_value("user")
    app.text_area(key="ins_content").set_value("And in Berlin?")
    click(app, "ins_go")
    click(app, "apply_edits")
    assert run.messages[-1] == UserMessage(content="And in Berlin?")
    assert run.next_phase == "model" and not app.button(key="step").disabled


def test_a_denied_tool_call_reaches_the_model_as_an_error(app):
    app.toggle(key="cfg_pause").set_value(True).run()
    run = start(app)
    click(app, "step")
    assert run.next_phase == "tools"  # paused before tools
    app.radio(key="dec_call_1_1").set_value("Deny").run()
    app.text_input(key="dec_reason_call_1_1").set_value("not Rome today")
    click(app, "run_tools")
    denied = next(m for m in run.messages if isinstance(m, ToolMessage) and m.tool_call_id == "call_1_1")
    assert denied.is_error and "denied" in denied.content and "not Rome today" in denied.content
    assert [t.source for t in run.steps[0].tool_runs] == ["approved", "denied", "approved"]


def test_a_hand_typed_result_replaces_running_the_tool(app):
    app.toggle(key="cfg_pause").set_value(True).run()
    run = start(app)
    click(app, "step")
    app.radio(key="dec_call_1_0").set_value("Type the result").run()
    app.text_area(key="dec_result_call_1_0").set_value('{"city": "Paris", "temperature": 99}')
    app.radio(key="dec_call_1_2").set_value("Edit arguments").run()
    app.text_area(key="dec_args_call_1_2").set_value('{"city": "Kyoto"}')
    click(app, "run_tools")
    assert run.messages[2].content == '{"city": "Paris", "temperature": 99}' and not run.messages[2].is_error
    assert run.messages[1].tool_calls[2].arguments == {"city": "Kyoto"}
    tool_runs = run.steps[0].tool_runs
    assert [t.source for t in tool_runs] == ["typed", "approved", "edited"]
    assert tool_runs[2].original_arguments["city"] == "Tokyo"  # what the model asked, kept beside the edit


def test_an_approved_result_changed_by_hand_reads_edited_with_what_the_tool_returned(app, downloads):
    app.toggle(key="cfg_pause").set_value(True).run()
    run = start(app)
    click(app, "step")
    click(app, "run_tools")  # every call approved
    returned = run.messages[2].content
    in_menu(app, "edit_2", 2)
    app.text_area(key="edit_content_2").set_value('{"city": "Paris", "temperature": -40}')
    click(app, "edit_save_2")
    click(app, "apply_edits")
    assert session(app).run is run and run.messages[2].content.endswith("-40}")
    assert [t.source for t in run.steps[0].tool_runs] == ["edited", "approved", "approved"]
    shown = texts(app)
    assert "edited by a person" in shown and "the tool returned" in shown
    exported = transcript.loads(downloads.data(app.download_button(key="export")))
    assert exported.steps[0].tool_runs[0].source == "edited"
    assert exported.steps[0].tool_runs[0].original_content == returned


def test_the_export_keeps_the_runs_own_settings_whatever_the_sidebar_says_since(app, downloads):
    run = start(app)
    click(app, "step")
    app.session_state["cfg_policy_drop"] = 2  # settings changed after the step, with no step taken since
    app.number_input(key="cfg_max_steps").set_value(7).run()
    exported = transcript.loads(downloads.data(app.download_button(key="export")))
    assert exported.config == run.config
    assert exported.config.max_steps == 10 and exported.config.policies is None


@pytest.mark.parametrize("button", ["step", "tools_phase"])
def test_a_step_on_a_paused_run_takes_the_decisions_in_the_form(app, button):
    app.toggle(key="cfg_pause").set_value(True).run()
    run = start(app)
    click(app, "step")
    assert run.next_phase == "tools" and run.paused
    app.radio(key="dec_call_1_1").set_value("Deny").run()
    app.text_input(key="dec_reason_call_1_1").set_value("not Rome today")
    app.radio(key="dec_call_1_2").set_value("Edit arguments").run()
    app.text_area(key="dec_args_call_1_2").set_value('{"city": "Kyoto"}')
    click(app, button)  # the bar's button, not the form's own "Run tools with these decisions"
    tool_runs = run.steps[0].tool_runs
    assert [t.source for t in tool_runs] == ["approved", "denied", "edited"]
    denied = next(m for m in run.messages if isinstance(m, ToolMessage) and m.tool_call_id == "call_1_1")
    assert denied.is_error and "not Rome today" in denied.content
    assert run.messages[1].tool_calls[2].arguments == {"city": "Kyoto"}
    assert tool_runs[2].original_arguments == {"city": "Tokyo"}
    kyoto = next(m for m in run.messages if isinstance(m, ToolMessage) and m.tool_call_id == "call_1_2")
    assert "Kyoto" in kyoto.content and not kyoto.is_error


def test_rewinding_to_an_earlier_step_forks_and_shows_the_lineage(app, steps_tab):
    run = start(app)
    click(app, "run_to_end")
    assert run.stop_reason == "answer"
    steps_tab(app)
    app.selectbox(key="inspect_step").set_value(2).run()
    click(app, "fork_step")
    fork = session(app).run
    assert fork.parent.run_id == run.id and fork.parent.step == 2
    assert len(fork.steps) == 1 and fork.next_phase == "model"
    assert len(session(app).runs) == 2 and run.stop_reason == "answer"
    assert any("Lineage" in m.value for m in app.markdown)
    assert app.selectbox(key="current_run").value == fork.id
    click(app, "step")
    assert fork.stop_reason == "answer" and len(fork.steps) == 2
    labels = [o for o in app.selectbox(key="current_run").options if "fork @ step 2" in o]
    assert labels and "· 2 steps · answer" in labels[0]  # the step just made, not the count before it
    app.selectbox(key="current_run").set_value(run.id).run()
    assert session(app).run is run


def test_each_step_shows_its_wire_exchange_and_usage(app, steps_tab):
    start(app)
    click(app, "step")
    assert not any(m.label == "Input tokens" for m in app.metric)  # the Steps tab is drawn once opened
    steps_tab(app)
    assert any(m.label == "Input tokens" for m in app.metric)
    assert any(m.value == "estimated" for m in app.metric)
    wire = [json.loads(j.value) for j in app.json if '"scenario"' in j.value]
    assert wire and wire[0]["scenario"] == "weather" and wire[0]["messages"][0]["role"] == "user"
    assert any("scripted://weather" in c.value for c in app.caption)


def test_the_export_is_the_transcript_of_the_current_run(app, downloads):
    run = start(app)
    click(app, "step")
    exported = transcript.loads(transcript.dumps(run))
    assert exported.messages == run.messages
    assert app.get("download_button")
    app.run()  # `downloads` sees the buttons drawn from here on
    exported = transcript.loads(downloads.data(app.download_button(key="export")))
    assert exported.id == run.id and exported.messages == run.messages
    assert [s.index for s in exported.steps] == [s.index for s in run.steps] == [1]
    assert exported.config.scenario == "weather"


def test_the_export_is_the_runs_page_export_with_every_secret_removed(app, downloads):
    planted = "planted-secret-4711"  # a registered secret, as a typed key is
    register_secret(planted)
    try:
        run = start(app, prompt=f"What is the weather in Paris? My code is {planted}.")
        click(app, "step")
        # a credential-named field in what was sent: blanked by every export, as the runs library blanks it
        run.steps[0].wire.request["api_key"] = "credential-named-value"
        Store(os.environ["AGENTCORE_DB"]).save_run(run)
        app.run()  # `downloads` sees the buttons drawn from here on
        playground = downloads.data(app.download_button(key="export"))
        app.switch_page("views/runs.py").run()
        app.selectbox(key="runs_selected").set_value(run.id).run()
        assert not app.exception, app.exception
        library = downloads.data(app.download_button(key="runs_dl_json"))
    finally:
        forget_secrets()
    assert planted in run.messages[0].content and "credential-named-value" in json.dumps(run.steps[0].wire.request)
    assert playground == library
    assert planted.encode() not in playground and b"credential-named-value" not in playground
    assert transcript.loads(playground).steps[0].wire.request["api_key"] == REDACTED


def test_each_browser_session_keeps_its_own_message_marks_whatever_another_draws(open_app, monkeypatch):
    from ui import policy_view

    worked: list[str] = []
    mark = policy_view.next_marks
    monkeypatch.setattr(policy_view, "next_marks", lambda run: worked.append(run.id) or mark(run))
    one, two = open_app(), open_app()
    mine, theirs = start(one), start(two, "research")
    assert worked[-1] == theirs.id
    worked.clear()
    one.run()
    assert worked == []  # worked out once for this session's run, not again after another session's draw
    assert one.session_state[policy_view.MARKS_KEY][0][0] == mine.id


def stored(run_id: str) -> Run:
    """The run as the app's database holds it, read through a Store of the test's own."""
    store = Store(os.environ["AGENTCORE_DB"])
    try:
        assert store.get_meta(LAST_RUN_KEY) == run_id
        return store.load_run(run_id)
    finally:
        store.close()


def test_each_step_and_a_run_to_the_end_are_saved_as_the_page_shows_them(app):
    run = start(app)
    click(app, "step")
    saved = stored(run.id)
    assert app.metric[0].value == f"{len(saved.steps)} / 10" == "1 / 10"
    assert app.metric[2].value == str(len(saved.messages)) == "5"
    assert saved.messages == run.messages
    click(app, "run_to_end")
    saved = stored(run.id)
    assert saved.stop_reason == run.stop_reason == "answer"
    assert app.metric[0].value == f"{len(saved.steps)} / 10" == "2 / 10"
    assert app.metric[2].value == str(len(saved.messages)) == "6"
    assert saved.messages == run.messages


def test_stepping_stops_at_the_step_budget(app):
    run = start(app, "runaway", cfg_max_steps=3)
    presses = 0
    while not app.button(key="step").disabled and presses < 10:
        click(app, "step")
        presses += 1
    assert presses == 3 and len(run.steps) == 3
    assert run.stop_reason == "max_steps"
    assert any("Stop reason: :orange-badge[max_steps]" in m.value for m in app.markdown) and not app.success
    assert any("step budget is used up" in c.value for c in app.caption)
    assert app.button(key="model_phase").disabled and app.button(key="run_to_end").disabled
    assert stored(run.id).stop_reason == "max_steps"


def test_the_typed_api_key_is_never_kept_in_the_session(app):
    app.selectbox(key="cfg_provider").set_value("openai").run()
    key_box = next(t for t in app.sidebar.text_input if t.label == "API key")
    key_box.set_value("sk-test-NEVER-KEEP-1234").run()
    assert not app.exception
    assert any("typed" in c.value for c in app.sidebar.caption)
    assert "sk-test-NEVER-KEEP" not in repr(session(app))
    assert all("sk-test-NEVER-KEEP" not in repr(app.session_state[k]) for k in app.session_state)


def test_new_runs_start_from_the_sidebar_config(app):
    run = start(app, "research", cfg_max_steps=4, cfg_system="Be brief.")
    assert run.config.max_steps == 4 and run.config.provider == "scripted" and run.config.scenario == "research"
    assert run.messages[0].role == "system" and run.messages[0].content == "Be brief."
    assert {t.name for t in run.config.tools} == {"search_notes", "read_note"}
    fresh = RunConfig()
    assert fresh.max_steps == 10  # the sidebar did not change the library's defaults


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_long_run_draws_one_page_of_messages_at_a_time(app):
    from ui.messages_view import PAGE_SIZE

    run = start(app, "runaway", cfg_max_steps=200)
    click(app, "run_to_end")
    assert run.stop_reason == "max_steps" and len(run.messages) == 401
    assert menus(app) == list(range(401 - PAGE_SIZE, 401))
    click(app, "msg_prev")
    assert menus(app) == list(range(401 - 2 * PAGE_SIZE, 401 - PAGE_SIZE))


# -- the graph and the source view, as pure functions of a run --------------------------------


def _scripted_run(steps: int, **config: Any) -> Run:
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.toolbox import get_tools

    run = Run.start("What is the weather in Paris and Rome?", RunConfig(**config))
    agent = Agent(ScriptedProvider("weather"), get_tools(["get_weather"]))
    for _ in range(steps):
        agent.step(run)
    return run


def test_the_graph_marks_where_the_run_is_and_the_edge_it_took():
    from ui.graph import ACCENT, ERROR, loop_dot, position

    assert position(None).node == "prompt"
    run = _scripted_run(0)
    assert position(run).node == "model" and position(run).edge == ("prompt", "model")
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider

    Agent(ScriptedProvider("weather")).model_phase(run)
    assert position(run).node == "tools" and position(run).edge == ("model", "tools")
    assert f'model -> tools [label="tool calls", color="{ACCENT}"' in loop_dot(run)
    done = _scripted_run(2)
    assert position(done).node == "done" and position(done).edge == ("model", "done")
    assert "done\\nanswer" in loop_dot(done)
    failed = _scripted_run(0)
    failed.stop_reason, failed.error = "error", "boom"
    assert position(failed).error and f'fillcolor="{ERROR}"' in loop_dot(failed)


class _FailingModel(BaseProvider):
    name: ClassVar[str] = "failing"

    def complete(self, request: ModelRequest, on_text=None) -> ModelResponse:
        raise ProviderError("the service is overloaded", provider="failing", status=529)


def _stopped_run(stop: str) -> Run:
    """A run stopped by `stop`: its step budget, a failed model call, or a Stop between its phases."""
    import threading

    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.toolbox import get_tools

    if stop == "max_steps":
        return _scripted_run(1, max_steps=1)  # the step asked for tools: the budget, not an answer, ends it
    if stop == "error":
        run = _scripted_run(1)
        Agent(_FailingModel("x")).step(run)
        return run
    run = _scripted_run(0)
    cancel = threading.Event()
    cancel.set()  # Stop pressed during the model phase: the run stops before its tools
    Agent(ScriptedProvider("weather"), get_tools(["get_weather"])).step(run, cancel=cancel)
    return run


@pytest.mark.parametrize(
    ("stop", "colour", "edge"),
    [("max_steps", "DONE", "tools-done"), ("error", "ERROR", "tools-model"), ("cancelled", "DONE", None)],
)
def test_the_loop_diagram_marks_done_for_a_run_stopped_without_an_answer(stop, colour, edge):
    import ui.graph
    from ui.graph import loop_dot, loop_html, loop_svg, position

    run = _stopped_run(stop)
    assert run.stop_reason == stop
    assert position(run).node == "done"
    svg = loop_svg(run)
    current = re.findall(r'class="ac-node ac-current" data-node="(\w+)">(<circle[^>]*>)', svg)
    assert [(node, f'fill="{getattr(ui.graph, colour)}"' in circle) for node, circle in current] == [("done", True)]
    assert re.findall(r'class="ac-edge ac-taken" data-edge="([\w-]+)"', svg) == ([edge] if edge else [])
    assert f">{stop}</tspan>" in svg  # the stop reason is written in the done node
    assert f'done [label="done\\n{stop}", shape=doublecircle, fillcolor="{getattr(ui.graph, colour)}"' in loop_dot(run)
    assert 'data-node="done"' in loop_html(run)


def test_the_drawn_loop_marks_the_same_node_and_edge_and_shows_text_as_text():
    import base64

    from ui.graph import loop_html, loop_svg

    def marked(svg: str) -> tuple[list[str], list[str]]:
        nodes = re.findall(r'class="ac-node ac-current" data-node="(\w+)"', svg)
        return nodes, re.findall(r'class="ac-edge ac-taken" data-edge="([\w-]+)"', svg)

    assert marked(loop_svg(None)) == (["prompt"], [])
    run = _scripted_run(0)
    assert marked(loop_svg(run)) == (["model"], ["prompt-model"])
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider

    Agent(ScriptedProvider("weather")).model_phase(run)
    assert marked(loop_svg(run)) == (["tools"], ["model-tools"])
    done = _scripted_run(2)
    assert marked(loop_svg(done)) == (["done"], ["model-done"]) and ">answer</tspan>" in loop_svg(done)
    done.stop_reason = '<image href="http://evil.invalid/x"/>'  # a label is text, never markup
    assert "<image" not in loop_svg(done) and "&lt;image" in loop_svg(done)
    img = loop_html(done)
    data = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', img)
    assert data and base64.b64decode(data[1]).decode() == loop_svg(done) and img.startswith("<img ")


def test_the_source_view_highlights_the_lines_that_just_ran():
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from ui.graph import source_html, source_view

    run = _scripted_run(0)
    assert source_view(run).highlighted == frozenset()
    Agent(ScriptedProvider("weather")).model_phase(run)
    view = source_view(run)
    assert view.phase == "model" and view.lines[0].startswith("def model_phase")
    assert any("response = self._complete(" in view.lines[i] for i in view.highlighted)
    done = _scripted_run(2)
    view = source_view(done)
    assert any('run.stop_reason = "answer"' in view.lines[i] for i in view.highlighted)
    half = _scripted_run(0)
    agent = Agent(ScriptedProvider("weather"), __import__("agentcore.toolbox").toolbox.get_tools(["get_weather"]))
    agent.model_phase(half)
    agent.tools_phase(half)
    view = source_view(half)
    assert view.phase == "tools" and any("self._execute(" in view.lines[i] for i in view.highlighted)
    assert "ac-hl" in source_html(view) and "&lt;" not in source_html(view).split("</style>")[0]


def test_a_structured_answer_ends_the_run_and_step_is_disabled(app):
    run = start(app, "structured")
    click(app, "run_to_end")
    assert run.stop_reason == "structured"
    steps = len(run.steps)
    assert app.button(key="step").disabled and app.button(key="model_phase").disabled
    assert app.button(key="run_to_end").disabled
    assert app.metric[1].value == "—" and len(run.steps) == steps


def test_a_fork_that_ends_on_an_answer_says_why_nothing_can_step(app):
    start(app)
    click(app, "run_to_end")
    in_menu(app, "edit_0", 0)
    app.text_area(key="edit_content_0").set_value("What is the weather in Oslo?")
    click(app, "edit_save_0")
    app.checkbox(key="keep_later").check().run()
    click(app, "apply_edits")
    fork = session(app).run
    assert fork.next_phase == "done" and fork.stop_reason is None
    assert app.metric[1].value == "—"  # not "done phase"
    assert app.button(key="step").disabled
    assert any("nothing to do" in c.value for c in app.caption)


def test_tool_results_are_shown_as_written_not_as_markdown(app):
    run = start(app, "research")
    click(app, "run_to_end")
    notes = [m.content for m in run.messages if isinstance(m, ToolMessage) and m.content.startswith("# ")]
    note = notes[-1]  # the newest, on the page shown
    heading = note.splitlines()[0]
    assert not any(heading in str(m.value) for m in app.markdown)  # never drawn as a page heading
    assert any(str(t.value).startswith(heading) for t in app.text)


def test_picking_a_run_puts_its_own_settings_in_the_sidebar(app):
    first = start(app, "weather")
    start(app, "runaway", cfg_max_steps=3)
    assert app.selectbox(key="cfg_scenario").value == "runaway"
    app.selectbox(key="cfg_provider").set_value("planned").run()
    app.selectbox(key="current_run").set_value(first.id).run()
    assert not app.exception
    assert session(app).run is first
    assert app.selectbox(key="cfg_provider").value == "scripted"
    assert app.selectbox(key="cfg_scenario").value == "weather"
    assert app.number_input(key="cfg_max_steps").value == 10
    assert app.multiselect(key="cfg_tools").value == ["get_weather"]
    click(app, "step")
    assert first.config.provider == "scripted" and first.config.scenario == "weather"


def test_other_pages_fold_the_playground_settings_and_keep_them(app):
    app.sidebar.number_input(key="cfg_max_steps").set_value(7).run()
    assert not any(e.label == "Playground settings" for e in app.sidebar.expander)
    app.switch_page("views/cost.py").run()
    assert not app.exception
    assert any(e.label == "Playground settings" for e in app.sidebar.expander)
    assert app.sidebar.number_input(key="cfg_max_steps").value == 7
    app.switch_page("views/playground.py").run()
    assert app.sidebar.number_input(key="cfg_max_steps").value == 7
    assert session(app).config.max_steps == 7


def test_a_run_opened_from_a_file_does_not_take_the_key_to_its_base_url(app, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "correct-horse-battery-staple-42")
    foreign = Run.start("hi", RunConfig(provider="openai", model="gpt-4o-mini", base_url="http://evil.invalid/v1"))
    session(app).add_run(foreign)
    app.run()
    assert not app.exception
    assert app.text_input(key="cfg_base_url").value != "http://evil.invalid/v1"
    assert "evil.invalid" in session(app).notice and "Base URL" in session(app).notice
    local = Run.start("hi", RunConfig(provider="ollama", model="llama3.2", base_url="http://127.0.0.1:9/"))
    session(app).add_run(local)
    app.run()
    assert app.text_input(key="cfg_base_url").value == "http://127.0.0.1:9/"  # no key goes to ollama


def test_edited_arguments_nested_past_the_readers_limit_are_refused_in_one_line_not_a_recursion_error():
    from ui.actions import parse_object

    with pytest.raises(ValueError, match="get_weather .call_1_0.: the arguments are nested more than 100 levels"):
        parse_object("[" * 50_000, "get_weather (call_1_0)")
    with pytest.raises(ValueError, match="the arguments are not JSON"):
        parse_object("{oops", "get_weather (call_1_0)")


def test_a_run_made_against_a_base_url_with_credentials_names_it_without_them(open_app):
    from ui.state import Session

    base_url = "https://proxy-user:proxy-password-0123@llm.example.com/v1?key=url-key-0123456789"
    run = Run.start("Weather in Paris?", RunConfig(provider="openai", model="gpt-4o-mini", base_url=base_url))
    session = Session()
    session.add_run(run)  # as a run opened from someone else's file
    at = open_app(session=session)
    shown = " ".join(e.value for e in at.error)
    assert "This run was made against" in shown and "llm.example.com" in shown and "[redacted]" in shown
    assert "proxy-password-0123" not in shown and "url-key-0123456789" not in shown
