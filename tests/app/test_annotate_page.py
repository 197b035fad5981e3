"""Annotations in the app under AppTest: the Annotate form under a step, Make this a test, the Runs page's labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support.app import click

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.annotations import make_annotation
from agentcore.providers.scripted import get_scenario
from agentcore.store.runs import Store
from agentcore.testing import pinned

HOSTILE = "see ![x](http://evil.example/p.png) and :red[alarm] **bold** \u202eesrever\nsecond line"


@pytest.fixture
def tests_folder(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "tests"
    monkeypatch.setenv("AGENTCORE_TESTS", str(folder))
    return folder


def finished_weather_run(open_app, steps_tab) -> AppTest:
    at = open_app()
    at.selectbox(key="cfg_scenario").set_value("weather").run()
    click(at, "start")
    click(at, "run_to_end")
    steps_tab(at)
    at.selectbox(key="inspect_step").set_value(1).run()
    return at


def form(at: AppTest, step: int = 1) -> str:
    """The playground's Annotate form's key prefix for the current run's `step`."""
    return f"annotate_playground_{at.session_state['session'].run.id}_{step}_"


def fill(at: AppTest, step: int = 1, **values) -> None:
    for field, value in values.items():
        at.session_state[form(at, step) + field] = value


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_tool_call_is_annotated_under_its_step_and_made_a_test_that_fails_on_the_run(
    open_app, steps_tab, tests_folder
):
    at = finished_weather_run(open_app, steps_tab)
    run = at.session_state["session"].run
    call = run.messages[1].tool_calls[0]
    assert at.selectbox(key=form(at) + "target").options[1].startswith(f"call {call.id}: get_weather(")
    fill(
        at,
        target=call.id,
        labels=["wrong arguments"],
        tags="units, weather",
        score=0.5,
        note=HOSTILE,
        call_name="get_weather",
        call_args='{"city": "Lyon"}',
    )
    click(at, form(at) + "save")

    [kept] = Store().annotations(run.id)
    assert (kept.tool_call_id, kept.labels, kept.tags, kept.score) == (
        call.id,
        ["wrong arguments"],
        ["units", "weather"],
        0.5,
    )
    assert kept.note == HOSTILE and kept.correct_call.arguments == {"city": "Lyon"}
    assert run.annotations == [kept]  # the playground's run carries it, so its export does too
    shown = "\n".join(m.value for m in at.markdown)
    assert f"step 1, call {call.id}" in shown and "wrong arguments, units, weather · score 0.5" in shown
    assert "![x]" not in shown and "`http://evil.example/p.png`" in shown  # drawn inert: no image, no link
    assert "\u202e" not in shown and "\\u202eesrever" in shown  # a bidi control shown as its escape
    assert any("Annotated step 1" in s.value for s in at.success)

    click(at, f"annotate_playground_test_{kept.id}")
    [path] = list(tests_folder.iterdir())
    test = pinned.load(path)
    assert [f.expectation for f in pinned.check(test.expect, run)] == ["tool_calls (contains) at step 1"]
    assert any(str(path) in s.value for s in at.success)


def test_a_bad_annotation_is_one_line_and_nothing_is_kept(open_app, steps_tab, tests_folder):
    at = finished_weather_run(open_app, steps_tab)
    run = at.session_state["session"].run
    fill(at, labels=["looped"], call_name="get_weather", call_args="{not json")
    click(at, form(at) + "save")
    assert any("arguments are not JSON" in e.value for e in at.error)
    fill(at, call_args="[" * 20_000)  # within the field's 20,000 characters, past Python's recursion limit
    click(at, form(at) + "save")
    assert any("arguments are nested more than 100 levels deep" in e.value for e in at.error)
    fill(at, note="x" * 10, tags="t" * 41, call_name="")
    click(at, form(at) + "save")
    assert any("free label is at most 40" in e.value for e in at.error)
    assert Store().annotations(run.id) == []


# -- the Runs page and the Error analysis page over a labelled library --------------------------------------


def scripted(scenario: str, model: str | None = None) -> Run:
    sc = get_scenario(scenario)
    tools = toolbox.get_tools(",".join(sc.tools))
    config = RunConfig(provider="scripted", model=model or scenario, tools=[t.spec() for t in tools])
    run = Run.start(sc.prompt, config)
    Agent(create_provider("scripted", scenario, scenario=scenario), tools).run(run)
    for step in run.steps:
        step.model = model or step.model  # as if another model had answered
    return run


