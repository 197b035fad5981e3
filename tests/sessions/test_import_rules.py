"""The OTLP importer (agentcore.telemetry.importer) rule by rule, at each rule's limits and its other half: a span's
ids, times and status; the file's limits exactly at them; which span is the run's root; each step's times, counts
and reply; a tool run's times and failure; the config read from the first call; OpenInference's flattened lists.

Each trace here is written by hand as an emitter other than agentcore would write it (no agentcore attributes
unless a test says so), so what is read is what the conventions say, not what agentcore's own exporter wrote.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore.errors import TranscriptError
from agentcore.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from agentcore.telemetry import genai as g
from agentcore.telemetry import importer, spans
from agentcore.telemetry.importer import from_otlp
from agentcore.telemetry.spans import MAX_VALUE_CHARS, Span, is_otlp, read_otlp, spans_of_data

T0 = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20 UTC, in nanoseconds
MS = 1_000_000


def value(v: Any) -> dict[str, Any]:
    """An OTLP AnyValue; lists and objects as a JSON string, as the GenAI conventions carry structured content."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, tuple):  # an array attribute
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"stringValue": v if isinstance(v, str) else json.dumps(v)}


def span(span_id: str, name: str, start: int, end: int, parent: str = "", status: dict | None = None, **attrs):
    data = {
        "traceId": "ab" * 16,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k.replace("__", "."), "value": value(v)} for k, v in attrs.items()],
    }
    if parent:
        data["parentSpanId"] = parent
    if status is not None:
        data["status"] = status
    return data


def otlp(*spans: dict) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def calls(*ids: str) -> dict:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": i, "name": "get_weather", "arguments": {"city": i}} for i in ids],
    }


def result(call_id: str, text: str) -> dict:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": text}]}


def answer(text: str) -> dict:
    return {"role": "assistant", "parts": [{"type": "text", "content": text}]}


def chat(span_id: str, start_ms: int, end_ms: int, inputs: list, outputs: list | None, parent: str = "r", **attrs):
    fields = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": inputs, **attrs}
    if outputs is not None:
        fields["gen_ai.output.messages"] = outputs
    return span(span_id, "chat gpt-4o", T0 + start_ms * MS, T0 + end_ms * MS, parent, **fields)


def tool(span_id: str, call_id: str, start_ms: int, end_ms: int, text: str | None = "18 C", parent="r", **attrs):
    fields = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": call_id, **attrs}
    if text is not None:
        fields["gen_ai.tool.call.result"] = text
    return span(span_id, "execute_tool get_weather", T0 + start_ms * MS, T0 + end_ms * MS, parent, **fields)


def root(start_ms: int = 0, end_ms: int = 10_000, **attrs) -> dict:
    return span("r", "invoke_agent weather", T0 + start_ms * MS, T0 + end_ms * MS, **attrs)


# -- one span ------------------------------------------------------------------------


def test_a_span_reads_its_parent_status_and_call_id_as_written_and_nothing_else():
    bare = Span(span("s1", "x", 1, 2), "here")
    assert (bare.parent, bare.failed, bare.status_message, bare.call_id, bare.attributes) == ("", False, None, None, {})
    del_attrs = span("s1", "x", 1, 2)
    del del_attrs["attributes"]
    assert Span(del_attrs, "here").attributes == {}
    failed = Span(span("s2", "y", 1, 2, parent="s1", status={"code": 2, "message": "boom"}), "here")
    assert (failed.parent, failed.failed, failed.status_message) == ("s1", True, "boom")
    assert Span(span("s3", "z", 1, 2, status={"code": 2, "message": ""}), "here").status_message is None
    assert Span(span("s4", "z", 1, 2, status={"code": 1}), "here").failed is False
    for odd in ("", 7):
        assert Span(span("s5", "t", 1, 2, gen_ai__tool__call__id=odd), "here").call_id is None
    assert Span(span("s6", "t", 1, 2, gen_ai__tool__call__id="c1"), "here").call_id == "c1"
    assert Span(span("abcdef0123456789ff", "chat " + "m" * 80, 1, 2), "x").label() == (
        f"span {'chat ' + 'm' * 55!r} (abcdef0123456789)"
    )


