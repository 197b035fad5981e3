"""Hostile input, third round: readers bounded before they read, a trace read in linear time, artifacts every
reader takes back, hooks that fail the step and nothing else, and the exports' URLs and secrets."""

from __future__ import annotations

import json
import os
import time

import pytest

from agentcore import toolbox, transcript
from agentcore.cli.main import main
from agentcore.errors import TranscriptError, UsageError
from agentcore.hooks.examples import CARD_MASK, mask
from agentcore.hooks.specs import MockRule, parse_breakpoint
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall, validate_messages
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.secrets import register_secret, scrub_text
from agentcore.testing import pinned

WEATHER = toolbox.get_tools("get_weather")


def weather(**config) -> Run:
    run = Run.start("Weather in Paris and Rome?", RunConfig(provider="scripted", model="weather", **config))
    return Agent(ScriptedProvider("weather"), WEATHER).run(run)


# -- readers bounded before they read ------------------------------------------------------


@pytest.mark.parametrize("path", ["/dev/zero", "fifo"])
def test_a_device_or_a_fifo_is_refused_in_one_line_before_it_is_read(path, tmp_path, capsys):
    if path == "fifo":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)  # opening it to read would wait for a writer forever
    with pytest.raises(TranscriptError, match="not a regular file"):
        transcript.read_file(path)
    for args in (["runs", "import", path, "--db", str(tmp_path / "r.db")], ["validate", path], ["test", path]):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a regular file" in err, args


