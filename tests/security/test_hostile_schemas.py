"""Hostile JSON Schemas and patterns in the four places agentcore applies a schema it did not write.

The places: an MCP tool's inputSchema (a real server, tests/support/mcp_servers/schema_mcp_server.py), a pinned test's argument and
answer schemas and regex matchers, `--final-schema`, and an imported transcript's final-answer schema. A `$ref`
to a real HTTP server on 127.0.0.1 must make no request, one to a file must not put the file's text anywhere,
a reference loop must be a one-line error that keeps the run's finished phases, and a catastrophic pattern
must come back with an error while the rest of the process goes on.
"""

from __future__ import annotations

import http.server
import json
import shlex
import sys
import threading
import time
from pathlib import Path

import pytest
from support.stand_in import POLL_S, QuietServer

from agentcore.cli.main import main
from agentcore.loop import Agent, check_final_schema
from agentcore.messages import AssistantMessage, ToolCall
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.schemas import PatternError, SchemaError, check_schema, schema_errors, search
from agentcore.testing import pinned
from agentcore.transcript import save, to_dict

MARKER = "MARKER-5be1f0c2"
SLOW_PATTERN = "^(a|a)+$"  # catastrophic in `regex` too: every way of splitting the a's is tried before the '!'
SLOW_TEXT = "a" * 40 + "!"
HANG_GUARD_S = 10  # only a guard against a hang: the limits are a second or two


