"""OpenTelemetry GenAI traces out and in: the spans a run becomes, the round trip, a pydantic-ai trace stepped
here, sending over OTLP/HTTP to a receiver on 127.0.0.1 with its headers kept secret, and hostile files refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is not installed")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra's OTLP HTTP exporter is missing")

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from support.runs import decided_run, weather_run

from agentcore import Agent, Run, RunConfig, ScriptedProvider, tool
from agentcore.cli.main import main
from agentcore.errors import TranscriptError
from agentcore.exports import export_filename, export_run
from agentcore.importers import parse_import
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.scripted import SCENARIOS
from agentcore.secrets import forget_secrets, register_secret, scrub_text
from agentcore.store.runs import Store
from agentcore.telemetry.otlp import LiveExport, otlp_data, otlp_json
from agentcore.toolbox import get_tools
from agentcore.transcript import dumps


def spans_of(data: dict) -> list[dict]:
    return [s for r in data["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]


def attrs(span: dict) -> dict:
    out = {}
    for a in span.get("attributes", []):
        value = a["value"]
        out[a["key"]] = next(iter(value.values())) if value else None
    return out


# -- the spans -------------------------------------------------------------------------


def test_a_run_is_one_trace_of_invoke_agent_chat_and_execute_tool_spans_with_the_conventions_names():
    run = weather_run()
    data = json.loads(otlp_json(run))
    resource = data["resourceSpans"][0]
    assert resource["schemaUrl"] == "https://opentelemetry.io/schemas/1.44.0"  # the core schema's resource
    # the GenAI names are the GenAI conventions' own schema's
    assert resource["scopeSpans"][0]["schemaUrl"] == "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev"
    spans = spans_of(data)
    names = [s["name"] for s in spans]
    assert names == [
        "invoke_agent agentcore",
        "chat weather",
        "execute_tool get_weather",
        "execute_tool get_weather",
        "execute_tool get_weather",
        "chat weather",
    ]
    root, first_chat, first_tool = spans[0], spans[1], spans[2]
    assert len({s["traceId"] for s in spans}) == 1 and len(root["traceId"]) == 32  # hex, as OTLP/JSON writes ids
    assert all(s["parentSpanId"] == root["spanId"] for s in spans[1:])
    assert attrs(root)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(root)["gen_ai.conversation.id"] == run.id
    chat = attrs(first_chat)
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == "agentcore.scripted"
    assert int(chat["gen_ai.usage.input_tokens"]) == run.steps[0].usage.input_tokens
    assert int(chat["gen_ai.usage.output_tokens"]) == run.steps[0].usage.output_tokens
    assert chat["gen_ai.response.finish_reasons"] == {"values": [{"stringValue": "tool_calls"}]}
    assert first_chat["kind"] == 1  # INTERNAL: the scripted model answers in-process
    tool_span = attrs(first_tool)
    assert tool_span["gen_ai.tool.name"] == "get_weather"
    assert tool_span["gen_ai.tool.call.id"] == run.steps[0].tool_runs[0].tool_call_id
    assert tool_span["gen_ai.tool.type"] == "function"
    # each span starts and ends where the run recorded its work: a tool runs after its model call ended
    assert int(first_tool["startTimeUnixNano"]) >= int(first_chat["endTimeUnixNano"])


def test_a_provider_failure_is_the_root_spans_error_not_a_step_that_answered():
    run = weather_run(max_steps=5)
    run.stop_reason, run.error = "error", "openai: HTTP 500 after 3 attempts"  # the failed call made no step
    spans = spans_of(json.loads(otlp_json(run)))
    root = spans[0]
    assert attrs(root)["error.type"] == "provider_error" and root["status"]["code"] == 2
    assert root["status"]["message"] == run.error
    assert not any("error.type" in attrs(s) for s in spans[1:] if s["name"].startswith("chat "))
    assert parse_import(otlp_json(run, content=True)).error == run.error


def test_message_content_is_left_out_unless_asked_for():
    run = weather_run()
    plain = otlp_json(run)
    assert "Paris" not in plain and "gen_ai.input.messages" not in plain and "Be brief" not in plain
    full = otlp_json(run, content=True)
    assert "gen_ai.input.messages" in full and "gen_ai.tool.call.result" in full and "Be brief" in full


def test_a_fork_links_to_its_parents_root_span_and_names_it():
    run = weather_run()
    fork = run.fork(2)
    spans = spans_of(otlp_data_of(fork))
    parent_root = spans_of(otlp_data_of(run))[0]
    root = spans[0]
    assert root["links"][0]["traceId"] == parent_root["traceId"]
    assert root["links"][0]["spanId"] == parent_root["spanId"]
    assert attrs(root)["agentcore.fork.parent_run_id"] == run.id


def otlp_data_of(run: Run) -> dict:
    return json.loads(otlp_json(run))


def test_a_registered_secret_never_reaches_the_trace():
    secret = "sk-telemetry-secret-0123456789abcdef"
    register_secret(secret)
    try:
        run = Run.start(f"my key is {secret}, keep it", RunConfig(provider="scripted", model="weather"))
        Agent(ScriptedProvider("weather"), get_tools(["get_weather"])).run(run)
        assert secret not in otlp_json(run, content=True)
    finally:
        forget_secrets()


def test_a_registered_secret_never_reaches_the_spans_sent_over_otlp_their_status_included():
    from agentcore.telemetry.export import run_spans

    secret = "sk-telemetry-secret-0123456789abcdef"
    register_secret(secret)
    try:
        run = weather_run()
        run.stop_reason, run.error = "error", f"openai: cannot reach https://api.example.com/?key={secret}"
        spans = run_spans(run, content=True)  # what a send encodes: no file writer scrubs it on the way
        assert spans[0].status.description.endswith("?key=[redacted]")
        assert all(secret not in f"{s.attributes} {s.status.description} {s.events}" for s in spans)
    finally:
        forget_secrets()


# -- the round trip --------------------------------------------------------------------


def test_export_then_import_gives_the_same_messages_tool_calls_usage_and_decisions():
    run = decided_run()
    back = parse_import(otlp_json(run, content=True), "trace.otlp.json")
    assert back.messages == run.messages
    assert back.config == run.config
    assert [s.usage for s in back.steps] == [s.usage for s in run.steps]
    assert [s.message_count for s in back.steps] == [s.message_count for s in run.steps]
    assert [(t.tool_call_id, t.name, t.source, t.is_error) for s in back.steps for t in s.tool_runs] == [
        (t.tool_call_id, t.name, t.source, t.is_error) for s in run.steps for t in s.tool_runs
    ]
    sources = [t.source for s in back.steps for t in s.tool_runs]
    assert sources == ["edited", "denied", "typed"]
    edited = back.steps[0].tool_runs[0]
    assert edited.original_arguments == {"city": "Paris"}
    assert back.stop_reason == run.stop_reason and back.id == run.id


def test_reasoning_signatures_output_items_and_the_models_own_argument_text_survive_the_round_trip():
    from agentcore.messages import OutputItem, ReasoningPart, Usage
    from agentcore.steps import StepRecord, ToolRun

    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Oslo"}, written_arguments='{"city":"Oslo"}')
    call = call.model_copy(update={"item_id": "fc_1"})
    messages = [
        UserMessage(content="Weather in Oslo?"),
        AssistantMessage(
            tool_calls=(call,),
            reasoning=(
                ReasoningPart(provider="openai-responses", summary=("a", "b"), id="rs_1", encrypted_content="e"),
            ),
            items=(
                OutputItem(provider="openai-responses", kind="reasoning", id="rs_1"),
                OutputItem(provider="openai-responses", kind="function_call", id="fc_1"),
            ),
        ),
        ToolMessage(tool_call_id="c1", name="get_weather", content="snow", is_error=True),
        AssistantMessage(content="Snow.", reasoning=(ReasoningPart(provider="anthropic", text="t", signature="sig"),)),
    ]
    steps = [
        StepRecord(
            index=1,
            usage=Usage(input_tokens=10, output_tokens=5, cache_read_tokens=4, reasoning_tokens=3),
            message_count=1,
            tool_runs=[ToolRun(tool_call_id="c1", name="get_weather", duration_ms=2.0, is_error=True, error="down")],
        ),
        StepRecord(index=2, usage=Usage(input_tokens=20, output_tokens=2, cache_write_tokens=7), message_count=3),
    ]
    run = Run(config=RunConfig(provider="openai-responses", model="gpt-5"), messages=messages, steps=steps)
    back = parse_import(otlp_json(run, content=True), "trace.otlp.json")
    assert back.messages == run.messages
    assert [s.usage for s in back.steps] == [s.usage for s in run.steps]
    assert back.steps[0].tool_runs[0].error == "down" and back.steps[0].tool_runs[0].is_error


def test_a_tool_span_whose_call_id_is_not_text_is_matched_to_no_call():
    run = weather_run()
    data = json.loads(otlp_json(run, content=True))
    for span in spans_of(data):
        for a in span["attributes"]:
            if a["key"] == "gen_ai.tool.call.id":
                a["value"] = {"kvlistValue": {"values": []}}
    back = parse_import(json.dumps(data), "odd.json")
    assert back.steps[0].tool_runs == [] and back.messages == run.messages


def test_tool_results_after_the_last_model_call_come_back_from_the_tool_spans():
    run = weather_run(max_steps=1)  # the budget ends the run after its tools ran: no chat span reads their results
    assert isinstance(run.messages[-1], ToolMessage)
    back = parse_import(otlp_json(run, content=True), "trace.otlp.json")
    assert back.messages == run.messages and back.stop_reason == "max_steps"


def test_an_imported_trace_is_a_run_that_can_be_forked_and_stepped_again():
    run = weather_run()
    back = parse_import(otlp_json(run, content=True), "trace.otlp.json")
    fork = back.fork(2)
    Agent(ScriptedProvider("weather"), get_tools(["get_weather"])).run(fork)
    assert fork.messages == run.messages
    assert fork.parent.run_id == back.id


def test_what_hooks_did_comes_back_from_the_trace_the_changes_the_refusal_and_the_pause():
    from agentcore.hooks import Pause, Refuse
    from agentcore.hooks.examples import redact

    def no_rome(run, calls):
        return [Refuse(c, "not Rome") if c.arguments.get("city") == "Rome" else c for c in calls]

    def look_first(run, request):
        return Pause("look at the results first") if len(run.steps) == 1 else request

    scenario = SCENARIOS["weather"]
    run = Run.start(scenario.prompt + " Mail it to ann@example.com.", RunConfig(provider="scripted", model="weather"))
    agent = Agent(
        ScriptedProvider("weather"),
        get_tools(list(scenario.tools)),
        before_model=[redact, look_first],
        before_tools=[no_rome],
    )
    agent.run(run)
    assert run.paused and run.steps[0].hook_effects
    text = otlp_json(run, content=True)
    chat = next(s for s in spans_of(json.loads(text)) if s["name"].startswith("chat"))
    sent = attrs(chat)["gen_ai.input.messages"]
    assert "[email]" in sent and "ann@example.com" not in sent  # what the model read, after the redactor
    back = parse_import(text, "trace.otlp.json")
    assert back.messages == run.messages  # the run's own history comes back whole
    assert [s.hook_effects for s in back.steps] == [s.hook_effects for s in run.steps]
    assert [t.badge for s in back.steps for t in s.tool_runs] == [t.badge for s in run.steps for t in s.tool_runs]
    assert "refused by hook no_rome" in [t.badge for t in back.steps[0].tool_runs]
    assert back.halt == run.halt and back.halts == run.halts and back.paused


def test_a_trace_exported_without_content_is_refused_in_one_line():
    with pytest.raises(TranscriptError) as err:
        parse_import(otlp_json(weather_run()), "bare.otlp.json")
    text = str(err.value)
    assert "\n" not in text and "without message content" in text and text.startswith("bare.otlp.json: ")
    advised = re.search(r"\(agentcore (runs export RUN [^;]+);", text)
    assert advised is not None, text
    from agentcore.cli.main import build_parser

    args = build_parser().parse_args(advised.group(1).split())  # the command it advises is one the CLI takes
    assert (args.format, args.content) == ("otlp-json", True)


def test_runs_import_and_export_on_the_command_line(tmp_path, capsys):
    run = decided_run()
    trace = tmp_path / "run.otlp.json"
    trace.write_text(otlp_json(run, content=True))
    db = str(tmp_path / "runs.db")
    assert main(["runs", "import", str(trace), "--db", db]) == 0
    assert f"as run {run.id}" in capsys.readouterr().out
    assert Store(db).load_run(run.id).messages == run.messages
    out = tmp_path / "again.otlp.json"
    assert main(["runs", "export", run.id, "--db", db, "--format", "otlp-json", "--content", "--out", str(out)]) == 0
    assert parse_import(out.read_bytes()).messages == run.messages
    transcript = tmp_path / "run.json"
    transcript.write_text(dumps(run))
    assert main(["export", str(transcript), "--format", "otlp-json"]) == 0
    assert "Lyon" not in capsys.readouterr().out  # no content without --content
    assert export_filename(run, "otlp-json").endswith(".otlp.json")


def test_a_trace_given_where_a_transcript_is_read_says_to_import_it(tmp_path, capsys):
    trace = tmp_path / "run.otlp.json"
    trace.write_text(otlp_json(weather_run(), content=True))
    for command in (["show"], ["validate"], ["cost"], ["export", "--format", "openai"]):
        assert main([*command, str(trace)]) == 2
        err = capsys.readouterr().err
        assert "an OpenTelemetry trace (resourceSpans), not a transcript" in err and "runs import" in err, command


def test_json_lines_of_otlp_bodies_as_the_sdks_file_exporter_writes_them_import(tmp_path):
    run = weather_run()
    data = otlp_data(_spans(run))
    half = len(data["resourceSpans"][0]["scopeSpans"][0]["spans"]) // 2
    first, second = json.loads(json.dumps(data)), json.loads(json.dumps(data))
    first["resourceSpans"][0]["scopeSpans"][0]["spans"] = first["resourceSpans"][0]["scopeSpans"][0]["spans"][:half]
    second["resourceSpans"][0]["scopeSpans"][0]["spans"] = second["resourceSpans"][0]["scopeSpans"][0]["spans"][half:]
    lines = json.dumps(first) + "\n" + json.dumps(second) + "\n"
    assert parse_import(lines.encode()).messages == run.messages


def _spans(run: Run):
    from agentcore.telemetry.export import run_spans

    return run_spans(run, content=True)


# -- a trace no agentcore code wrote ---------------------------------------------------


def pydantic_ai_trace():
    """A pydantic-ai agent on its FunctionModel, instrumented with its own OpenTelemetry support."""
    pydantic_ai = pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim (the test extra) is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def model(messages, info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    TextPart("Checking both."),
                    ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="pa_1"),
                    ToolCallPart("get_weather", {"city": "Rome"}, tool_call_id="pa_2"),
                ]
            )
        return ModelResponse(parts=[TextPart("Paris is sunny; Rome is rainy.")])

    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent = pydantic_ai.Agent(
        FunctionModel(model), instructions="Be brief.", capabilities=[Instrumentation(settings=settings)]
    )

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Today's weather for a city."""
        return {"Paris": "sunny", "Rome": "rainy"}[city]

    result = agent.run_sync("Weather in Paris and Rome?")
    spans = exporter.get_finished_spans()
    # the SDK's own OTLP encoding, as an OTLP/HTTP JSON body: ids in hex, enums as numbers
    body = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for span in spans_of(body):
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = __import__("base64").b64decode(span[key]).hex()
    return result, json.dumps(body)