def test_a_file_past_the_limit_is_refused_by_its_size_before_a_byte_is_read(tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(transcript.MAX_FILE_BYTES + 1)  # sparse: nothing is written, the size says it all
    with pytest.raises(TranscriptError, match="larger than 64 MB"):
        transcript.read_file(big)
    assert transcript.read_file(big, limit=transcript.MAX_FILE_BYTES + 1)[:1] == b"\0"  # the limit is exact


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_yaml_mock_file_of_many_small_mappings_is_refused_by_its_count_of_values(tmp_path, capsys):
    pytest.importorskip("yaml", reason="YAML files need PyYAML")
    path = tmp_path / "mocks.yaml"
    path.write_text("- {tool: get_weather, when: ['$.city=Paris'], result: sunny}\n" * 20_000)
    args = ["run", "Weather?", "--provider", "scripted", "--no-db", "--mock", str(path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "more than 64,000 values" in err and err.count("\n") == 1
    path.write_text("- {tool: get_weather, when: ['$.city=Paris'], result: sunny}\n" * 1000)  # at the limit: read
    assert main(args) == 0


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_pinned_yaml_test_past_the_count_of_values_is_refused_before_it_is_built():
    pytest.importorskip("yaml", reason="YAML files need PyYAML")
    from agentcore.testing.yaml_file import MAX_YAML_NODES, read_yaml

    values = "[" + ", ".join(["1"] * (MAX_YAML_NODES - 1)) + "]"  # the list and its items: exactly at the limit
    assert len(read_yaml(values)) == MAX_YAML_NODES - 1
    with pytest.raises(TranscriptError, match="more than 100,000 values"):
        read_yaml("[" + ", ".join(["1"] * MAX_YAML_NODES) + "]")


# -- a trace read in linear time ---------------------------------------------------------------


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_long_traces_steps_each_get_their_own_tool_runs_back():
    pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")
    from agentcore.telemetry.importer import from_otlp
    from agentcore.telemetry.otlp import otlp_json

    calls = [ToolCall(id=f"c{n}", name="get_weather", arguments={"city": f"City{n}"}) for n in range(120)]
    turns = [AssistantMessage(tool_calls=(c,)) for c in calls] + [AssistantMessage(content="done")]
    run = Run.start("Weather everywhere?", RunConfig(max_steps=200))
    Agent(ScriptedProvider(replay=turns), WEATHER).run(run)
    back = from_otlp(otlp_json(run, content=True))
    assert [[t.tool_call_id for t in s.tool_runs] for s in back.steps] == [
        [t.tool_call_id for t in s.tool_runs] for s in run.steps
    ]


# -- artifacts every reader takes back -------------------------------------------------------------


def test_a_reply_whose_calls_share_one_id_leaves_artifacts_every_reader_takes(tmp_path, capsys):
    same = [ToolCall(id="dup", name="get_weather", arguments={"city": c}) for c in ("Paris", "Rome", "Oslo")]
    turns = [AssistantMessage(tool_calls=tuple(same)), AssistantMessage(content="Sunny everywhere.")]
    run = Run.start("Weather in three cities?", RunConfig())
    Agent(ScriptedProvider(replay=turns), WEATHER).run(run)
    assert run.stop_reason == "answer" and validate_messages(run.messages) == []
    ids = [c.id for c in run.messages[1].tool_calls]
    assert len(set(ids)) == 3 and ids[0] == "dup"
    results = [m.content for m in run.messages[2:5]]
    assert all(city in text for city, text in zip(("Paris", "Rome", "Oslo"), results, strict=True))
    path = tmp_path / "run.json"
    transcript.save(run, path)
    test_path = tmp_path / "test.json"
    test_path.write_text(pinned.dumps(pinned.propose(run)))
    assert main(["validate", str(path)]) == 0
    assert main(["runs", "import", str(path), "--db", str(tmp_path / "r.db")]) == 0
    assert main(["test", str(test_path), "--no-db"]) == 0
    capsys.readouterr()


def test_a_key_with_a_lone_surrogate_is_refused_by_every_reader_in_one_line(tmp_path, capsys):
    data = transcript.to_dict(weather())
    data["config"]["tools"][0]["parameters"]["properties"] = {"city\ud800": {"type": "string"}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))  # ASCII: the surrogate is a \ud800 escape
    for args in (["validate", str(path)], ["runs", "import", str(path), "--db", str(tmp_path / "r.db")]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "a key holds a lone surrogate" in err and err.count("\n") == 1


def test_a_title_with_a_lone_surrogate_is_written_to_a_trace():
    pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")
    from agentcore.telemetry.export import run_spans
    from agentcore.telemetry.otlp import otlp_data, otlp_json

    run = weather()
    run.title = "forecast \udc80 of the day"
    text = otlp_json(run, content=True)
    assert "forecast \ufffd of the day" in json.dumps(json.loads(text), ensure_ascii=False)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = run_spans(run, content=True)
    assert encode_spans(spans).SerializeToString()  # what the live export sends: protobuf takes it
    assert otlp_data(spans)


# -- hooks fail the step, and nothing else ------------------------------------------------------------


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


def _failing(exc: BaseException):
    def hook(run, request):
        raise exc

    return hook


@pytest.mark.parametrize(
    ("hook", "words"),
    [
        (_failing(Unprintable()), "Unprintable: (its message could not be read)"),
        (_failing(ValueError("x" * 10_000_000)), "ValueError: xxx"),
        (lambda run, request: "not a request", "gave back str, not a ModelRequest"),
        (lambda run, request: request.model_copy(update={"messages": ()}), "a message list no model takes"),
        (
            lambda run, request: request.model_copy(update={"messages": (*request.messages, "junk")}),
            "a message list no model takes: not a list of messages",
        ),
    ],
    ids=["unprintable", "ten-megabytes", "wrong-type", "emptied", "not-messages"],
)
def test_a_broken_hook_fails_the_step_in_one_bounded_line_and_keeps_the_run(hook, words):
    run = Run.start("Weather in Paris?", RunConfig())
    Agent(ScriptedProvider("weather"), WEATHER, before_model=[hook]).run(run)
    assert run.stop_reason == "error" and run.steps == [] and run.messages[0].content == "Weather in Paris?"
    assert words in run.error and "\n" not in run.error and len(run.error) <= 500


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_hook_past_its_time_limit_fails_the_step_and_one_within_it_does_not():
    def slow(run, request):
        time.sleep(0.5)
        return request

    run = Agent(ScriptedProvider("weather"), WEATHER, before_model=[slow], hook_time_limit=0.05).run(
        Run.start("Weather in Paris?", RunConfig())
    )
    assert run.stop_reason == "error" and "hook slow (before_model): gave no answer within 0.05 s" == run.error
    run = Agent(ScriptedProvider("weather"), WEATHER, before_model=[slow], hook_time_limit=5).run(
        Run.start("Weather in Paris?", RunConfig())
    )
    assert run.stop_reason == "answer"


def test_the_redactor_masks_every_card_number_in_a_long_text():
    card = "4111 1111 1111 1111"
    text = f"{card} and more " * 5000
    masked = mask(text)
    assert masked.count(CARD_MASK) == 5000 and "4111" not in masked
    assert mask("no numbers here") == "no numbers here"


# -- specs and rules ---------------------------------------------------------------------------------


def test_a_pattern_that_runs_out_of_time_is_an_unmet_condition_not_an_error():
    rule = MockRule(tool="get_weather", when=["$.city~^(a+)+$"], result="mocked")
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "a" * 40 + "!"})
    assert rule.matches(call.name, call.arguments) is False
    turns = [AssistantMessage(tool_calls=(call,)), AssistantMessage(content="ok")]
    run = Run.start("Weather?", RunConfig(mocks=[rule], breakpoints=["args:$.city~^(a+)+$"]))
    Agent(ScriptedProvider(replay=turns), WEATHER).run(run)
    assert run.stop_reason == "answer" and run.steps[0].tool_runs[0].source == "ran"


@pytest.mark.parametrize("spec", ["step:\u0663", "tokens:\uff11\uff10", "cost:\u0661.5"])
def test_a_number_in_a_spec_is_written_in_ascii_digits(spec):
    with pytest.raises(UsageError, match="takes"):
        parse_breakpoint(spec)
    assert parse_breakpoint("step:3").step == 3


def test_pin_and_make_test_do_not_write_over_a_file_without_force(tmp_path, capsys):
    path = tmp_path / "run.json"
    transcript.save(weather(), path)
    out = tmp_path / "t.json"
    out.write_text("my own edited test")
    assert main(["pin", str(path), "-o", str(out)]) == 2
    assert "the file exists; give --force" in capsys.readouterr().err and out.read_text() == "my own edited test"
    assert main(["pin", str(path), "-o", str(out), "--force"]) == 0
    assert pinned.load(out).prompt == "Weather in Paris and Rome?"


# -- exports' URLs and secrets -------------------------------------------------------------------------


def test_a_secret_echoed_back_in_hex_is_scrubbed_in_both_cases():
    key = "sk-hex-PLANTED-0123456789abcdef"
    register_secret(key)
    hexed = key.encode().hex()
    assert scrub_text(f"echo {hexed} and {hexed.upper()}") == "echo [redacted] and [redacted]"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"),
        ("https://otel.example/base?tenant=a", "https://otel.example/base/v1/traces?tenant=a"),
        ("https://otel.example/base#part", "https://otel.example/base/v1/traces"),
    ],
)
def test_an_otlp_base_url_gets_the_traces_path_on_its_path(url, expected):
    pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")
    from agentcore.telemetry.otlp import traces_url

    assert traces_url(url) == expected


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_live_export_of_a_run_with_a_user_and_password_in_its_base_url_does_not_stop_it():
    pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")
    from support.servers import free_port

    from agentcore.telemetry.export import run_spans
    from agentcore.telemetry.otlp import LiveExport

    run = weather(base_url="http://[redacted]@127.0.0.1:9/v1")
    for step in run.steps:  # as a stored run of an OpenAI-compatible server reads back
        step.wire = step.wire.model_copy(update={"url": "http://[redacted]@127.0.0.1:9/v1/chat/completions"})
        step.provider = "openai"
    (chat, *_) = [s for s in run_spans(run) if s.name.startswith("chat ")]
    assert chat.attributes["server.address"] == "127.0.0.1" and chat.attributes["server.port"] == 9
    live = LiveExport(f"http://127.0.0.1:{free_port()}")
    try:
        live.step_finished(run)  # the spans are built here, in the loop's thread: nothing may escape
        assert live.problem is None or "\n" not in live.problem
    finally:
        live.close()


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_live_export_that_cannot_build_a_span_says_so_and_the_run_goes_on(monkeypatch):
    pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")
    from support.servers import free_port

    from agentcore.telemetry import otlp

    def broken(*args, **kwargs):
        raise ValueError("Invalid IPv6 URL")

    monkeypatch.setattr(otlp, "step_spans", broken)
    live = otlp.LiveExport(f"http://127.0.0.1:{free_port()}")
    try:
        run = Run.start("Weather in Paris?", RunConfig())
        agent = Agent(ScriptedProvider("weather"), WEATHER, observers=[lambda e: live.step_finished(run)])
        agent.run(run)
        assert run.stop_reason == "answer"
        assert "OpenTelemetry export of run" in live.problem and "Invalid IPv6 URL" in live.problem
    finally:
        live.close()


