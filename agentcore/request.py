"""What a run's next model call sends: its settings from the run's config, its messages under the context policies.

The loop builds each model phase's request here, and the export (exports.export_request) builds a run's request body
from the same settings, so a body exported from a run is the body its provider was sent. The policies'
own data and their pure planning are in policies.py; what a policy needs a model for, the summary of the
older turns, is asked for and priced here, before the model phase.

A model can refuse what a policy makes of the history: Claude Haiku 5.5 answers a thinking block sent back
after a change to what came before it with a 400. Such a turn's thinking is left out of the request (adaptive
thinking takes a history without it), and the step records which turns went without (SentRequest.thinking_left_out).

The policies reach the loop as a built-in hook (agentcore.hooks.context_policies): what they send before the
model call, and the reply's call ids made distinct after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from . import catalogue
from .accounting import sent_at, tool_tokens
from .errors import UsageError
from .messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from .policies import (
    SUMMARY_HEADING,
    SUMMARY_MAX_TOKENS,
    PolicyCall,
    SentRequest,
    origins,
    plan_request,
    sent_request,
    stand_in_summary,
    summary_compaction,
)
from .providers.base import ModelRequest, Provider, Settings
from .providers.prices import price_call
from .run import Run, RunConfig
from .steps import ModelRef

SUMMARY_PROMPT = (
    "Summarise the earlier part of this agent's conversation for the agent itself: the facts found, "
    f"the tools called and what they returned, in at most {SUMMARY_MAX_TOKENS} tokens. Plain text only."
)
# the generation settings a run's config records, by the same name as in Settings
CONFIG_SETTINGS = ("temperature", "max_tokens", "seed", "thinking_budget", "reasoning_effort")


# -- the settings ---------------------------------------------------------------------


def request_settings(config: RunConfig, settings: Settings | None = None) -> Settings:
    """The settings of the run's model calls: `settings` (an agent's own) where set, else the run's config.

    Prompt caching is on when the run's policies ask for it (`cache_breakpoints`) or the settings do.
    """
    settings = settings or Settings()
    update = {
        name: getattr(config, name)
        for name in CONFIG_SETTINGS
        if getattr(settings, name) is None and getattr(config, name) is not None
    }
    if config.policies is not None and config.policies.cache_breakpoints and not settings.cache_breakpoints:
        update["cache_breakpoints"] = True
    return settings.model_copy(update=update) if update else settings


def base_request(run: Run, messages: Sequence[Message], settings: Settings) -> ModelRequest:
    """The request before any hook: these messages, the run's tools, these settings, tool_choice "auto"."""
    # the messages and specs are already validated objects of the run: building the request skips checking them again
    return ModelRequest.model_construct(
        messages=tuple(messages), tools=tuple(run.tool_specs), settings=settings, tool_choice="auto"
    )


def settings_refusal(run: Run, provider: str, model: str, settings: Settings | None = None) -> str | None:
    """Why `provider`'s `model` would refuse the run's next request settings, in one line; None when it takes them.

    The catalogue's documented rules (catalogue.check_settings), with the run's tools on offer: the check a
    run, a comparison column, a pinned test and an export all make before a body is built.
    """
    settings = request_settings(run.config, settings)
    problem = catalogue.check_settings(provider, model, settings, tools=bool(run.tool_specs))
    return f"{provider}: {problem}" if problem else None


def settings_note(run: Run, provider: str, model: str) -> str | None:
    """One line about the settings of the run's next request: why the model would refuse them, else what
    is sent that the run did not set and why (catalogue.fit_note); None when neither."""
    settings = request_settings(run.config)
    return settings_refusal(run, provider, model) or catalogue.fit_note(
        provider, model, settings, tools=bool(run.tool_specs)
    )


# -- the messages, before each model phase ---------------------------------------------


@dataclass
class Prepared:
    """What the model phase sends, the record of it, and the calls the policies made for it."""

    messages: list[Message]
    sent: SentRequest | None = None
    calls: list[PolicyCall] = field(default_factory=list)

    def reply(
        self, history: Sequence[Message], message: AssistantMessage, step: int, taken: Collection[str] | None = None
    ) -> AssistantMessage:
        """The model's reply with each tool call id made distinct: from the history's and from each other's.

        A model that did not see part of the history may number its calls again (the scripted one counts the
        turns it was sent), and a model may give two calls of one turn one id, or none: a run's ids must stay
        unique, or its results go to the wrong call and no reader takes the transcript. A repeated id gets the
        step's suffix (and a number after it), an empty one `call_{n}_s{step}` (n: its place in the reply).
        `taken`, when given, is the history's call ids (Run.tool_call_ids), so the history need not be read.
        """
        return distinct_call_ids(history, message, step, taken)


Outgoing = Callable[[ModelRequest], ModelRequest]  # what the run's hooks make of a request before it leaves


