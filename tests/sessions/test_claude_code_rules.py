"""The Claude Code session reader's rules at their limits, on sessions written here: which lines are a session's,
tool results (the first of an id), a person's text beside them, a compaction's count from 0, the blocks of a
turn, call ids and names a line leaves out, sidechains and the Task call that started each, and subagent files
absent or past the depth limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcore import AssistantMessage, ToolMessage, UserMessage
from agentcore.policies import compactions
from agentcore.run import Run
from agentcore.sessions.claude_code import is_claude_code, read_claude_code
from agentcore.sessions.files import MAX_DEPTH, Beside


def user(content: Any, uuid: str = "u", **more: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": "s-1", "uuid": uuid, "message": {"role": "user", "content": content}} | more


def assistant(*blocks: Any, msg_id: str = "m1", usage: dict | None = None, **more: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"id": msg_id, "role": "assistant", "model": "claude-x", "content": list(blocks)}
    if usage is not None:
        message["usage"] = usage
    return {"type": "assistant", "sessionId": "s-1", "uuid": f"a-{msg_id}", "message": message} | more


def text(words: Any) -> dict[str, Any]:
    return {"type": "text", "text": words}


def tool_use(call_id: Any = "t1", name: Any = "Bash", args: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"} if args is None else args}


def result(call_id: str, content: Any, **more: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content} | more


def read(*records: dict[str, Any], folder: Path | None = None, depth: int = 0, name: str = "s.jsonl") -> list[Run]:
    return read_claude_code(list(enumerate(records, start=1)), name, Beside(folder), depth)


def results_of(run: Run) -> list[tuple[str, str, bool]]:
    return [(m.tool_call_id, m.content, m.is_error) for m in run.messages if isinstance(m, ToolMessage)]


def test_a_line_is_a_sessions_by_its_kind_message_and_ids():
    assert is_claude_code(user("hi")) and is_claude_code(user("hi") | {"sessionId": None} | {"uuid": "x"})
    assert is_claude_code({k: v for k, v in user("hi").items() if k != "uuid"})  # a session id is enough
    assert not is_claude_code({k: v for k, v in user("hi").items() if k not in ("uuid", "sessionId")})
    assert not is_claude_code(user("hi") | {"message": "text"})
    for key in ("sessionId", "leafUuid", "messageId"):
        assert is_claude_code({"type": "summary", key: "x"})
    assert not is_claude_code({"type": "summary", "uuid": "x"})
    assert not is_claude_code({"type": "unknown", "sessionId": "x"})


def test_a_calls_result_is_the_first_of_its_id_in_a_user_line_and_a_persons_text_beside_it_is_kept():
    runs = read(
        user("Go"),
        assistant(tool_use("t1"), tool_use("t2")),
        user(
            [
                result("t1", "first", is_error=True),
                result("t1", "again"),
                "loose text",
                {"type": "text", "text": "and a note"},
                result("t2", [{"type": "text", "text": "second"}]),
            ],
            uuid="u2",
        ),
        assistant(text("Done."), msg_id="m2"),
    )
    run = runs[0]
    assert results_of(run) == [("t1", "first", True), ("t2", "second", False)]
    assert UserMessage(content="loose text\nand a note") in run.messages


def test_results_in_an_assistant_line_are_not_a_calls_and_a_line_with_no_message_object_is_counted():
    runs = read(
        user("Go"),
        assistant(tool_use("t1")),
        assistant(result("t1", "not a result"), msg_id="m2"),
        user("text as the message", uuid="u3") | {"message": "plain"},
        user([result("t1", "the result")], uuid="u4"),
        assistant(text("Done."), msg_id="m3"),
    )
    run = runs[0]
    assert results_of(run) == [("t1", "the result", False)]
    assert "1 lines of unknown type 'user'" in run.origin.notes


def test_a_compaction_keeps_its_count_from_0_and_a_negative_one_is_not_a_count():
    def counted(pre: Any) -> Any:
        boundary = {"type": "system", "subtype": "compact_boundary", "sessionId": "s-1"}
        boundary["compactMetadata"] = {"trigger": "manual", "preTokens": pre}
        run = read(
            user("Hi"),
            assistant(text("a"), usage={"input_tokens": 300, "output_tokens": 2}),
            boundary,
            user("summary", uuid="u2"),
            assistant(text("b"), msg_id="m2"),
        )[0]
        ((_, found),) = compactions(run)
        assert found.trigger == "manual"
        return found.tokens_before

    assert counted(0) == 0
    assert counted(5) == 5
    assert counted(-1) == 300  # not a count: the last step's input stands for it
    assert counted("12") == 300


def test_a_turns_blocks_of_the_wrong_kind_are_passed_over_and_its_thinking_keeps_its_signature():
    run = read(
        user("Hi"),
        assistant(
            text("kept"),
            text(5),
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "thinking", "thinking": 3},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "redacted_thinking", "data": 4},
            "not a block",
        ),
    )[0]
    reply = next(m for m in run.messages if isinstance(m, AssistantMessage))
    assert reply.content == "kept"
    assert [(p.text, p.signature, p.redacted) for p in reply.reasoning] == [("hmm", "sig", None), ("", None, "opaque")]


def test_a_call_without_an_id_or_a_name_is_named_by_its_line_and_place_and_its_arguments_kept_as_written():
    run = read(
        user("Go"),
        assistant(
            tool_use(None, None), tool_use("", ""), tool_use("t3", "Edit", args="not json"), tool_use("t4", 5, 7)
        ),
    )[0]
    calls = [c for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [(c.id, c.name) for c in calls] == [
        ("toolu_2_1", "tool"),
        ("toolu_2_2", "tool"),
        ("t3", "Edit"),
        ("t4", "tool"),
    ]
    assert calls[2].raw_arguments == "not json" and calls[3].arguments == {}


def test_a_sidechain_is_linked_to_the_task_call_with_its_prompt_else_the_latest_before_it():
    task = lambda call_id, prompt: tool_use(call_id, "Task", {"prompt": prompt})  # noqa: E731
    side = {"isSidechain": True}
    runs = read(
        user("Go"),
        assistant(task("k1", "look at A"), task("k2", "look at B")),
        user("look at B", uuid="s1", parentUuid=None, **side),
        assistant(text("B done"), msg_id="sm1", parentUuid="s1", **side),
        user("something else", uuid="s2", parentUuid=None, **side),
        assistant(text("else done"), msg_id="sm2", parentUuid="s2", **side),
        {"type": "user", "sessionId": "s-1", "uuid": "s3", "parentUuid": None, "message": "x", **side},
        user([result("k1", "A"), result("k2", "B")], uuid="u2"),
        assistant(text("All done."), msg_id="m3"),
    )
    main, first, second = runs
    assert [link.tool_call_id for link in main.subagents] == ["k2", "k1"]  # by its prompt; then the one not linked
    assert first.messages[-1].text == "B done" and second.messages[-1].text == "else done"


def test_sidechains_past_the_depth_limit_are_not_read():
    side = {"isSidechain": True}
    records = [
        user("Go"),
        assistant(text("ok")),
        user("side", uuid="s1", parentUuid=None, **side),
        assistant(text("side done"), msg_id="sm1", parentUuid="s1", **side),
    ]
    assert len(read(*records, depth=MAX_DEPTH - 1)) == 2
    assert len(read(*records, depth=MAX_DEPTH)) == 1


def test_subagent_files_a_session_names_and_the_folder_lacks_are_named_up_to_20_then_counted(tmp_path: Path):
    def session(agents: int) -> list[dict[str, Any]]:
        lines = [user("Go"), assistant(*(tool_use(f"k{n}", "Task", {"prompt": f"p{n}"}) for n in range(agents)))]
        for n in range(agents):
            lines.append(user([result(f"k{n}", "done")], uuid=f"r{n}") | {"toolUseResult": {"agentId": f"a{n}"}})
        return lines

    def more(notes: list[str]) -> list[str]:
        return [note for note in notes if "more subagent files absent" in note]

    notes = read(*session(20), folder=tmp_path)[0].origin.notes
    assert sum("subagent files absent:" in note for note in notes) == 20 and more(notes) == []
    notes = read(*session(21), folder=tmp_path)[0].origin.notes
    assert sum("subagent files absent:" in note for note in notes) == 20
    assert more(notes) == ["1 more subagent files absent"]
    (tmp_path / "agent-a0.jsonl").write_text(
        "\n".join(json.dumps(r) for r in [user("sub"), assistant(text("sub done"))]) + "\n"
    )
    lines = session(1)
    lines[-1]["message"]["content"].append("a loose string")
    runs = read(*lines, folder=tmp_path)
    assert len(runs) == 2 and runs[0].subagents[0].tool_call_id == "k0" and runs[1].messages[-1].text == "sub done"
    assert not any("absent" in note for note in runs[0].origin.notes)  # found beside the session
    assert len(read(*session(1), folder=tmp_path, depth=MAX_DEPTH)) == 1  # past the depth limit: not read
    side = {"isSidechain": False}
    nested = [user("sub"), assistant(text("sub done")), user("side", uuid="s1", parentUuid=None, isSidechain=True)]
    nested.append(assistant(text("side done"), msg_id="sm1", parentUuid="s1", isSidechain=True))
    (tmp_path / "agent-a0.jsonl").write_text(
        "\n".join(json.dumps(r | side if "isSidechain" not in r else r) for r in nested)
    )
    assert len(read(*session(1), folder=tmp_path, depth=MAX_DEPTH - 2)) == 3  # the file's own sidechain too
    assert len(read(*session(1), folder=tmp_path, depth=MAX_DEPTH - 1)) == 2  # its sidechain one level too deep


def test_a_compactions_summariser_file_is_charged_to_the_step_after_it_or_noted_when_there_is_none(tmp_path: Path):
    folder = tmp_path / "s" / "subagents"
    folder.mkdir(parents=True)
    summariser = [user("summarise"), assistant(text("summary"), usage={"input_tokens": 900, "output_tokens": 40})]
    (folder / "agent-acompact-1.jsonl").write_text("\n".join(json.dumps(r) for r in summariser))
    boundary = {"type": "system", "subtype": "compact_boundary", "sessionId": "s-1", "compactMetadata": {}}
    compacted = read(
        user("Hi"),
        assistant(text("a")),
        boundary,
        user("summary", uuid="u2"),
        assistant(text("b"), msg_id="m2"),
        folder=tmp_path,
    )
    assert len(compacted) == 1  # a summariser is no subagent run
    calls = [(s.index, [c.usage.input_tokens for c in s.policy_calls]) for s in compacted[0].steps]
    assert calls == [(1, []), (2, [900])]
    plain = read(user("Hi"), assistant(text("a")), folder=tmp_path)[0]
    assert "1 compaction summaries without a compaction in the session (not charged to a step)" in plain.origin.notes
    assert all(not s.policy_calls for s in plain.steps)
