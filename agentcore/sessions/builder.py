"""One builder of an imported session's run, shared by the ATIF, Claude Code and Codex readers.

A reader walks its file and says what happened: a system prompt, a user's words, a model turn (its text,
reasoning, tool calls, usage, model and time) and the results of the calls. The builder keeps the message
list valid as the loop makes it: each turn's results follow it at once in call order (a file may write them
later or out of order), a call the file has no result for is answered by a note marked as an error (or left
pending when it is the file's last turn), and a result no call asked for is counted, not kept. Each turn is a
StepRecord, so an imported run steps, charts, forks and exports like any other.

The work of one import is bounded by what it makes, not only by the bytes it reads: every builder of an import
shares one Budget of steps, tool calls and messages, and a file that asks for more is refused in one line
rather than read in part. Each turn costs the same however many came before it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..accounting import step_usage
from ..errors import TranscriptError
from ..messages import (
    MAX_COUNT,
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from ..policies import Compaction, PolicyCall, SentRequest
from ..providers.base import WireExchange
from ..run import ImportOrigin, Run, RunConfig, SubagentLink
from ..steps import StepRecord, ToolRun
from ..tools import ToolSpec

NO_RESULT = "(the file has no result for this call)"
EMPTY_TURN = "(the file has no text and no tool call for this turn)"
MAX_TEXT = 4 * 2**20  # the most of one message's text an import keeps; the rest is cut with a note
# the most one import makes, in all its runs together: far past the largest real sessions (a few thousand steps),
# and within a few hundred MB of memory (bench/hostile_inputs.py sessions)
MAX_LINES = 200_000  # of JSON Lines, every file of the import together
MAX_STEPS = 50_000
MAX_CALLS = 60_000
MAX_MESSAGES = 120_000


@dataclass
class Budget:
    """What one import has made so far, in all its runs; `take` refuses the file once a limit is passed."""

    limits: dict[str, int] = field(
        default_factory=lambda: {
            "lines": MAX_LINES,
            "steps": MAX_STEPS,
            "tool calls": MAX_CALLS,
            "messages": MAX_MESSAGES,
        }
    )
    made: Counter[str] = field(default_factory=Counter)

    def take(self, what: str, n: int = 1) -> None:
        """Count `n` more of `what`; a TranscriptError says which limit a file passes."""
        self.made[what] += n
        if self.made[what] > self.limits[what]:
            raise TranscriptError(f"more than {self.limits[what]:,} {what} in one import: refused, not read in part")


def clip(text: str) -> str:
    """Text within MAX_TEXT characters, cut with a note where it was longer."""
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}… [cut: {len(text)} characters in all]"


@dataclass
class Result:
    """A tool call's result as the file recorded it."""

    content: str
    is_error: bool = False


@dataclass
class Turn:
    """One model call as a file recorded it: what the model wrote and what it cost."""

    texts: list[str] = field(default_factory=list)  # the turn's text blocks, joined by a line break
    calls: list[ToolCall] = field(default_factory=list)
    reasoning: list[ReasoningPart] = field(default_factory=list)
    usage: Usage | None = None  # None: the file has none; estimated from the text (accounting.step_usage), marked so
    estimated: bool = False  # the file's own usage is an estimate (agentcore's ATIF export says so)
    model: str | None = None
    started_at: str | None = None
    record: Any = None  # what the file wrote for the turn, shown as the step's wire view
    where: str = ""  # where in the file, e.g. "lines 12-14"
    finish_reason: str | None = None

    def add_text(self, text: str) -> None:
        """One more block of the turn's text (kept as a list: a turn written over many lines costs each line once)."""
        if self.texts or text:
            self.texts.append(text)


@dataclass
class PendingLink:
    """A subagent a turn started, linked once the subagent's run has an id."""

    run: Run
    step: int
    tool_call_id: str | None