def prepare(run: Run, summariser: Provider | None = None, outgoing: Outgoing | None = None) -> Prepared:
    """The messages of the run's next model phase under its policies; the whole history without any.

    `summarize_older_than` asks `summariser` (the run's own model) for a summary unless the previous
    step already summarised the same messages; a failed summary raises the provider's error. The previous
    summary grows by the messages that became old since, unless `drop_turns_older_than` has since left out
    a message it covered: then the summary is written again from the messages left, so a dropped turn
    reaches the model neither as itself nor through the summary. A summary written is recorded as the
    request's compaction (`SentRequest.compaction`, `policies.summary_compaction`).
    """
    policies = run.config.policies
    history = run.messages
    provider = getattr(summariser, "name", None) or run.config.provider
    model = getattr(summariser, "model", None) or run.config.model
    binds = catalogue.binds_thinking_to_prefix(provider, model)
    if policies is None or not policies.shapes_request:
        sent = whole_history(run, provider, model)
        standing = run.steps[-1].sent.compaction if run.steps and run.steps[-1].sent is not None else None
        # what the agent compacted stays compacted: a fork after it sends what it sent (a policy's summary does not)
        if standing is not None and standing.stands:
            sent = (sent or SentRequest()).model_copy(update={"compaction": standing})
        return Prepared(history) if sent is None else Prepared(sent.messages(history), sent)
    step = len(run.steps) + 1
    plan = plan_request(history, origins(run, len(history)), step, policies)
    summary, calls = None, []
    summarised = plan.to_summarise
    if summarised:
        summary, covered = _previous_summary(run)
        if summary is not None and not set(covered) <= set(summarised):
            summary = None  # it covered a message that is now dropped
        if summary is None or covered != summarised:
            if summariser is None:
                raise UsageError("summarize_older_than needs a model to write the summary")
            # the summary grows: the previous one, and only the messages that became old since
            new = [history[i] for i in summarised if i not in set(covered)] if summary else None
            older = new or [history[i] for i in summarised]
            summary, call = summarise(run, older, summariser, summary, outgoing)
            calls.append(call)
    sent = sent_request(plan, summary)
    if binds:
        sent.thinking_left_out = unbound_thinking(run, sent, provider)
    if calls:  # a summary written for this request: the policy compacted the history here
        sent.compaction = summary_compaction(history, sent, tool_tokens(run))
    return Prepared(sent.messages(history), sent, calls)


def distinct_call_ids(
    history: Sequence[Message], message: AssistantMessage, step: int, taken: Collection[str] | None = None
) -> AssistantMessage:
    """`message` with each tool call id the history or an earlier call of it holds (or an empty one) made new.

    `taken`, when given, is the history's call ids (Run.tool_call_ids, kept as the run grows): read as it is, never
    changed; without it the whole history is read.
    """
    if not message.tool_calls:
        return message
    if taken is None:
        taken = {c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls}
    given: set[str] = set()  # the ids of this reply's calls so far
    calls = []
    for n, call in enumerate(message.tool_calls, 1):
        new, k = call.id, 1
        while not new or new in taken or new in given:
            base = call.id or f"call_{n}"
            new = f"{base}_s{step}" if k == 1 else f"{base}_s{step}_{k}"
            k += 1
        given.add(new)
        calls.append(call if new == call.id else call.model_copy(update={"id": new}))
    if all(a is b for a, b in zip(calls, message.tool_calls, strict=True)):
        return message
    return message.model_copy(update={"tool_calls": tuple(calls)})


def whole_history(run: Run, provider: str, model: str) -> SentRequest | None:
    """The record of a request that sends the run's whole history to `model`, when it cannot go as it is.

    After requests that policies shaped, the whole history is a change from what they sent: a model that
    binds thinking to its prefix is sent the turns whose thinking still fits, the others without it.
    """
    if not catalogue.binds_thinking_to_prefix(provider, model) or all(s.sent is None for s in run.steps):
        return None
    sent = SentRequest()
    sent.thinking_left_out = unbound_thinking(run, sent, provider)
    return sent if sent.thinking_left_out else None


def unbound_thinking(run: Run, sent: SentRequest, provider: str) -> list[int]:
    """The assistant turns whose thinking `sent` leaves out: those after a change to what their own request sent.

    Claude Haiku 5.5's overview: "a request that sends a thinking block back after a change to `system`,
    `tools`, or earlier `messages` returns a 400 error". A turn's thinking goes back only while everything
    before it goes as the request that produced it sent it (the step whose reply it is); otherwise it is left
    out, which adaptive thinking accepts. A turn left out changes what later turns' thinking follows, so
    they are checked against the request as it now stands.
    """
    history = run.messages
    turns = [
        i
        for i, m in enumerate(history)
        if i not in sent.changes and isinstance(m, AssistantMessage) and m.reasoning_for(provider)
    ]
    if not turns:
        return []
    made_by = {s.message_count: n for n, s in enumerate(run.steps, 1)}  # the history index of each step's reply
    now = sent.model_copy(update={"thinking_left_out": []}).messages(history)
    where = {id(m): k for k, m in enumerate(now)}  # a turn with thinking goes as it is: found by identity
    left_out: list[int] = []
    for i in turns:
        k, n = where[id(history[i])], made_by.get(i)
        # what the policies sent then against what they send now; hooks after them (a redactor) change both alike
        if n is None or now[:k] != sent_at(run, n, hooks=False):  # a turn no step of this run produced: no match
            left_out.append(i)
            now[k] = history[i].model_copy(update={"reasoning": ()})
    return left_out


