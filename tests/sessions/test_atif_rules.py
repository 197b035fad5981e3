"""The ATIF reader's rules at their limits, on trajectories written here: a compaction's token counts (0 kept, a
negative one not), steps copied into the new context, embedded subagents and the ones no step names, a call
without an id, reasoning kept as text, usage and its cache counts bounded by the prompt, and a continuation."""

from __future__ import annotations

import json
from typing import Any

from agentcore import AssistantMessage, ToolMessage
from agentcore.policies import compactions
from agentcore.run import Run
from agentcore.sessions import read_import


def trajectory(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    agent = {"name": "demo", "version": "2", "model_name": "openai/gpt-4o"} | top.pop("agent", {})
    return {"schema_version": "ATIF-v1.7", "trajectory_id": "t-1", "agent": agent, "steps": list(steps)} | top


def runs_of(data: dict[str, Any]) -> list[Run]:
    return read_import(json.dumps(data).encode(), "t.json").runs


def notes_of(data: dict[str, Any]) -> str:
    return read_import(json.dumps(data).encode(), "t.json").notes or ""


def user(text: str, n: int = 1) -> dict[str, Any]:
    return {"step_id": n, "source": "user", "message": text}


def agent(text: str = "", *calls: dict[str, Any], results: list[Any] | None = None, **more: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"source": "agent", "message": text, "tool_calls": list(calls)} | more
    if results is not None:
        step["observation"] = {"results": results}
    return step


def call(name: str = "get_weather", call_id: str | None = "c1", **arguments: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"function_name": name, "arguments": arguments or {"city": "Paris"}}
    if call_id is not None:
        found["tool_call_id"] = call_id
    return found


def compaction(**management: Any) -> dict[str, Any]:
    return {"source": "system", "message": "compacted", "extra": {"context_management": management}}


def test_a_compactions_token_counts_are_kept_from_0_and_a_negative_or_other_count_is_not():
    usage = {"prompt_tokens": 700, "completion_tokens": 5}
    for before, after, kept in [(0, 0, (0, 0)), (-1, -1, (700, None)), (1, 2, (1, 2)), ("9", 3.5, (700, None))]:
        data = trajectory(
            user("Hi"),
            agent("one", metrics=usage),
            compaction(tokens_before=before, tokens_after=after, trigger="auto"),
            agent("two", metrics={"prompt_tokens": 30, "completion_tokens": 2}),
        )
        ((_, found),) = compactions(runs_of(data)[0])
        # a count the file does not give is the last step's input, as the builder reads it
        assert (found.tokens_before, found.tokens_after) == kept, (before, after)
        assert found.trigger == "auto" and found.by == "demo"


def test_steps_copied_into_the_new_context_are_kept_as_copies_until_the_first_other_step():
    data = trajectory(
        user("Hi"),
        agent("first answer"),
        compaction(by="summariser"),
        {"source": "user", "message": "Hi", "is_copied_context": True},
        {"source": "agent", "message": "first answer", "is_copied_context": True},
        {"source": "user", "message": "a copy flag after the copies ended", "is_copied_context": False},
        agent("second answer"),
    )
    run = runs_of(data)[0]
    ((_, found),) = compactions(run)
    assert found.by == "summariser"
    texts = [m.text for m in run.messages]
    assert texts.count("Hi") == 2 and texts.count("first answer") == 2  # the copies follow the compaction
    assert texts[-2:] == ["a copy flag after the copies ended", "second answer"]
    assert [m.text for m in run.messages if isinstance(m, AssistantMessage)] == [
        "first answer",
        "first answer",
        "second answer",
    ]
    assert len(run.steps) == 2  # a copy is history, not a model call


def test_a_call_without_an_id_is_named_by_its_step_and_place_and_takes_a_result_without_one():
    data = trajectory(
        user("Weather?"),
        agent(
            "", call(call_id=None), call("get_time", call_id=None), results=[{"content": "21 C"}, {"content": "9:00"}]
        ),
        agent("", call(call_id=None), results=[{"content": "22 C"}]),
        agent("Mild."),
    )
    run = runs_of(data)[0]
    ids = [c.id for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert ids == ["call_2_1", "call_2_2", "call_3_1"]  # step 2's first and second calls, step 3's first
    assert [m.content for m in run.messages if isinstance(m, ToolMessage)] == ["21 C", "9:00", "22 C"]


def test_reasoning_is_kept_as_text_only_when_there_is_some():
    data = trajectory(user("Hi"), agent("a", reasoning_content="thinking"), agent("b", reasoning_content=""))
    first, second = (m for m in runs_of(data)[0].messages if isinstance(m, AssistantMessage))
    assert [p.text for p in first.reasoning] == ["thinking"]
    assert second.reasoning == ()


def test_usage_takes_cached_and_cache_written_tokens_within_the_prompt():
    metrics = {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "cached_tokens": 60,
        "extra": {"cache_creation_tokens": 50, "reasoning_tokens": 3},
    }
    usage = runs_of(trajectory(user("Hi"), agent("a", metrics=metrics)))[0].steps[0].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (100, 60, 40)  # 100 - 60
    assert (usage.output_tokens, usage.reasoning_tokens) == (7, 3)
    metrics = {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "cached_tokens": 150,
        "extra": {"cache_creation_tokens": 5},
    }
    usage = runs_of(trajectory(user("Hi"), agent("a", metrics=metrics)))[0].steps[0].usage
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (100, 0)


def test_an_embedded_subagent_no_step_names_is_still_read_and_one_without_an_id_is_not():
    sub = trajectory(user("sub task"), agent("sub done"), trajectory_id="t-sub")
    nameless = trajectory(user("nameless"), agent("never read"))
    nameless.pop("trajectory_id")
    data = trajectory(user("Hi"), agent("done"), subagent_trajectories=[sub, nameless, "not an object"])
    runs = runs_of(data)
    assert [r.messages[-1].text for r in runs] == ["done", "sub done"]
    assert runs[1].spawned_by is not None and runs[1].spawned_by.run_id == runs[0].id


def test_a_continuation_is_noted_and_an_empty_one_is_not():
    assert "continuation not read: t-2" in notes_of(trajectory(user("Hi"), agent("a"), continued_trajectory_ref="t-2"))
    assert "continuation" not in notes_of(trajectory(user("Hi"), agent("a"), continued_trajectory_ref=""))


def test_the_session_id_is_the_trajectorys_else_the_sessions():
    assert runs_of(trajectory(user("Hi"), agent("a"), session_id="s-9"))[0].origin.session_id == "t-1"
    data = trajectory(user("Hi"), agent("a"), session_id="s-9")
    data.pop("trajectory_id")
    assert runs_of(data)[0].origin.session_id == "s-9"


def test_a_step_keeps_its_record_without_its_observation_and_is_named_by_its_id_else_its_place():
    data = trajectory(
        user("Weather?"),
        agent("", call(), results=[{"source_call_id": "c1", "content": "21 C"}], step_id=7),
        agent("Mild."),
    )
    run = runs_of(data)[0]
    record = run.steps[0].wire.response
    assert "observation" not in json.dumps(record) and record["step_id"] == 7


def test_embedded_subagents_nested_past_the_depth_limit_are_noted_and_not_read():
    from agentcore.sessions.files import MAX_DEPTH

    def nested(levels: int) -> dict[str, Any]:
        data = trajectory(user("level 0"), agent("at 0"), trajectory_id="t-0")
        for level in range(1, levels + 1):
            data = trajectory(
                user(f"level {level}"), agent(f"at {level}"), trajectory_id=f"t-{level}", subagent_trajectories=[data]
            )
        return data

    runs = runs_of(nested(MAX_DEPTH))  # the top and MAX_DEPTH levels below it
    assert len(runs) == MAX_DEPTH + 1
    assert "nested more than" not in notes_of(nested(MAX_DEPTH))
    runs = runs_of(nested(MAX_DEPTH + 1))
    assert len(runs) == MAX_DEPTH + 1 and runs[-1].messages[-1].text == "at 1"  # the deepest one left out
    assert f"subagents nested more than {MAX_DEPTH} levels deep not imported" in notes_of(nested(MAX_DEPTH + 1))


def test_an_embedded_subagent_a_step_names_is_read_once_by_its_id_and_a_path_beside_it_is_not_looked_for():
    sub = trajectory(user("sub task"), agent("sub done"), trajectory_id="t-sub")
    named = {
        "source_call_id": "c1",
        "content": "ok",
        "subagent_trajectory_ref": [{"trajectory_id": "t-sub", "trajectory_path": "nowhere/sub.json"}],
    }
    data = trajectory(user("Hi"), agent("", call(), results=[named]), agent("done"), subagent_trajectories=[sub])
    runs = runs_of(data)
    assert [r.messages[-1].text for r in runs] == ["done", "sub done"]
    assert runs[1].spawned_by.tool_call_id == "c1"
    assert "not found" not in notes_of(data)


def test_reasoning_parts_of_none_leave_the_reasoning_text_and_parts_stand_for_it_otherwise():
    empty = agent("a", reasoning_content="thinking", extra={"agentcore_reasoning": []})
    parts = agent(
        "b", reasoning_content="ignored", extra={"agentcore_reasoning": [{"provider": "anthropic", "text": "own"}]}
    )
    first, second = (
        m for m in runs_of(trajectory(user("Hi"), empty, parts))[0].messages if isinstance(m, AssistantMessage)
    )
    assert [p.text for p in first.reasoning] == ["thinking"]
    assert [(p.provider, p.text) for p in second.reasoning] == [("anthropic", "own")]


def test_a_steps_record_says_where_it_was_by_its_id_else_by_its_place():
    run = runs_of(trajectory(user("Hi"), agent("a", step_id=7), agent("b")))[0]
    assert [s.wire.url for s in run.steps] == ["t.json (atif, step 7)", "t.json (atif, step 3)"]


# -- the ATIF export ---------------------------------------------------------------------------------------------


def _asked(run: Run, call_id: str) -> None:
    from agentcore.messages import ToolCall

    run.messages[-1] = AssistantMessage(tool_calls=(ToolCall(id=call_id, name="helper", arguments={}),))
    run.messages.append(ToolMessage(tool_call_id=call_id, name="helper", content="done"))


def test_a_subagent_no_call_started_is_named_by_a_result_of_the_agent_step_that_started_it():
    from support.runs import priced_run

    from agentcore.run import SubagentLink
    from agentcore.sessions.atif_export import to_atif

    run = priced_run([(10, 1, 0, 1.0), (20, 1, 0, 1.0), (30, 1, 0, 1.0)])
    _asked(run, "c9")
    subs = [priced_run([(5, 1, 0, 1.0)]) for _ in range(4)]
    run.subagents = [
        SubagentLink(run_id=subs[0].id, step=2),  # no call: named by step 2's results
        SubagentLink(run_id=subs[1].id, step=0),  # a step before the first: the first agent step
        SubagentLink(run_id=subs[2].id, step=9),  # past the last: the last agent step
        SubagentLink(run_id=subs[3].id, step=3, tool_call_id="c9"),  # its call's result names it
    ]
    data = to_atif(run, subs[:3] + subs[3:])
    agent_steps = [s for s in data["steps"] if s["source"] == "agent"]
    refs = [
        [
            ref["trajectory_id"]
            for r in s.get("observation", {}).get("results", [])
            for ref in r.get("subagent_trajectory_ref", [])
        ]
        for s in agent_steps
    ]
    assert refs == [[subs[1].id], [subs[0].id], [subs[3].id, subs[2].id]]  # the call's own result first
    assert all(s["source"] == "agent" for s in data["steps"] if "observation" in s)
    not_embedded = to_atif(run, subs[:1])  # only the embedded ones are named
    named = json.dumps(not_embedded["steps"])
    assert subs[0].id in named and not any(s.id in named for s in subs[1:])


def test_an_estimated_step_with_no_input_counted_has_no_metrics_and_one_with_some_says_it_is_estimated():
    from support.runs import priced_run

    from agentcore.sessions.atif_export import to_atif

    run = priced_run([(0, 0, 0, 1.0), (1, 2, 0, 1.0), (0, 3, 0, 1.0)])
    run.steps[0].estimated = run.steps[1].estimated = True
    first, second, third = (s for s in to_atif(run)["steps"] if s["source"] == "agent")
    assert "metrics" not in first
    assert second["metrics"]["extra"] == {"estimated": True} and second["metrics"]["prompt_tokens"] == 1
    assert third["metrics"]["prompt_tokens"] == 0 and "extra" not in third["metrics"]  # counted, by the provider


def test_a_step_keeps_its_time_only_when_it_is_iso_8601():
    from support.runs import priced_run

    from agentcore.sessions.atif_export import to_atif

    run = priced_run([(1, 1, 0, 1.0), (1, 1, 0, 1.0)])
    run.steps[0].started_at, run.steps[1].started_at = "2026-01-02T10:00:00Z", "yesterday at noon"
    first, second = (s for s in to_atif(run)["steps"] if s["source"] == "agent")
    assert first["timestamp"] == "2026-01-02T10:00:00Z" and "timestamp" not in second


def test_reasoning_parts_are_exported_with_only_the_fields_they_set():
    from support.runs import priced_run

    from agentcore.messages import ReasoningPart
    from agentcore.sessions.atif_export import to_atif

    run = priced_run([(1, 1, 0, 1.0)])
    run.messages[-1] = AssistantMessage(content="a", reasoning=(ReasoningPart(provider="anthropic", text="t"),))
    (step,) = (s for s in to_atif(run)["steps"] if s["source"] == "agent")
    assert step["extra"] == {"agentcore_reasoning": [{"provider": "anthropic", "text": "t"}]}


def test_each_steps_cost_and_the_total_only_when_every_step_is_priced():
    from support.runs import priced_run

    from agentcore.sessions.atif_export import to_atif

    priced = to_atif(priced_run([(1000, 100, 0, 1.0), (2000, 100, 0, 1.0)]))
    costs = [s["metrics"]["cost_usd"] for s in priced["steps"] if s["source"] == "agent"]
    assert len(costs) == 2 and all(c > 0 for c in costs)
    assert priced["final_metrics"]["total_cost_usd"] == sum(costs)
    unknown = priced_run([(1000, 100, 0, 1.0), (2000, 100, 0, 1.0)])
    unknown.steps[1].model = "a-model-no-price-list-knows"
    data = to_atif(unknown)
    assert [("cost_usd" in s["metrics"]) for s in data["steps"] if s["source"] == "agent"] == [True, False]
    assert "total_cost_usd" not in data["final_metrics"]
    assert "total_cost_usd" not in to_atif(priced_run([]))["final_metrics"]  # no step, no total


def test_subagents_a_step_names_past_the_depth_limit_are_noted_and_not_read():
    from agentcore.sessions.files import MAX_DEPTH

    def named(levels: int) -> dict[str, Any]:
        data = trajectory(user("level 0"), agent("at 0"), trajectory_id="t-0")
        for level in range(1, levels + 1):
            ref = {
                "source_call_id": "c1",
                "content": "ok",
                "subagent_trajectory_ref": [{"trajectory_id": f"t-{level - 1}"}],
            }
            data = trajectory(
                user(f"level {level}"),
                agent("", call(), results=[ref]),
                agent(f"at {level}"),
                trajectory_id=f"t-{level}",
                subagent_trajectories=[data],
            )
        return data

    assert len(runs_of(named(MAX_DEPTH))) == MAX_DEPTH + 1
    runs = runs_of(named(MAX_DEPTH + 1))
    assert len(runs) == MAX_DEPTH + 1 and runs[-1].messages[-1].text == "at 1"
    assert f"subagents nested more than {MAX_DEPTH} levels deep not imported" in notes_of(named(MAX_DEPTH + 1))