@pytest.mark.parametrize(
    "change", [{"spanId": ""}, {"spanId": None}, {"spanId": 7}, {"traceId": ""}, {"traceId": None}, {"traceId": 7}]
)
def test_a_span_without_a_trace_id_and_a_span_id_is_refused(change):
    data = {**span("s1", "x", 1, 2), **change}
    with pytest.raises(TranscriptError, match=r"^here: a span needs a traceId and a spanId$"):
        Span(data, "here")


@pytest.mark.parametrize(
    "attrs, name, operation",
    [
        ({"gen_ai__operation__name": "chat"}, "x", "chat"),
        ({"openinference__span__kind": "LLM"}, "x", "chat"),
        ({"openinference__span__kind": "TOOL"}, "x", "execute_tool"),
        ({"openinference__span__kind": "AGENT"}, "x", "invoke_agent"),
        ({"openinference__span__kind": "CHAIN"}, "x", ""),
        ({}, "chat gpt-4o", "chat"),
        ({}, "execute_tool get_weather", "execute_tool"),
        ({}, "embeddings text-3", ""),
    ],
)
def test_a_span_s_operation_comes_from_the_conventions_then_openinference_then_its_name(attrs, name, operation):
    assert Span(span("s1", name, 1, 2, **attrs), "here").operation == operation


@pytest.mark.parametrize(
    "raw, nanos",
    [
        (5, 5),
        (True, 0),
        (-5, 0),
        (2**64, 2**63),
        ("1234567890123456789", 1234567890123456789),  # 19 digits: a time
        ("12345678901234567890", 0),  # 20: past any time, and no ISO text either
        ("2023-11-14T22:13:20+00:00", T0),  # Phoenix's download
        ("yesterday", 0),
        (1.5, 0),
        (None, 0),
    ],
)
def test_a_time_reads_as_nanoseconds_within_their_range(raw, nanos):
    assert spans._nanos(raw) == nanos


def test_a_stamp_is_the_utc_time_to_the_millisecond_and_an_impossible_one_is_the_epoch():
    assert importer._stamp(T0 + 123_456_789) == "2023-11-14T22:13:20.123+00:00"
    assert importer._stamp(2**63) == "2262-04-11T23:47:16.854+00:00"  # the latest time a span can hold
    assert importer._stamp(10**30) == "1970-01-01T00:00:00.000+00:00"


def _nested(depth: int, kind: str) -> dict:
    inner: dict = {"stringValue": "deep"}
    for _ in range(depth):
        inner = (
            {"arrayValue": {"values": [inner]}}
            if kind == "array"
            else {"kvlistValue": {"values": [{"key": "k", "value": inner}]}}
        )
    return inner


@pytest.mark.parametrize("kind", ["array", "kvlist"])
def test_values_nested_eight_deep_read_and_nine_deep_are_refused(kind):
    assert "deep" in json.dumps(spans._value(_nested(8, kind), "a"))
    with pytest.raises(TranscriptError, match="nested more than 8 levels deep"):
        spans._value(_nested(9, kind), "a")


def test_a_string_value_of_exactly_the_limit_reads_and_one_character_more_is_refused():
    assert len(spans._value({"stringValue": "x" * MAX_VALUE_CHARS}, "a")) == MAX_VALUE_CHARS
    with pytest.raises(TranscriptError, match=f"a value of {MAX_VALUE_CHARS + 1} characters"):
        spans._value({"stringValue": "x" * (MAX_VALUE_CHARS + 1)}, "a")


