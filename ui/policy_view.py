"""Context policies in the app: the request as sent beside the history, the marks on the message list,
the context-window gauge, and the cache a message-list edit would break."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from agentcore.gauge import Gauge, next_gauge, step_gauges
from agentcore.messages import Message
from agentcore.policies import ContextPolicies, SentRequest, origins, plan_request, sent_request, stand_in_summary
from agentcore.run import Run
from ui import safe

# how each mark reads beside a message, and the mark in the message list
MARK_WORDS = {
    "sent": "sent as it is",
    "shortened": "sent shortened",
    "cleared": "sent as a placeholder",
    "dropped": "left out",
    "summarised": "sent as part of the summary",
}
MARK_BADGES = {
    "shortened": ":orange-badge[shortened in the next request]",
    "cleared": ":orange-badge[cleared in the next request]",
    "dropped": ":red-badge[left out of the next request]",
    "summarised": ":violet-badge[summarised in the next request]",
}
CACHED_BADGE = ":green-badge[cached prefix]"
GAUGE_COLOURS = {"ok": "green", "warn": "orange", "over": "red", "unknown": "gray"}


def next_request(run: Run) -> SentRequest | None:
    """The record the next model phase would make under the run's policies (a summary at its longest)."""
    policies = run.config.policies
    if policies is None or not policies.shapes_request:
        return None
    history = run.messages
    plan = plan_request(history, origins(run, len(history)), len(run.steps) + 1, policies)
    return sent_request(plan, stand_in_summary() if plan.to_summarise else None)


def next_marks(run: Run) -> list[str]:
    """Each message's mark in the next request: `sent`, `shortened`, `cleared`, `dropped` or `summarised`."""
    sent = next_request(run)
    return ["sent"] * len(run.messages) if sent is None else sent.marks(len(run.messages))


def cached_prefix(run: Run) -> int:
    """How many messages at the start of the history the provider's cache holds: the prefix the last request
    shares with the one before it, when the last step read from the cache."""
    steps = [s for s in run.steps if s.usage.cache_read_tokens > 0]
    if not steps or steps[-1] is not run.steps[-1]:
        return 0
    last = run.steps[-1]
    return last.message_count if last.sent is None else _unchanged_prefix(last.sent, last.message_count)


def _unchanged_prefix(sent: SentRequest, count: int) -> int:
    changed = [i for i in sent.changes if i < count]
    return min(changed) if changed else count


def breaks_cache(run: Run, messages: list[Message]) -> str | None:
    """What an edit of the message list to `messages` would cost in caching, in words; None when nothing."""
    prefix = cached_prefix(run)
    if not prefix:
        return None
    first = next((i for i, (a, b) in enumerate(zip(run.messages, messages, strict=False)) if a != b), None)
    if first is None and len(messages) < prefix:
        first = len(messages)
    if first is None or first >= prefix:
        return None
    return (
        f"This edit changes message {first}, inside the cached prefix of {prefix} messages: the next request "
        "writes the cache again from there, at the cache-write price, instead of reading it."
    )


def message_badge(run: Run, index: int, marks: list[str] | None = None, prefix: int | None = None) -> str:
    """The badges of message `index` in the list: its mark in the next request, and the cached prefix."""
    marks = next_marks(run) if marks is None else marks
    prefix = cached_prefix(run) if prefix is None else prefix
    badges = [MARK_BADGES[marks[index]]] if index < len(marks) and marks[index] in MARK_BADGES else []
    if index < prefix:
        badges.append(CACHED_BADGE)
    return " ".join(badges)


def gauge_line(gauge: Gauge) -> str:
    """The gauge as one line of Markdown, coloured by how full the window is."""
    colour = GAUGE_COLOURS[gauge.level]
    share = "" if gauge.share is None else f" {gauge.share:.0%}"
    return f":{colour}-badge[context{share}] {safe.inline(gauge.words)}"


def show_next_gauge(run: Run, provider: Any = None, window: int | None = None) -> None:
    """The next request's gauge, with a warning before a request that would overflow the window."""
    if run.next_phase != "model" or run.finished:
        return
    gauge = next_gauge(run, provider, window)
    if gauge.level == "over":
        st.warning(
            f"The next request is about {gauge.tokens:,} tokens, more than the model's context window of "
            f"{gauge.window:,}: it would fail or be cut. Drop or summarise old turns (a context policy), "
            "or fork from an earlier step."
        )
    elif gauge.level == "warn":
        st.warning(f"The next request fills {gauge.share:.0%} of the context window ({safe.inline(gauge.words)}).")
    else:
        st.caption(f"Next request: {gauge_line(gauge)}")


def request_beside_history(run: Run, index: int, window: int | None = None) -> None:
    """Step `index`'s request as sent beside the history it was chosen from, with what changed marked."""
    step = run.steps[index - 1]
    history = run.messages[: step.message_count]
    sent = step.sent
    marks = ["sent"] * len(history) if sent is None else sent.marks(len(history))
    rows = [
        {"#": i, "role": m.role, "in the request": MARK_WORDS[mark], "history": _short(m.text)}
        for i, (m, mark) in enumerate(zip(history, marks, strict=True))
    ]
    if sent is not None and sent.summary is not None:
        at = min(max(sent.summary_after, 0) + 1, len(rows))  # a record from a file may point past the history
        rows.insert(at, {"#": None, "role": "user", "in the request": "the summary", "history": _short(sent.summary)})
    policies = ", ".join(sent.policies) if sent is not None else "none: the whole history was sent"
    st.caption(
        f"Step {index}: policies {safe.inline(policies)}. {gauge_line(step_gauges(run, window=window)[index - 1])}"
    )
    for call in step.policy_calls:
        cost = "free" if call.cost_usd == 0 else "unpriced" if call.cost_usd is None else f"${call.cost_usd:.6f}"
        st.caption(
            f"The summariser ({safe.inline(f'{call.provider}/{call.model}')}) read {call.usage.input_tokens:,} and "
            f"wrote {call.usage.output_tokens:,} tokens ({cost}), charged to this step."
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"policy_request_{run.id}_{index}")