def pydantic_ai_messages(result) -> list:
    """What pydantic-ai recorded (`all_messages()`), as agentcore messages."""
    from pydantic_ai.messages import ModelRequest, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    out: list = []
    for message in result.all_messages():
        if isinstance(message, ModelRequest):
            if message.instructions and not out:
                out.append(SystemMessage(content=message.instructions))
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    out.append(UserMessage(content=part.content))
                elif isinstance(part, ToolReturnPart):
                    out.append(ToolMessage(tool_call_id=part.tool_call_id, name=part.tool_name, content=part.content))
        else:
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart)) or None
            calls = tuple(
                ToolCall(id=p.tool_call_id, name=p.tool_name, arguments=p.args_as_dict())
                for p in message.parts
                if isinstance(p, ToolCallPart)
            )
            out.append(AssistantMessage(content=text, tool_calls=calls))
    return out


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_pydantic_ai_trace_imports_with_the_messages_pydantic_ai_recorded_and_steps_again(tmp_path):
    result, text = pydantic_ai_trace()
    path = tmp_path / "pydantic-ai.otlp.json"
    path.write_text(text)
    run = parse_import(path.read_bytes(), str(path))
    assert run.messages == pydantic_ai_messages(result)
    assert len(run.steps) == 2
    assert run.steps[0].usage.input_tokens == result.all_messages()[1].usage.input_tokens
    assert [t.tool_call_id for t in run.steps[0].tool_runs] == ["pa_1", "pa_2"]
    assert run.config.system_prompt == "Be brief." and [t.name for t in run.config.tools] == ["get_weather"]
    # forked before its first model call, it plays again here: pydantic-ai's turns replayed, the tool run for real
    replies = [m for m in run.messages if isinstance(m, AssistantMessage)]

    @tool
    def get_weather(city: str) -> str:
        """Today's weather for a city."""
        return {"Paris": "sunny", "Rome": "rainy"}[city]

    fork = run.fork(1)
    Agent(ScriptedProvider(replay=replies), [get_weather]).run(fork)
    assert fork.messages == run.messages and fork.stop_reason == "answer"