# -- the file ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"resourceSpans": []}, True),
        ({"resource_spans": []}, True),
        ({"data": [{"span_id": "s1"}]}, True),  # Phoenix's span download
        ({"data": []}, False),
        ({"data": [{"id": "s1"}]}, False),
        ({"data": [1]}, False),
        ([{"resourceSpans": []}], False),
        ({}, False),
    ],
)
def test_what_reads_as_a_trace(data, expected):
    assert is_otlp(data) is expected


def test_json_lines_of_exactly_the_most_bodies_read_and_one_more_is_refused(monkeypatch):
    monkeypatch.setattr(spans, "MAX_BODIES", 3)
    line = json.dumps({"resourceSpans": []})
    assert len(read_otlp("\n".join([line] * 3))) == 3
    with pytest.raises(TranscriptError, match="^4 lines of OTLP bodies; a file holds at most 3$"):
        read_otlp("\n".join([line] * 4))


def test_exactly_the_most_spans_read_and_one_more_is_refused_in_either_form(monkeypatch):
    monkeypatch.setattr(spans, "MAX_SPANS", 3)
    three = [span(f"s{i}", "x", 1, 2) for i in range(3)]
    assert len(spans_of_data(json.loads(otlp(*three)))) == 3
    with pytest.raises(TranscriptError, match="^more than 3 spans in one file$"):
        spans_of_data(json.loads(otlp(*three, span("s9", "x", 1, 2))))
    phoenix = [{"trace_id": "t", "span_id": f"s{i}", "name": "x"} for i in range(4)]
    assert len(spans_of_data({"data": phoenix[:3]})) == 3
    with pytest.raises(TranscriptError, match="^more than 3 spans in one file$"):
        spans_of_data({"data": phoenix})


def test_a_refusal_names_the_line_of_json_lines_and_no_line_of_one_body():
    good = json.dumps({"resourceSpans": []})
    with pytest.raises(TranscriptError, match=r"^line 2: expected an OTLP trace body"):
        from_otlp(f"{good}\n{json.dumps({'spans': []})}")
    with pytest.raises(TranscriptError, match=r"^\(top level\): expected an OTLP trace body"):
        spans.spans_of_bodies([{"spans": []}])


# -- the run -------------------------------------------------------------------------


def weather_trace(*, root_attrs: dict | None = None, first_chat: dict | None = None, answer_chat: dict | None = None):
    """An agent's trace as another framework writes it: a root, a chat that calls two tools, the tools, an answer."""
    asked = [user("Weather in Paris and Rome?")]
    called = [*asked, calls("c1", "c2"), result("c1", "18 C"), result("c2", "21 C")]
    return otlp(
        root(**(root_attrs or {})),
        chat("m1", 100, 350, asked, [calls("c1", "c2")], **(first_chat or {})),
        tool("t2", "c2", 360, 400, "21 C"),  # started first: threads start a step's calls in no fixed order
        tool("t1", "c1", 370, 420, "18 C"),
        chat("m2", 500, 900, called, [answer("Mild in both.")], **(answer_chat or {})),
    )


def test_each_step_s_times_and_each_tool_run_s_are_read_to_the_millisecond():
    run = from_otlp(weather_trace())
    first, second = run.steps
    assert (first.latency_ms, second.latency_ms) == (250.0, 400.0)
    assert first.started_at == "2023-11-14T22:13:20.100+00:00" and run.created_at == "2023-11-14T22:13:20.000+00:00"
    assert [(t.tool_call_id, t.duration_ms, t.started_ms) for t in first.tool_runs] == [
        ("c1", 50.0, 20.0),  # in call order, with when each started after the reply
        ("c2", 40.0, 10.0),
    ]
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert (run.stop_reason, run.title) == ("answer", "imported trace: Weather in Paris and Rome?")


def test_a_tool_that_started_before_its_reply_ended_started_at_zero():
    asked = [user("Weather?")]
    run = from_otlp(otlp(root(), chat("m1", 100, 350, asked, [calls("c1")]), tool("t1", "c1", 300, 400)))
    assert run.steps[0].tool_runs[0].started_ms == 0.0