class RefServer:
    """An HTTP server on 127.0.0.1 that serves a schema and counts the requests it gets."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        served = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.append(self.path)
                body = json.dumps({"const": "FETCHED"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/schema.json"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(POLL_S,), daemon=True)
        self.thread.start()


@pytest.fixture(scope="module")
def ref_server():
    server = RefServer()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture(scope="module")
def marker_uri(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("secret") / "secret.json"
    path.write_text(json.dumps({"const": MARKER}))
    return path.as_uri()


HOSTILE = ["http", "file", "self_loop", "defs_loop"]
SAID = {
    "http": "points outside the schema",
    "file": "points outside the schema",
    "self_loop": "loop",
    "defs_loop": "loop",
}


def hostile_value_schema(kind: str, url: str, file_uri: str) -> dict:
    """A schema for a string argument `s` that is hostile in the way `kind` names, as an object schema."""
    if kind == "http":
        return {"type": "object", "properties": {"s": {"$ref": url}}}
    if kind == "file":
        return {"type": "object", "properties": {"s": {"$ref": file_uri}}}
    if kind == "self_loop":
        return {"type": "object", "properties": {"s": {"$ref": "#/properties/s"}}}
    return {
        "type": "object",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
        "properties": {"s": {"$ref": "#/$defs/a"}},
    }


def root_schema(kind: str, url: str, file_uri: str) -> dict:
    """The same hostility at the top of the schema (`{"$ref": "#"}` for the plain loop)."""
    if kind == "self_loop":
        return {"$ref": "#"}
    if kind == "defs_loop":
        return {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    return {"$ref": url if kind == "http" else file_uri}


def assert_clean(text: str, server: RefServer, before: int) -> None:
    assert len(server.requests) == before, "a $ref was fetched"
    assert MARKER not in text and "FETCHED" not in text
    assert "Traceback" not in text and "RecursionError" not in text


# -- the module itself --------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}}},
        {"$id": "https://example.com/root", "$defs": {"a": {"$id": "a.json", "type": "string"}}, "$ref": "a.json"},
        {"$defs": {"a": {"$anchor": "name", "type": "string"}}, "properties": {"x": {"$ref": "#name"}}},
        {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {}}, "$ref": "#/definitions/a"},
        {"$ref": "https://json-schema.org/draft/2020-12/schema"},  # the meta-schemas jsonschema ships
        {"const": {"$ref": "http://example.com/"}},  # a $ref in data is data
        {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"next": {"$ref": "#"}}}]},
    ],
)
def test_schemas_that_reference_only_themselves_are_accepted(schema):
    check_schema(schema)
    assert schema_errors(schema, {"next": {"next": "x"}}) is not None


def test_a_recursive_schema_still_checks_a_nested_value():
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["kids"]}
    check_schema(tree)
    assert schema_errors(tree, {"kids": [{"kids": []}]}) == []
    (error,) = schema_errors(tree, {"kids": [{"kids": [{}]}]})
    assert list(error.path) == ["kids", 0, "kids", 0] and "'kids' is a required property" in error.message


@pytest.mark.parametrize(
    ("ref", "said"),
    [
        ("#/$defs/missing", "points to nothing in the schema"),
        ("other.json", "points outside the schema"),
        ("file:///etc/passwd", "points outside the schema"),
    ],
)
def test_a_ref_that_leaves_the_schema_or_leads_nowhere_is_refused_by_name(ref, said):
    with pytest.raises(SchemaError, match=said) as caught:
        check_schema({"properties": {"x": {"$ref": ref}}})
    assert repr(ref) in str(caught.value)


def test_a_base_uri_cannot_turn_a_relative_ref_into_a_file_read(tmp_path):
    (tmp_path / "leak.json").write_text(json.dumps({"const": MARKER}))
    schema = {"$id": tmp_path.as_uri() + "/", "properties": {"x": {"$ref": "leak.json"}}}
    with pytest.raises(SchemaError, match="points outside the schema"):
        check_schema(schema)
    with pytest.raises(SchemaError, match="points outside the schema") as caught:
        schema_errors(schema, {"x": "y"})  # and checking a value, unchecked, retrieves nothing either
    assert MARKER not in str(caught.value)


def test_a_loop_through_in_place_keywords_is_named_with_its_path():
    schema = {
        "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
        "$ref": "#/$defs/a",
    }
    with pytest.raises(SchemaError, match="loop") as caught:
        check_schema(schema)
    assert "#/$defs/a → #/$defs/a/allOf/0 → #/$defs/b" in str(caught.value)
    with pytest.raises(SchemaError, match="loop"):
        schema_errors(schema, "anything")  # applied unchecked, the loop is an error, not a RecursionError


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_schema_whose_check_branches_without_end_runs_out_of_time_not_forever():
    # no loop, but each level doubles the work: 2**40 checks of one value
    defs = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(40)}
    schema = {"$defs": {**defs, "d40": {"type": "string"}}, "$ref": "#/$defs/d0"}
    check_schema(schema)
    started = time.monotonic()
    with pytest.raises(SchemaError, match="took longer than"):
        schema_errors(schema, 5)
    assert time.monotonic() - started < HANG_GUARD_S


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "string", "pattern": "(?:a{65535}){65535}"}, "too large"),
        ({"patternProperties": {"(?:[ab]{1000}){1000}": {}}}, "too large"),
        ({"type": "string", "pattern": "(?<=a+)b"}, "is not a 'regex'"),
        ({"patternProperties": {"^a": {}}, "unevaluatedProperties": False}, "unevaluatedProperties"),
        ({"properties": {"x": {}}, "maxLength": 3, "x": "y" * 300_000}, "over the limit"),
    ],
)
def test_patterns_and_schemas_that_cannot_be_bounded_are_refused_quickly(schema, said):
    started = time.monotonic()
    with pytest.raises(SchemaError, match=said):
        check_schema(schema)
    assert time.monotonic() - started < HANG_GUARD_S


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_pattern_that_runs_too_long_is_an_error_while_other_threads_go_on():
    ticks = 0
    stop = threading.Event()

    def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    started = time.monotonic()
    try:
        with pytest.raises(PatternError, match=r"pattern '\^\(a\|a\)\+\$' took longer than 1 s"):
            search(SLOW_PATTERN, SLOW_TEXT)
    finally:
        elapsed = time.monotonic() - started
        stop.set()
        ticker.join()
    assert elapsed < HANG_GUARD_S
    assert ticks >= 50, "the match held the GIL: the other thread could not run"  # `re` lets it tick 2 or 3 times


def test_the_nested_quantifier_of_the_classic_example_is_answered_at_once():
    assert search("^(a+)+$", "a" * 10_000) and not search("^(a+)+$", "a" * 26 + "!")


def test_a_text_too_long_for_a_pattern_is_refused_not_scanned():
    with pytest.raises(PatternError, match="was not applied to a text of 100001 characters"):
        search("a", "b" * 100_001)


def test_own_pattern_keywords_say_what_jsonschema_says():
    import jsonschema

    schema = {"properties": {"n": {"pattern": "^[0-9]+$"}}, "patternProperties": {"^x": {"type": "integer"}}}
    for extra in ({"additionalProperties": False}, {"additionalProperties": {"type": "string"}}, {}):
        s = {**schema, **extra}
        value = {"n": "12a", "xa": "no", "y": 3, "z": 4}
        ours = sorted(e.message for e in schema_errors(s, value))
        theirs = sorted(e.message for e in jsonschema.Draft202012Validator(s).iter_errors(value))
        assert ours == theirs


# -- 1. an MCP tool's inputSchema, from a real server ------------------------------------


def server_tools(schema: dict):
    pytest.importorskip("mcp", reason="the `mcp` extra is not installed: pip install -e '.[mcp]'")
    from agentcore.mcp.client import mcp_tools
    from agentcore.mcp.config import stdio_server

    script = Path(__file__).parents[1] / "support" / "mcp_servers" / "schema_mcp_server.py"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(json.dumps(schema))}"
    return mcp_tools([stdio_server(command)])


def run_turns(tools, *turns: AssistantMessage, config: RunConfig | None = None) -> Run:
    return Agent(ScriptedProvider(replay=list(turns)), tools).run(Run.start("go", config or RunConfig(max_steps=4)))


def echo(*arguments: dict) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(id=f"c{i}", name="echo", arguments=a) for i, a in enumerate(arguments))
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", HOSTILE)
def test_an_mcp_tool_whose_schema_is_hostile_is_an_error_result_and_the_run_goes_on(
    kind, ref_server, marker_uri, tmp_path, capsys
):
    before = len(ref_server.requests)
    (tool,) = server_tools(hostile_value_schema(kind, ref_server.url, marker_uri))
    assert tool.spec().parameters == {"type": "object", "properties": {}}  # the hostile schema goes to no provider
    assert SAID[kind] in tool.spec().description
    run = run_turns([tool], echo({"s": "x"}), AssistantMessage(content="done"))
    result = next(m for m in run.messages if m.role == "tool")
    assert result.is_error and SAID[kind] in result.content and "echoed" not in result.content
    assert run.stop_reason == "answer" and len(run.steps) == 2 and run.steps[0].tool_runs[0].is_error
    save(run, tmp_path / "run.json")
    assert_clean((tmp_path / "run.json").read_text() + "".join(capsys.readouterr()), ref_server, before)


@pytest.mark.slow
def test_an_mcp_pattern_that_runs_too_long_fails_its_call_and_the_turns_other_call_runs():
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": SLOW_PATTERN}}}
    (tool,) = server_tools(schema)
    started = time.monotonic()
    run = run_turns([tool], echo({"s": SLOW_TEXT}, {"s": "aaa"}), AssistantMessage(content="done"))
    assert time.monotonic() - started < HANG_GUARD_S
    slow, fine = [m for m in run.messages if m.role == "tool"]
    assert slow.is_error and "took longer than 1 s" in slow.content and "echoed" not in slow.content
    assert not fine.is_error and fine.content == 'echoed: {"s": "aaa"}'
    assert run.stop_reason == "answer"


# -- 2. a pinned test: argument schema, answer schema, regex matchers ---------------------


def pinned_file(tmp_path: Path, expect: dict, argument: str = "prompt caching") -> Path:
    """A test file pinned from a run that searched the notes for `argument` and answered, with `expect`."""
    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="search_notes", arguments={"query": argument}),)),
        AssistantMessage(content="done"),
    ]
    from agentcore import toolbox

    run = run_turns(toolbox.get_tools(["search_notes"]), *turns)
    data = pinned.to_data(pinned.propose(run, "hostile"))
    data["expect"] = expect
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("where", ["argument schema", "answer schema"])
def test_a_pinned_test_with_a_hostile_schema_is_a_one_line_error(kind, where, ref_server, marker_uri, tmp_path, capsys):
    before = len(ref_server.requests)
    schema = root_schema(kind, ref_server.url, marker_uri)
    if where == "argument schema":
        expect = {"tool_calls": {"mode": "in_order", "calls": [{"name": "search_notes", "args": {"schema": schema}}]}}
    else:
        expect = {"answer": {"schema": schema}}
    path = pinned_file(tmp_path, expect)
    assert main(["test", str(path), "--no-db"]) == 2
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert line.startswith("agentcore: error: ") and str(path) in line and SAID[kind] in line
    assert_clean(out + err, ref_server, before)


@pytest.mark.parametrize(
    "expect",
    [
        {
            "tool_calls": {
                "mode": "exact",
                "calls": [{"name": "search_notes", "args": {"regex": {"query": SLOW_PATTERN}}}],
            }
        },
        {
            "tool_calls": {
                "mode": "exact",
                "calls": [
                    {"name": "search_notes", "args": {"schema": {"properties": {"query": {"pattern": SLOW_PATTERN}}}}}
                ],
            }
        },
    ],
    ids=["regex matcher", "schema pattern"],
)
def test_a_pinned_pattern_that_runs_too_long_is_a_failed_expectation(expect, tmp_path, capsys):
    path = pinned_file(tmp_path, expect, argument=SLOW_TEXT)
    started = time.monotonic()
    assert main(["test", str(path), "--no-db"]) == 1
    assert time.monotonic() - started < HANG_GUARD_S
    out, err = capsys.readouterr()
    assert "took longer than 1 s" in out and "Traceback" not in out + err


@pytest.mark.parametrize("mode", ["in_order", "any_order", "contains"])
def test_a_pinned_pattern_that_runs_too_long_fails_in_every_trajectory_mode(mode, tmp_path, capsys):
    calls = [{"name": "search_notes", "args": {"regex": {"query": SLOW_PATTERN}}}]
    path = pinned_file(tmp_path, {"tool_calls": {"mode": mode, "calls": calls}}, argument=SLOW_TEXT)
    started = time.monotonic()
    assert main(["test", str(path), "--no-db"]) == 1
    assert time.monotonic() - started < HANG_GUARD_S
    assert "FAIL hostile" in capsys.readouterr().out


def test_a_pinned_answer_regex_that_runs_too_long_is_a_failed_expectation():
    run = Run.start("q")
    run.messages.append(AssistantMessage(content=SLOW_TEXT))
    run.stop_reason = "answer"
    (failure,) = pinned.check(pinned.Expectations.model_validate({"answer": {"regex": SLOW_PATTERN}}), run)
    assert failure.expectation == "answer" and "took longer than 1 s" in failure.message


def test_a_pinned_test_file_with_a_pattern_too_large_to_compile_does_not_load(tmp_path, capsys):
    expect = {"answer": {"regex": "(?:a{65535}){65535}"}}
    path = pinned_file(tmp_path, expect)
    started = time.monotonic()
    assert main(["test", str(path), "--no-db"]) == 2
    assert time.monotonic() - started < HANG_GUARD_S
    assert "is too large" in capsys.readouterr().err


# -- 3. --final-schema ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_final_schema_is_a_usage_error_before_the_run(kind, ref_server, marker_uri, tmp_path, capsys):
    before = len(ref_server.requests)
    path = tmp_path / "final.json"
    path.write_text(json.dumps(root_schema(kind, ref_server.url, marker_uri)))
    assert (
        main(["run", "--provider", "scripted", "--scenario", "structured", "--final-schema", str(path), "--no-db"]) == 2
    )
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert line.startswith(f"agentcore: error: --final-schema {path}: ") and SAID[kind] in line
    assert "step 1" not in out  # refused before the model was called
    assert_clean(out + err, ref_server, before)


def test_a_final_answer_pattern_that_runs_too_long_is_an_error_result_and_the_run_goes_on():
    schema = {"type": "object", "properties": {"topic": {"type": "string", "pattern": SLOW_PATTERN}}}
    final = AssistantMessage(tool_calls=(ToolCall(id="f", name="final_answer", arguments={"topic": SLOW_TEXT}),))
    run = run_turns([], final, AssistantMessage(content="plain"), config=RunConfig(final_answer_schema=schema))
    result = next(m for m in run.messages if m.role == "tool")
    assert result.is_error and "could not be checked" in result.content and "took longer than 1 s" in result.content
    assert run.stop_reason == "answer" and run.final_output is None and len(run.steps) == 2


# -- 4. an imported transcript's final-answer schema ------------------------------------------


def pending_final_answer(schema: dict, tmp_path: Path) -> Path:
    """A transcript that stopped after the model's final_answer call: its next phase is the tools phase."""
    run = Run.start("summarise", RunConfig(final_answer_schema={"type": "object"}, max_steps=4))
    turns = [AssistantMessage(tool_calls=(ToolCall(id="f1", name="final_answer", arguments={"s": "x"}),))]
    run.config = run.config.model_copy(update={"pause_before_tools": True})
    Agent(ScriptedProvider(replay=turns), []).step(run)
    data = to_dict(run)
    data["config"]["final_answer_schema"] = schema  # as a file from elsewhere would have it
    path = tmp_path / "imported.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("kind", HOSTILE)