def test_an_openinference_llm_span_imports_from_its_flattened_messages_alone():
    flat = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Be brief.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.contents.0.message_content.type": "text",
        "llm.input_messages.1.message.contents.0.message_content.text": "Weather in Oslo?",
        "llm.input_messages.2.message.role": "assistant",
        "llm.input_messages.2.message.tool_calls.0.tool_call.id": "oi_1",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "get_weather",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments": '{"city": "Oslo"}',
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.tool_call_id": "oi_1",
        "llm.input_messages.3.message.content": "snow",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Oslo: snow.",
        "llm.token_count.prompt": 42,
        "llm.token_count.completion": 4,
        "llm.input_messages.2.message.tool_calls.1": "not a call",  # a stray value is no call
    }
    attributes = [
        {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}} for k, v in flat.items()
    ]
    run = parse_import(json.dumps(_body(attributes, name="ChatCompletion")), "phoenix.json")
    assert run.messages == [
        SystemMessage(content="Be brief."),
        UserMessage(content="Weather in Oslo?"),
        AssistantMessage(tool_calls=(ToolCall(id="oi_1", name="get_weather", arguments={"city": "Oslo"}),)),
        ToolMessage(tool_call_id="oi_1", name="get_weather", content="snow"),
        AssistantMessage(content="Oslo: snow."),
    ]
    assert run.steps[0].usage.input_tokens == 42 and run.steps[0].model == "gpt-4o-mini"


