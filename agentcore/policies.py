"""Context policies: what each model call sends, chosen from the run's full history before the model phase.

The run keeps every message; a policy only shapes the request. They compose in one order, POLICY_ORDER:

1. `drop_turns_older_than=k`: the model turns of steps older than k, with their tool results, are left out;
2. `summarize_older_than=k`: the turns older than k that are left are replaced by one summary, written by
   a model call whose usage and cost are recorded on the step, and the step records a `Compaction` for it;
3. `keep_tool_results=k`: all but the last k tool results are replaced by a short placeholder;
4. `truncate_tool_results=n`: each tool result is cut to about n tokens.

The system prompt and the user's messages are never left out, and a tool call and its result are always
sent or left out together. Each step records what was sent as a `SentRequest` against the history.

A summary written is a compaction, the same event an imported session's agent records; leaving turns out is not
(no summary stands for them, and it happens again at every step): the trace alone marks such a step compacted.

This module is the policies' data and their pure planning: nothing here calls or prices a model. The loop
prepares each request, with the summary a policy asks for, in request.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from .errors import UsageError
from .messages import AssistantMessage, Message, SystemMessage, ToolMessage, Usage, UserMessage

if TYPE_CHECKING:
    from .run import Run

CLEARED = "[cleared]"  # what an older tool result is replaced with, so each call keeps its answer
POLICY_ORDER = ("drop_turns_older_than", "summarize_older_than", "keep_tool_results", "truncate_tool_results")
SUMMARY_MAX_TOKENS = 200  # the summariser's answer is asked to fit this; a projection assumes this length
SUMMARY_HEADING = "Summary of the earlier steps:"

Mark = Literal["shortened", "cleared", "dropped", "summarised"]


class ContextPolicies(BaseModel):
    """The context policies of a run; None leaves a policy off. `cache_breakpoints` asks for prompt caching."""

    model_config = ConfigDict(extra="forbid")

    drop_turns_older_than: int | None = Field(default=None, ge=1, le=10_000)
    summarize_older_than: int | None = Field(default=None, ge=1, le=10_000)
    keep_tool_results: int | None = Field(default=None, ge=0, le=10_000)
    truncate_tool_results: int | None = Field(default=None, ge=1, le=1_000_000)
    cache_breakpoints: bool = False  # Anthropic: cache_control on the tools, the system prompt, the last turn

    @property
    def shapes_request(self) -> bool:
        """Whether any policy changes what is sent (caching does not)."""
        return any(getattr(self, name) is not None for name in POLICY_ORDER)

    def labels(self) -> list[str]:
        """The policies that are on, as `NAME=VALUE`, in the order they apply."""
        out = [f"{name}={getattr(self, name)}" for name in POLICY_ORDER if getattr(self, name) is not None]
        return [*out, "cache_breakpoints=on"] if self.cache_breakpoints else out

    @property
    def label(self) -> str:
        return ", ".join(self.labels()) or "none"


POLICY_NAMES = (*POLICY_ORDER, "cache_breakpoints")


def parse_policy(text: str) -> tuple[str, int | bool]:
    """`NAME=VALUE` as a (name, value) pair; an unknown name or a bad value is a one-line UsageError."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or name not in POLICY_NAMES:
        raise UsageError(f"--policy {text!r}: expected NAME=VALUE with NAME one of {', '.join(POLICY_NAMES)}")
    if name == "cache_breakpoints":
        if value.lower() not in ("on", "off", "true", "false", "1", "0"):
            raise UsageError(f"--policy {text!r}: cache_breakpoints is on or off")
        return name, value.lower() in ("on", "true", "1")
    if not (value.isascii() and value.isdigit()) or len(value) > 7:  # "²" is a digit that int() cannot read
        raise UsageError(f"--policy {text!r}: {name} takes a whole number")
    number = int(value)
    if number < (0 if name == "keep_tool_results" else 1):
        raise UsageError(f"--policy {text!r}: {name} must be at least {0 if name == 'keep_tool_results' else 1}")
    return name, number


def policies_from(texts: Sequence[str]) -> ContextPolicies:
    """Policies from `NAME=VALUE` texts (the CLI's repeated --policy); a later one wins."""
    return ContextPolicies(**dict(parse_policy(t) for t in texts))


# -- what one request sent ------------------------------------------------------------


class Change(BaseModel):
    """How one history message was sent: shortened or cleared (with what was sent), or left out."""

    model_config = ConfigDict(extra="forbid")

    mark: Mark
    content: str | None = None  # the text sent in its place, for shortened and cleared


