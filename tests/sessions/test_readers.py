"""Every reader of a file accepts it or refuses it in one line; none ends in a traceback.

The readers: transcript.loads and load, importers.parse_import (the app's import too), what is done
with what they return (accounting, exports), and the CLI's validate, show, cost, export and runs
import. First one test per kind of input that once crashed them, then a property-based test that
mutates valid transcripts, structurally and byte by byte, and runs every reader on each mutant.

AGENTCORE_FUZZ_EXAMPLES=3000 makes the property-based tests run that many examples each.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.stand_in import POLL_S

from agentcore import transcript as tr
from agentcore.accounting import account
from agentcore.cli.main import main
from agentcore.errors import AgentcoreError, TranscriptError
from agentcore.exports import WIRE_FORMATS, export_body, export_json, export_zip
from agentcore.importers import parse_import
from agentcore.loop import Agent
from agentcore.messages import MAX_ARGUMENT_DEPTH, MAX_DEPTH, ToolMessage, Usage
from agentcore.providers import WireExchange, create_provider
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store
from agentcore.toolbox import get_tools
from agentcore.tools import tool
from agentcore.whatif import what_ifs

ROOT = Path(__file__).resolve().parents[2]
FUZZ_EXAMPLES = int(os.environ.get("AGENTCORE_FUZZ_EXAMPLES", "40"))


# -- valid inputs -------------------------------------------------------------------------


def scripted_run(scenario: str, **config) -> Run:
    script = ScriptedProvider(scenario=scenario).scenario
    tools = get_tools(list(script.tools))
    config = RunConfig(provider="scripted", model=scenario, tools=[t.spec() for t in tools], **config)
    return Agent(ScriptedProvider(scenario=scenario), tools).run(Run.start(script.prompt, config))


def priced_weather_run() -> Run:
    """The weather run as if an OpenAI model had made it: reported usage and a wire exchange on each step."""
    run = scripted_run("weather", system_prompt="Be brief.")
    run.config = run.config.model_copy(update={"provider": "openai", "model": "gpt-4o-mini"})
    for step in run.steps:
        step.usage = Usage(input_tokens=120 * step.index, output_tokens=30, cache_read_tokens=64)
        step.wire = WireExchange(
            url="https://api.openai.com/v1/chat/completions",
            request_headers={"content-type": "application/json"},
            request={"model": "gpt-4o-mini", "messages": [m.data for m in run.messages[: step.message_count]]},
            status=200,
            response={"choices": [{"message": {"role": "assistant"}}], "usage": {"prompt_tokens": 120}},
        )
    return run


OPENAI_LIST = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"a": 1}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "21"},
    {"role": "assistant", "content": "21 °C."},
]
ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "system": "Be brief.",
    "tools": [{"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "21"}]},
    ],
}
WEATHER = tr.to_dict(priced_weather_run())
BASES = [
    WEATHER,
    tr.to_dict(scripted_run("recovery").fork(2)),
    tr.to_dict(scripted_run("structured")),
    OPENAI_LIST,
    ANTHROPIC_BODY,
]


# -- every reader -------------------------------------------------------------------------


def _use(run: Run) -> None:
    """What the CLI and the app do with a run they read: account for it, export it."""
    report = account(run)
    if run.steps:  # as the CLI and the cost page do: a run without steps has no what-ifs
        what_ifs(run, report)
    export_json(run)
    for fmt in WIRE_FORMATS:
        export_body(run, fmt)
    export_zip([run], ("json", *WIRE_FORMATS))


LIBRARY_READERS: dict[str, Callable[[bytes], Run]] = {
    "transcript.loads": tr.loads,
    "importers.parse_import": parse_import,
}


def cli_commands(path: Path, db: Path) -> list[list[str]]:
    p = str(path)
    return [
        ["validate", p],
        ["show", p],
        ["cost", p],
        ["cost", "--json", p],
        *(["export", p, "--format", fmt] for fmt in WIRE_FORMATS),
        ["runs", "import", p, "--db", str(db)],
    ]


def every_reader(raw: bytes, workdir: Path, capsys) -> dict[str, str]:
    """Run every reader on `raw`: each says "ok" or its one-line refusal; anything else fails the test."""
    outcomes = {}
    for name, read in LIBRARY_READERS.items():
        try:
            _use(read(raw))
        except AgentcoreError as exc:
            assert "\n" not in str(exc), f"{name}: a refusal of more than one line: {exc}"
            outcomes[name] = f"refused: {exc}"
        else:
            outcomes[name] = "ok"
    path = workdir / "input.json"
    path.write_bytes(raw)
    capsys.readouterr()
    for args in cli_commands(path, workdir / "runs.db"):
        code = main(args)
        err = capsys.readouterr().err
        name = " ".join(args[:2] if args[0] in ("export", "runs") else args[:1])
        assert code in (0, 2), f"agentcore {name}: exit {code}: {err}"
        if code == 2:
            assert err.startswith("agentcore: error: ") and err.count("\n") == 1, f"agentcore {name}: {err!r}"
            outcomes[f"agentcore {name}"] = f"refused: {err.removeprefix('agentcore: error: ').strip()}"
        else:
            outcomes[f"agentcore {name}"] = "ok"
    return outcomes


def edited(base: dict, path: list, value: object) -> bytes:
    """The base transcript with the value at `path` replaced, as JSON bytes (NaN and Infinity written as such)."""
    data = json.loads(json.dumps(base))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(data).encode()


def assert_all_refused(outcomes: dict[str, str], *words: str) -> None:
    for name, outcome in outcomes.items():
        assert outcome.startswith("refused: "), f"{name} accepted it"
        for w in words:
            assert w in outcome, f"{name}: {outcome}"


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


# -- one test per kind of input that crashed a reader -------------------------------------


def test_json_nested_thousands_of_levels_deep_is_refused_where_it_gets_too_deep(tmp_path, capsys):
    outcomes = every_reader(nested(5000).encode(), tmp_path, capsys)
    assert_all_refused(outcomes, f"nested more than {MAX_DEPTH} levels deep: line 1 column {MAX_DEPTH + 1}")
    title = json.dumps(WEATHER, indent=1).replace('"title": ', '"title": ' + nested(3000), 1).encode()
    assert_all_refused(every_reader(title, tmp_path, capsys), f"nested more than {MAX_DEPTH} levels deep: line 5 ")


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path, capsys):
    raw = edited(WEATHER, ["title"], "[{" * 5000 + '\\"')
    assert set(every_reader(raw, tmp_path, capsys).values()) == {"ok"}


def test_tool_arguments_nested_hundreds_of_levels_deep_are_refused(tmp_path, capsys):
    arguments = json.dumps(WEATHER).replace('"arguments": {"city": "Paris"}', '"arguments": {"city": ' + nested(300), 1)
    assert arguments != json.dumps(WEATHER)
    assert_all_refused(every_reader(arguments.encode(), tmp_path, capsys), "nested more than")
    body = json.loads(json.dumps(ANTHROPIC_BODY))
    body["messages"][1]["content"][0]["input"] = {"a": "DEEP"}
    raw = json.dumps(body).replace('"DEEP"', nested(300)).encode()
    assert parse_import(json.dumps(ANTHROPIC_BODY)).messages  # the body without the edit is accepted
    with pytest.raises(TranscriptError, match="nested more than"):
        parse_import(raw)


def test_tool_arguments_too_deep_to_use_are_kept_as_raw_text_the_loop_answers_with_an_error(tmp_path, capsys):
    depth = MAX_ARGUMENT_DEPTH + 10  # deeper than a call's arguments may be, shallower than a file may be
    raw = json.dumps(WEATHER).replace('{"city": "Paris"}', '{"city": ' + nested(depth - 1) + "}", 1)
    run = tr.loads(raw)
    call = run.messages[2].tool_calls[0]
    assert call.arguments_invalid and call.arguments == {} and json.loads(call.raw_arguments)["city"]
    assert tr.loads(tr.dumps(run)) == run
    assert set(every_reader(raw.encode(), tmp_path, capsys).values()) == {"ok"}


class CannedServer(ThreadingHTTPServer):
    """Answers each POST on 127.0.0.1 with the next canned JSON body."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Canned)
        self.bodies: list[bytes] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = self.server.bodies.pop(0)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def canned() -> Iterator[CannedServer]:
    server = CannedServer()
    thread = threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@tool