# -- sending ---------------------------------------------------------------------------


def test_otlp_sends_the_trace_with_the_environments_headers_and_never_prints_them(
    receiver, monkeypatch, capsys, tmp_path
):
    url, handler = receiver
    token = "otlp-header-token-0123456789"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{token},x-team=agents-123456")
    transcript = tmp_path / "run.json"
    transcript.write_text(dumps(weather_run()))
    try:
        assert main(["export", str(transcript), "--otlp", url, "--content"]) == 0
        headers, spans = handler.requests[-1]
        assert headers["authorization"] == f"Bearer {token}" and headers["x-team"] == "agents-123456"
        assert [s.name for s in spans][:2] == ["invoke_agent agentcore", "chat weather"]
        assert "6 spans, with message content" in capsys.readouterr().out
        handler.status = 401  # the receiver refuses, echoing the header in its answer
        assert main(["export", str(transcript), "--otlp", url]) == 2
        err = capsys.readouterr().err
        assert "401" in err and "refused" in err and token not in err and err.count("\n") == 1
        assert "agents-123456" not in scrub_text("team agents-123456")  # every header value is kept secret
    finally:
        forget_secrets()


@pytest.mark.slow  # the OTLP exporter retries a refused send until its 10 s timeout
def test_a_password_in_the_otlp_url_is_never_printed(tmp_path, capsys):
    transcript = tmp_path / "run.json"
    transcript.write_text(dumps(weather_run()))
    try:
        assert main(["export", str(transcript), "--otlp", "http://bob:url-password-0123456@127.0.0.1:1"]) == 2
        err = capsys.readouterr().err
        assert "Connection refused" in err and "url-password-0123456" not in err and "[redacted]@127.0.0.1" in err
    finally:
        forget_secrets()


