"""What the runs server's tools return: a run, its steps and its messages as plain data, every text bounded.

A long message, tool argument or result is cut with a note of how much was left out; long lists keep their
newest items and say how many are left out. A run's configuration shows its base URL: where its model calls go.
"""

from typing import Any

from ..errors import UsageError
from ..messages import AssistantMessage, Message, ToolMessage
from ..secrets import redacted_url

MAX_TEXT = 2_000  # characters of one message, tool argument or result a tool returns
MAX_MESSAGES = 60  # messages get_run returns (the newest), unless a step is asked for
MAX_STEPS_LISTED = 200  # step rows get_run returns


def cut(text: str | None, most: int = MAX_TEXT) -> str | None:
    """The text, or its first `most` characters and how many more there were."""
    if text is None or len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most:,} more characters not shown)"


def message_data(i: int, m: Message) -> dict[str, Any]:
    """One message as the tools give it: its index, role and text (cut), its calls with their arguments (cut)."""
    data: dict[str, Any] = {"index": i, "role": m.role, "content": cut(getattr(m, "content", None))}
    if isinstance(m, AssistantMessage) and m.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": cut(c.arguments_text)} for c in m.tool_calls]
    if isinstance(m, ToolMessage):
        data |= {"tool_call_id": m.tool_call_id, "name": m.name, "is_error": m.is_error}
    return data


def summary_data(summary: Any) -> dict[str, Any]:
    return {
        "run_id": summary.id,
        "title": cut(summary.title, 200),
        "models": summary.models_label,
        "steps": summary.steps,
        "stop_reason": summary.stop_reason,
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": summary.cost_usd,
        "owner": summary.owner,
        "updated_at": summary.updated_at,
        "parent": {"run_id": summary.parent_id, "step": summary.parent_step} if summary.parent_id else None,
    }


def _step_data(run: Any, n: int, costs: list[float | None]) -> dict[str, Any]:
    step = run.steps[n - 1]
    model = run.answered_by(step)
    return {
        "step": step.index,
        "model": f"{model.provider}:{model.model}",
        "input_tokens": step.usage.input_tokens,
        "output_tokens": step.usage.output_tokens,
        "cache_read_tokens": step.usage.cache_read_tokens,
        "cache_write_tokens": step.usage.cache_write_tokens,
        "estimated": step.estimated,
        "cost_usd": costs[n - 1] if n - 1 < len(costs) else None,
        "latency_ms": round(step.latency_ms, 1),
        "finish_reason": step.finish_reason,
        "tool_calls": [t.name for t in step.tool_runs],
        "tool_errors": sum(t.is_error for t in step.tool_runs),
    }


def run_data(store: Any, run: Any, step: int | None = None) -> dict[str, Any]:
    """A run as get_run gives it: what it is, its steps, its newest messages (or one step's), its lineage and labels."""
    from ..compare_report import priced_steps

    costs = priced_steps(run)
    usage = run.usage
    data: dict[str, Any] = {
        "run_id": run.id,
        "title": cut(run.title, 200),
        "config": {
            "provider": run.config.provider,
            "model": run.config.next_model.model,
            "base_url": redacted_url(run.config.base_url) if run.config.base_url else None,
            "max_steps": run.config.max_steps,
            "tools": [t.name for t in run.config.tools],
            "system_prompt": cut(run.config.system_prompt),
        },
        "stop_reason": run.stop_reason,
        "error": cut(run.error),
        "next_phase": run.next_phase,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        "cost_usd": None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        "parent": {"run_id": run.parent.run_id, "step": run.parent.step} if run.parent else None,
        "children": [
            {"run_id": c.id, "step": c.parent_step, "models": c.models_label} for c in store.children(run.id)[:50]
        ],
        "labels": [
            {"step": a.step, "labels": a.labels, "note": cut(a.note, 500), "author": a.author}
            for a in store.annotations(run.id)[:100]
        ],
    }
    numbers = range(1, len(run.steps) + 1)
    shown = list(numbers)[-MAX_STEPS_LISTED:]
    data["steps"] = [_step_data(run, n, costs) for n in shown]
    if len(shown) < len(run.steps):
        data["steps_note"] = f"the first {len(run.steps) - len(shown)} steps are left out"
    messages = run.messages
    if step is None:
        first = max(0, len(messages) - MAX_MESSAGES)
        data["messages"] = [message_data(i, messages[i]) for i in range(first, len(messages))]
        if first:
            data["messages_note"] = f"messages 0-{first - 1} are left out: ask for a step to read its messages"
        return data
    if not 1 <= step <= len(run.steps):
        raise UsageError(f"run {run.id} has {len(run.steps)} steps: there is no step {step}")
    record = run.steps[step - 1]
    end = run.steps[step].message_count if step < len(run.steps) else len(messages)
    start = max(0, record.message_count - 1)  # what the call answered, its reply and the results that followed
    data["step"] = _step_data(run, step, costs) | {"messages_sent": record.message_count}
    data["messages"] = [message_data(i, messages[i]) for i in range(start, min(end, start + MAX_MESSAGES))]
    return data