def test_the_root_is_the_span_whose_parent_is_not_in_the_trace_wherever_it_is_listed():
    data = json.loads(weather_trace())
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    agent = spans.pop(0)
    agent["name"] = "workflow"  # no invoke_agent span: the root is found by its parent
    agent["attributes"] = [{"key": g.RUN_TITLE, "value": {"stringValue": "Paris and Rome"}}]
    agent["startTimeUnixNano"] = str(T0 - 5_000 * MS)
    spans.append(agent)
    run = from_otlp(json.dumps(data))
    assert run.title == "Paris and Rome" and run.created_at == "2023-11-14T22:13:15.000+00:00"


def test_a_title_is_the_first_prompt_s_60_characters_when_the_root_names_none():
    long = "Weather " * 20
    run = from_otlp(otlp(root(), chat("m1", 1, 2, [user(long)], [answer("Mild.")])))
    assert run.title == f"imported trace: {long[:60]}"


def test_a_step_reads_its_finish_reason_model_and_flags_from_the_first_attribute_that_holds_one():
    run = from_otlp(
        weather_trace(
            first_chat={
                "llm__finish_reason": "tool_calls",
                "gen_ai__request__model": "gpt-4o",
                g.STEP_ESTIMATED.replace(".", "__"): True,
                g.TOOLS_WITHHELD.replace(".", "__"): True,
            },
            answer_chat={
                "gen_ai__response__finish_reasons": ("stop",),
                "gen_ai__response__model": "gpt-4o-2024-08-06",
                "gen_ai__request__model": "gpt-4o",
            },
        )
    )
    first, second = run.steps
    assert (first.finish_reason, first.model, first.estimated, first.tools_withheld) == (
        "tool_calls",
        "gpt-4o",
        True,
        True,
    )
    assert (second.finish_reason, second.model, second.estimated, second.tools_withheld) == (
        "stop",
        "gpt-4o-2024-08-06",
        False,
        False,
    )
    odd = from_otlp(weather_trace(first_chat={"gen_ai__response__finish_reasons": (5,)}))
    assert odd.steps[0].finish_reason is None


def test_a_tool_span_failed_by_its_status_alone_is_an_error_with_the_status_message():
    asked = [user("Weather?")]
    failed = tool("t1", "c1", 400, 450, "no such city", status={"code": 2, "message": "city unknown"})
    run = from_otlp(otlp(root(), chat("m1", 100, 350, asked, [calls("c1")]), failed))
    (result_message,) = [m for m in run.messages if isinstance(m, ToolMessage)]
    assert result_message.is_error and result_message.content == "no such city"
    (tool_run,) = run.steps[0].tool_runs
    assert (tool_run.is_error, tool_run.error, tool_run.source) == (True, "city unknown", "ran")


def test_the_results_of_the_last_reply_stop_at_the_first_call_without_one():
    asked = [user("Weather?")]
    run = from_otlp(
        otlp(
            root(),
            chat("m1", 100, 350, asked, [calls("c1", "c2", "c3")]),
            tool("t1", "c1", 400, 450, "18 C"),
            tool("t2", "c2", 400, 450, None),  # ran, its result not recorded
            tool("t3", "c3", 400, 450, "21 C"),
        )
    )
    assert [m.tool_call_id for m in run.messages if isinstance(m, ToolMessage)] == ["c1"]


def test_steps_not_matched_one_to_one_with_replies_start_where_each_call_s_input_ends():
    """The last call failed, so it left no reply: each step starts after the messages its call was sent (the
    system instructions counted), the last one at the end of the history."""
    system = [{"type": "text", "content": "Be brief."}]
    one = [user("Weather?")]
    two = [*one, calls("c1"), result("c1", "18 C")]
    three = [*two, calls("c2"), result("c2", "21 C")]
    run = from_otlp(
        otlp(
            root(),
            chat("m1", 100, 200, one, [calls("c1")], gen_ai__system_instructions=system),
            chat("m2", 300, 400, two, [calls("c2")], gen_ai__system_instructions=system),
            chat("m3", 500, 600, three, None, gen_ai__system_instructions=system),
        )
    )
    assert isinstance(run.messages[0], SystemMessage) and len(run.messages) == 6
    assert [s.message_count for s in run.steps] == [2, 4, 6]
    assert [len(s.tool_runs) for s in run.steps] == [0, 0, 0]  # no tool spans, and the last step has no reply


