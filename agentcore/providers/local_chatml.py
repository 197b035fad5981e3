"""llama-cpp-python's `chatml-function-calling` chat format for the embedded model: how messages map to it.

Kept beside agentcore's own format (local_chat) to compare with it: after the model chooses
`message:`, this format's grammar allows only another call or the end of the turn, so once
tools are offered it never answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, assert_never

from ..errors import ProviderError
from ..messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage, parse_arguments
from .base import TextSink


class Recorder:
    """Stands in for the Llama object while the chat handler runs.

    chatml-function-calling makes several completions per turn (choose message or
    function, write the arguments, choose whether to call another) and passes no
    length limit or seed to most of them; the recorder applies ours to each and
    counts the tokens the model wrote.
    """

    def __init__(self, llama: Any, max_tokens: int, seed: int) -> None:
        self._llama = llama
        self._max_tokens = max_tokens
        self._seed = seed
        self.prompts: list[str] = []
        self.output_tokens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, prompt: str, **kwargs: Any) -> Any:
        limit = kwargs.get("max_tokens")
        kwargs["max_tokens"] = self._max_tokens if limit is None or limit <= 0 else min(limit, self._max_tokens)
        kwargs["seed"] = self._seed
        self.prompts.append(prompt)
        result = self._llama.create_completion(prompt=prompt, **kwargs)
        if kwargs.get("stream"):
            return self._tap(result)
        self.output_tokens += result["usage"]["completion_tokens"]
        return result

    def _tap(self, chunks: Iterator[dict]) -> Iterator[dict]:
        for chunk in chunks:
            # llama-cpp-python streams one chunk per generated token, then a last one with the finish reason
            if chunk["choices"][0]["finish_reason"] is None:
                self.output_tokens += 1
            yield chunk

    def prompt_tokens(self) -> int:
        """Tokens of the turn's prompt by the model's own tokenizer, counted as llama-cpp-python counts them."""
        llama = self._llama
        bos = 1 if llama._model.add_bos_token() and llama.token_bos() != -1 else 0
        return bos + len(llama.tokenize(self.prompts[0].encode("utf-8"), add_bos=False, special=True))


def to_openai_messages(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """Map typed messages to the OpenAI-shaped dicts llama-cpp-python's chat handlers read.

    A tool result goes as a user turn: chatml-function-calling's template has no
    tool role and would drop the result's content, so the model would never see it.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage | UserMessage):
            out.append({"role": m.role, "content": m.content})
        elif isinstance(m, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.arguments_text,
                        },
                    }
                    for c in m.tool_calls
                ]
            out.append(entry)
        elif isinstance(m, ToolMessage):
            outcome = "failed" if m.is_error else "returned"
            out.append({"role": "user", "content": f"functions.{m.name} {outcome}:\n{m.content}"})
        else:
            assert_never(m)
    return out


def mark_safe(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark message text as safe for llama-cpp-python's templates.

    chatml-function-calling renders its prompt with Jinja autoescaping on, so a `"` in a
    tool result would reach the model as `&#34;` (and cost extra tokens); Markup is a str
    that the template leaves as it is.
    """
    from markupsafe import Markup

    for m in messages:
        if isinstance(m.get("content"), str):
            m["content"] = Markup(m["content"])
        for call in m.get("tool_calls", ()):
            call["function"]["arguments"] = Markup(call["function"]["arguments"])
    return messages


def gather(chunks: Iterator[dict], on_text: TextSink | None) -> dict[str, Any]:
    """Pass each streamed text delta on, and assemble the chunks into one chat.completion dict."""
    text, finish, first = [], None, None
    for chunk in chunks:
        first = first or chunk
        choice = chunk["choices"][0]
        delta = choice.get("delta", {}).get("content")
        if delta:
            text.append(delta)
            if on_text is not None:
                on_text(delta)
        finish = choice.get("finish_reason") or finish
    head = first or {}
    return {
        "id": head.get("id"),
        "object": "chat.completion",
        "created": head.get("created"),
        "model": head.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(text)}, "finish_reason": finish}],
    }


def to_message(message: dict[str, Any], finish_reason: str | None) -> AssistantMessage:
    calls = tuple(
        parse_arguments(c["id"], c["function"]["name"], c["function"].get("arguments"))
        for c in message.get("tool_calls") or ()
    )
    content = message.get("content") or None
    if content is not None and not content.strip():
        content = None
    if content is None and not calls:
        raise ProviderError(f"the model wrote an empty reply (finish_reason {finish_reason})", provider="local")
    return AssistantMessage(content=content, tool_calls=calls)
