"""The Codex rollout reader's rules at their limits, on rollouts written here: which session line counts, prompts
as events or as items, a compacted history's copies, a count written after its call, call ids and names a line
leaves out, web searches, results that failed, reasoning summaries, and how counts are told to come first."""

from __future__ import annotations

from typing import Any

from agentcore import AssistantMessage, ToolMessage, UserMessage
from agentcore.run import Run
from agentcore.sessions.codex import read_codex


def line(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": "2026-01-02T10:00:00Z", "type": kind, "payload": payload}


def read(*lines: dict[str, Any]) -> Run:
    return read_codex(list(enumerate(lines, start=1)), "rollout.jsonl")[0]


def meta(**payload: Any) -> dict[str, Any]:
    return line("session_meta", **({"id": "s-1", "originator": "cli", "cli_version": "0.9"} | payload))


def prompt(text: str) -> dict[str, Any]:
    return line("response_item", type="message", role="user", content=[{"type": "input_text", "text": text}])


def said(text: str) -> dict[str, Any]:
    return line("response_item", type="message", role="assistant", content=[{"type": "output_text", "text": text}])


def shell(call_id: str | None = "c1", **more: Any) -> dict[str, Any]:
    payload = {"type": "function_call", "name": "shell", "arguments": '{"cmd": "ls"}'} | more
    if call_id is not None:
        payload["call_id"] = call_id
    return line("response_item", **payload)


def output(call_id: str, value: Any) -> dict[str, Any]:
    return line("response_item", type="function_call_output", call_id=call_id, output=value)


def count(total: int, inp: int, out: int) -> dict[str, Any]:
    usage = {"input_tokens": inp, "output_tokens": out, "cached_input_tokens": 0}
    return line("event_msg", type="token_count", info={"total_token_usage": {"t": total}, "last_token_usage": usage})


def calls_of(run: Run) -> list:
    return [c for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]


def test_the_first_session_line_names_the_session_and_its_agent_is_said_of_what_it_gives_as_text():
    run = read(meta(), meta(id="s-2", originator="other"), prompt("Hi"), said("Hello"))
    assert (run.origin.session_id, run.origin.agent) == ("s-1", "codex cli 0.9")
    assert read(meta(originator="", cli_version=3), prompt("Hi"), said("Hello")).origin.agent == "codex"


def test_prompts_written_as_events_make_user_items_injected_context_and_items_stand_when_there_are_none():
    as_events = read(
        line("event_msg", type="user_message", message="Hi"), prompt("<environment_context>"), said("Hello")
    )
    assert [m.text for m in as_events.messages if isinstance(m, UserMessage)] == ["Hi"]
    assert "1 user messages (injected context)" in as_events.origin.notes
    as_items = read(prompt("Hi"), said("Hello"))
    assert [m.text for m in as_items.messages if isinstance(m, UserMessage)] == ["Hi"]


def test_a_compacted_history_is_copied_by_role_and_what_it_holds_besides_is_counted_by_name():
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "asked before"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "answered before"}]},
        {"type": "message", "role": "developer", "content": "rules"},
        {"type": "function_call"},
        {},
    ]
    run = read(prompt("Hi"), said("one"), line("compacted", replacement_history=history), said("two"))
    kinds = [(type(m).__name__, m.text) for m in run.messages]
    assert ("UserMessage", "asked before") in kinds and ("AssistantMessage", "answered before") in kinds
    notes = run.origin.notes
    assert "1 developer items of a compacted history (injected context)" in notes
    assert "1 function_call items of a compacted history (injected context)" in notes
    assert "1 unknown items of a compacted history (injected context)" in notes


def test_a_count_written_after_its_calls_output_is_that_steps_and_no_longer_an_estimate():
    run = read(prompt("Hi"), said("Hello"), prompt("More"), count(1, 120, 7))
    (step,) = run.steps
    assert not step.estimated and (step.usage.input_tokens, step.usage.output_tokens) == (120, 7)
    kept = read(prompt("Hi"), said("a"), count(1, 120, 7), prompt("More"), count(2, 999, 9))
    assert [s.usage.input_tokens for s in kept.steps] == [120]  # a counted step keeps its count
    early = read(count(1, 5, 1), prompt("Hi"), said("a"), count(2, 120, 7))  # a count before any call: no step
    assert [s.usage.input_tokens for s in early.steps] == [120]
    repeated = read(prompt("Hi"), said("a"), count(1, 120, 7), said("b"), count(1, 999, 9))  # the same count again
    assert [s.usage.input_tokens for s in repeated.steps][0] == 120 and repeated.steps[-1].usage.input_tokens != 999