def test_steps_matched_one_to_one_start_at_their_own_reply():
    """The system instructions on the root only: the calls' inputs do not count them, their replies' places do."""
    system = [{"type": "text", "content": "Be brief."}]
    one = [user("Weather?")]
    two = [*one, calls("c1"), result("c1", "18 C")]
    run = from_otlp(
        otlp(
            root(gen_ai__system_instructions=system),
            chat("m1", 100, 200, one, [calls("c1")]),
            chat("m2", 300, 400, two, [answer("Mild.")]),
        )
    )
    assert [type(m).__name__ for m in run.messages] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert [s.message_count for s in run.steps] == [2, 4]


# -- the config, from the first call -------------------------------------------------


@pytest.mark.parametrize(
    "temperature, max_tokens, expected",
    [
        (0, 1, (0, 1)),
        (0.7, 512, (0.7, 512)),
        (-0.5, 0, (None, None)),
        ("hot", "many", (None, None)),
        (True, True, (None, None)),  # a boolean is no number here
    ],
)
def test_the_config_keeps_a_temperature_from_zero_and_max_tokens_from_one(temperature, max_tokens, expected):
    run = from_otlp(
        weather_trace(
            first_chat={"gen_ai__request__temperature": temperature, "gen_ai__request__max_tokens": max_tokens}
        )
    )
    assert (run.config.temperature, run.config.max_tokens) == expected


def test_the_config_is_the_first_call_s_model_and_tools_and_no_system_prompt_without_one():
    tools = [{"type": "function", "name": "get_weather", "description": "The weather."}]
    run = from_otlp(
        weather_trace(first_chat={"llm__model_name": "gpt-4o", g.TOOL_DEFINITIONS.replace(".", "__"): tools})
    )
    assert (run.config.model, run.config.system_prompt) == ("gpt-4o", None)
    (spec,) = run.config.tools
    assert (spec.name, spec.description, spec.parameters) == (
        "get_weather",
        "The weather.",
        {"type": "object", "properties": {}},
    )
    assert run.config.max_steps == 10


def test_the_step_budget_of_an_imported_run_leaves_one_step_past_its_calls():
    history, chats = [user("Count.")], []
    for n in range(12):
        chats.append(chat(f"m{n}", 10 * n, 10 * n + 5, list(history), [calls(f"c{n}")]))
        history += [calls(f"c{n}"), result(f"c{n}", str(n))]
    run = from_otlp(otlp(root(), *chats))
    assert len(run.steps) == 12 and run.config.max_steps == 13


@pytest.mark.parametrize("definition", [{"name": 5}, {"function": {"description": "no name"}}, "get_weather"])
def test_a_tool_definition_without_a_name_is_refused_naming_it(definition):
    with pytest.raises(TranscriptError, match=r"gen_ai.tool.definitions\[0\] is not a tool with a name$"):
        from_otlp(weather_trace(first_chat={g.TOOL_DEFINITIONS.replace(".", "__"): [definition]}))


@pytest.mark.parametrize(
    "attrs, provider",
    [
        ({g.RUN_PROVIDER: "agentcore.odd"}, "agentcore.odd"),  # agentcore's own name, as written
        ({g.PROVIDER: "agentcore.scripted"}, "scripted"),  # the vendor's name agentcore writes for its own models
        ({g.PROVIDER: "", g.LEGACY_PROVIDER: "openai"}, "openai"),
        ({g.PROVIDER: 5, "llm.system": "anthropic"}, "anthropic"),
        ({}, "imported"),
    ],
)
def test_a_step_s_provider_is_the_first_name_it_holds(attrs, provider):
    first = {k.replace(".", "__"): v for k, v in attrs.items()}
    assert from_otlp(weather_trace(first_chat=first)).steps[0].provider == provider


