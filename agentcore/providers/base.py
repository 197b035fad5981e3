"""The one interface between the loop and any model, and what crosses it."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..messages import AssistantMessage, Message, Usage, estimate_tokens  # noqa: F401 - the providers import it here
from ..tools import ToolSpec

_TOKENS = attrgetter("tokens")

TextSink = Callable[[str], None]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]


class Settings(BaseModel):
    """Generation settings every provider understands; `None` means the provider's default."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    parallel_tool_calls: bool | None = None
    # reasoning: Anthropic's thinking budget (Ollama: think on), and the effort of the Responses API,
    # Anthropic's adaptive thinking and Ollama's think levels; a provider without one ignores it
    thinking_budget: int | None = Field(default=None, ge=1)
    reasoning_effort: ReasoningEffort | None = None
    # prompt caching: Anthropic places cache_control breakpoints (see anthropic_cache); others cache on their own
    cache_breakpoints: bool = False


class ModelRequest(BaseModel):
    """Everything a provider is asked: the messages, the tools on offer, the settings.

    `tool_choice` "none" asks for an answer, not a call: an API that has the field is sent it with the tools
    (Anthropic refuses a history of tool calls without their tools); one without it is sent no tools
    (`offered_tools`). The loop guard asks this after repeated identical calls (see agentcore.hooks.guard).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    settings: Settings = Settings()
    tool_choice: Literal["auto", "none"] = "auto"

    @property
    def offered_tools(self) -> tuple[ToolSpec, ...]:
        """The tools the model may call: none under tool_choice "none"."""
        return () if self.tool_choice == "none" else self.tools


WIRE_TEXT_LIMIT = 64 * 1024  # bytes of a body that is not JSON kept for the wire view


class WireExchange(BaseModel):
    """The request and response as they went over the wire, credentials removed.

    `response` is the one copy of the answer that is kept: the parsed JSON body, the list of
    streamed events, or the text of a body that is not JSON, cut at WIRE_TEXT_LIMIT bytes.
    """

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    request_headers: dict[str, str] = Field(default_factory=dict)
    request: Any = None
    status: int | None = None
    response_headers: dict[str, str] = Field(default_factory=dict)
    response: Any = None

    def keep_body(self, raw: bytes | bytearray) -> None:
        """Keep a body that is not JSON as text, cut at WIRE_TEXT_LIMIT bytes with a note saying so."""
        text = raw[:WIRE_TEXT_LIMIT].decode("utf-8", errors="replace")
        if len(raw) > WIRE_TEXT_LIMIT:
            text += f"… [cut: {len(raw)} bytes in all]"
        self.response = text


class ModelResponse(BaseModel):
    """A provider's answer: the assistant message, usage, and the wire exchange."""

    model_config = ConfigDict(extra="forbid")

    message: AssistantMessage
    usage: Usage = Usage()
    estimated: bool = False
    finish_reason: str | None = None
    wire: WireExchange | None = None


@runtime_checkable
class Provider(Protocol):
    """A model the loop can call. Implement `complete`; stream text through `on_text` if you can."""

    name: str
    model: str

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelResponse:
        """Answer one request. Stream text deltas through `on_text` when it is given and you can."""
        ...

    # Optional: `def preflight(self, request) -> list[Violation]` checks the provider's own message rules
    # before sending; the loop raises MessageListError on any violation, and nothing is sent.


class BaseProvider:
    """Convenience base: the model name, a repr without secrets, and whether usage is counted or estimated."""

    name: ClassVar[str] = "base"
    # usage comes from the model's own count; a response that had to estimate still says so in `estimated`
    exact_usage: ClassVar[bool] = True

    def __init__(self, model: str) -> None:
        self.model = model

    def __repr__(self) -> str:  # never shows a key
        return f"{type(self).__name__}(model={self.model!r})"


def estimate_request_tokens(request: ModelRequest) -> int:
    """Estimate the input tokens of a request from what would be sent: messages and tool specs."""
    # map: runs every step over the whole message list, each message's count computed once
    return sum(map(_TOKENS, request.messages)) + sum(map(_TOKENS, request.tools))
