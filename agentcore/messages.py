"""Typed messages of the agent loop, tool calls, usage, and the message-list validator."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal, assert_never

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, model_validator

# json.dumps with any non-default option builds a new encoder per call; this one is built once
COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))

# Far above any real run, and low enough that a whole file of such counts still adds up inside
# SQLite's 64-bit INTEGER (a 64 MB file holds under a million steps).
MAX_COUNT = 10**12
# How deeply JSON may nest in a file agentcore reads (pydantic cannot write data past about 250 levels,
# and json.loads recurses once a level). Tool arguments sit five levels down in a transcript, a wire
# exchange's bodies four, so each has its own, lower limit: see MAX_ARGUMENT_DEPTH and StepRecord.
MAX_DEPTH = 100
MAX_ARGUMENT_DEPTH = 64  # deeper tool arguments are not used: the call is answered with an error result


def _utf8_text(text: str) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"holds a lone surrogate ({text[exc.start]!r}) at character {exc.start}") from None
    return text


# A whole number of tokens, steps or messages: no bool, no float, never negative.
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_COUNT)]
# A duration in milliseconds: a finite number, never negative.
Millis = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# A name, id or timestamp: text that can be written anywhere (a lone surrogate cannot be stored as UTF-8).
Name = Annotated[str, AfterValidator(_utf8_text)]
MAX_SUMMARY_PARTS = 64  # a reasoning summary has a few paragraphs; a server may send any number of parts


def _bounded_summary(parts: tuple[str, ...]) -> tuple[str, ...]:
    # empty parts say nothing and the rest merge into the last kept one, joined as display_text joins them:
    # every part is a line in a transcript, and a reply of 600,000 of them made one no reader takes
    kept = tuple(p for p in parts if p)
    if len(kept) <= MAX_SUMMARY_PARTS:
        return kept
    return (*kept[: MAX_SUMMARY_PARTS - 1], "\n\n".join(kept[MAX_SUMMARY_PARTS - 1 :]))


# A reasoning summary's parts, at most MAX_SUMMARY_PARTS, none empty.
Summary = Annotated[tuple[str, ...], AfterValidator(_bounded_summary)]


def as_count(value: Any) -> int:
    """A count a server reported, as a Count: a whole number from 0 to MAX_COUNT, anything else 0."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        return 0
    return value


def nesting(value: Any, limit: int) -> int:
    """How deeply objects and lists nest in JSON data (a scalar is 0); counting stops just past `limit`."""
    if not isinstance(value, dict | list):
        return 0
    deepest = 0
    todo = [(value, 1)]
    while todo and deepest <= limit:
        item, depth = todo.pop()
        deepest = max(deepest, depth)
        # a loop, not a generator: every step walks its reply with this
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, _CONTAINERS):
                todo.append((child, depth + 1))
    return deepest


_CONTAINERS = (dict, list)