def test_a_call_without_an_id_takes_its_items_id_else_its_line_and_place_and_its_kind_names_it_without_a_name():
    run = read(
        prompt("Go"),
        shell(call_id=None, id="fc_1"),
        shell(call_id="", id=""),
        line("response_item", type="local_shell_call", call_id="c3", action={"command": ["ls"]}),
        line("response_item", type="custom_tool_call", call_id="c4", name="", input="patch text"),
    )
    calls = calls_of(run)
    assert [c.id for c in calls] == ["fc_1", "call_3_2", "c3", "c4"]
    assert [c.name for c in calls] == ["shell", "shell", "local_shell", "custom_tool"]
    assert calls[2].arguments == {"command": ["ls"]} and calls[3].raw_arguments == "patch text"


def test_a_web_search_takes_its_events_id_and_query_and_one_completed_in_the_call_is_answered_there():
    run = read(
        prompt("Search"),
        line("response_item", type="web_search_call", status="completed", action={"query": "otters"}),
        line("event_msg", type="web_search_end", call_id="ws_1", query="otters"),
        line("response_item", type="web_search_call", call_id="ws_2", status="completed", action={"query": "seals"}),
        line("response_item", type="web_search_call", call_id="ws_3", status="in_progress", action={"query": "x"}),
        line("response_item", type="web_search_call", call_id="ws_4", status="in_progress", action={}),
        line("event_msg", type="web_search_end", call_id="ws_4", action={"type": "open_page", "url": "u"}),
        said("Found."),
    )
    calls = calls_of(run)
    assert [c.id for c in calls] == ["ws_1", "ws_2", "ws_3", "ws_4"] and {c.name for c in calls} == {"web_search"}
    results = {m.tool_call_id: (m.content, m.is_error) for m in run.messages if isinstance(m, ToolMessage)}
    assert results["ws_1"] == ("web search: otters", False)
    assert results["ws_2"] == ("web search: seals", False)  # answered within the call
    assert "ws_3" not in results  # not completed, no event: the file has no result for it
    assert results["ws_4"] == ('web search: {"type": "open_page", "url": "u"}', False)  # no query: its action


def test_a_result_that_says_it_failed_is_an_error_and_one_that_says_nothing_is_not():
    run = read(
        prompt("Go"),
        shell("c1"),
        shell("c2"),
        shell("c3"),
        output("c1", {"content": "denied", "success": False}),
        output("c2", {"content": "fine"}),
        output("c3", "plain text"),
        said("Done."),
    )
    results = [(m.content, m.is_error) for m in run.messages if isinstance(m, ToolMessage)]
    assert results == [("denied", True), ("fine", False), ("plain text", False)]


def test_a_reasoning_summary_keeps_the_texts_of_its_parts_only():
    summary = [
        {"type": "summary_text", "text": "first"},
        {"type": "summary_text", "text": 3},
        "loose",
        {"text": "second"},
    ]
    run = read(prompt("Hi"), line("response_item", type="reasoning", summary=summary, content=None), said("Hello"))
    (part,) = next(m for m in run.messages if isinstance(m, AssistantMessage)).reasoning
    assert part.summary == ("first", "second") and part.text == ""


def test_counts_come_first_only_when_no_call_is_before_the_first_and_one_is_after_the_last():
    from agentcore.sessions.codex import _counts_first

    def kinds(*names: str) -> list[dict[str, Any]]:
        out = []
        for n, name in enumerate(names):
            if name == "count":
                out.append({"type": "token_count", "info": {"total_token_usage": n, "last_token_usage": {}}})
            else:
                out.append({"type": "message", "role": "assistant"} if name == "said" else {"type": "function_call"})
        return out

    assert _counts_first(kinds("count", "said", "count", "call")) is True
    assert _counts_first(kinds("said", "count", "call", "count")) is False  # a call before the first count
    assert _counts_first(kinds("count", "said", "count")) is False  # nothing after the last
    assert _counts_first(kinds("said", "call")) is False  # no count at all
    assert _counts_first(kinds("count", "call")) is True  # one count, a call after it


def test_a_rollout_line_is_told_by_its_type_payload_and_time():
    from agentcore.sessions.codex import is_codex

    good = line("event_msg", type="token_count")
    assert is_codex(good)
    assert not is_codex({k: v for k, v in good.items() if k != "timestamp"})
    assert not is_codex(good | {"payload": "text"})
    assert not is_codex(good | {"type": "message"})