def lookup(key: list) -> str:
    """Looks a key up."""
    return "found"


def _openai_turn(arguments: str | None) -> bytes:
    if arguments is None:
        message = {"role": "assistant", "content": "done"}
    else:
        call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return json.dumps(
        {"choices": [{"message": message}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    ).encode()


def _anthropic_turn(arguments: str | None) -> bytes:
    if arguments is None:
        content = [{"type": "text", "text": "done"}]
    else:
        content = [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {"key": "DEEP"}}]
    body = {"id": "m", "type": "message", "role": "assistant", "content": content}
    body["usage"] = {"input_tokens": 3, "output_tokens": 1}
    text = json.dumps(body)
    return (text.replace('"DEEP"', arguments) if arguments else text).encode()


@pytest.mark.parametrize(
    "provider, turn",
    [("openai", lambda a: _openai_turn(a and '{"key": ' + a + "}")), ("anthropic", _anthropic_turn)],
)
def test_tool_arguments_nested_hundreds_of_levels_deep_from_a_model_are_an_error_result(
    provider, turn, canned, tmp_path
):
    canned.bodies += [turn(nested(300)), turn(None)]
    model = create_provider(provider, "m", base_url=canned.url, api_key="k", stream=False, max_retries=0)
    run = Agent(model, [lookup]).run(Run.start("Look it up.", RunConfig(provider=provider, model="m")))
    assert run.stop_reason == "answer" and len(run.steps) == 2
    result = run.messages[2]
    assert isinstance(result, ToolMessage) and result.is_error and "not a JSON object" in result.content
    tr.save(run, tmp_path / "t.json")
    assert tr.load(tmp_path / "t.json") == run
    store = Store(tmp_path / "runs.db")
    store.save_run(run)
    assert store.load_run(run.id).messages == run.messages


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.parametrize(
    "path",
    [
        ["steps", 0, "usage", "input_tokens"],
        ["steps", 0, "usage", "cache_read_tokens"],
        ["steps", 0, "index"],
        ["steps", 0, "message_count"],
        ["config", "max_steps"],
        ["parent", "step"],
    ],
)
def test_counts_beyond_64_bits_are_refused_naming_the_field(path, tmp_path, capsys):
    base = BASES[1] if path[0] == "parent" else WEATHER
    where = ".".join(str(p) for p in path).replace(".0.", "[0].")
    assert_all_refused(every_reader(edited(base, path, 2**64), tmp_path, capsys), f"{where}: ")


@pytest.mark.parametrize("value", [-1, 2.5, 3.0, True, "12"])
def test_token_counts_are_whole_non_negative_numbers(value, tmp_path, capsys):
    raw = edited(WEATHER, ["steps", 0, "usage", "output_tokens"], value)
    assert_all_refused(every_reader(raw, tmp_path, capsys), "steps[0].usage.output_tokens: ")


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1.0"])
@pytest.mark.parametrize(
    "path",
    [
        ["steps", 0, "latency_ms"],
        ["steps", 0, "tool_runs", 0, "duration_ms"],
        ["steps", 0, "tool_runs", 0, "started_ms"],
    ],
)
def test_latencies_are_finite_and_not_negative(path, number, tmp_path, capsys):
    raw = edited(WEATHER, path, "NUMBER").replace(b'"NUMBER"', number.encode())
    where = ".".join(str(p) for p in path).replace(".0.", "[0].").replace(".0", "[0]")
    assert_all_refused(every_reader(raw, tmp_path, capsys), f"{where}: ")


@pytest.mark.parametrize(
    "path", [["config", "model"], ["config", "provider"], ["id"], ["created_at"], ["steps", 0, "started_at"]]
)
def test_a_lone_surrogate_in_a_name_is_refused(path, tmp_path, capsys):
    raw = edited(WEATHER, path, "gpt\ud800")
    assert b"\\ud800" in raw
    assert_all_refused(every_reader(raw, tmp_path, capsys), "holds a lone surrogate ('\\ud800') at character 3")
    assert_all_refused(every_reader(edited(BASES[1], ["parent", "run_id"], "\udcff"), tmp_path, capsys), "surrogate")


@pytest.mark.slow  # starts the command line's own process: how a real stdout takes the surrogate is the point
def test_a_lone_surrogate_in_message_text_is_kept_and_shown_as_an_escape(tmp_path, capsys):
    raw = edited(WEATHER, ["messages", 1, "content"], "I'll look \ud800 up")
    assert set(every_reader(raw, tmp_path, capsys).values()) == {"ok"}
    path = tmp_path / "t.json"
    path.write_bytes(raw)
    shown = subprocess.run([sys.executable, "-m", "agentcore", "show", str(path)], capture_output=True, timeout=120)
    assert shown.returncode == 0 and shown.stderr == b""
    assert b"I'll look \\ud800 up" in shown.stdout


def test_the_cost_of_a_run_without_steps_is_a_report_of_nothing(tmp_path, capsys):
    raw = edited(WEATHER, ["steps"], [])
    assert set(every_reader(raw, tmp_path, capsys).values()) == {"ok"}
    path = tmp_path / "t.json"
    path.write_bytes(raw)
    assert main(["cost", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["steps"] == [] and report["total_input_tokens"] == 0 and report["what_if"] == []


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_run_id_that_is_no_file_name_names_no_path_in_an_exported_zip(tmp_path, capsys):
    ids = ["\x00", "../../etc/passwd", "a/b", "a_b", ""]
    raw = [edited(WEATHER, ["id"], run_id) for run_id in ids]
    for one in raw:
        assert set(every_reader(one, tmp_path, capsys).values()) == {"ok"}
    with zipfile.ZipFile(io.BytesIO(export_zip([tr.loads(r) for r in raw], ("json", "openai")))) as archive:
        names = archive.namelist()
    assert names[::2] == ["_.json", "_.._etc_passwd.json", "a_b.json", "a_b-2.json", "run.json"]
    assert names[1::2] == [n.replace(".json", ".openai.json") for n in names[::2]]


@pytest.mark.parametrize("version", [True, 1.0, "1", [1]])
def test_the_version_is_the_integer_1(version, tmp_path, capsys):
    raw = edited(WEATHER, ["version"], version)
    assert_all_refused(
        every_reader(raw, tmp_path, capsys), f"version: this agentcore reads version 1, found {version!r}"
    )


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_every_reader_refuses_a_file_over_the_size_limit(tmp_path, capsys, monkeypatch):
    assert tr.MAX_FILE_BYTES == 64 * 2**20 and "64 MB" in (ROOT / "README.md").read_text(encoding="utf-8")
    monkeypatch.setattr(tr, "MAX_FILE_BYTES", 2**20)
    fits = edited(WEATHER, ["title"], "x" * (2**20 - len(edited(WEATHER, ["title"], ""))))
    assert len(fits) == 2**20 and set(every_reader(fits, tmp_path, capsys).values()) == {"ok"}
    assert_all_refused(every_reader(fits + b" ", tmp_path, capsys), "larger than 1 MB")


@pytest.mark.parametrize(
    "args, words",
    [
        (["runs", "list", "--limit", str(2**70)], "--limit must be at most 1000000"),
        (["runs", "list", "--limit", "-1"], "--limit must be at least 1"),
        (["runs", "list", "--limit", "0"], "--limit must be at least 1"),
        (["run", "--provider", "scripted", "--max-steps", str(10**13)], "--max-steps must be at most"),
        (["run", "--provider", "scripted", "--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["run", "--provider", "scripted", "--temperature", "nan"], "--temperature must be a finite number"),
        (["run", "--provider", "scripted", "--temperature", "inf"], "--temperature must be a finite number"),
        (["run", "--provider", "scripted", "--temperature", "-0.5"], "--temperature must be a finite number"),
        (["compare", "p", "--config", "scripted", "--config", "scripted", "--temperature", "nan"], "--temperature"),
        (["run", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "gpt\udcff"], "model: "),
    ],
)
def test_absurd_option_values_are_one_line_and_exit_2(args, words, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentcore: error: ") and err.count("\n") == 1 and words in err


# -- mutants of valid transcripts ---------------------------------------------------------


hostile_values = st.one_of(
    st.sampled_from(
        [None, True, False, 0, -1, 1.5, 2**63, 2**64, -(2**64), 10**30, 1e308, "", "\ud800", "a\udcff", "\x00", [], {}]
    ),
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.integers(min_value=MAX_DEPTH - 10, max_value=3000).map(lambda n: f"@@deep-{n}@@"),  # too deep to dump
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8,
    ),
)


@st.composite
def structural_mutants(draw) -> bytes:
    """A base with 1 to 3 places in it (any depth) set to a hostile value, deleted, or given a new key."""
    data = json.loads(json.dumps(draw(st.sampled_from(BASES))))
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node = data
        while isinstance(node, dict | list) and node and draw(st.integers(0, 3)):
            key = draw(st.sampled_from(sorted(node))) if isinstance(node, dict) else draw(st.integers(0, len(node) - 1))
            parent, node = node, node[key]
        if parent is None:
            continue
        action = draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
        if action == "delete":
            del parent[key]
        elif action == "add" and isinstance(node, dict):
            node[draw(st.text(max_size=8))] = draw(hostile_values)
        else:
            parent[key] = draw(hostile_values)
    text = re.sub(r'"@@deep-(\d+)@@"', lambda m: nested(int(m[1])), json.dumps(data))
    return text.encode("utf-8", "surrogatepass")


SNIPPETS = [
    b"[",
    b"]",
    b"{",
    b"}",
    b'"',
    b"\\",
    b",",
    b":",
    b"\\ud800",
    b"NaN",
    b"-Infinity",
    b"1e999",
    b"-1",
    b"18446744073709551616",
    b"true",
    b"null",
    b"\xff",
    b"\xed\xa0\x80",
    b"\x00",
    b"[" * 150,
    b'{"a":' * 120,
]


@st.composite
def byte_mutants(draw) -> bytes:
    """A base's JSON bytes with 1 to 8 edits: a byte replaced, a snippet inserted, a span deleted or repeated,
    or a number made longer, negative or fractional (an edit the JSON survives, so the fields are checked).
    """
    data = bytearray(json.dumps(draw(st.sampled_from(BASES)), indent=draw(st.sampled_from([None, 1]))).encode())
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["replace", "insert", "delete", "repeat", "number", "number"]))
        digits = [i for i, b in enumerate(data) if 0x30 <= b <= 0x39 and data[i - 1 : i] in b" :[,0123456789"]
        if action == "number" and digits:
            at = draw(st.sampled_from(digits))
            data[at:at] = draw(st.sampled_from([b"-", b"9" * draw(st.integers(1, 30)), b".5", b"e999", b"e-999"]))
        elif action == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif action == "insert":
            data[at:at] = draw(st.sampled_from(SNIPPETS))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 200))]
    return bytes(data)


FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@FUZZ
@given(raw=structural_mutants())
def test_every_reader_survives_structural_mutants_of_valid_transcripts(raw, tmp_path, capsys):
    outcomes = every_reader(raw, tmp_path, capsys)
    event("accepted" if "ok" in outcomes.values() else "refused")


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@FUZZ
@given(raw=byte_mutants())
def test_every_reader_survives_byte_mutants_of_valid_transcripts(raw, tmp_path, capsys):
    outcomes = every_reader(raw, tmp_path, capsys)
    event("accepted" if "ok" in outcomes.values() else "refused")