def thinking_note(run: Run, provider: str, model: str) -> str | None:
    """One line saying which turns' thinking the run's next request leaves out, and why; None when none.

    The next request as the policies plan it; a summary still to be written is a stand-in, as projections take it.
    """
    if not catalogue.binds_thinking_to_prefix(provider, model) or run.next_phase != "model":
        return None
    policies, history = run.config.policies, run.messages
    if policies is None or not policies.shapes_request:
        whole = whole_history(run, provider, model)
        left_out = whole.thinking_left_out if whole is not None else []
    else:
        plan = plan_request(history, origins(run, len(history)), len(run.steps) + 1, policies)
        summary, covered = _previous_summary(run)
        if plan.to_summarise and (summary is None or covered != plan.to_summarise):
            summary = stand_in_summary()
        left_out = unbound_thinking(run, sent_request(plan, summary), provider)
    if not left_out:
        return None
    turns = f"{len(left_out)} turn{'s' if len(left_out) != 1 else ''}"
    return (
        f"the thinking of {turns} (message {', '.join(map(str, left_out))}) is not sent back: {model} refuses "
        "a thinking block after a change to what was sent before it, and the policies changed that"
    )


def _previous_summary(run: Run) -> tuple[str | None, list[int]]:
    """The previous step's summary and the history messages it covered (none without one)."""
    sent = run.steps[-1].sent if run.steps else None
    if sent is None or sent.summary is None:
        return None, []
    return sent.summary, sorted(i for i, c in sent.changes.items() if c.mark == "summarised")


def transcript_text(messages: Sequence[Message]) -> str:
    """Messages as plain text for the summariser: one `role: text` paragraph each."""
    lines = []
    for m in messages:
        if isinstance(m, ToolMessage):
            lines.append(f"tool {m.name} result: {m.content}")
        elif isinstance(m, AssistantMessage):
            calls = "; ".join(f"{c.name}({c.arguments_text})" for c in m.tool_calls)
            lines.append(f"assistant: {m.content or ''}" + (f" [calls {calls}]" if calls else ""))
        else:
            lines.append(f"{m.role}: {m.text}")
    return "\n\n".join(lines)


def summarise(
    run: Run,
    messages: Sequence[Message],
    provider: Provider,
    earlier: str | None = None,
    outgoing: Outgoing | None = None,
) -> tuple[str, PolicyCall]:
    """Ask `provider` to summarise `messages` (after an `earlier` summary); the summary and the call, priced.

    `outgoing` is what the run's hooks make of a request before it leaves (a redactor's masks): the summary request
    is a model call too, and the older turns it carries must reach the model as any request's would.
    """
    text = transcript_text(messages)
    if earlier:
        text = f"{SUMMARY_HEADING}\n{earlier}\n\nWhat happened next:\n\n{text}"
    # no cache breakpoints, whatever the run's policies: each summary request is new text that no later
    # request starts with, so a cache write would cost more and never be read
    request = ModelRequest(
        messages=(SystemMessage(content=SUMMARY_PROMPT), UserMessage(content=text)),
        settings=Settings(max_tokens=SUMMARY_MAX_TOKENS),
    )
    if outgoing is not None:
        request = outgoing(request)
    started = time.perf_counter()
    response = provider.complete(request)
    latency = (time.perf_counter() - started) * 1000
    # a model that answers with a tool call still wrote text; an empty answer is said to be one
    text = (response.message.content or "").strip() or "(the model wrote no summary)"
    name = getattr(provider, "name", None) or run.config.provider
    model = getattr(provider, "model", None) or run.config.model
    call = PolicyCall(
        provider=name,
        model=model,
        usage=response.usage,
        estimated=response.estimated,
        cost_usd=price_call(run, ModelRef(name, model), response.usage),
        latency_ms=latency,
        summarised=len(messages),
    )
    return text, call


__all__ = [
    "CONFIG_SETTINGS",
    "SUMMARY_PROMPT",
    "Prepared",
    "base_request",
    "distinct_call_ids",
    "prepare",
    "request_settings",
    "settings_note",
    "settings_refusal",
    "summarise",
    "thinking_note",
    "transcript_text",
    "unbound_thinking",
    "whole_history",
]
