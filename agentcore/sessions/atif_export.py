"""A run as an ATIF v1.7 trajectory (harbor's RFC 0001): the export that agentcore.sessions.atif reads back.

The system prompt is a system step, each user message a user step, and each assistant message an agent step
with its reasoning, its tool calls and, as the step's observation, the results that answered them (a result
that is an error says so in its `extra`; arguments that were not JSON keep their text in the call's `extra`,
`arguments` then being empty, as ATIF asks for an object). The step record that made the reply gives the
step's model, timestamp and metrics: prompt tokens with the cached ones inside, as ATIF counts them; cache
writes and reasoning tokens in `extra`; the cost where the model has a price. Subagent runs are embedded
(`subagent_trajectories`, by trajectory_id) and named by the result of the call that started each one. A
compaction is a system step whose `extra.context_management` says who compacted and the tokens before it,
the messages it put in place of the old history following as copied context (`is_copied_context`); one that
agentcore's `summarize_older_than` made goes just before the agent step whose request it summarised, with its
summary and the tokens after it, and copies nothing (the summary is no message of the history).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import __version__
from ..accounting import step_costs
from ..messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from ..policies import compactions
from ..run import Run
from ..steps import StepRecord

SCHEMA_VERSION = "ATIF-v1.7"


def to_atif(run: Run, subagents: list[Run] | None = None) -> dict[str, Any]:
    """The run as ATIF data; `subagents` are the runs its `subagents` links name, embedded where given."""
    embedded = {r.id: r for r in subagents or [] if any(link.run_id == r.id for link in run.subagents)}
    links = {link.tool_call_id: link for link in run.subagents if link.run_id in embedded}
    by_message = {s.message_count: s for s in run.steps}
    costs = _costs(run)
    points = _compaction_points(run)
    steps: list[dict[str, Any]] = []
    copied = range(0)
    for i, m in enumerate(run.messages):
        if i in points:
            step, copied = points[i]
            steps.append(step)
        if isinstance(m, SystemMessage):
            steps.append({"source": "system", "message": m.content})
        elif isinstance(m, UserMessage):
            steps.append({"source": "user", "message": m.content})
        elif isinstance(m, AssistantMessage):
            steps.append(_agent_step(m, by_message.get(i), costs))
        elif isinstance(m, ToolMessage):
            _observe(steps, m, links)
        if i in copied and not isinstance(m, ToolMessage):
            steps[-1]["is_copied_context"] = True
    steps = [{"step_id": n, **step} for n, step in enumerate(steps, start=1)]
    loose = [link for link in run.subagents if link.run_id in embedded and link.tool_call_id not in _calls(run)]
    for link in loose:  # a subagent no call started: named by a result of the step that started it
        agent_steps = [s for s in steps if s["source"] == "agent"]
        if agent_steps:
            target = agent_steps[min(max(link.step, 1), len(agent_steps)) - 1]
            target.setdefault("observation", {"results": []})["results"].append(
                {"subagent_trajectory_ref": [{"trajectory_id": link.run_id}]}
            )
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": run.id,
        "trajectory_id": run.id,
        "agent": _agent(run),
        "steps": steps,
        "final_metrics": _final(run, costs, len(steps)),
    }
    if run.title:
        data["notes"] = run.title
    if embedded:
        data["subagent_trajectories"] = [to_atif(r) for r in embedded.values()]
    return data


def _compaction_points(run: Run) -> dict[int, tuple[dict[str, Any], range]]:
    """Each compaction as a system step (ATIF v1.7's `extra.context_management`), by the history message it goes
    before, with the messages it put in place of the old history: copied context, no model call of their own."""
    out: dict[int, tuple[dict[str, Any], range]] = {}
    for n, c in compactions(run):
        after = run.steps[n - 1]
        tokens_after = c.tokens_after if c.tokens_after is not None else after.usage.input_tokens
        words = f"context compacted by {c.by}" + (f" ({c.trigger})" if c.trigger else "")
        if c.tokens_before is not None:
            words += f": {c.tokens_before:,} tokens before, {tokens_after:,} after"
        management = {
            "type": "compaction",
            "by": c.by,
            "trigger": c.trigger,
            "tokens_before": c.tokens_before,
            "tokens_after": c.tokens_after,
            "summary": c.summary,
        }
        step = {
            "source": "system",
            "message": words,
            "extra": {"context_management": {k: v for k, v in management.items() if v is not None}},
        }
        if c.kept_from is None:  # a context policy's: before the reply to the request it summarised
            out[after.message_count] = (step, range(0))
        else:
            out[c.kept_from] = (step, range(c.kept_from, after.message_count))
    return out


def _agent(run: Run) -> dict[str, Any]:
    agent: dict[str, Any] = {"name": "agentcore", "version": __version__}
    if run.config.model:
        agent["model_name"] = run.config.model
    if run.config.tools:
        agent["tool_definitions"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in run.config.tools
        ]
    agent["extra"] = {"provider": run.config.provider}
    return agent


def _agent_step(m: AssistantMessage, record: StepRecord | None, costs: dict[int, float | None]) -> dict[str, Any]:
    step: dict[str, Any] = {"source": "agent", "message": m.content or ""}
    if record is not None:
        if _iso(record.started_at):  # ATIF takes ISO 8601 only; a file may have recorded anything
            step["timestamp"] = record.started_at
        if record.model:
            step["model_name"] = record.model
    reasoning = "\n\n".join(p.display_text for p in m.reasoning if p.display_text)
    if reasoning:
        step["reasoning_content"] = reasoning
    if m.reasoning:  # the parts as a provider gave them (a signature, encrypted content), for a reader that knows
        step["extra"] = {"agentcore_reasoning": [p.model_dump(mode="json", exclude_defaults=True) for p in m.reasoning]}
    if m.tool_calls:
        step["tool_calls"] = [
            {
                "tool_call_id": c.id,
                "function_name": c.name,
                "arguments": c.arguments if c.raw_arguments is None else {},
                **_as_written(c),
            }
            for c in m.tool_calls
        ]
    if record is not None and not (record.estimated and record.usage.input_tokens == 0):
        u = record.usage
        metrics: dict[str, Any] = {
            "prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens,
            "cached_tokens": u.cache_read_tokens,
        }
        extra: dict[str, Any] = {
            k: v
            for k, v in (("cache_creation_tokens", u.cache_write_tokens), ("reasoning_tokens", u.reasoning_tokens))
            if v
        }
        if record.estimated:
            extra["estimated"] = True  # counted by agentcore's estimate, not by the provider
        if extra:
            metrics["extra"] = extra
        cost = costs.get(record.index)
        if cost is not None:
            metrics["cost_usd"] = cost
        step["metrics"] = metrics
    return step


def _iso(stamp: str) -> bool:
    try:
        datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _as_written(call: ToolCall) -> dict[str, Any]:
    """The call's own text of its arguments, where it is not the JSON of `arguments`: not JSON, or written otherwise."""
    if call.raw_arguments is not None:
        return {"extra": {"raw_arguments": call.raw_arguments}}
    if call.written_arguments is not None:
        return {"extra": {"written_arguments": call.written_arguments}}
    return {}


def _observe(steps: list[dict[str, Any]], m: ToolMessage, links: dict[str | None, Any]) -> None:
    """A tool result, in the observation of the agent step whose call it answers."""
    agent = next((s for s in reversed(steps) if s["source"] == "agent"), None)
    if agent is None:
        return
    result: dict[str, Any] = {"source_call_id": m.tool_call_id, "content": m.content}
    if m.is_error:
        result["extra"] = {"is_error": True}
    link = links.get(m.tool_call_id)
    if link is not None:
        result["subagent_trajectory_ref"] = [{"trajectory_id": link.run_id}]
    agent.setdefault("observation", {"results": []})["results"].append(result)


def _calls(run: Run) -> set[str]:
    return {c.id for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls}


def _costs(run: Run) -> dict[int, float | None]:
    return {s.index: cost for s, cost in zip(run.steps, step_costs(run), strict=True)}


def _final(run: Run, costs: dict[int, float | None], count: int) -> dict[str, Any]:
    u = run.usage
    final: dict[str, Any] = {
        "total_prompt_tokens": u.input_tokens,
        "total_completion_tokens": u.output_tokens,
        "total_cached_tokens": u.cache_read_tokens,
        "total_steps": count,
    }
    known = [c for c in costs.values() if c is not None]
    if known and len(known) == len(costs):
        final["total_cost_usd"] = sum(known)
    return final