def _shallow(value: dict[str, Any]) -> dict[str, Any]:
    # a request body holds such an object a few levels down: bounded here, every request stays writable
    if nesting(value, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        raise ValueError(f"nested more than {MAX_ARGUMENT_DEPTH} levels deep")
    return value


# a JSON object nested at most MAX_ARGUMENT_DEPTH deep: a call's arguments, a tool's JSON Schema
ShallowObject = Annotated[dict[str, Any], AfterValidator(_shallow)]


def numbered(base: str, taken: set[str], sep: str = " #") -> str:
    """`base`, or `base` with the first free number after `sep` when it is taken; the result is added to `taken`."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{sep}{n}"
    taken.add(name)
    return name


def estimate_tokens(text: str) -> int:
    """A provider-neutral estimate: about four characters a token, the vendors' own rule of thumb."""
    return math.ceil(len(text) / 4) if text else 0


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_CACHED = ("text", "tokens", "data")


class _MessageBase(_Frozen):
    # Messages are immutable, so their text, size and plain form are computed once.

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        copy = super().model_copy(update=update, deep=deep)
        for name in _CACHED:  # a copy with changes must not keep the original's cached values
            copy.__dict__.pop(name, None)
        return copy

    @cached_property
    def text(self) -> str:
        """The text of the message as the model reads it, tool calls included."""
        return getattr(self, "content", None) or ""

    @cached_property
    def tokens(self) -> int:
        """Estimated tokens of this message, with a small per-message overhead."""
        return 4 + estimate_tokens(self.text)

    @cached_property
    def data(self) -> dict[str, Any]:
        """The message as plain JSON data (None fields left out). Shared: do not mutate."""
        return self.model_dump(mode="json", exclude_none=True)


class Usage(_Frozen):
    """Token counts of one model call; `input_tokens` includes cached tokens, `output_tokens` reasoning tokens."""

    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    # the part of output_tokens the model spent reasoning; left out of the plain form when 0
    reasoning_tokens: Count = Field(default=0, exclude_if=lambda n: n == 0)

    def __add__(self, other: Usage) -> Usage:
        # a total may pass MAX_COUNT, the bound on what one call reports
        return Usage.model_construct(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ToolCall(_Frozen):
    """A tool call requested by the model.

    `raw_arguments` holds the model's text when it was not a JSON object (or nested more
    than MAX_ARGUMENT_DEPTH levels deep), so the loop can return the error to the model as data.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    # The model's own text of arguments that were a usable object, kept when json.dumps would write them
    # otherwise (`{"a":1}`, not `{"a": 1}`): a call goes back byte for byte as the model wrote it. Left out
    # of the plain form when None, so transcripts written before it read as before.
    written_arguments: str | None = Field(default=None, exclude_if=lambda text: text is None)
    # The Responses API's id of the function_call item (`fc_…`), which goes back with the call.
    item_id: str | None = Field(default=None, exclude_if=lambda text: text is None)

    @model_validator(mode="before")
    @classmethod
    def _too_deep_is_raw(cls, data: Any) -> Any:
        # some providers hand over arguments already parsed: too deep to use, they become raw text, as in parse_arguments
        args = data.get("arguments") if isinstance(data, dict) else None
        if isinstance(args, dict) and nesting(args, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
            raw = data.get("raw_arguments")
            if raw is None:
                try:
                    raw = json.dumps(args)
                except (ValueError, TypeError, RecursionError):
                    raw = "(arguments nested too deeply to show)"
            data = {**data, "arguments": {}, "raw_arguments": raw}
        return data

    @property
    def arguments_invalid(self) -> bool:
        return self.raw_arguments is not None

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        if update and ("arguments" in update or "raw_arguments" in update) and "written_arguments" not in update:
            update = {**update, "written_arguments": None}  # edited arguments are no longer the model's text
        copy = super().model_copy(update=update, deep=deep)
        copy.__dict__.pop("arguments_json", None)  # an edited copy must not keep the original's text
        return copy

    @cached_property
    def arguments_json(self) -> str:
        """The arguments as a JSON string (json.dumps defaults), made once: every later request resends it."""
        return json.dumps(self.arguments)

    @property
    def arguments_shown(self) -> str:
        """The arguments as a person reads them: the model's text where it was kept, else JSON with each
        character as itself (`17 × 23`, not `17 \\u00d7 23`). For display only: the wire gets arguments_text."""
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments, ensure_ascii=False)

    @property
    def arguments_text(self) -> str:
        """The arguments as text: the model's own text (valid or not) where it was kept, else the JSON."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        return self.written_arguments if self.written_arguments is not None else self.arguments_json


class SystemMessage(_MessageBase):
    """The system prompt."""

    role: Literal["system"] = "system"
    content: str


AuthorKind = Literal["script", "simulator", "person"]


class UserAuthor(_Frozen):
    """Who wrote a user turn of a conversation: a test's script, a simulated user (its model and the stored run of
    the call that wrote it), or a person (`typed_over`: the simulator whose turn the person wrote instead)."""

    kind: AuthorKind
    # the simulator's PROVIDER:MODEL, and its run that wrote the turn
    model: Name | None = Field(default=None, max_length=300, exclude_if=lambda v: v is None)
    run_id: Name | None = Field(default=None, max_length=100, exclude_if=lambda v: v is None)
    typed_over: Name | None = Field(default=None, max_length=300, exclude_if=lambda v: v is None)

    @property
    def words(self) -> str:
        """The author as a line says it: `script`, `simulator openai:gpt-4o-mini`, `person`."""
        if self.kind == "simulator":
            return f"simulator {self.model}" if self.model else "simulator"
        if self.kind == "person" and self.typed_over:
            return f"person, over simulator {self.typed_over}"
        return self.kind


class UserMessage(_MessageBase):
    """A message from the person driving the agent; in a conversation, with who wrote it (`author`)."""

    role: Literal["user"] = "user"
    content: str
    # left out of the plain form when unset, so a transcript written before authors reads and writes as it was
    author: UserAuthor | None = Field(default=None, exclude_if=lambda v: v is None)


class ReasoningPart(_Frozen):
    """The model's reasoning before a reply, as one provider returned it.

    `provider` names the wire format that made it ("anthropic", "openai-responses", "ollama").
    `text` is the readable reasoning (Anthropic's thinking, Ollama's thinking, or raw reasoning
    text where the Responses API gives it) and `summary` the Responses API's summary parts (see Summary).
    The opaque fields are kept exactly as they came and never parsed: Anthropic's `signature`
    and `redacted` (a redacted_thinking block's data), the Responses API's item `id` and
    `encrypted_content`.

    The rule when a run moves to another provider: reasoning is shown, not sent. Each adapter
    sends back only the parts whose `provider` is its own (AssistantMessage.reasoning_for), so a
    signature or encrypted content only ever goes back to the API that made it.
    """

    provider: Name
    text: str = ""
    summary: Summary = ()
    signature: str | None = None
    redacted: str | None = None
    id: str | None = None
    encrypted_content: str | None = None

    @property
    def display_text(self) -> str:
        """What a person can read of it: the text, else the summary; redacted reasoning says so."""
        if self.text:
            return self.text
        if self.summary:
            return "\n\n".join(self.summary)
        return "(redacted by the provider)" if self.redacted is not None else ""


class OutputItem(_Frozen):
    """One item of a provider's output list, in the model's order, so that the turn goes back as it came.

    The Responses API answers with typed items (`reasoning`, `message`, `function_call`) and wants them
    back in that order: a reasoning item is refused without the item that followed it. A reasoning item's
    content is its ReasoningPart and a function call's its ToolCall, taken in turn; a message item keeps
    its own `id`, `phase` (commentary or final_answer, resent on every later request) and `text`, and its content
    `parts` as the model sent them (an output_text part's annotations and logprobs), which go back whole while
    their text is still the item's.
    """

    provider: Name
    kind: Literal["reasoning", "message", "function_call"]
    id: str | None = None
    phase: str | None = None
    text: str = ""
    parts: tuple[ShallowObject, ...] = Field(default=(), max_length=MAX_COUNT, exclude_if=lambda parts: not parts)


class AssistantMessage(_MessageBase):
    """A model reply: text, tool calls, or both, after any reasoning the provider returned.

    `reasoning` is kept in transcripts but is not part of `text` or the token estimate: providers
    do not count earlier turns' reasoning as input. Its parts go back before the text and calls.
    """

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    # left out of the plain form when empty, so transcripts without reasoning read as before
    reasoning: tuple[ReasoningPart, ...] = Field(default=(), exclude_if=lambda parts: not parts)
    # the order of the provider's output items (see OutputItem); left out when empty, as reasoning is
    items: tuple[OutputItem, ...] = Field(default=(), exclude_if=lambda items: not items)

    def reasoning_for(self, provider: str) -> tuple[ReasoningPart, ...]:
        """The reasoning parts to send back to `provider`: only its own; another provider's are dropped."""
        return tuple(p for p in self.reasoning if p.provider == provider)

    def items_for(self, provider: str) -> tuple[OutputItem, ...]:
        """The output items `provider` made for this turn, in its order; () for another provider's turn."""
        return tuple(i for i in self.items if i.provider == provider)

    @cached_property
    def text(self) -> str:
        calls = "".join(
            c.name + (c.raw_arguments if c.raw_arguments is not None else COMPACT_JSON.encode(c.arguments))
            for c in self.tool_calls
        )
        return (self.content or "") + calls


class ToolMessage(_MessageBase):
    """The result of one tool call; `is_error` marks a failure the model should see."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage,
    Field(discriminator="role"),
]
MESSAGE_LIST = TypeAdapter(list[Message])


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: Python's parser takes them, but no transcript could write them back
    raise ValueError(f"{name} is not a JSON value")


def parse_arguments(call_id: str, name: str, text: str | None) -> ToolCall:
    """Build a ToolCall from a JSON-string argument text, keeping the raw text if it is not a usable object.

    Usable: a JSON object nested at most MAX_ARGUMENT_DEPTH levels deep. A usable text is kept too, as
    `written_arguments`, where it is not what json.dumps writes: the call goes back as the model wrote it.
    """
    if text is None or text.strip() == "":
        return ToolCall(id=call_id, name=name, arguments={})
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return ToolCall(id=call_id, name=name, raw_arguments=text)
    if not isinstance(value, dict) or nesting(value, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        return ToolCall(id=call_id, name=name, raw_arguments=text)
    # the model's own text goes back as it wrote it; kept only where json.dumps would write another
    written = text if text != json.dumps(value) else None
    return ToolCall(id=call_id, name=name, arguments=value, written_arguments=written)


@dataclass(frozen=True)
class Violation:
    """One rule a message list breaks: the message's index and why."""

    index: int
    reason: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.reason}"


def validate_messages(messages: list[Message], *, final: bool = False) -> list[Violation]:
    """Check the rules every provider enforces; return the violations, first to last.

    - a system message only at the start;
    - every tool call answered by exactly one tool message, after it and before the next
      assistant or user message;
    - no tool message without its call;
    - the conversation starts with a user message (after the system prompt).
    With `final=True`, calls still unanswered at the end are violations too; otherwise
    they are the pending calls of the tools phase.
    """
    check = _ListCheck()
    for i, m in enumerate(messages):
        check.message(i, m)
    if check.first_turn is None:
        check.found.append(Violation(len(messages), "there is no user message"))
    if final:
        check.close_pending(len(messages))
    return check.found


class _ListCheck:
    """The state of one pass of validate_messages: calls waiting for results, ids seen, violations."""

    def __init__(self) -> None:
        self.found: list[Violation] = []
        self.pending: dict[str, ToolCall] = {}
        self.pending_from = -1
        self.answered: set[str] = set()
        self.seen_ids: set[str] = set()
        self.first_turn: int | None = None

    def message(self, i: int, m: Message) -> None:
        if isinstance(m, SystemMessage):
            if i != 0:
                self.found.append(Violation(i, "a system message may only be the first message"))
            return
        if self.first_turn is None:
            self.first_turn = i
            if not isinstance(m, UserMessage):
                self.found.append(Violation(i, f"the conversation must start with a user message, not {m.role}"))
        if isinstance(m, ToolMessage):
            self.tool_result(i, m)
            return
        self.close_pending(i)
        if isinstance(m, AssistantMessage):
            self.assistant(i, m)
        elif isinstance(m, UserMessage):
            if not m.content.strip():
                self.found.append(Violation(i, "a user message needs content"))
        else:
            assert_never(m)

    def tool_result(self, i: int, m: ToolMessage) -> None:
        if m.tool_call_id in self.pending:
            call = self.pending.pop(m.tool_call_id)
            self.answered.add(m.tool_call_id)
            if call.name != m.name:
                self.found.append(
                    Violation(i, f"tool result is named {m.name!r} but call {m.tool_call_id!r} is {call.name!r}")
                )
        elif m.tool_call_id in self.answered:
            self.found.append(Violation(i, f"tool call {m.tool_call_id!r} already has a result"))
        else:
            self.found.append(Violation(i, f"tool result for {m.tool_call_id!r} has no matching tool call before it"))

    def assistant(self, i: int, m: AssistantMessage) -> None:
        if not m.content and not m.tool_calls:
            self.found.append(Violation(i, "an assistant message needs text or tool calls"))
        for call in m.tool_calls:
            if not call.id:
                self.found.append(Violation(i, f"tool call {call.name!r} has no id"))
            elif call.id in self.seen_ids:
                self.found.append(Violation(i, f"tool call id {call.id!r} is used twice"))
            if not call.name:
                self.found.append(Violation(i, f"tool call {call.id!r} has no name"))
            self.seen_ids.add(call.id)
            self.pending[call.id] = call
        self.pending_from = i

    def close_pending(self, at: int) -> None:
        for call_id in self.pending:
            self.found.append(
                Violation(
                    self.pending_from, f"tool call {call_id!r} was never answered by a tool message before message {at}"
                )
            )
        self.pending = {}


def first_difference(before: list[Message], after: list[Message]) -> int:
    """The index of the first message where two lists differ; the shorter length when one extends the other."""
    return next(
        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
        min(len(before), len(after)),
    )


def reasoning_sent(messages: list[Message] | tuple[Message, ...], provider: str) -> list[ReasoningPart]:
    """The reasoning parts in `messages` that go back to `provider`, unchanged: those it made itself."""
    return [part for m in messages if isinstance(m, AssistantMessage) for part in m.reasoning_for(provider)]


def reasoning_not_sent(messages: list[Message] | tuple[Message, ...], provider: str) -> list[ReasoningPart]:
    """The reasoning parts in `messages` that `provider` will not be sent: those another provider made."""
    return [
        part for m in messages if isinstance(m, AssistantMessage) for part in m.reasoning if part.provider != provider
    ]


def reasoning_note(messages: list[Message] | tuple[Message, ...], provider: str) -> str | None:
    """One line saying which reasoning in `messages` is kept and shown but not sent to `provider`; None if none."""
    parts = reasoning_not_sent(messages, provider)
    if not parts:
        return None
    makers = ", ".join(dict.fromkeys(p.provider for p in parts))
    count = f"{len(parts)} reasoning part{'s' if len(parts) != 1 else ''}"
    return (
        f"{count} from {makers} {'is' if len(parts) == 1 else 'are'} kept and shown but not sent to {provider}: "
        "reasoning goes back only to the provider that made it"
    )


def pending_tool_calls(messages: list[Message]) -> list[ToolCall]:
    """The tool calls of the last assistant message that have no result yet, in call order."""
    answered = set()
    for m in reversed(messages):
        if isinstance(m, ToolMessage):
            answered.add(m.tool_call_id)
        elif isinstance(m, AssistantMessage):
            return [c for c in m.tool_calls if c.id not in answered]
        else:
            return []
    return []