@pytest.mark.slow  # the OTLP exporter retries a refused send until its 10 s timeout
def test_a_key_in_the_otlp_urls_query_is_never_printed(tmp_path, capsys):
    transcript = tmp_path / "run.json"
    transcript.write_text(dumps(weather_run()))
    try:
        assert main(["export", str(transcript), "--otlp", "http://127.0.0.1:1/?api_key=query-key-0123456789"]) == 2
        err = capsys.readouterr().err
        assert "Connection refused" in err and "query-key-0123456789" not in err and "api_key=[redacted]" in err
    finally:
        forget_secrets()


def test_a_base_urls_credentials_never_reach_the_trace_even_from_an_older_transcript():
    # a transcript written before the URL's credentials were known secrets: nothing registered in this process
    base_url = "https://proxy-user:proxy-password-0123@llm.example.com:8443/v1?key=url-key-0123456789"
    run = weather_run(base_url=base_url)
    forget_secrets()
    text = otlp_json(run, content=True)
    assert "proxy-password-0123" not in text and "url-key-0123456789" not in text and "proxy-user" not in text
    back = parse_import(text, "trace.otlp.json")
    assert back.config.base_url == "https://[redacted]@llm.example.com:8443/v1?key=[redacted]"


def test_live_export_sends_each_finished_step_then_the_run_once_it_stops(receiver):
    url, handler = receiver
    scenario = SCENARIOS["weather"]
    run = Run.start(scenario.prompt, RunConfig(provider="scripted", model="weather"))
    agent = Agent(ScriptedProvider("weather"), get_tools(list(scenario.tools)))
    live = LiveExport(url)
    try:
        agent.step(run)
        live.step_finished(run)
        assert live.flush()
        first = [s.name for _, spans in handler.requests for s in spans]
        assert first == ["chat weather", *["execute_tool get_weather"] * 3]
        agent.step(run)
        live.step_finished(run)
        live.step_finished(run)  # told twice: nothing is sent twice
        assert live.flush()
        names = [s.name for _, spans in handler.requests for s in spans]
        assert names[4:] == ["chat weather", "invoke_agent agentcore"] and live.problem is None
    finally:
        live.close()