def test_an_imported_runs_hostile_schema_is_an_error_result_and_its_phases_are_kept(
    kind, ref_server, marker_uri, tmp_path
):
    from agentcore.importers import parse_import

    before = len(ref_server.requests)
    path = pending_final_answer(root_schema(kind, ref_server.url, marker_uri), tmp_path)
    run = parse_import(path.read_bytes(), path.name)
    assert run.next_phase == "tools" and len(run.steps) == 1
    Agent(ScriptedProvider(replay=[]), []).step(run)  # the tools phase the transcript was waiting for
    result = run.messages[-1]
    assert result.role == "tool" and result.is_error and "could not be checked" in result.content
    assert SAID[kind] in result.content
    assert len(run.steps) == 1 and run.steps[0].tool_runs[0].error == "schema_error" and run.final_output is None
    save(run, tmp_path / "after.json")
    assert_clean((tmp_path / "after.json").read_text(), ref_server, before)


@pytest.mark.parametrize("kind", HOSTILE)
def test_replaying_a_transcript_with_a_hostile_schema_is_refused_before_the_run(
    kind, ref_server, marker_uri, tmp_path, capsys
):
    before = len(ref_server.requests)
    path = pending_final_answer(root_schema(kind, ref_server.url, marker_uri), tmp_path)
    assert main(["run", "--replay", str(path), "--no-db"]) == 2
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert line.startswith(f"agentcore: error: {path}: final_answer_schema: ") and SAID[kind] in line
    assert_clean(out + err, ref_server, before)


