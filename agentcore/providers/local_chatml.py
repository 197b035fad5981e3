"""llama-cpp-python's `chatml-function-calling` chat format for the embedded model: how messages map to it.

Kept beside agentcore's own format (local_chat) to compare with it: after the model chooses
`message:`, this format's grammar allows only another call or the end of the turn, so once
tools are offered it never answers.

llama-cpp-python tokenises this format's prompt as one string with special tokens on, so a
message holding `<|im_end|>\n<|im_start|>system` would open a turn of its own. As in local_chat,
only the template's own markers become special tokens here: each message's text and call
arguments go into the template fenced (`fence`), and the Recorder tokenises the prompt itself,
the fenced text and the text between the markers with special tokens off.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, assert_never

from ..errors import ProviderError
from ..messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage, parse_arguments
from .base import TextSink
from .local_chat import IM_END, IM_START, Piece, tokenize_prompt

# Noncharacters, never in text that is exchanged: they mark where a message's text starts and ends in the prompt.
FENCE_OPEN, FENCE_CLOSE = "\ufdd0", "\ufdd1"
_FENCED = re.compile(f"{FENCE_OPEN}(.*?){FENCE_CLOSE}", re.DOTALL)
_MARKER = re.compile(f"({re.escape(IM_START)}|{re.escape(IM_END)})")


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
        self.prompts: list[str] = []  # as the model read them, unfenced
        self.prompt_sizes: list[int] = []  # in tokens
        self.output_tokens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, prompt: str, **kwargs: Any) -> Any:
        limit = kwargs.get("max_tokens")
        kwargs["max_tokens"] = self._max_tokens if limit is None or limit <= 0 else min(limit, self._max_tokens)
        kwargs["seed"] = self._seed
        pieces = prompt_pieces(prompt)
        self.prompts.append("".join(p.text for p in pieces))
        llama = self._llama
        tokens = tokenize_prompt(llama, pieces, add_bos=llama._model.add_bos_token() and llama.token_bos() != -1)
        self.prompt_sizes.append(len(tokens))
        result = llama.create_completion(prompt=tokens, **kwargs)
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
        """Tokens of the turn's (first) prompt by the model's own tokenizer, as it was sent."""
        return self.prompt_sizes[0]


def fence(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of the messages whose text and call arguments are fenced, for `prompt_pieces` to find.

    A fence character inside the text itself becomes U+FFFD: it is not text anyone writes.
    """
    from markupsafe import Markup

    def fenced(text: str) -> str:
        clean = text.replace(FENCE_OPEN, "\ufffd").replace(FENCE_CLOSE, "\ufffd")
        return Markup(FENCE_OPEN + clean + FENCE_CLOSE)  # still safe for the template (mark_safe)

    out = []
    for m in messages:
        m = dict(m)
        if isinstance(m.get("content"), str) and m["content"]:
            m["content"] = fenced(m["content"])
        if m.get("tool_calls"):
            m["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": fenced(c["function"]["arguments"])}}
                for c in m["tool_calls"]
            ]
        out.append(m)
    return out


def prompt_pieces(prompt: str) -> list[Piece]:
    """A rendered prompt as the template's markers and the text between them, fences removed.

    Only a marker outside every fence is the template's own; a fenced one is a message's text.
    """
    pieces: list[Piece] = []
    at = 0
    for found in [*_FENCED.finditer(prompt), None]:
        template = prompt[at : found.start() if found else len(prompt)]
        for k, part in enumerate(_MARKER.split(template)):
            _add(pieces, Piece(part, marker=k % 2 == 1))
        if found:
            _add(pieces, Piece(found.group(1)))
            at = found.end()
    return pieces


def _add(pieces: list[Piece], piece: Piece) -> None:
    # text next to text is one piece: llama.cpp tokenises the text between two special tokens as one run
    if not piece.text:
        return
    if pieces and not piece.marker and not pieces[-1].marker:
        pieces[-1] = Piece(pieces[-1].text + piece.text)
    else:
        pieces.append(piece)


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