@pytest.mark.slow  # the OTLP exporter retries a refused send until its 10 s timeout
def test_a_live_export_that_cannot_send_keeps_one_line_and_the_run_goes_on():
    live = LiveExport("http://127.0.0.1:1")
    try:
        run = weather_run()
        live.step_finished(run)
        live.flush(timeout_ms=20000)
        assert live.problem is not None and "Connection refused" in live.problem and "\n" not in live.problem
    finally:
        live.close()


# -- hostile files ---------------------------------------------------------------------


def _body(attributes: list, name: str = "chat m") -> dict:
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": name, "attributes": attributes}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def _chat(**values) -> list:
    out = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]
    out += [{"key": k.replace("__", "."), "value": v} for k, v in values.items()]
    return out


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"resourceSpans": {"not": "a list"}}, "resourceSpans: expected a list"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}, "needs a traceId and a spanId"),
        (_body([{"key": "a", "value": {"kvlistValue": {"values": "x"}}}]), "expected a list of values"),
        (_body([{"key": "a", "value": {"kvlistValue": {"values": [[1]]}}}]), "an object with a string key"),
        (_body(_chat(gen_ai__input__messages={"stringValue": "{not json"})), "gen_ai.input.messages is not JSON"),
        (_body(_chat(gen_ai__input__messages={"stringValue": "[" * 500 + "]" * 500})), "nested more than"),
        (_body(_chat(gen_ai__input__messages={"stringValue": '"text"'})), "expected a list of messages"),
        (
            _body(_chat(gen_ai__input__messages={"stringValue": '[{"role":"user","parts":[{"type":"blob"}]}]'})),
            "cannot hold a 'blob' part",
        ),
        (_body(_chat(gen_ai__usage__input_tokens={"intValue": "9" * 5000})), "is not a 64-bit integer"),
        (_body([{"key": "x", "value": {"stringValue": "y"}}], name="not a model"), "no model call in the trace"),
        (
            _body(_chat(gen_ai__input__messages={"arrayValue": {"values": [{"arrayValue": {"values": []}}] * 2}})),
            "a message is a JSON object, not list",
        ),
    ],
)
def test_hostile_or_unknown_traces_are_refused_in_one_line(data, says):
    with pytest.raises(TranscriptError) as err:
        parse_import(json.dumps(data), "bad.json")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_an_attribute_value_past_the_limit_is_refused_without_reading_it_as_messages():
    huge = "x" * (16 * 2**20 + 1)
    with pytest.raises(TranscriptError, match="over the 16777216 kept"):
        parse_import(json.dumps(_body(_chat(gen_ai__input__messages={"stringValue": huge}))), "huge.json")