@pytest.fixture
def library(tmp_path: Path, monkeypatch) -> tuple[Store, Run, Run]:
    """Two researches by ada (one labelled twice) and a weather run by bob labelled good, tagged city."""
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    monkeypatch.setenv("AGENTCORE_USER", "ada")
    ada, bob = Store(tmp_path / "runs.db", owner="ada"), Store(tmp_path / "runs.db", owner="bob")
    research, again, weather = scripted("research"), scripted("research", "research-2"), scripted("weather")
    ada.save_run(research)
    ada.save_run(again)
    bob.save_run(weather)
    ada.annotate(research.id, make_annotation(step=2, tool_call_id="call_2_0", labels=["wrong arguments"]))
    ada.annotate(research.id, make_annotation(step=9, labels=["looped", "wrong arguments"], tags=["<b>x</b>"]))
    ada.annotate(again.id, make_annotation(step=1, labels=["wrong tool"]))
    bob.annotate(weather.id, make_annotation(step=1, labels=["good"], tags=["city"]))
    return ada, research, weather


def chart(at: AppTest) -> dict:
    [found] = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return found


def bars(at: AppTest) -> dict[str, int]:
    data = chart(at)["data"][0]
    return dict(zip(data["y"], data["x"], strict=True))


def test_the_error_analysis_counts_labels_across_runs_and_filters_them(library, open_app):
    store, research, weather = library
    at = open_app("views/errors.py")
    assert bars(at) == {
        "wrong tool": 1,
        "wrong arguments": 2,
        "looped": 1,
        "good": 1,
        "&lt;b&gt;x&lt;/b&gt;": 1,
        "city": 1,
    }
    assert chart(at)["layout"]["title"]["text"] == "7 labels across 3 runs"
    counts = at.dataframe[0].value
    # the table in the chart's order: most frequent first, ties by name
    assert list(counts["label"]) == ["wrong arguments", "<b>x</b>", "city", "good", "looped", "wrong tool"]

    at.selectbox(key="errors_owner").set_value("bob").run()
    assert bars(at) == {"good": 1, "city": 1}
    at.selectbox(key="errors_owner").set_value("All").run()
    at.selectbox(key="errors_model").set_value("research").run()
    assert bars(at) == {"wrong arguments": 2, "looped": 1, "&lt;b&gt;x&lt;/b&gt;": 1}
    at.selectbox(key="errors_model").set_value("All").run()
    at.selectbox(key="errors_tag").set_value("city").run()
    assert bars(at) == {"good": 1, "city": 1}
    steps = at.dataframe[1].value
    assert list(steps["id"]) == [weather.id] and list(steps["by"]) == ["bob"]
    at.selectbox(key="errors_tag").set_value("All").run()
    at.selectbox(key="errors_provider").set_value("scripted").run()
    assert sum(bars(at).values()) == 7
    assert not at.exception


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_runs_page_lists_each_runs_labels_and_annotates_the_chosen_step(library, open_app):
    store, research, weather = library
    at = open_app("views/runs.py")
    at.toggle(key="runs_mine").set_value(False).run()  # bob's runs too
    table = at.dataframe[0].value
    labels = dict(zip(table["id"], table["labels"], strict=True))
    assert labels[research.id] == "wrong arguments ×2, looped, <b>x</b>" and labels[weather.id] == "good, city"
    at.selectbox(key="runs_selected").set_value(research.id).run()
    assert at.selectbox(key=f"runs_annotate_step_{research.id}").value == 2  # the first labelled step
    at.session_state[f"annotate_runs_{research.id}_2_labels"] = ["ignored the result"]
    at.button(key=f"annotate_runs_{research.id}_2_save").click().run()
    assert not at.exception
    assert [a.labels for a in store.annotations(research.id) if a.step == 2] == [
        ["wrong arguments"],
        ["ignored the result"],
    ]
    at.run()
    table = at.dataframe[0].value
    assert "ignored the result" in dict(zip(table["id"], table["labels"], strict=True))[research.id]