class Compaction(BaseModel):
    """The point where an agent replaced its history with a summary: the messages before `kept_from` (but a
    leading system prompt) are no longer sent; the summary and what followed are.

    `by` says who compacted (`claude-code`, `codex`) and `trigger` why (`auto`, `manual`), as the file says;
    `tokens_before` is the context the agent counted just before it. The summary is the history message at
    `kept_from` (None where the agent keeps it encrypted); the tokens after are the usage of the first step
    the compaction applies to (see `compactions`).

    agentcore's own `summarize_older_than` records one on each request it writes a summary for: `by` is the
    policy's name, `kept_from` is None (the summary is no history message, and the step's `changes` say which
    messages it replaced), `summary` is what was sent, and both token counts are the project's estimate of the
    request (`request_tokens`), before with the summarised messages as they were and after with the summary.
    """

    model_config = ConfigDict(extra="forbid")

    by: str
    trigger: str | None = None
    tokens_before: int | None = Field(default=None, ge=0)
    kept_from: int | None = Field(default=None, ge=0)
    tokens_after: int | None = Field(default=None, ge=0, exclude_if=lambda v: v is None)
    summary: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def stands(self) -> bool:
        """Whether every later request sends after it (an agent's compaction), not only the one it was made for."""
        return self.kept_from is not None


class SentRequest(BaseModel):
    """What a model call sent, against the first `message_count` messages of the history.

    Messages not in `changes` went as they are; a summary, when there is one, went as a user
    message right after the history message `summary_after`. After a `compaction`, the messages it
    replaced are not sent at all. The assistant turns in `thinking_left_out` went without their
    reasoning: a model that binds a thinking block to what was sent before it refuses the block once
    that changed (see request.py).
    """

    model_config = ConfigDict(extra="forbid")

    policies: list[str] = []
    changes: dict[int, Change] = {}
    summary: str | None = None
    summary_after: int = Field(default=0, ge=0)
    thinking_left_out: list[int] = Field(default=[], exclude_if=lambda found: not found)
    compaction: Compaction | None = Field(default=None, exclude_if=lambda v: v is None)

    def compacted(self, i: int, m: Message) -> bool:
        """Whether history message `i` is one a compaction replaced (a leading system prompt never is)."""
        c = self.compaction
        if c is None or c.kept_from is None:  # a context policy's: its changes say what it replaced
            return False
        return i < c.kept_from and not (i == 0 and isinstance(m, SystemMessage))

    def marks(self, count: int, history: Sequence[Message] = ()) -> list[str]:
        """Each of the first `count` history messages' mark: `sent`, `shortened`, `cleared`, `dropped`, `summarised`
        (a compaction's are `summarised`; without `history`, the first message is taken to be a system prompt)."""
        out = []
        for i in range(count):
            m = history[i] if i < len(history) else SystemMessage(content="")
            replaced = self.compaction is not None and self.compacted(i, m)
            out.append(self.changes[i].mark if i in self.changes else "summarised" if replaced else "sent")
        return out

    def messages(self, history: Sequence[Message]) -> list[Message]:
        """The messages this call sent, rebuilt from the history."""
        out: list[Message] = []
        unthought = set(self.thinking_left_out)
        for i, m in enumerate(history):
            change = self.changes.get(i)
            if self.compaction is not None and self.compacted(i, m):
                continue
            if change is None and i in unthought and isinstance(m, AssistantMessage):
                out.append(m.model_copy(update={"reasoning": ()}))
            elif change is None:
                out.append(m)
            elif change.mark in ("shortened", "cleared") and isinstance(m, ToolMessage):
                out.append(m.model_copy(update={"content": change.content or ""}))
            if i == self.summary_after and self.summary is not None:
                out.append(UserMessage(content=f"{SUMMARY_HEADING}\n{self.summary}"))
        return out


