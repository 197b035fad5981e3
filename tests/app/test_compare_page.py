"""The compare page under AppTest: Step all, Run all, an erroring column, the summary, the wire view, export."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest
from support.app import button, compare_from_runs_page, comparison, holds_text, open_menu, set_up, settle
from support.servers import free_port

from agentcore import Agent, Run, RunConfig, ScriptedProvider, toolbox
from agentcore.providers import REGISTRY
from agentcore.store.runs import Store
from ui import safe
from ui.state import Session

PAGE = "views/compare.py"
SECRET = "sk-page-secret-51d0e2"


@pytest.fixture
def page(open_app):
    """Open the app on the compare page with the given (provider, scenario or base URL) columns set up."""
    return lambda *columns, **kwargs: set_up(open_app(PAGE), *columns, **kwargs)


def test_step_all_advances_every_column_one_iteration_at_a_time(page):
    at = page(("scripted", "weather"), ("scripted", "runaway"), tools=("get_weather", "search_notes"))
    button(at, "Step all").click()
    settle(at)
    assert not at.exception
    assert [len(c.run.steps) for c in comparison(at).columns] == [1, 1]
    captions = [c.value for c in at.main.caption]
    assert sum("step 1 of 4 · next phase: model" in c for c in captions) == 2
    assert at.selectbox(key="cmp_provider_0").disabled  # the setup is locked while the comparison exists
    button(at, "Step all").click()
    settle(at)
    assert [(len(c.run.steps), c.state) for c in comparison(at).columns] == [(2, "done"), (2, "ready")]
    assert any("done" in m.value for m in at.markdown if m.value.startswith("**scripted:weather**"))


def test_run_all_runs_each_column_to_its_end_with_summary_charts_and_wire_view(page):
    at = page(("scripted", "weather"), ("scripted", "runaway"), max_steps=3)
    button(at, "Run all").click()
    settle(at)
    assert not at.exception
    assert [c.run.stop_reason for c in comparison(at).columns] == ["answer", "max_steps"]
    table = at.dataframe[0].value
    assert list(table["configuration"]) == ["scripted:weather", "scripted:runaway"]
    assert list(table["steps"]) == [2, 3]
    assert list(table["stop reason"]) == ["answered", "made the 3 steps it was given"]  # in words, not the loop's
    assert list(table["tool errors"]) == [0, 3]  # the runaway asks for a tool this comparison does not offer
    assert table["final answer"][0].startswith("Here is the weather")
    assert list(table["cost (USD)"]) == ["free", "free"]  # not $0.000000
    assert len(at.get("plotly_chart")) == 1  # cumulative tokens, every configuration overlaid
    assert any("ran for free" in i.value for i in at.info)  # scripted costs nothing: no flat $0 chart
    at.number_input(key="cmp_wire_step").set_value(2)
    at.run()
    bodies = [j.value for j in at.main.json]
    requests = [json.loads(b) if isinstance(b, str) else b for b in bodies]
    assert [r["scenario"] for r in requests] == ["weather", "runaway"]
    assert [len(r["messages"]) for r in requests] == [3, 3]


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_an_erroring_column_shows_its_error_and_never_stops_the_others(page):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    at = page(("scripted", "weather"), ("openai", dead), ("scripted", "runaway"), max_steps=2)
    key_box = next(t for t in at.text_input if t.label == "API key (column 2)")
    key_box.input(SECRET)
    button(at, "Run all").click()
    settle(at)
    assert not at.exception
    states = [c.state for c in comparison(at).columns]
    assert states == ["done", "error", "done"]
    errors = [e.value for e in at.main.error]
    assert len(errors) == 1 and "openai connection_error: cannot reach" in errors[0]
    assert comparison(at).columns[1].agent is None  # no provider (and so no key) is kept after the call
    kept = {k: at.session_state[k] for k in at.session_state if k.startswith(("cmp_", "compare"))}
    assert not holds_text(kept, SECRET)  # neither the page's state nor the comparison in it keeps the key
    table = at.dataframe[0].value
    assert table["final answer"][1].startswith("error: openai connection_error")


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_export_gives_one_bundle_of_transcripts_and_opens_a_column_in_the_playground(page, downloads):
    at = page(("scripted", "weather"), ("scripted", "recovery"), tools=("get_weather", "calculator"))
    button(at, "Run all").click()
    settle(at)
    download = at.get("download_button")
    assert len(download) == 1 and download[0].proto.label == "Export the comparison (JSON bundle)"
    at.toggle(key="cmp_show_bundle").set_value(True)
    at.run()
    shown = [c.value for c in at.main.code if c.language == "json"][-1]  # below the columns' messages
    bundle = json.loads(downloads.data(at.get("download_button")[0]))
    assert bundle == json.loads(shown)  # the file is what the page shows
    assert (bundle["format"], bundle["version"]) == ("agentcore.comparison", 1)
    assert bundle["prompt"] == "What is the weather in Paris?"
    assert [r["format"] for r in bundle["runs"]] == ["agentcore.transcript"] * 2
    assert [r["config"]["model"] for r in bundle["runs"]] == ["weather", "recovery"]
    columns = comparison(at).columns
    assert [len(r["messages"]) for r in bundle["runs"]] == [len(c.run.messages) for c in columns]

    button(at, "Open scripted:recovery in the playground").click()
    at.run()
    assert not at.exception
    session = at.session_state["session"]  # the playground's state, as ui/state.py keeps it
    opened = session.run
    column_run = columns[1].run
    assert opened is not column_run and opened.messages == column_run.messages
    assert opened.id == column_run.id and session.current_id == opened.id
    assert any("Playground" in m.value for m in at.main.markdown)  # the app went to the playground
    assert at.main.metric[0].value == f"{len(opened.steps)} / {opened.config.max_steps}"


def test_the_columns_draw_their_messages_with_the_message_view(page):
    at = page(("scripted", "weather"), ("scripted", "recovery"), tools=("get_weather", "calculator"))
    button(at, "Run all").click()
    settle(at)
    heads = [m.value for m in at.main.markdown if m.value.startswith("**#")]
    counts = [len(c.run.messages) for c in comparison(at).columns]
    assert len(heads) == sum(counts)
    assert heads[0].startswith("**#0**") and ":blue-badge[user]" in heads[0]
    assert any(":green-badge[tool]" in h for h in heads)
    assert any("result of **`get_weather`**" in m.value for m in at.main.markdown)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_page_offers_as_many_columns_as_configurations(page, n):
    at = page(*[("scripted", "weather")] * n)
    assert len([s for s in at.main.selectbox if s.label == "Provider"]) == n
    button(at, "Step all").click()
    settle(at)
    labels = [c.label for c in comparison(at).columns]
    assert labels == ["scripted:weather"] + [f"scripted:weather #{k}" for k in range(2, n + 1)]


def test_the_setup_survives_a_visit_to_another_page(page):
    at = page(("scripted", "recovery"), ("scripted", "runaway"), max_steps=7)
    at.text_area(key="cmp_prompt").input("What is 17 * 23 + 4?")
    at.run()
    # Streamlit drops a widget's value while a page without it is drawn; the page keeps them in its state
    at.switch_page("views/cost.py").run()
    assert "cmp_prompt" not in at.session_state
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.text_area(key="cmp_prompt").value == "What is 17 * 23 + 4?"
    assert at.selectbox(key="cmp_scenario_0").value == "recovery"
    assert at.number_input(key="cmp_max_steps").value == 7


def test_column_titles_say_what_differs_between_the_configurations(page):
    at = page(("scripted", "weather"), ("scripted", "weather"))
    at.number_input(key="cmp_temperature_0").set_value(0.2)
    at.number_input(key="cmp_temperature_1").set_value(1.0)
    at.run()
    button(at, "Step all").click()
    settle(at)
    assert not at.exception
    labels = ["scripted:weather · T=0.2", "scripted:weather · T=1.0"]
    assert [c.label for c in comparison(at).columns] == labels
    assert list(at.dataframe[0].value["configuration"]) == labels


def test_a_new_configuration_is_not_a_copy_of_another(page):
    at = page(("scripted", "weather"), ("scripted", "recovery"))
    at.number_input(key="cmp_n").set_value(4).run()
    assert not at.exception

    def chosen(i: int) -> tuple[str, str]:
        provider = at.selectbox(key=f"cmp_provider_{i}").value
        if provider == "scripted":
            return provider, at.selectbox(key=f"cmp_scenario_{i}").value
        return provider, at.text_input(key=f"cmp_model_{i}").value

    columns = [chosen(i) for i in range(4)]
    assert len(set(columns)) == 4, columns  # each new column starts on a provider or scenario not yet used
    for provider, model in columns:
        if provider != "scripted":
            assert model == REGISTRY[provider].default_model


def test_columns_on_the_same_embedded_model_say_they_take_turns(page):
    at = page(("scripted", "weather"), ("scripted", "runaway"), ("scripted", "recovery"))
    for i in (0, 2):
        at.selectbox(key=f"cmp_provider_{i}").set_value("local")
        at.run()
    assert not at.exception
    captions = [c.value for c in at.main.caption if "Takes turns" in c.value]
    assert len(captions) == 2
    assert "column 3" in captions[0] and "column 1" in captions[1]
    assert "one call at a time" in captions[0]


def test_the_summary_shows_a_dash_where_a_column_has_no_value(page):
    at = page(("scripted", "weather"), ("scripted", "runaway"))
    button(at, "Step all").click()
    settle(at)
    table = at.dataframe[0].value
    assert list(table["stop reason"]) == ["—", "—"]  # neither column has stopped after one step
    assert not {"None", "nan"} & {str(v) for v in table.to_numpy().ravel()}


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_cost_pages_comparison_runs_the_run_twice_the_second_column_with_its_policies(open_app):
    from agentcore import Agent, Run, RunConfig, ScriptedProvider
    from agentcore.policies import ContextPolicies
    from agentcore.toolbox import get_tools
    from ui.state import Session

    tools = get_tools(["search_notes", "read_note"])
    policies = ContextPolicies(keep_tool_results=1)
    config = RunConfig(
        provider="scripted", model="research", scenario="research", tools=[t.spec() for t in tools], max_steps=5
    )
    run = Run.start("Research why agents get expensive.", config.model_copy(update={"policies": policies}))
    Agent(ScriptedProvider(scenario="research"), tools).run(run)
    session = Session()
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    at.button(key="cost_compare_policy").click().run()
    assert not at.exception, at.exception
    assert at.number_input(key="cmp_n").value == 2
    assert at.text_area(key="cmp_prompt").value == "Research why agents get expensive."
    assert at.multiselect(key="cmp_tools").value == ["search_notes", "read_note"]
    assert [at.selectbox(key=f"cmp_scenario_{i}").value for i in range(2)] == ["research", "research"]
    at.switch_page(PAGE)  # AppTest draws the page it was last sent to, as a browser does after the switch
    button(at, "Run all").click()
    settle(at)
    assert not at.exception, at.exception
    columns = comparison(at).columns
    assert [c.run.config.policies for c in columns] == [None, policies]
    assert [len(c.run.steps) for c in columns] == [5, 5]
    assert "keep_tool_results=1" in columns[1].label and "keep_tool_results" not in columns[0].label


MISSING = (
    "which this comparison does not offer: those calls will come back as unknown-tool errors. Add them under Tools."
)


def test_each_column_shows_its_final_answer_beside_it(page):
    at = page(("scripted", "weather"), ("scripted", "runaway"), max_steps=3)
    button(at, "Run all").click()
    settle(at)
    assert not at.exception
    answer = comparison(at).columns[0].run.final_answer()
    assert answer and answer.startswith("Here is the weather")
    finals = [s.value for s in at.success if s.value.startswith("**Final answer**")]
    assert finals == [f"**Final answer**  \n{safe.block(answer)}"]  # the runaway reached its budget: no answer


def test_a_scenario_whose_tools_are_not_all_offered_is_warned_about(page):
    at = page(("scripted", "weather"), ("scripted", "runaway"), tools=("get_weather",))
    warned = [w.value for w in at.warning]
    assert len(warned) == 1 and "runaway scenario calls search\\_notes" in warned[0].replace(
        "search_notes", "search\\_notes"
    )
    at.multiselect(key="cmp_tools").set_value(["get_weather", "search_notes"]).run()
    assert not at.warning


def _verdicts(at: AppTest) -> list[str]:
    """Each column's mark under its final answer, in column order."""
    return [m.value for m in at.markdown if "contains the expected answer]" in m.value or "not contain it]" in m.value]