class SessionBuilder:
    """Messages and steps of one run, built in the file's order (see the module's docstring)."""

    def __init__(
        self, fmt: str, file: str, provider: str, results: dict[str, Result], budget: Budget | None = None
    ) -> None:
        self.fmt, self.file, self.provider = fmt, file, provider
        self.results = results
        self.budget = budget or Budget()
        self.messages: list[Message] = []
        self.steps: list[StepRecord] = []
        self.call_ids: set[str] = set()  # every call id so far, so a repeated one is told apart at once
        self.used: set[str] = set()
        self.skipped: Counter[str] = Counter()
        self.links: list[PendingLink] = []
        self.model = ""
        self.compaction: Compaction | None = None  # the agent's latest compaction: every later step sends after it

    def compact(
        self,
        by: str,
        trigger: str | None = None,
        tokens_before: int | None = None,
        summary: str | None = None,
        tokens_after: int | None = None,
    ) -> None:
        """The agent replaced its history here: the next message (its summary) and what follows are what each later
        model call sent. `tokens_before` is the file's count; else the last step's input, where it has one.

        With a `summary` it is a context policy's (agentcore's `summarize_older_than`): the next model call alone
        sent it, in place of messages the file does not name, so it hides none of the history."""
        self._close()
        if tokens_before is None and self.steps and not self.steps[-1].estimated:
            tokens_before = self.steps[-1].usage.input_tokens or None
        kept_from = None if summary is not None else len(self.messages)
        self.compaction = Compaction(
            by=by,
            trigger=trigger,
            tokens_before=tokens_before,
            kept_from=kept_from,
            tokens_after=tokens_after,
            summary=summary,
        )

    def copied(self, message: Message) -> None:
        """A message of the history a compaction put in place of the old one (not a model call of its own)."""
        self._close()
        self._add(message)

    def summariser(self, call: PolicyCall) -> bool:
        """The model call that wrote a compaction's summary, charged to the first step after it; False when the
        run has no compaction without one."""
        last: Compaction | None = None
        for step in self.steps:
            now = step.sent.compaction if step.sent is not None else None
            if now is not None and now is not last and not step.policy_calls:
                step.policy_calls.append(call)
                return True
            last = now
        return False

    def system(self, text: str) -> None:
        """A system prompt: the first message, or a later system line kept as a user message that says so."""
        if not text.strip():
            return
        if not self.messages:
            self._add(SystemMessage(content=clip(text)))
        else:
            self.user(f"[system] {text}")

    def user(self, text: str) -> None:
        """A person's words (or what the tool injected in their place); empty text is not a message."""
        if text.strip():
            self._close()
            self._add(UserMessage(content=clip(text)))

    def turn(self, turn: Turn, results: dict[str, Result] | None = None) -> int:
        """A model turn, its results after it in call order; returns its step number.

        `results` are this turn's own (a format that keeps them in the turn), else the file's, by call id.
        """
        self._close()
        if not self.steps and not any(isinstance(m, UserMessage) for m in self.messages):
            self._add(UserMessage(content="(the file starts with the model's turn)"))
        self.budget.take("steps")
        self.budget.take("tool calls", len(turn.calls))
        calls = _unique_ids(turn.calls, self.call_ids)
        index = len(self.steps) + 1
        if turn.model:
            self.model = self.model or turn.model
        step = StepRecord(
            index=index,
            provider=self.provider,
            model=turn.model or self.model or None,
            usage=turn.usage or Usage(),
            estimated=turn.usage is None or turn.estimated,
            message_count=len(self.messages),
            wire=WireExchange(url=f"{self.file} ({self.fmt}, {turn.where})", response=turn.record)
            if turn.record is not None
            else None,
            finish_reason=turn.finish_reason,
            sent=SentRequest(compaction=self.compaction) if self.compaction is not None else None,
            **({"started_at": turn.started_at} if turn.started_at else {}),
        )
        # a turn of reasoning alone (or of nothing the file kept) is still a model call with its usage: its reply
        # says so, since a message list may not hold an assistant message without text or calls
        text = clip("\n".join(turn.texts)) or (None if calls else EMPTY_TURN)
        self._add(AssistantMessage(content=text, tool_calls=tuple(calls), reasoning=tuple(turn.reasoning)))
        self.steps.append(step)
        if self.compaction is not None and not self.compaction.stands:  # a policy's: this call's alone
            self.compaction = None
        for call in calls:
            result = (self.results if results is None else results).get(call.id)
            if result is not None:
                self.used.add(call.id)
                self._result(step, call, result)
        return index

    def _calls_of(self, step: StepRecord) -> tuple[ToolCall, ...]:
        reply = self.messages[step.message_count]
        return reply.tool_calls if isinstance(reply, AssistantMessage) else ()

    def _add(self, message: Message) -> None:
        self.budget.take("messages")
        self.messages.append(message)

    def _result(self, step: StepRecord, call: ToolCall, result: Result) -> None:
        self._add(
            ToolMessage(tool_call_id=call.id, name=call.name, content=clip(result.content), is_error=result.is_error)
        )
        step.tool_runs.append(ToolRun(tool_call_id=call.id, name=call.name, duration_ms=0.0, is_error=result.is_error))

    def _close(self) -> None:
        """Answer the last turn's calls the file has no result for, before anything else is said."""
        if not self.steps:
            return
        step = self.steps[-1]
        answered = {t.tool_call_id for t in step.tool_runs}
        calls = self._calls_of(step)
        missing = [call for call in calls if call.id not in answered]
        for call in missing:
            self.skipped["tool calls without a result"] += 1
            self._result(step, call, Result(NO_RESULT, is_error=True))
        if missing and answered:  # the notes join the results in call order, as every reader places them
            order = {call.id: k for k, call in enumerate(calls)}
            first = step.message_count + 1
            tail = self.messages[first:]
            self.messages[first:] = sorted(tail, key=lambda m: order.get(getattr(m, "tool_call_id", ""), 0))
            step.tool_runs.sort(key=lambda t: order.get(t.tool_call_id, 0))

    def link(self, run: Run, step: int, tool_call_id: str | None) -> None:
        """A subagent's run, started by this run's step `step` (by the call `tool_call_id`, where known)."""
        self.links.append(PendingLink(run, max(0, min(step, len(self.steps))), tool_call_id))

    def build(self, *, title: str, session_id: str | None, agent: str | None, tools: list[ToolSpec]) -> Run:
        """The run; the results no call asked for and each kind of line kept aside are counted in its notes."""
        unused = len(set(self.results) - self.used)
        if unused:
            self.skipped["tool results without a call"] += unused
        if not any(isinstance(m, UserMessage) for m in self.messages):  # a list starts with a user's message
            self.messages.append(UserMessage(content="(the file holds no conversation)"))
        last = self.messages[-1]
        stop = "answer" if isinstance(last, AssistantMessage) and not last.tool_calls and self.steps else None
        system = self.messages[0].content if isinstance(self.messages[0], SystemMessage) else None
        config = RunConfig(
            provider=self.provider,
            model=self.model,
            system_prompt=system,
            tools=tools,
            max_steps=min(len(self.steps) + 10, MAX_COUNT),
        )
        notes = [f"{n} {what}" for what, n in sorted(self.skipped.items())][:100]
        origin = ImportOrigin(format=self.fmt, file=self.file, session_id=session_id, agent=agent, notes=notes)
        run = Run(config=config, messages=self.messages, steps=self.steps, stop_reason=stop, title=title[:200])
        run.origin = origin
        for step in run.steps:  # a call the file has no count for: estimated from its text, as the Cost page does
            if step.estimated and not step.usage.input_tokens:
                step.usage = step_usage(run, step.index)[0]
        for link in self.links:
            link.run.spawned_by = SubagentLink(run_id=run.id, step=link.step, tool_call_id=link.tool_call_id)
            run.subagents.append(SubagentLink(run_id=link.run.id, step=link.step, tool_call_id=link.tool_call_id))
        return run


