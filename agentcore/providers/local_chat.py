"""agentcore's own chat format for the embedded model: a ChatML prompt, and a grammar for one tool call or an answer.

llama-cpp-python's `chatml-function-calling` cannot give a plain answer once tools are offered: after
the model chooses `message:`, its grammar allows only another `functions.<name>:` or the end of the
turn, so every reply is a tool call or empty. Here one grammar lets the model's first token choose:
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the arguments held to the tool's JSON
schema), or an answer in its own words. The prompt is ChatML, the format SmolLM2 was trained on,
rendered the same way every call, so one call's prompt is a prefix of the next one's.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from ..messages import (
    COMPACT_JSON,
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    parse_arguments,
)
from ..tools import ToolSpec

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
DEFAULT_SYSTEM = "You are a helpful assistant."
TOOLS_INTRO = "You can call these tools:"
TOOLS_HOW = (
    "To call a tool, reply with only "
    + CALL_OPEN
    + '{"name": <tool name>, "arguments": <JSON object>}'
    + CALL_CLOSE
    + ". A tool's result comes back in the next message. When the results answer the question, reply to the user "
    "in plain words, using the numbers and facts the tools returned."
)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*)"')


@dataclass(frozen=True)
class ChatStyle:
    """How the prompt is written and the reply sampled: the choices the answer-rate benchmark compares."""

    tool_role: Literal["tool", "user"] = "tool"  # the ChatML role a tool result is sent as
    instructions: str = TOOLS_HOW  # after the list of tools: how to call one, and when to answer ("" for none)
    grammar: bool = True  # hold the reply to one call or an answer
    plain_results: bool = False  # a tool result that is a JSON object goes as "key: value" lines
    call_first: bool = False  # until a tool has answered, the grammar allows only a call (tool_choice "required")
    repeat_penalty: float = 1.0  # llama.cpp's penalty on tokens already in the last 64 (1.0: none)


# The style that answered most of bench/answer_rate.py's prompts (README: the embedded model's figures).
# Left to choose, SmolLM2-135M answers at once, from its own guesses; required to call first, it
# calls the right tool, then answers from the result about a third of the time.
DEFAULT_STYLE = ChatStyle(tool_role="user", plain_results=True, call_first=True)


IM_START, IM_END = "<|im_start|>", "<|im_end|>"


@dataclass(frozen=True)
class Piece:
    """A run of prompt text: one of the template's own ChatML markers, or text tokenised as plain text."""

    text: str
    marker: bool = False


def render(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], style: ChatStyle = DEFAULT_STYLE) -> str:
    """The ChatML prompt for the messages, the tools listed in the system turn, ending with the assistant's turn."""
    return "".join(p.text for p in render_pieces(messages, tools, style))


def render_pieces(
    messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], style: ChatStyle = DEFAULT_STYLE
) -> list[Piece]:
    """The prompt of render(), as the template's markers and the text between them (see tokenize_prompt)."""
    parts: list[Piece] = []
    system = [m for m in messages[:1] if isinstance(m, SystemMessage)]
    if tools or system:
        parts += _turn("system", _system_text(system[0].content if system else DEFAULT_SYSTEM, tools, style))
    for m in messages[len(system) :]:
        if isinstance(m, SystemMessage | UserMessage):
            parts += _turn(m.role, m.content)
        elif isinstance(m, AssistantMessage):
            calls = "".join(_call_text(c) for c in m.tool_calls)
            parts += _turn("assistant", (m.content or "") + calls)
        elif isinstance(m, ToolMessage):
            outcome = "error" if m.is_error else "result"
            content = _lines(m.content) if style.plain_results else m.content
            parts += _turn(style.tool_role, f"{m.name} {outcome}: {content}")
        else:
            assert_never(m)
    return [*parts, Piece(IM_START, marker=True), Piece("assistant\n")]