def test_a_scenarios_expected_answer_is_shown_and_each_column_is_marked_by_whether_it_contains_it(page):
    at = page(("scripted", "tool_error"), ("scripted", "weather"), tools=("calculator", "get_weather"))
    at.text_area(key="cmp_prompt").set_value("What is 17 \u00d7 23?").run()  # the tool_error scenario's own prompt
    expected = "**Expected answer** (the tool_error scenario): contains `391`"
    assert [m.value for m in at.markdown if "Expected answer" in m.value] == [f":material/task_alt: {expected}"]
    button(at, "Run all").click()
    settle(at)
    assert not at.exception
    columns = comparison(at).columns
    assert "391" in columns[0].run.final_answer() and "391" not in columns[1].run.final_answer()
    assert _verdicts(at) == [
        ":green-badge[:material/check: contains the expected answer]",
        ":orange-badge[:material/close: does not contain it] `391` missing",
    ]
    assert not [m.value for m in at.markdown if "correct" in m.value.lower()]  # containment, not correctness
    table = at.dataframe[0].value
    assert list(table["expected answer"]) == ["contains it", "does not contain it"]
    bundle = comparison(at).bundle()
    assert bundle["expected_answer"]["contains"] == ["391"]
    assert [row["contains_expected"] for row in bundle["summary"]] == [True, False]


