"""What a model, a tool or an imported run writes is shown, never fetched, linked or run: ui.safe and every page.

A hostile run carries Markdown images, links, raw HTML, a script, Streamlit's own extensions and
code-span break-outs in every place a run holds text. Each page draws it under AppTest, and every
piece of Markdown the page emits (bodies, captions, alerts, headings, widget labels) is read the
way Streamlit's renderer reads it: outside its code spans and escapes, none of it may be live.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from support.hostile import (
    CALL_1,
    EVIL,
    FRAGMENTS,
    NAME,
    assert_inert,
    breakout,
    dangers,
    hostile_run,
    live,
    markdown_of,
    payload,
)

from agentcore.compare import ColumnSpec, Comparison
from agentcore.messages import ToolMessage
from agentcore.run import Run
from agentcore.store.runs import Store
from agentcore.store.runs import default_path as default_db
from ui import safe
from ui.page_state import CompareState
from ui.state import Session

# -- reading Markdown as Streamlit's renderer does --------------------------------------------


# -- the helpers -------------------------------------------------------------------------------


def test_an_image_becomes_words_with_its_address_as_code():
    shown = safe.markdown(f"see ![chart](http://{EVIL}/c.png?d=1)")
    assert shown.strip() == rf"see \[image: chart `http://{EVIL}/c.png?d=1`\]"


def test_a_link_becomes_its_words_then_its_address_as_code():
    assert safe.markdown(f"[docs](https://{EVIL}/d).").strip() == f"docs (`https://{EVIL}/d`)."


def test_formatting_and_code_of_a_message_are_kept():
    text = "# Plan\n\n- **bold** and `a<b` here\n\n```python\nx = '[a](http://e.invalid)'\n```"
    shown = safe.markdown(text)
    assert "# Plan" in shown and "- **bold** and `a<b` here" in shown
    assert "```python\nx = '[a](http://e.invalid)'\n```" in shown
    assert not dangers(shown.replace("e.invalid", EVIL).replace("[a](", "[a]x("))


def test_a_code_span_holds_any_backticks_and_shows_them():
    for text in ["a`b", "``x``", "`", " lead", "trail ", "a\n\nb"]:
        span = safe.code(text)
        assert live(span).strip() == ""
        fence = re.match(r"`+", span)[0]  # type: ignore[index]
        inner = span[len(fence) : -len(fence)]
        shown = inner[1:-1] if inner.startswith(" ") and inner.endswith(" ") and inner.strip() else inner
        assert shown == text.replace("\n", " ")


def test_plain_text_keeps_what_needs_no_escape():
    assert safe.inline("genai-prices does not know scripted:research") == "genai-prices does not know scripted:research"
    assert safe.block("bad.json: messages[1].role: expected user") == "bad.json: messages[1].role: expected user"
    assert safe.inline("color:red and :red[x]") == r"color\:red and \:red[x\]"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "word",
    ["a" * 300_000, "a." * 150_000, "@a" * 150_000, "x" * 300_000 + " https://e.invalid/z", "[a](" * 75_000],
    ids=["letters", "dots", "at signs", "an address after a long word", "open links"],
)
def test_a_word_of_hundreds_of_thousands_of_characters_is_shown_whole_and_read_once(word):
    # a tool's token or a base64 blob: the address pattern once read such a word from each of its characters
    for shown in (safe.markdown(word), safe.inline(word)):
        assert len(shown) >= len(word)
        assert ("`https://e.invalid/z`" in shown) is word.endswith("/z")


def test_plotly_names_show_markup_as_text():
    assert safe.plotly(f'<a href="http://{EVIL}">x</a>') == f'&lt;a href="http://{EVIL}"&gt;x&lt;/a&gt;'


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12))
def test_no_combination_of_hostile_fragments_comes_out_live(parts):
    text = "".join(parts)
    for shown in (safe.markdown(text), safe.inline(text), safe.block(text), f"**{safe.code(text)}** x"):
        assert not dangers(shown), (text, shown)


# -- the pages ---------------------------------------------------------------------------------


@pytest.fixture
def playground(open_app):
    """The app on the playground with `run` current; `before` may change the Session first."""

    def open_(run: Run, before=None, view: str = "Messages") -> AppTest:
        session = Session()
        session.add_run(run)
        session.sync_sidebar = False  # the run's provider is the scripted one: nothing to follow
        if before is not None:
            before(session)
        return open_app(session=session, view=view)

    return open_


def test_the_playground_shows_a_hostile_run_inert(playground):
    def notices(session: Session) -> None:
        session.notice = payload("notice")
        session.store_error = payload("store")

    shown = ""
    # only the open tab is drawn: each is checked, with a piece of hostile text it shows
    for view, piece in (("Messages", f"http://{EVIL}/answer-img?d=secret"), ("Steps", f"{EVIL}/url-img")):
        at = playground(hostile_run(), notices, view=view)
        assert_inert(at, shows=piece)
        shown += "\n".join(md for _, md in markdown_of(at))
    for tag in ("user", "final", "name", "id", "provider-error", "notice", "store", "url"):
        assert f"{EVIL}/{tag}-img" in shown, tag  # each place's text is there, as text


def test_the_pending_calls_and_the_editor_show_hostile_names_inert(playground):
    def edit(session: Session) -> None:
        session.editing = 2

    at = playground(hostile_run(pending=True), edit)
    assert at.radio(key=f"dec_{CALL_1}").value == "Approve"  # the calls wait for a decision
    assert any(NAME in t.label for t in at.text_area if t.label.startswith("Arguments of"))
    assert_inert(at, shows=f"{EVIL}/name-img")


def test_a_draft_with_a_broken_list_shows_its_problems_inert(playground):
    def draft(session: Session) -> None:
        run = session.run
        session.draft = [*run.messages, ToolMessage(tool_call_id=breakout("orphan"), name=NAME, content="x")]

    at = playground(hostile_run(), draft)
    assert any("orphan" in e.value for e in at.error)
    assert_inert(at, shows=f"{EVIL}/orphan-img")


@pytest.fixture
def library(open_app):
    """The runs page over a database holding the hostile run, a fork of it and a run left pending."""
    store = Store(default_db())
    run = hostile_run()
    fork = run.fork(1)
    for r in (run, fork, hostile_run(pending=True)):
        store.save_run(r)
    return run, fork, lambda: open_app("views/runs.py")


def test_the_runs_page_shows_a_hostile_run_its_fork_and_their_diff_inert(library):
    run, fork, page = library
    at = page()
    at.selectbox(key="runs_selected").set_value(fork.id).run()  # the picker starts on the table's first row
    assert at.selectbox(key=f"runs_diff_{fork.id}").value == run.id  # the parent is compared by default
    assert_inert(at, shows=f"{EVIL}/title-img")
    at.selectbox(key="runs_selected").set_value(run.id).run()
    assert_inert(at, shows=f"{EVIL}/run-id-img")


def test_the_runs_page_shows_an_import_and_a_refusal_with_hostile_names_inert(library):
    _, _, page = library
    at = page()
    body = {"messages": [{"role": "user", "content": payload("imported")}]}
    name = f"{breakout('file')}.json"
    at.file_uploader[0].set_value((name, json.dumps(body).encode(), "application/json")).run()
    assert any("Imported" in s.value for s in at.success)
    assert_inert(at, shows=f"{EVIL}/file-img")
    bad = [{"role": "user", "content": "x"}, {"role": breakout("role")}]
    at.file_uploader[0].set_value((f"bad{name}", json.dumps(bad).encode(), "application/json")).run()
    assert any("Refused" in e.value for e in at.error)
    assert_inert(at, shows=f"{EVIL}/role-img")


def test_the_cost_page_shows_a_hostile_run_and_file_name_inert(open_app):
    session = Session()
    session.add_run(hostile_run())
    at = open_app("views/cost.py", session=session)
    assert any("genai-prices does not know" in c.value for c in at.caption)
    assert_inert(at, shows=f"{EVIL}/model-img")
    upload = (f"{breakout('upload')}.json", b'{"format": "nope"}', "application/json")
    at.file_uploader(key="cost_upload").set_value(upload).run()
    assert_inert(at, shows=f"{EVIL}/upload-img")


def test_the_compare_columns_show_hostile_runs_inert(open_app):
    spec = ColumnSpec(provider="scripted", model="weather", label=f"col{breakout('label')}")
    comparison = Comparison("prompt", [spec, ColumnSpec(provider="scripted", model="weather")], max_steps=4)
    column = comparison.columns[0]
    column.run = hostile_run()
    column.crash = payload("crash")
    column.live_text = payload("live")
    at = open_app()
    at.session_state[CompareState.KEY] = CompareState(comparison=comparison)
    at.switch_page("views/compare.py").run()
    shown = "\n".join(md for _, md in markdown_of(at))
    for tag in ("final", "label", "crash", "live", "url"):
        assert f"{EVIL}/{tag}-img" in shown, tag
    assert_inert(at, shows=f"{EVIL}/answer-img")