def tokenize_prompt(llama: Any, pieces: list[Piece], add_bos: bool) -> list[int]:
    """The prompt's tokens: only the template's own markers become special tokens.

    A message or tool result may hold the text of a marker (`<|im_end|>\n<|im_start|>system`); read
    as special tokens, it would open a system or assistant turn of its own. So each run of text
    between the template's markers is tokenised with special tokens off, and each marker with them on.
    llama.cpp, told to parse special tokens, also tokenises the text between them separately, so a
    prompt without such text gets the very tokens it got as one string (and the KV cache still matches).
    The text is left as it is, rather than altered to break the markers up, so what the model reads is
    what the message says.
    """
    tokens: list[int] = []
    for piece in pieces:
        if piece.text:
            first = add_bos and not tokens
            tokens += llama.tokenize(piece.text.encode("utf-8"), add_bos=first, special=piece.marker)
    return tokens


def _lines(content: str) -> str:
    """A JSON object's fields as "key: value" lines; any other text as it is."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return content
    if not isinstance(data, dict):
        return content
    return "\n" + "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v)}" for k, v in data.items())


def _turn(role: str, text: str) -> list[Piece]:
    return [Piece(IM_START, marker=True), Piece(f"{role}\n{text}"), Piece(IM_END, marker=True), Piece("\n")]


def _system_text(text: str, tools: tuple[ToolSpec, ...], style: ChatStyle) -> str:
    if not tools:
        return text
    listed = "\n".join(
        COMPACT_JSON.encode({"name": t.name, "description": t.description, "parameters": t.parameters}) for t in tools
    )
    how = f"\n\n{style.instructions}" if style.instructions else ""
    return f"{text}\n\n{TOOLS_INTRO}\n{listed}{how}"


def _call_text(call: ToolCall) -> str:
    return f'{CALL_OPEN}{{"name": {json.dumps(call.name)}, "arguments": {call.arguments_text}}}{CALL_CLOSE}'


def grammar_text(tools: tuple[ToolSpec, ...], *, answer: bool = True) -> str:
    """GBNF for one reply: a call of one of the tools, its arguments held to the tool's schema, or a plain answer."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    def schema(arguments: Callable[[ToolSpec], dict[str, Any]]) -> str:
        one = [
            {
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": arguments(t)},
                "required": ["name", "arguments"],
            }
            for t in tools
        ]
        return json.dumps({"oneOf": one})

    try:
        calls = json_schema_to_gbnf(schema(lambda t: _object_schema(t.parameters)))
    except Exception:  # noqa: BLE001 - a schema the converter cannot follow (a server's tool) still takes any object
        calls = json_schema_to_gbnf(schema(lambda t: {"type": "object"}))
    calls = calls.replace("root ::=", "agentcore-call-json ::=", 1)
    # JSON strings hold no raw control characters; the converter's rule lets a string run on over lines
    # (SmolLM2 then writes its whole answer inside an unclosed argument)
    calls = calls.replace(r'char ::= [^"\\] |', r'char ::= [^"\\\x7F\x00-\x1F] |')
    head = (
        f"root ::= agentcore-call{' | agentcore-answer' if answer else ''}\n"
        f"agentcore-call ::= {json.dumps(CALL_OPEN)} agentcore-call-json {json.dumps(CALL_CLOSE)}\n"
    )
    return head + ANSWER_RULE + calls


# an answer is any text that does not begin like a call
ANSWER_RULE = "agentcore-answer ::= [^<] [^\\x00]*\n"
# GBNF for a reply that can only be an answer: what the loop guard asks for (ModelRequest.tool_choice "none")
ANSWER_GRAMMAR = "root ::= agentcore-answer\n" + ANSWER_RULE


def _object_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    return parameters if parameters.get("type") == "object" else {"type": "object"}


def parse_reply(text: str) -> AssistantMessage | None:
    """The assistant message a reply stands for; None when the reply is empty."""
    stripped = text.strip()
    if not stripped.startswith(CALL_OPEN):
        return AssistantMessage(content=stripped) if stripped else None
    body = stripped[len(CALL_OPEN) :].removesuffix(CALL_CLOSE).strip()
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("name"), str):
        arguments = data.get("arguments")
        raw = json.dumps(arguments) if isinstance(arguments, dict) else body
        return AssistantMessage(tool_calls=(parse_arguments(call_id, data["name"], raw),))
    # cut short (the token limit): keep what was written, so the loop answers the model with an error
    name = _NAME.search(body)
    return AssistantMessage(tool_calls=(parse_arguments(call_id, name.group(1) if name else "?", body),))
