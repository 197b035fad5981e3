"""Tools from plain functions: schema, validation, timeouts, failures and output caps."""

from __future__ import annotations

import time

from agentcore.messages import ToolCall
from agentcore.providers.base import ModelRequest, estimate_request_tokens
from agentcore.tool_output import cap_output
from agentcore.tools import ToolSpec, tool, unknown_tool_outcome


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b


def run(t, **arguments):
    return t.execute(ToolCall(id="c1", name=t.name, arguments=arguments))


def test_name_description_and_schema_come_from_the_function():
    assert add.name == "add"
    assert add.description == "Add two integers."
    schema = add.parameters
    assert schema["type"] == "object"
    assert schema["properties"]["a"] == {"type": "integer"}
    assert schema["properties"]["b"]["default"] == 2
    assert schema["required"] == ["a"]
    assert add.spec().name == "add"


def test_valid_arguments_run_the_function():
    outcome = run(add, a=3, b=4)
    assert (outcome.content, outcome.is_error) == ("7", False)


def test_arguments_that_fail_the_schema_are_an_error_for_the_model():
    outcome = run(add, a="three")
    assert outcome.is_error and outcome.error == "invalid_arguments"
    assert "a:" in outcome.content and "add" in outcome.content
    outcome = run(add, a=1, c=5)
    assert outcome.is_error and "c" in outcome.content


def test_arguments_that_are_not_json_are_an_error_for_the_model():
    outcome = add.execute(ToolCall(id="c1", name="add", raw_arguments='{"a": 1'))
    assert outcome.is_error and outcome.error == "invalid_json"
    assert '{"a": 1' in outcome.content


def test_an_exception_becomes_error_text():
    @tool
    def boom(x: str) -> str:
        """Always fails."""
        raise ValueError(f"bad {x}")

    outcome = run(boom, x="input")
    assert outcome.is_error and outcome.error == "exception"
    assert "ValueError: bad input" in outcome.content


def test_a_hanging_tool_times_out_and_is_abandoned():
    @tool(timeout_s=0.2)
    def hang() -> str:
        """Never returns in time."""
        time.sleep(5)
        return "late"

    outcome = run(hang)
    assert outcome.is_error and outcome.error == "timeout"
    assert "timed out after 0.2 s" in outcome.content


def test_long_output_is_capped_with_a_visible_note():
    @tool(max_output_chars=10)
    def long() -> str:
        """Returns a lot."""
        return "x" * 25

    outcome = run(long)
    assert outcome.content.startswith("x" * 10)
    assert "[truncated: showing 10 of 25 characters]" in outcome.content
    assert cap_output("short", 10) == "short"


def test_return_values_are_rendered_as_json():
    @tool
    def data() -> dict:
        """Returns a dict."""
        return {"a": [1, 2]}

    assert run(data).content == '{"a": [1, 2]}'


def test_unknown_tool_lists_the_available_ones():
    outcome = unknown_tool_outcome(ToolCall(id="c", name="nope"), ["b", "a"])
    assert outcome.is_error and "'nope'" in outcome.content and "a, b" in outcome.content


def test_sequential_flag_is_kept():
    @tool(sequential=True)
    def write(text: str) -> str:
        """Writes."""
        return text

    assert write.sequential and not add.sequential


def test_a_tool_without_a_time_limit_runs_in_the_calling_thread_and_one_with_a_limit_too_in_the_main_one():
    import threading

    from support.threads import off_main

    @tool(timeout_s=None)
    def where() -> str:
        """Names the thread it runs in."""
        return threading.current_thread().name

    @tool
    def where_limited() -> str:
        """Names the thread it runs in."""
        return threading.current_thread().name

    assert run(where).content == run(where_limited).content == threading.main_thread().name
    assert off_main(run, where).content == "off-main"
    assert off_main(run, where_limited).content == "tool-where_limited"  # handed to a kept worker


def test_worker_threads_are_reused_and_a_hung_call_does_not_block_the_next():
    import threading

    release = threading.Event()

    @tool(timeout_s=0.05)
    def stuck() -> str:
        """Hangs until released."""
        release.wait(5)
        return "late"

    @tool
    def ident() -> int:
        """The worker's thread id."""
        return threading.get_ident()

    from support.threads import off_main  # as the app's script thread: off the main thread, calls go to workers

    off_main(run, ident)  # leaves at least one idle worker
    existing = {str(t.ident) for t in threading.enumerate()}
    assert off_main(run, ident).content in existing  # served by a worker that was already there, not a new thread
    assert off_main(run, stuck).error == "timeout"
    assert not off_main(run, ident).is_error  # served by another worker while the hung one is still busy
    release.set()


def test_a_spec_s_plain_form_and_size_are_kept_and_a_changed_copy_computes_its_own():
    spec = ToolSpec(name="lookup", description="Look up a key.", parameters={"type": "object", "properties": {}})
    assert spec.data == spec.model_dump(mode="json") and spec.data is spec.data
    assert spec.tokens == estimate_request_tokens(ModelRequest(messages=(), tools=(spec,)))
    longer = spec.model_copy(update={"description": "Look up a key and return its record, in full." * 4})
    assert longer.data == longer.model_dump(mode="json") != spec.data
    assert longer.tokens > spec.tokens