def test_the_error_analysis_caption_counts_annotations_that_label_a_failure_and_no_others(library, open_app):
    at = open_app("views/errors.py")
    assert any(
        "7 labels across 3 runs, on 4 annotations, 2 of which carry more than one label; "
        "3 of the annotations label a failure" in c.value
        for c in at.caption
    )
    at.selectbox(key="errors_owner").set_value("bob").run()  # bob's one annotation says good, tagged city
    assert any(
        "2 labels across 1 run, on 1 annotation, 1 of which carries more than one label; "
        "0 of the annotations label a failure" in c.value
        for c in at.caption
    )


def test_the_error_analysis_bars_run_by_count_and_add_up_to_the_total_it_states(library, open_app):
    store, research, weather = library
    for step in (3, 4, 5):  # a free label more frequent than any failure, and a tie broken by name
        store.annotate(research.id, make_annotation(step=step, tags=["reading"]))
    at = open_app("views/errors.py")
    data = chart(at)["data"][0]
    drawn = list(zip(data["y"], data["x"], strict=True))
    assert drawn == [
        ("reading", 3),
        ("wrong arguments", 2),
        ("&lt;b&gt;x&lt;/b&gt;", 1),
        ("city", 1),
        ("good", 1),
        ("looped", 1),
        ("wrong tool", 1),
    ]
    assert chart(at)["layout"]["yaxis"]["autorange"] == "reversed"  # the first bar drawn at the top
    assert sum(data["x"]) == 10
    assert chart(at)["layout"]["title"]["text"] == "10 labels across 3 runs"
    assert any(c.value.startswith("10 labels across 3 runs, on 7 annotations, 2 of which") for c in at.caption)
    at.selectbox(key="errors_model").set_value("research-2").run()  # one label on each annotation: no difference
    assert chart(at)["data"][0]["x"] == [1]
    assert any(c.value.startswith("1 label across 1 run, one on each annotation;") for c in at.caption)


def test_the_error_analysis_says_how_to_begin_on_a_library_without_labels(open_app):
    at = open_app("views/errors.py")
    assert any("No labelled steps yet" in i.value for i in at.info)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_form_is_empty_after_save_and_on_each_other_step_so_no_label_is_copied_onto_another(
    open_app, steps_tab, tests_folder
):
    at = finished_weather_run(open_app, steps_tab)
    run = at.session_state["session"].run
    fill(at, labels=["wrong arguments"], note="step one's note", call_name="get_weather", call_args='{"city": "Lyon"}')
    click(at, form(at) + "save")
    assert at.multiselect(key=form(at) + "labels").value == [] and at.text_area(key=form(at) + "note").value == ""
    at.selectbox(key="inspect_step").set_value(2).run()
    assert at.multiselect(key=form(at, 2) + "labels").value == []  # the other step's form starts empty
    fill(at, 2, labels=["good"])
    click(at, form(at, 2) + "save")
    kept = {a.step: a for a in Store().annotations(run.id)}
    assert kept[1].labels == ["wrong arguments"] and kept[1].note == "step one's note"
    assert (kept[2].labels, kept[2].note, kept[2].correct_call) == (["good"], "", None)


def test_the_error_analysis_draws_readable_bars_and_opens_a_labelled_step_in_the_playground(library, open_app):
    store, research, weather = library
    at = open_app("views/errors.py")
    figure = chart(at)
    bars_drawn = len(figure["data"][0]["y"])
    plot = figure["layout"]["height"] - figure["layout"]["margin"]["t"] - figure["layout"]["margin"]["b"]
    assert plot / bars_drawn >= 30  # each bar and its gap at least 30 px: a bar one can read
    steps = at.dataframe[1].value
    assert list(steps.columns[:2]) == ["run", "id"]  # the run's id beside its title
    key = f"{research.id}:9"
    assert (
        f"{research.title} · step 9 · looped, wrong arguments, <b>x</b>" in at.selectbox(key="errors_open_pick").options
    )
    at.selectbox(key="errors_open_pick").set_value(key).run()
    at.button(key="errors_open").click().run()
    assert not at.exception
    session = at.session_state["session"]
    assert session.run.id == research.id and session.inspect_step == 9  # the playground, on its Steps tab there
    assert session.opened_from[1].startswith("Labelled step 9: looped, wrong arguments")