def test_every_json_export_blanks_a_credential_named_field_at_any_depth():
    from agentcore.exports import export_json, export_test

    run = weather()
    value = "not-a-registered-credential-0123456789"  # blanked by its field's name, not by being a known key
    deep = {"auth": {"nested": {"deeper": {"api_key": value}}}}
    run.steps[0].tool_runs[0] = (
        run.steps[0]
        .tool_runs[0]
        .model_copy(update={"source": "edited", "original_arguments": {"api_key": value, **deep}})
    )
    for written in (export_json(run), export_test(pinned.propose(run))):
        assert value not in written and "[redacted]" in written


def test_a_reply_cut_at_the_output_limit_never_reads_answered(capsys, open_app):
    from agentcore.cli.commands import _print_run
    from agentcore.replay import replay_html
    from ui.state import Session

    run = weather()
    for reason, ending in (("length", "output limit"), ("max_tokens", "output limit"), ("stop", "answer")):
        run.steps[-1].finish_reason = reason
        assert run.ending == ending
        _print_run(run)
        assert f"stop: {ending}" in capsys.readouterr().out
    run.steps[-1].finish_reason = "length"
    page = replay_html(run)
    assert "output limit" in page and '"stop_reason": "answer"' not in page.replace('\\"', '"')
    session = Session()
    session.add_run(run)
    app = open_app(session=session)
    shown = [m.value for m in app.markdown if "Stop reason" in m.value]
    assert shown and "stopped at the output limit" in shown[0] and "answered" not in shown[0]
    from ui.lessons import LESSONS

    lesson = LESSONS["loop"]
    cut = lesson.start()
    cut.messages, cut.steps, cut.stop_reason = run.messages, run.steps, run.stop_reason
    told = lesson.narration(cut)  # the lesson's own words would say the model answered
    assert "stopped at the output limit" in told and "answered" not in told
    run.steps[-1].finish_reason = "stop"
    cut.steps = run.steps
    assert "stopped at the output limit" not in lesson.narration(cut)