def test_a_prompt_with_no_expected_answer_marks_no_column(page):
    at = page(("scripted", "tool_error"), ("scripted", "weather"), tools=("calculator", "get_weather"))
    button(at, "Run all").click()  # the page's own prompt, which no scenario declares an answer for
    settle(at)
    assert not at.exception
    assert not [m.value for m in at.markdown if "Expected answer" in m.value]
    assert _verdicts(at) == []
    assert "expected answer" not in at.dataframe[0].value.columns


def test_runs_per_configuration_runs_each_again_and_opens_any_run_in_the_playground(page):
    at = page(("scripted", "weather"), ("scripted", "runaway"), max_steps=3)
    button(at, "Run all").click()
    settle(at)
    assert any("run each configuration again" in c.value for c in at.main.caption)
    at.number_input(key="cmp_repeat_n").set_value(2)
    at.button(key="cmp_repeat").click()
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "answered" in d.value.columns)
    assert list(table["configuration"]) == ["scripted:weather", "scripted:runaway"]
    assert list(table["answered"]) == ["3/3", "0/3"]  # the runaway runs out of steps every time
    assert list(table["steps"]) == ["2", "3"]
    picks = at.selectbox(key="cmp_repeat_pick").options
    assert len(picks) == 6 and all(" · run " in p for p in picks)
    assert any(o.startswith("scripted:runaway · run 3 · made the 3 steps it was given · ") for o in picks)
    at.selectbox(key="cmp_repeat_pick").set_value("1:2").run()  # the runaway's third run
    at.button(key="cmp_repeat_open").click().run()
    assert not at.exception
    opened = at.session_state["session"].run
    assert opened.stop_reason == "max_steps" and len(opened.steps) == 3