# -- OpenInference ---------------------------------------------------------------------


def oi_span(**flat: Any) -> dict:
    attrs = {"openinference__span__kind": "LLM", "llm__model_name": "gpt-4o"}
    attrs.update({k.replace(".", "__"): v for k, v in flat.items()})
    return span("m1", "ChatCompletion", T0, T0 + 5 * MS, "r", **attrs)


def test_openinference_messages_keep_text_parts_and_leave_an_image_and_an_empty_text_out():
    run = from_otlp(
        otlp(
            root(),
            oi_span(
                **{
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": 7,  # no text: left out, as the empty one below is
                    "llm.input_messages.0.message.contents.0.message_content.type": "image",
                    "llm.input_messages.0.message.contents.0.message_content.image.image.url": "https://x/y.png",
                    "llm.input_messages.0.message.contents.1.message_content.type": "text",
                    "llm.input_messages.0.message.contents.1.message_content.text": "What is in it?",
                    "llm.input_messages.0.message.contents.2.message_content.type": "text",  # and no text
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "look",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}",
                }
            ),
        )
    )
    asked, reply = run.messages
    assert isinstance(asked, UserMessage) and asked.content == "What is in it?"
    assert isinstance(reply, AssistantMessage) and reply.content is None and reply.tool_calls[0].name == "look"


def test_openinference_list_positions_read_up_to_six_digits():
    run = from_otlp(
        otlp(
            root(),
            oi_span(
                **{
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": "first",
                    "llm.input_messages.999999.message.role": "user",
                    "llm.input_messages.999999.message.content": "second",
                    "llm.input_messages.1000000.message.role": "user",
                    "llm.input_messages.1000000.message.content": "past the positions read",
                    "llm.input_messages.3.message": "too short a path",
                    "llm.input_messages.4.other.role": "not a message",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.tool_calls.999999.tool_call.id": "c1",
                    "llm.output_messages.0.message.tool_calls.999999.tool_call.function.name": "kept",
                    "llm.output_messages.0.message.tool_calls.1000000.tool_call.id": "c2",
                    "llm.output_messages.0.message.tool_calls.1000000.tool_call.function.name": "left",
                }
            ),
        )
    )
    assert [m.content for m in run.messages if isinstance(m, UserMessage)] == ["first", "second"]
    assert [c.name for c in run.messages[-1].tool_calls] == ["kept"]


def test_a_tool_run_is_named_by_its_span_and_keeps_the_arguments_a_hook_replaced_as_an_object_or_as_text():
    asked = [user("Weather?")]
    run = from_otlp(
        otlp(
            root(),
            chat("m1", 100, 350, asked, [calls("c1", "c2")]),
            tool("t1", "c1", 400, 450, **{g.ORIGINAL_ARGUMENTS.replace(".", "__"): '{"city": "Pariss"}'}),
            tool("t2", "c2", 400, 450, **{g.ORIGINAL_ARGUMENTS.replace(".", "__"): "{city: Rome"}),
        )
    )
    first, second = run.steps[0].tool_runs
    assert (first.name, first.original_arguments, first.original_raw_arguments) == (
        "get_weather",
        {"city": "Pariss"},
        None,
    )
    assert (second.original_arguments, second.original_raw_arguments) == (None, "{city: Rome")


# -- people's labels, and what else a trace may leave out ------------------------------


