"""agentcore's own chat format for the embedded model: a ChatML prompt, and a grammar for one tool call or an answer.

llama-cpp-python's `chatml-function-calling` cannot give a plain answer once tools are offered: after
the model chooses `message:`, its grammar allows only another `functions.<name>:` or the end of the
turn, so every reply is a tool call or empty. Here one grammar lets the model's first token choose:
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the arguments held to the tool's JSON
schema), or an answer in its own words. The prompt is ChatML, the format SmolLM2 was trained on,
rendered the same way every call, so one call's prompt is a prefix of the next one's.

The model reads each tool's description without its examples ("e.g. ...", "for example ..."): a small
model copies an example into its call as the argument. The grammar holds a call to the tool's schema
(required properties, types, enums) and each string argument to a bounded length, so a call is
always JSON the tool accepts in form, and a string cannot run on to the token limit.
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
# an example inside a description: "e.g." or "for example"/"for instance" and what follows it up to the end
# of its clause (a quoted or bracketed part whole, whatever it holds), with the comma or bracket before it and
# the spaces around that (`_lead_in`). Found by its words, then read on from them: a pattern that began with the
# spaces read a description of spaces (an MCP server's) once for each way of sharing them out, 36 s for 2,000
_EXAMPLE_WORDS = re.compile(r"\b(?:e\.g\.|for example|for instance)", re.IGNORECASE)
_EXAMPLE_REST = re.compile(
    r"""[,:]?\s*"""
    r"""(?:"[^"]*"|'[^']*'|`[^`]*`|\([^()]*\)|\{[^{}]*\}|\[[^\[\]]*\]|\.(?=\w)|(?<=\w)'(?=\w)|[^.;()"'`{}\[\]])*"""
    r"""\s*\)?""",
)
_LEFT_OVER = re.compile(r"(^|[.!?])\s*[.;,]")
MAX_STRING_CHARS = 256  # the longest string argument the grammar lets the model write
MAX_CALLS_PER_REPLY = 4  # in the SmolLM2 tool format, the most calls one reply may list


@dataclass(frozen=True)
class ChatStyle:
    """How the prompt is written and the reply sampled: the choices the answer-rate benchmark compares."""

    # the ChatML role a tool result is sent as; "assistant": written into the assistant's own turn after the
    # call, which stays open, so the model goes on from the result rather than starting a turn of its own
    tool_role: Literal["tool", "user", "assistant"] = "tool"
    instructions: str = TOOLS_HOW  # after the list of tools: how to call one, and when to answer ("" for none)
    grammar: bool = True  # hold the reply to one call or an answer
    plain_results: bool = False  # a tool result that is a JSON object goes as "key: value" lines
    call_first: bool = False  # until a tool has answered, the grammar allows only a call (tool_choice "required")
    repeat_penalty: float = 1.0  # llama.cpp's penalty on tokens already in the last 64 (1.0: none)
    # "smollm2": the tool format SmolLM2-Instruct was trained on (see SMOLLM2_INTRO): the tools as a JSON
    # list inside <tools>, a reply's calls as a JSON list inside <tool_call>, each result inside <tool_response>
    tool_format: Literal["agentcore", "smollm2"] = "agentcore"


# The style that answered most of bench/answer_rate.py's set 1 (docs/benchmarks.md: the embedded model).
# Left to choose, SmolLM2-135M answers at once, from its own guesses; so it is required to call first.
# With the result written into its own open turn, it goes on to answer from it instead of calling again.
DEFAULT_STYLE = ChatStyle(tool_role="assistant", plain_results=True, call_first=True)


# SmolLM2-Instruct's own tool-calling prompt (its chat template for tools, as Ollama publishes it), in which
# a reply lists one or more calls: the words before the list of tools, and the instructions after it.
SMOLLM2_INTRO = (
    "You are an expert in composing functions. You are given a question and a set of possible functions.\n"
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose.\n"
    "If none of the functions can be used, point it out and refuse to answer.\n"
    "If the given question lacks the parameters required by the function, also point it out.\n"
    "You have access to the following tools:"
)
SMOLLM2_HOW = (
    "The output MUST strictly adhere to the following format, and NO other text MUST be included.\n"
    "The example format is as follows. Please make sure the parameter type is correct.\n"
    + CALL_OPEN
    + '[\n{"name": "func_name1", "arguments": {"argument1": "value1", "argument2": "value2"}},\n'
    "(more tool calls as required)\n]"
    + CALL_CLOSE
    + "\nEach call's result comes back inside <tool_response></tool_response>. When the results answer the "
    "question, reply to the user in plain words, using the numbers and facts the tools returned."
)

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
        parts += _turn("system", _system_text(system[0].content if system else None, tools, style))
    open_turn = False  # tool_role "assistant": the assistant's turn stays open after a call and its results
    for m in messages[len(system) :]:
        if open_turn and not isinstance(m, AssistantMessage | ToolMessage):
            parts += [Piece(IM_END, marker=True), Piece("\n")]
            open_turn = False
        if isinstance(m, SystemMessage | UserMessage):
            parts += _turn(m.role, m.content)
        elif isinstance(m, AssistantMessage):
            text = (m.content or "") + _calls_text(m.tool_calls, style)
            if style.tool_role != "assistant":
                parts += _turn("assistant", text)
                continue
            parts += [Piece(text)] if open_turn else [Piece(IM_START, marker=True), Piece(f"assistant\n{text}")]
            open_turn = bool(m.tool_calls)
            if not open_turn:
                parts += [Piece(IM_END, marker=True), Piece("\n")]
        elif isinstance(m, ToolMessage):
            outcome = "error" if m.is_error else "result"
            content = _lines(m.content) if style.plain_results else m.content
            if style.tool_format == "smollm2":
                text = f"<tool_response>\n{m.name} {outcome}: {content}\n</tool_response>"
            else:
                text = f"{m.name} {outcome}: {content}"
            if style.tool_role != "assistant":
                parts += _turn(style.tool_role, text)
            elif open_turn:
                parts.append(Piece(f"\n{text}\n"))
            else:  # a result with no call before it (an edited history): a turn of its own that stays open
                parts += [Piece(IM_START, marker=True), Piece(f"assistant\n{text}\n")]
                open_turn = True
        else:
            assert_never(m)
    if not open_turn:  # else the model goes on from the results, in the same turn
        parts += [Piece(IM_START, marker=True), Piece("assistant\n")]
    return parts


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