@pytest.mark.parametrize("kind", HOSTILE)
def test_pinning_a_run_with_a_hostile_schema_is_a_usage_error(kind, ref_server, marker_uri, tmp_path):
    from agentcore.errors import UsageError
    from agentcore.transcript import load

    run = load(pending_final_answer(root_schema(kind, ref_server.url, marker_uri), tmp_path))
    run.messages.append(AssistantMessage(content="answer"))
    with pytest.raises(UsageError, match="its final-answer schema cannot be pinned") as caught:
        pinned.propose(run)
    assert SAID[kind] in str(caught.value)


def test_check_final_schema_names_the_reason_in_one_line():
    with pytest.raises(Exception, match=r"^final_answer_schema: its references go round in a loop") as caught:
        check_final_schema({"$ref": "#"})
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "through",
    [
        {"if": {"$ref": "#"}},
        {"if": {"type": "object"}, "then": {"$ref": "#"}},
        {"if": {"type": "object"}, "else": {"$ref": "#"}},
        {"not": {"$ref": "#"}},
        {"allOf": [{"$ref": "#"}]},
        {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
        {"oneOf": [{"$ref": "#"}]},
        {"dependentSchemas": {"a": {"$ref": "#"}}},
    ],
)
def test_a_reference_loop_through_any_keyword_applied_in_place_is_refused(through):
    with pytest.raises(SchemaError, match="go round in a loop"):
        check_schema(through)


@pytest.mark.parametrize(
    "into",
    [
        {"properties": {"next": {"$ref": "#"}}},
        {"items": {"$ref": "#"}},
        {"if": {"type": "object"}, "else": {"items": {"$ref": "#"}}},  # through else, but into the value
        {"additionalProperties": {"$ref": "#"}},
    ],
)
def test_a_reference_back_to_the_root_that_goes_into_the_value_is_accepted(into):
    check_schema(into)
    assert schema_errors(into, {"next": {"next": 1}}) is not None