def _unique_ids(calls: list[ToolCall], taken: set[str]) -> list[ToolCall]:
    # a file may repeat a call id (a retried turn): a repeat gets a suffix, so each call keeps its own result
    out = []
    for call in calls:
        if call.id in taken:
            n = 2
            while f"{call.id}#{n}" in taken:
                n += 1
            call = call.model_copy(update={"id": f"{call.id}#{n}"})
        taken.add(call.id)
        out.append(call)
    return out


def first_words(messages: list[Message], default: str) -> str:
    """The start of the first user message, for a title."""
    for m in messages:
        if isinstance(m, UserMessage) and not m.content.startswith("("):
            return " ".join(m.content.split())[:70]
    return default


def word(value: Any) -> str:
    """A field that names a kind (`type`, `role`, an id) as text: "" when the file put anything else there."""
    return value if isinstance(value, str) else ""


def items(value: Any) -> list[Any]:
    """A field that should be a list, as a list: empty when the file put anything else there."""
    return value if isinstance(value, list) else []


def text_of(value: Any) -> str:
    """A content field as text: a string, or a list of parts whose text is kept, a media part by its reference
    ("[image: shot.png (image/png)]") and the rest named ("[image]")."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return str(value) if isinstance(value, int | float) else ""
    out = []
    for part in value[:MAX_COUNT]:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            text = part.get("text")
            if isinstance(text, str):
                out.append(text)
            elif isinstance(part.get("content"), str | list):  # a nested block (a tool_result inside a list)
                out.append(text_of(part["content"]))
            elif isinstance(part.get("source"), dict) and isinstance(part["source"].get("path"), str):
                # ATIF 1.6+ image and 1.8 audio parts: a reference to a file, kept as one
                kind, source = str(part.get("type") or "part")[:40], part["source"]
                media = f" ({source['media_type'][:80]})" if isinstance(source.get("media_type"), str) else ""
                out.append(f"[{kind}: {source['path'][:2000]}{media}]")
            else:
                out.append(f"[{str(part.get('type') or 'part')[:40]}]")
    return "\n".join(out)


def provider_of(model: str) -> tuple[str, str]:
    """The provider and model a model name in a file means: `openai/gpt-4o`, `claude-…`, `qwen3:8b`."""
    from ..providers import REGISTRY

    head, sep, rest = model.partition("/")
    if sep and head in REGISTRY and rest:
        return head, rest
    lowered = model.lower()
    if lowered.startswith("claude") or head == "anthropic":
        return "anthropic", rest if head == "anthropic" and rest else model
    if ":" in model and "/" not in model:
        return "ollama", model
    return "openai", model