def research_run() -> Run:
    """The scripted research scenario run to its answer, reading notes step after step."""
    tools = toolbox.get_tools("search_notes,read_note")
    run = Run.start("Research why agents get expensive.", RunConfig.made_for("scripted", "research", tools))
    Agent(ScriptedProvider(scenario="research"), tools).run(run)
    return run


def test_compare_from_the_runs_page_forks_the_chosen_step_and_keeps_each_fork_under_the_run(
    open_app, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    run = research_run()
    store = Store(tmp_path / "runs.db")
    store.save_run(run)
    at = compare_from_runs_page(open_app, run, 4)
    assert any("From step 4 of run" in m.value and run.id in m.value for m in at.main.markdown)
    assert at.selectbox(key="cmp_provider_0").value == "scripted"
    assert at.selectbox(key="cmp_scenario_0").value == "research"  # the model that answered step 4, asked again
    at.selectbox(key="cmp_provider_1").set_value("scripted").run()
    at.number_input(key="cmp_from_steps").set_value(1).run()
    button(at, "Run all").click()
    settle(at)
    assert not at.exception, at.exception
    columns = comparison(at).columns
    assert [len(c.run.steps) for c in columns] == [4, 4]  # three kept, one made again
    assert comparison(at).summary()[0]["config"] == "original (scripted:research)"
    forks = store.children(run.id)
    assert sorted(f.id for f in forks) == sorted(c.run.id for c in columns) and {f.parent_step for f in forks} == {4}


def test_compare_from_a_model_turn_in_the_message_list(open_app, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    run = research_run()
    session = Session()
    session.add_run(run)
    at = open_app(session=session, view="Messages")
    reply = run.steps[-2].message_count  # the newest messages are on the list's first page
    open_menu(at, reply + 1)
    shown = {b.key for b in at.button}
    assert f"edit_{reply + 1}" in shown and f"cmp_from_{reply + 1}" not in shown  # a tool result has no such button
    open_menu(at, reply)
    at.button(key=f"cmp_from_{reply}").click().run()
    assert not at.exception, at.exception
    state = at.session_state["compare_state"]
    assert (state.origin.run.id, state.origin.step) == (run.id, len(run.steps) - 1)
    assert Store(tmp_path / "runs.db").exists(run.id)  # saved first: its forks are kept under it


def test_compare_from_step_4_with_one_step_says_the_step_it_was_given_and_keeps_the_runs_message_numbers(
    open_app, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    run = research_run()
    Store(tmp_path / "runs.db").save_run(run)
    at = compare_from_runs_page(open_app, run, 4)
    at.selectbox(key="cmp_provider_1").set_value("scripted").run()
    at.number_input(key="cmp_from_steps").set_value(1).run()
    button(at, "Run all").click()
    settle(at)
    assert not at.exception, at.exception
    assert [c.run.stop_reason for c in comparison(at).columns] == ["max_steps", "answer"]
    captions = [c.value for c in at.main.caption]
    made = [c for c in captions if c.startswith("from step 4 · step 4 of 4")]
    assert [c.rsplit(" · ", 1)[1] for c in made] == ["stop: made the 1 step it was given from step 4", "stop: answered"]
    assert not any("max_steps" in c for c in captions)  # the loop's name for it, never said to a person
    table = at.main.dataframe[0].value
    assert list(table["stop reason"]) == ["answered", "made the 1 step it was given from step 4", "answered"]
    # the original's column and each fork's start at step 4's reply, numbered as in the run, not from #0
    cut = run.steps[3].message_count
    heads = [m.value.split(" ", 1)[0] for m in at.main.markdown if m.value.startswith("**#")]
    assert heads.count(f"**#{cut}**") == 3 and "**#0**" not in heads


def test_a_paid_column_says_what_its_first_call_would_send_and_cost_before_anything_is_sent(page):
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: the estimate is made without a call
    at = page(("scripted", "weather"), ("openai", dead))
    at.text_input(key="cmp_model_1").set_value("gpt-4o-mini").run()
    estimates = [c.value for c in at.main.caption if "The next model call sends" in c.value]
    assert len(estimates) == 1  # the paid column's, not the scripted one's
    [said] = estimates
    tokens = int(re.search(r"~([0-9,]+) tokens", said)[1].replace(",", ""))  # type: ignore[index]
    assert "`openai/gpt-4o-mini`" in said and re.search(r"~\$0\.[0-9]{6}", said)
    at.text_area(key="cmp_prompt").set_value(
        at.session_state["cmp_prompt"] + " Answer in one short line, please."
    ).run()
    [longer] = [c.value for c in at.main.caption if "The next model call sends" in c.value]
    assert int(re.search(r"~([0-9,]+) tokens", longer)[1].replace(",", "")) > tokens  # type: ignore[index]
    assert comparison(at) is None  # nothing was built or sent


def test_compare_from_a_stored_step_says_what_a_paid_columns_fork_would_send_from_the_history_there(
    open_app, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    run = research_run()
    Store(tmp_path / "runs.db").save_run(run)

    def estimate_from(step: int) -> int:
        at = compare_from_runs_page(open_app, run, step)
        at.selectbox(key="cmp_provider_1").set_value("openai").run()
        at.text_input(key="cmp_model_1").set_value("gpt-4o-mini").run()
        [said] = [c.value for c in at.main.caption if "The next model call sends" in c.value]
        assert "`openai/gpt-4o-mini`" in said and comparison(at) is None
        return int(re.search(r"~([0-9,]+) tokens", said)[1].replace(",", ""))  # type: ignore[index]

    # the fork sends the history as it stood before step k's call: a later step, more of it
    assert estimate_from(2) < estimate_from(5)