def test_the_library_lists_a_cut_reply_as_stopped_at_the_output_limit_not_answered(tmp_path, capsys):
    from agentcore.cli.main import main
    from agentcore.store import Store
    from agentcore.store.stats import library_stats

    store = Store(tmp_path / "runs.db")
    cut, whole = weather(), weather()
    cut.steps[-1].finish_reason = "length"
    for run in (cut, whole):
        store.save_run(run)
    assert {r.id: r.stop_reason for r in store.list_runs()} == {cut.id: "output limit", whole.id: "answer"}
    assert store.load_run(cut.id).stop_reason == "answer"  # the run itself keeps what the loop did
    [group] = library_stats(store, ["model"])
    assert (group.runs, group.answered_runs) == (2, 1)
    assert main(["runs", "list", "--db", str(tmp_path / "runs.db")]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert "output limit" in listed[cut.id] and "answer" not in listed[cut.id] and "answer" in listed[whole.id]


def test_an_imported_label_is_the_importers_and_says_whose_name_it_came_with(tmp_path):
    from agentcore.annotations import make_annotation
    from agentcore.store.runs import Store

    run = weather()
    run.annotations = [make_annotation(step=1, labels=["looped"], note="a repeat", author="teacher")]
    store = Store(str(tmp_path / "r.db"), owner="student")
    kept = store.read_run(store.import_run(run).id).annotations[0]
    assert kept.author == "student" and kept.note == "[imported as teacher's] a repeat"


def test_a_trace_count_that_is_not_a_count_is_refused_in_one_line():
    pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")
    from agentcore.telemetry.importer import from_otlp
    from agentcore.telemetry.otlp import otlp_json

    text = otlp_json(weather(), content=True)
    data = json.loads(text)
    spans = [s for r in data["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    chat = next(s for s in spans if s["name"].startswith("chat "))
    for bad in ({"intValue": "-5"}, {"doubleValue": float("inf")}, {"stringValue": "9" * 5000}):
        for attribute in chat["attributes"]:
            if attribute["key"] == "gen_ai.usage.input_tokens":
                attribute["value"] = bad
        with pytest.raises(TranscriptError, match="gen_ai.usage.input_tokens is not a count of tokens"):
            from_otlp(json.dumps(data))


def test_json_lines_of_otlp_bodies_past_the_limit_are_refused_before_one_is_parsed():
    from agentcore.telemetry.importer import from_otlp
    from agentcore.telemetry.spans import MAX_BODIES

    with pytest.raises(TranscriptError, match="lines of OTLP bodies"):
        from_otlp("{}\n" * (MAX_BODIES + 1))
    with pytest.raises(TranscriptError, match="more than 100000 spans"):
        from_otlp(json.dumps({"data": [{}] * 100_001}))