class PolicyCall(BaseModel):
    """A model call a policy made for a step (the summariser's), with its usage and cost, charged to the step."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["summary"] = "summary"
    provider: str | None = None
    model: str | None = None
    usage: Usage = Usage()
    estimated: bool = False
    cost_usd: float | None = None
    latency_ms: float = Field(default=0.0, ge=0)
    summarised: int = 0  # history messages the summary covers


def summary_compaction(history: Sequence[Message], sent: SentRequest, tool_tokens: int = 0) -> Compaction:
    """The compaction `summarize_older_than` made of a request it wrote a summary for: the request's estimated
    tokens with the summarised messages as they were, and with the summary in their place."""
    summarised = [i for i, c in sent.changes.items() if c.mark == "summarised"]
    after = request_tokens(sent.messages(history), tool_tokens)
    summary = UserMessage(content=f"{SUMMARY_HEADING}\n{sent.summary}").tokens if sent.summary is not None else 0
    before = after - summary + sum(history[i].tokens for i in summarised)
    return Compaction(by="summarize_older_than", tokens_before=before, tokens_after=after, summary=sent.summary)


def compactions(run: Run) -> list[tuple[int, Compaction]]:
    """Each compaction of the run with the step it first applies to (1-based): the step whose usage is the
    tokens after it; a later step that sends the same compacted history is not a new point. A context policy's
    is on the step whose request it summarised, one for each summary written."""
    out: list[tuple[int, Compaction]] = []
    last: Compaction | None = None
    for step in run.steps:
        now = step.sent.compaction if step.sent is not None else None
        if now is not None and now != last:
            out.append((step.index, now))
        last = now
    return out


# -- planning a request ---------------------------------------------------------------


def origins(run: Run, length: int) -> list[int]:
    """For each message position, the step whose model phase produced it (0 for the opening prompt)."""
    starts = [s.message_count for s in run.steps]
    out, j = [], 0
    for p in range(length):
        while j < len(starts) and starts[j] <= p:
            j += 1
        out.append(j)
    return out


@dataclass
class Plan:
    """The changes the policies make to one request, before any summary is written."""

    changes: dict[int, Change] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)

    @property
    def to_summarise(self) -> list[int]:
        return [i for i, c in self.changes.items() if c.mark == "summarised"]


def plan_request(history: Sequence[Message], origin: Sequence[int], step: int, policies: ContextPolicies) -> Plan:
    """Apply the policies, in POLICY_ORDER, to the request of step `step` over `history`."""
    plan = Plan(labels=[label for label in policies.labels() if not label.startswith("cache_")])
    changes = plan.changes

    def old(i: int, m: Message, k: int) -> bool:
        # the system prompt and the user's messages always go; the opening prompt has origin 0
        return not isinstance(m, SystemMessage | UserMessage) and 0 < origin[i] < step - k

    for mark, k in (("dropped", policies.drop_turns_older_than), ("summarised", policies.summarize_older_than)):
        if k is not None:
            for i, m in enumerate(history):
                if i not in changes and old(i, m, k):
                    changes[i] = Change(mark=mark)  # type: ignore[arg-type]
    _keep_pairs(history, changes)
    results = [i for i, m in enumerate(history) if isinstance(m, ToolMessage) and i not in changes]
    if policies.keep_tool_results is not None:
        cut = max(len(results) - policies.keep_tool_results, 0)
        for i in results[:cut]:
            changes[i] = Change(mark="cleared", content=CLEARED)
        results = results[cut:]
    if policies.truncate_tool_results is not None:
        chars = policies.truncate_tool_results * 4  # the estimate's own four characters a token
        for i in results:
            text = history[i].content  # type: ignore[union-attr]
            if len(text) > chars:
                changes[i] = Change(mark="shortened", content=text[:chars])
    return plan


def _keep_pairs(history: Sequence[Message], changes: dict[int, Change]) -> None:
    """A call and its results are sent or left out together: one left out takes the others with it."""
    # a tool result belongs to the nearest model turn before it that made its call (ids may repeat in a run)
    groups: dict[int, set[int]] = {}
    turn, calls = -1, set[str]()
    for i, m in enumerate(history):
        if isinstance(m, AssistantMessage):
            turn, calls = i, {c.id for c in m.tool_calls}
            groups[i] = {i}
        elif isinstance(m, ToolMessage):
            groups.setdefault(turn if m.tool_call_id in calls else i, {i}).add(i)
    for group in groups.values():
        gone = [changes[i].mark for i in group if i in changes and changes[i].mark in ("dropped", "summarised")]
        if gone:
            mark = "dropped" if "dropped" in gone else "summarised"
            for i in group:
                changes[i] = Change(mark=mark)  # type: ignore[arg-type]


def sent_request(plan: Plan, summary: str | None) -> SentRequest:
    """The record of a planned request, with the summary that replaced the summarised messages."""
    summarised = plan.to_summarise
    after = min(summarised) - 1 if summarised else 0
    return SentRequest(
        policies=plan.labels,
        changes=plan.changes,
        summary=summary if summarised else None,
        summary_after=max(after, 0),
    )


# -- projections ------------------------------------------------------------------------


def stand_in_summary() -> str:
    """A summary of the longest allowed length, for projections that cannot call a model."""
    return "x" * (SUMMARY_MAX_TOKENS * 4)


def project(run: Run, policies: ContextPolicies, position: int) -> list[Message]:
    """What the step at `position` (0-based) of a recorded run would have sent under `policies`, from its history.

    A summary is taken to be as long as the summariser may write (SUMMARY_MAX_TOKENS), its call not counted.
    """
    step = run.steps[position]
    history = run.messages[: step.message_count]
    plan = plan_request(history, origins(run, step.message_count), step.index, policies)
    return sent_request(plan, stand_in_summary() if plan.to_summarise else None).messages(history)


def request_tokens(messages: Sequence[Message], tool_tokens: int = 0) -> int:
    """Estimated input tokens of a request: its messages and the tool definitions."""
    return sum(m.tokens for m in messages) + tool_tokens


__all__ = [
    "CLEARED",
    "POLICY_NAMES",
    "POLICY_ORDER",
    "Change",
    "Compaction",
    "ContextPolicies",
    "PolicyCall",
    "SentRequest",
    "compactions",
    "parse_policy",
    "plan_request",
    "policies_from",
    "project",
    "summary_compaction",
]