def _system_text(text: str | None, tools: tuple[ToolSpec, ...], style: ChatStyle) -> str:
    if not tools:
        return DEFAULT_SYSTEM if text is None else text
    shown = [
        {"name": t.name, "description": without_examples(t.description), "parameters": _shown_schema(t.parameters)}
        for t in tools
    ]
    if style.tool_format == "smollm2":
        listed = "[" + ",\n".join(map(COMPACT_JSON.encode, shown)) + "]"
        block = f"{SMOLLM2_INTRO}\n<tools>{listed}</tools>\n{SMOLLM2_HOW}"
        return block if text is None else f"{text}\n\n{block}"
    listed = "\n".join(map(COMPACT_JSON.encode, shown))
    how = f"\n\n{style.instructions}" if style.instructions else ""
    return f"{DEFAULT_SYSTEM if text is None else text}\n\n{TOOLS_INTRO}\n{listed}{how}"


def without_examples(description: str) -> str:
    """A description without its examples ("e.g. ...", "for example ..."), which a small model copies as arguments."""
    kept: list[str] = []
    at = 0
    while (found := _EXAMPLE_WORDS.search(description, at)) is not None:
        kept.append(description[at : _lead_in(description, found.start(), at)])
        at = _EXAMPLE_REST.match(description, found.end()).end()  # type: ignore[union-attr]  # matches the empty text
    kept.append(description[at:])
    return _LEFT_OVER.sub(r"\1", "".join(kept)).strip()  # an example that was a sentence of its own leaves its stop


def _lead_in(text: str, start: int, floor: int) -> int:
    """Where an example whose words begin at `start` begins: back over the spaces, a comma, semicolon or bracket,
    and the spaces before that (not before `floor`, where the text not yet read begins)."""
    while start > floor and text[start - 1].isspace():
        start -= 1
    if start > floor and text[start - 1] in ",;(":
        start -= 1
        while start > floor and text[start - 1].isspace():
            start -= 1
    return start


def _shown_schema(schema: Any) -> Any:
    """The schema as the model reads it: every description in it without its examples (nothing else changes)."""
    if isinstance(schema, dict):
        return {
            k: without_examples(v) if k == "description" and isinstance(v, str) else _shown_schema(v)
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_shown_schema(v) for v in schema]
    return schema


def _call_json(call: ToolCall) -> str:
    return f'{{"name": {json.dumps(call.name)}, "arguments": {call.arguments_text}}}'


def _calls_text(calls: tuple[ToolCall, ...], style: ChatStyle) -> str:
    if not calls:
        return ""
    if style.tool_format == "smollm2":
        return CALL_OPEN + "[\n" + ",\n".join(map(_call_json, calls)) + "\n]" + CALL_CLOSE
    return "".join(CALL_OPEN + _call_json(c) + CALL_CLOSE for c in calls)


def grammar_text(tools: tuple[ToolSpec, ...], *, answer: bool = True, style: ChatStyle | None = None) -> str:
    """GBNF for one reply: a call of one of the tools, its arguments held to the tool's schema, or a plain answer.

    Under the SmolLM2 tool format the call is a list of one to MAX_CALLS_PER_REPLY calls.
    """
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
    # a string the schema does not bound (the converter's shared rule) is bounded here, so that it ends
    calls = calls.replace('string ::= "\\"" char* "\\""', f'string ::= "\\"" char{{0,{MAX_STRING_CHARS}}} "\\""')
    body = "agentcore-call-json"
    if style is not None and style.tool_format == "smollm2":
        more = f'( ",\\n" agentcore-call-json ){{0,{MAX_CALLS_PER_REPLY - 1}}}'
        body = f'"[\\n" agentcore-call-json {more} "\\n]"'
    head = (
        f"root ::= agentcore-call{' | agentcore-answer' if answer else ''}\n"
        f"agentcore-call ::= {json.dumps(CALL_OPEN)} {body} {json.dumps(CALL_CLOSE)}\n"
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
    if isinstance(data, list) and data and all(isinstance(d, dict) and isinstance(d.get("name"), str) for d in data):
        return AssistantMessage(tool_calls=tuple(_read_call(d, json.dumps(d)) for d in data))
    if isinstance(data, dict) and isinstance(data.get("name"), str):
        return AssistantMessage(tool_calls=(_read_call(data, body),))
    # cut short (the token limit): keep what was written, so the loop answers the model with an error
    name = _NAME.search(body)
    return AssistantMessage(tool_calls=(parse_arguments(call_id, name.group(1) if name else "?", body),))


def _read_call(data: dict[str, Any], body: str) -> ToolCall:
    """One call of a reply, with a fresh id; arguments that are not an object are kept as the text sent."""
    arguments = data.get("arguments")
    raw = json.dumps(arguments) if isinstance(arguments, dict) else body
    return parse_arguments(f"call_{uuid.uuid4().hex[:12]}", data["name"], raw)