def _short(text: str, limit: int = 160) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"


def with_policies(comparison: Any, policies: dict[int, dict[str, Any] | None] | None) -> None:
    """Give the comparison's columns the context policies set for them (by column, from the cost page)."""
    from agentcore.policies import ContextPolicies

    for i, chosen in (policies or {}).items():
        if chosen is not None and 0 <= int(i) < len(comparison.columns):
            column = comparison.columns[int(i)]
            column.run.config = column.run.config.model_copy(update={"policies": ContextPolicies(**chosen)})
            column.label = f"{column.label} · {ContextPolicies(**chosen).label}"


# -- the sidebar's policy settings ------------------------------------------------------------

POLICY_WIDGETS = {  # in the order the policies apply (agentcore.policies.POLICY_ORDER)
    "drop_turns_older_than": ("cfg_policy_drop", "Drop turns older than k steps", 1),
    "summarize_older_than": ("cfg_policy_summarize", "Summarise turns older than k steps", 1),
    "keep_tool_results": ("cfg_policy_keep", "Keep the last k tool results", 0),
    "truncate_tool_results": ("cfg_policy_truncate", "Truncate tool results to n tokens", 1),
}
CACHE_WIDGET = "cfg_policy_cache"


def policy_settings(sb: Any, provider: str) -> ContextPolicies | None:
    """The sidebar's context policies (empty boxes leave a policy off); None when none is on."""
    box = sb.expander("Context policies", expanded=False)
    box.caption("What each model call sends; the run keeps the whole history. They apply in this order.")
    values: dict[str, Any] = {}
    for name, (key, label, least) in POLICY_WIDGETS.items():
        st.session_state.setdefault(key, None)
        values[name] = box.number_input(label, min_value=least, max_value=10_000, step=1, key=key, placeholder="off")
    if provider == "anthropic":
        values["cache_breakpoints"] = box.toggle(
            "Prompt caching (cache_control)",
            key=CACHE_WIDGET,
            help="Breakpoints on the tools, the system prompt and the last turn; reads cost a tenth of the input",
        )
    policies = ContextPolicies(
        **{k: (int(v) if isinstance(v, float) else v) for k, v in values.items() if v is not None and v is not False}
    )
    return policies if policies.labels() else None


def follow_policies(run: Run) -> None:
    """Show a run that just became current with its own policies in the sidebar; a new run takes the sidebar's."""
    if not run.steps and run.config.policies is None:
        return
    policies = run.config.policies or ContextPolicies()
    for name, (key, _, _) in POLICY_WIDGETS.items():
        st.session_state[key] = getattr(policies, name)
    st.session_state[CACHE_WIDGET] = policies.cache_breakpoints


# -- the playground's message list ---------------------------------------------------------------

MARKS_KEY = "_policy_marks"  # this browser session's marks: (run id, what they were worked out from, marks, prefix)


def row_badge(run: Run | None, index: int, editing: bool = False) -> str:
    """The badges after message `index`'s header (a leading space included), or "" while a draft is edited.

    The marks are worked out once per change of the run, not once per row, and kept in this browser
    session's state: one run is on screen at a time in each session.
    """
    if run is None or editing:
        return ""
    key = (run.id, tuple(map(id, run.messages)), len(run.steps), run.config.policies)
    cached = st.session_state.get(MARKS_KEY)
    if cached is None or cached[0] != key:
        marks = next_marks(run) if run.next_phase != "done" else []  # no next request, nothing to mark
        cached = (key, marks, cached_prefix(run))
        st.session_state[MARKS_KEY] = cached
    badge = message_badge(run, index, cached[1], cached[2])
    return f" &nbsp; {badge}" if badge else ""


def local_window(run: Run, config: Any) -> int | None:
    """The embedded model's configured context size (the sidebar's n_ctx) for a local run; None otherwise."""
    return getattr(config, "n_ctx", None) if run.config.provider == "local" else None


def render_panel(run: Run, draft: list[Message] | None, config: Any = None) -> None:
    """Above the message list: the cache a draft would break, the next request's gauge, and a step's request.

    `config` is the sidebar's settings, whose n_ctx is the embedded model's window.
    """
    if draft is not None:
        warning = breaks_cache(run, draft)
        if warning:
            st.warning(warning, icon=":material/cached:")
    show_next_gauge(run, window=local_window(run, config))
    if not run.steps or not (run.config.policies or any(s.sent for s in run.steps)):
        return
    with st.expander("The request as sent, beside the history"):
        last = len(run.steps)
        index = st.number_input("Step", min_value=1, max_value=last, value=last, key=f"policy_step_{run.id}_{last}")
        request_beside_history(run, int(index), local_window(run, config))