def note(at_ms: int | None = None, **attrs) -> dict:
    """An `agentcore.annotation` span event as the exporter writes one; at `at_ms` after T0 when given."""
    event = {"name": g.ANNOTATION, "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()]}
    if at_ms is not None:
        event["timeUnixNano"] = str(T0 + at_ms * MS)
    return event


def with_events(trace: bytes, **events: list) -> bytes:
    """The trace with each named span's events set."""
    data = json.loads(trace)
    for item in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        if item["spanId"] in events:
            item["events"] = events[item["spanId"]]
    return json.dumps(data).encode()


def test_a_span_s_labels_are_read_as_written_and_what_an_event_leaves_out_is_its_span_s():
    trace = with_events(
        weather_trace(),
        m1=[
            "not an event",  # other things a span's events hold are left alone
            {"name": "exception", "attributes": []},
            note(200, **{g.ANNOTATION_LABELS: ("wrong tool",), g.ANNOTATION_TAGS: ("slow",), g.ANNOTATION_NOTE: "n"}),
            note(None, **{g.ANNOTATION_SCORE: 2.0}),
        ],
        t1=[note(410, **{g.ANNOTATION_SCORE: 1.0})],
        m2=[note(600, **{g.ANNOTATION_SCORE: 3.0, g.TOOL_CALL_ID: "c2"})],
    )
    run = from_otlp(trace)
    got = [(a.step, a.tool_call_id, a.labels, a.tags, a.note, a.score, a.created_at) for a in run.annotations]
    assert got == [
        (1, None, ["wrong tool"], ["slow"], "n", None, "2023-11-14T22:13:20.200+00:00"),
        (1, None, [], [], "", 2.0, "2023-11-14T22:13:20.350+00:00"),  # no time: the span's end
        (1, "c1", [], [], "", 1.0, "2023-11-14T22:13:20.410+00:00"),  # on a tool span: its call
        (2, "c2", [], [], "", 3.0, "2023-11-14T22:13:20.600+00:00"),  # a call named by the event
    ]


def test_exactly_the_most_labels_on_a_span_read_and_one_more_is_refused(monkeypatch):
    monkeypatch.setattr(spans, "MAX_ANNOTATIONS", 3)
    three = [note(200 + i, **{g.ANNOTATION_SCORE: float(i)}) for i in range(3)]
    assert len(from_otlp(with_events(weather_trace(), m1=three)).annotations) == 3
    with pytest.raises(TranscriptError, match="more than 3 annotations on one span"):
        from_otlp(with_events(weather_trace(), m1=[*three, note(300, **{g.ANNOTATION_SCORE: 9.0})]))


def test_a_trace_recorded_without_message_content_says_how_to_record_one_with_it():
    bare = span("m1", "chat gpt-4o", T0, T0 + MS, "r", **{"gen_ai.operation.name": "chat"})
    bare["attributes"].append({"key": g.OUTPUT_MESSAGES, "value": value([answer("Mild.")])})
    with pytest.raises(TranscriptError) as refused:
        from_otlp(otlp(root(), bare))
    assert f"holds no {g.INPUT_MESSAGES}: the trace was recorded without message content; " in str(refused.value)
    assert str(refused.value).endswith(importer.WITH_CONTENT)


def test_an_integer_written_as_a_json_number_reads_as_the_one_written_as_text():
    as_text = from_otlp(weather_trace(first_chat={g.INPUT_TOKENS: 42}))
    data = json.loads(weather_trace(first_chat={g.INPUT_TOKENS: 42}))
    for attribute in data["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"]:
        if attribute["key"] == g.INPUT_TOKENS:
            attribute["value"] = {"intValue": 42}
    as_number = from_otlp(json.dumps(data).encode())
    assert as_text.steps[0].usage.input_tokens == as_number.steps[0].usage.input_tokens == 42


def test_a_resource_without_scopes_and_a_scope_without_spans_are_read_as_none():
    data = json.loads(weather_trace())
    data["resourceSpans"] += [{"resource": {}}, {"scopeSpans": [{"scope": {}}]}]
    assert len(from_otlp(json.dumps(data).encode()).steps) == 2
