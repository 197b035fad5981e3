"""What daily use of the pages needs: counts in words, dashes for missing values, the wire view's status and
JSON text, and one name for each download whichever page offers it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.exports import export_filename
from agentcore.providers.scripted import get_scenario
from agentcore.store.runs import Store
from agentcore.transcript import json_text
from ui import words


def scripted_run(scenario: str = "weather") -> Run:
    """A finished run of a scripted scenario, with its wire exchanges."""
    sc = get_scenario(scenario)
    tools = toolbox.get_tools(",".join(sc.tools))
    run = Run.start(sc.prompt, RunConfig(provider="scripted", model=scenario, tools=[t.spec() for t in tools]))
    Agent(create_provider("scripted", scenario, scenario=scenario), tools).run(run)
    return run


@pytest.fixture
def playground(open_app):
    """The app on the playground with `run` as its current run."""
    from ui.state import Session

    def open_(run: Run, view: str = "Messages") -> AppTest:
        session = Session()
        session.add_run(run)
        return open_app(session=session, view=view)

    return open_


class FileNames:
    """The file name each download button hands the browser, recorded while AppTest draws the page."""

    def __init__(self) -> None:
        self.by_id: dict[str, str | None] = {}

    def of(self, button) -> str | None:
        proto = button.proto
        return self.by_id[proto.deferred_file_id or Path(proto.url).stem]


@pytest.fixture
def file_names(monkeypatch) -> FileNames:
    seen = FileNames()
    store, defer = MemoryMediaFileStorage.load_and_get_id, MediaFileManager.add_deferred

    def load_and_get_id(self, path_or_data, mimetype, kind, filename=None):
        file_id = store(self, path_or_data, mimetype, kind, filename)
        seen.by_id[file_id] = filename
        return file_id

    def add_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        file_id = defer(self, data_callable, mimetype, coordinates, file_name, **kwargs)
        seen.by_id[file_id] = file_name
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load_and_get_id)
    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return seen


# -- the words ---------------------------------------------------------------------------


def test_numbers_read_as_ranges_and_counts_take_their_plural():
    assert words.numbered("step", range(1, 31)) == "steps 1–30"
    assert words.numbered("step", [4]) == "step 4"
    assert words.numbered("step", [1, 2]) == "steps 1 and 2"
    assert words.numbered("step", [9, 1, 2, 3, 7, 10]) == "steps 1–3, 7, 9 and 10"
    assert words.numbered("column", [2, 3]) == "columns 2 and 3"
    assert [words.plural(n, "step") for n in (0, 1, 2)] == ["0 steps", "1 step", "2 steps"]


def test_a_missing_value_is_a_dash_and_zero_has_no_sign():
    assert words.shown(None) == words.shown(float("nan")) == words.text(None) == words.text("") == "—"
    assert words.shown(-0.04) == "0.0" and words.shown(-0.0, ".6f") == "0.000000"
    assert words.shown(-1.5) == "-1.5"  # a real negative keeps its sign
    assert str(words.number(-0.04)) == "0.0" and words.number(None) is None
    assert words.usd(2.355e-05) == "$0.000024" and words.usd(None) == "—"
    assert words.usd(0.0) == "free"


# -- a message's text as one block -------------------------------------------------------


def test_a_fenced_block_keeps_any_text_inside_it_as_written():
    from support.hostile import FRAGMENTS, live

    from ui import safe

    for text in [*FRAGMENTS, "a\n```\n# out\n```", "````x````", "~~~\n<img src=x>\n~~~", "`" * 7 + "\n"]:
        block = safe.fenced(text, "json")
        fence = block.split("json\n", 1)[0]
        assert block == f"{fence}json\n{text}\n{fence}" and set(fence) == {"`"} and len(fence) >= 3
        assert fence not in text  # nothing inside can close the block early
        assert live(block) == " ", (text, block)  # to the Markdown reader it is all one code block


def test_a_message_is_one_markdown_block_with_its_tool_calls_and_json_result(playground):
    run = scripted_run()
    at = playground(run)
    assert not at.exception
    call = next(m for m in run.messages if m.role == "assistant" and m.tool_calls).tool_calls[0]
    shown = [str(m.value) for m in at.main.markdown]
    row = next(md for md in shown if md.startswith("**#1**"))
    assert "assistant" in row and call.name in row and call.id in row  # the header and the call, together
    result = next(md for md in shown if md.startswith("**#2**"))
    assert "result of" in result and "```json\n" in result  # the tool's JSON output in the same block


# -- the steps table and the wire view (ui/steps_view.py) --------------------------------


def test_the_steps_table_shows_dashes_and_no_negative_zero(playground):
    run = scripted_run()
    run.steps[0].latency_ms = -0.01  # a clock step back: rounds to -0.0
    run.steps[0].finish_reason = None
    at = playground(run, view="Steps")
    assert not at.exception
    table = at.dataframe[0].value
    cells = {str(v) for v in table.to_numpy().ravel()}
    assert not {"None", "-0.0", "nan"} & cells
    assert table["finish"].iloc[0] == "—"
    assert str(table["latency ms"].iloc[0]) == "0.0"


def test_the_steps_table_says_which_steps_came_from_the_parent_and_who_answered_each(playground):
    parent = scripted_run()
    fork = parent.fork(2)
    Agent(create_provider("scripted", "weather", scenario="weather"), toolbox.get_tools("get_weather")).step(fork)
    fork.steps[-1].provider, fork.steps[-1].model = "local", "smollm2-135m"  # step 2 answered after a switch
    at = playground(fork, view="Steps")  # the parent is not open in this session
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["from"]) == ["parent run", "this run"]
    assert list(table["model"]) == ["scripted/weather", "local/smollm2-135m"]


def test_the_wire_view_shows_the_status_as_a_status_and_the_json_to_copy(playground):
    run = scripted_run()
    at = playground(run, view="Steps")
    assert not at.exception
    step = run.steps[-1]
    head = next(c.value for c in at.main.caption if "scripted://weather" in c.value)
    assert head.endswith(":green-badge[200 OK]") and "status 200" not in head  # a badge, not a bare number
    codes = [c.value for c in at.main.code if c.language == "json"]
    assert json_text(step.wire.request, indent=2) in codes  # the request as JSON text, with a copy button
    assert json_text(step.wire.response, indent=2) in codes
    trees = [j.value for j in at.main.json]
    bodies = [json.loads(t) if isinstance(t, str) else t for t in trees]
    assert step.wire.request in bodies and step.wire.response in bodies  # and as a tree


# -- one file name per download -----------------------------------------------------------


def test_a_run_downloads_under_the_same_name_from_every_page(tmp_path, monkeypatch, playground, file_names):
    run = scripted_run()
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    Store(tmp_path / "runs.db").save_run(run)
    at = playground(run)
    assert file_names.of(at.download_button(key="export")) == export_filename(run, "json")
    at.switch_page("views/runs.py").run()
    at.selectbox(key="runs_selected").set_value(run.id).run()
    assert not at.exception
    assert file_names.of(at.download_button(key="runs_dl_json")) == export_filename(run, "json")
    assert file_names.of(at.download_button(key="runs_dl_openai")) == export_filename(run, "openai")
    at.switch_page("views/cost.py").run()
    assert file_names.of(at.download_button(key="cost_csv")) == export_filename(run, "cost")
    assert export_filename(run, "json") == f"agentcore-run-{run.id}.json"
    assert export_filename(run, "openai") == f"agentcore-run-{run.id}.openai.json"
    assert export_filename(run, "cost") == f"agentcore-run-{run.id}.cost.csv"
    odd = run.model_copy(update={"id": "../x\x00y"})
    assert export_filename(odd, "json") == "agentcore-run-_x_y.json"