def test_a_hostile_trace_is_one_line_from_runs_import(tmp_path, capsys):
    bad = tmp_path / "bad.otlp.json"
    bad.write_text(json.dumps(_body(_chat(gen_ai__output__messages={"stringValue": "[1, 2"}))))
    assert main(["runs", "import", str(bad), "--db", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gen_ai.output.messages is not JSON" in err and "Traceback" not in err


def test_the_otlp_json_export_is_what_the_runs_page_offers():
    run = weather_run()
    assert export_run(run, "otlp-json").startswith("{")
    assert Path(export_filename(run, "otlp-json")).suffixes == [".otlp", ".json"]


@pytest.mark.parametrize("content", [False, True])
def test_a_secret_in_an_annotations_note_never_leaves_in_the_bytes_sent_over_otlp_http(receiver, content):
    from agentcore.annotations import make_annotation
    from agentcore.telemetry.otlp import send_run

    url, handler = receiver
    registered = "sk-annotation-registered-0123456789"
    shaped = "sk-proj-unregisteredbutshaped0123456789"  # a key's shape, never registered
    register_secret(registered)
    try:
        run = weather_run()
        note = f"the model printed {registered} and {shaped}; Authorization: Bearer abcdefghijklmnop0123"
        run.annotations = [make_annotation(step=1, labels=["good"], note=note, tags=["keys"])]
        send_run(run, url, content=content)
        sent = b"".join(handler.bodies)
        assert sent and b"agentcore.annotation" in sent  # the annotation left, as an event
        for secret in (registered, shaped, "abcdefghijklmnop0123"):
            assert secret.encode() not in sent
        assert (b"the model printed [redacted]" in sent) is content  # the note itself only with content
    finally:
        forget_secrets()


def test_cache_tokens_in_an_openinference_trace_come_back_on_the_step():
    flat = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "claude-haiku-4-5",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Weather in Oslo?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Snow.",
        "llm.token_count.prompt": 3000,
        "llm.token_count.completion": 2,
        "llm.token_count.prompt_details.cache_read": 2048,
        "llm.token_count.prompt_details.cache_write": 512,
    }
    attributes = [
        {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}} for k, v in flat.items()
    ]
    run = parse_import(json.dumps(_body(attributes, name="ChatCompletion")), "phoenix.json")
    usage = run.steps[0].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (3000, 2048, 512)
