"""A deterministic scripted model: bundled scenarios for demos and tests, and transcript replay.

A scenario decides its next turn from the request it actually receives (the tool
results so far), so editing the message list changes what it does, and its usage
is estimated from that request.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, ClassVar

from ..errors import ProviderError, UsageError
from ..messages import AssistantMessage, Message, ToolCall, ToolMessage, Usage, UserMessage
from .base import (
    BaseProvider,
    ModelRequest,
    ModelResponse,
    TextSink,
    WireExchange,
    estimate_tokens,
)


@dataclass
class Turn:
    """What a scenario sees: the request, and the turns since the last user message."""

    request: ModelRequest
    prompt: str
    number: int  # assistant turns since the last user message
    results: list[ToolMessage]  # tool results since the last user message
    call_prefix: str

    def call(self, k: int, name: str, arguments: dict[str, Any] | None = None, raw: str | None = None) -> ToolCall:
        return ToolCall(id=f"{self.call_prefix}_{k}", name=name, arguments=arguments or {}, raw_arguments=raw)

    @property
    def last(self) -> ToolMessage | None:
        return self.results[-1] if self.results else None

    def offers(self, tool: str) -> bool:
        """Whether the model may call `tool` now (not when the request asks for an answer: tool_choice "none")."""
        return any(t.name == tool for t in self.request.offered_tools)


@dataclass(frozen=True)
class Scenario:
    """A named script: a description, the tools it uses, and the function that plays it."""

    name: str
    description: str
    tools: tuple[str, ...]
    play: Callable[[Turn], AssistantMessage]
    prompt: str
    final_answer_schema: dict[str, Any] | None = None
    max_steps: int | None = None
    expected_answer: tuple[str, ...] = ()  # texts its answer to its own prompt holds; () when it declares none
    extra: dict[str, Any] = field(default_factory=dict)


_DATA = attrgetter("data")
_ROLE = attrgetter("role")
_TOKENS = attrgetter("tokens")


@dataclass(frozen=True)
class Read:
    """What a request's messages come to for a scripted model: each one's data, their tokens, their assistant turns."""

    messages: tuple[Message, ...]
    data: list[dict[str, Any]]
    tokens: int
    turns: int

    @classmethod
    def of(cls, messages: tuple[Message, ...], last: Read | None = None) -> Read:
        """The read of `messages`; only the messages past `last`'s where its messages begin these.

        A run's requests grow by a turn at a time: read whole, each step would read the whole, growing history
        again. The prefix is compared in C, by identity first; a message equal to the one read reads the same.
        """
        if last is not None and messages[: len(last.messages)] == last.messages:
            new = messages[len(last.messages) :]
            return cls(
                messages,
                last.data + list(map(_DATA, new)),
                last.tokens + sum(map(_TOKENS, new)),
                last.turns + list(map(_ROLE, new)).count("assistant"),
            )
        return cls(
            messages,
            list(map(_DATA, messages)),
            sum(map(_TOKENS, messages)),
            list(map(_ROLE, messages)).count("assistant"),
        )


def scripted_response(
    scenario: str, request: ModelRequest, message: AssistantMessage, read: Read | None = None
) -> ModelResponse:
    """A scripted model's answer to `request`: `message`, its usage estimated, and the exchange as it would look.

    `read`, when given, is `Read.of(request.messages)`, kept by the caller from its last request."""
    read = read if read is not None and read.messages is request.messages else Read.of(request.messages)
    body: dict[str, Any] = {"scenario": scenario, "messages": read.data, "tools": list(map(_DATA, request.tools))}
    if request.tool_choice == "none":
        body["tool_choice"] = "none"
    return ModelResponse(
        message=message,
        usage=Usage(
            input_tokens=read.tokens + sum(map(_TOKENS, request.tools)), output_tokens=estimate_tokens(message.text)
        ),
        estimated=True,
        finish_reason="tool_calls" if message.tool_calls else "stop",
        wire=WireExchange(
            url=f"scripted://{scenario}", request=body, status=200, response=message.model_dump(mode="json")
        ),
    )


def _say(text: str) -> AssistantMessage:
    return AssistantMessage(content=text)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


# -- parallel calls: the weather in several cities ------------------------------------

_NOT_CITIES = {
    "what",
    "weather",
    "how",
    "is",
    "the",
    "in",
    "and",
    "tell",
    "me",
    "today",
    "whats",
    "please",
    "compare",
}


def _cities(prompt: str) -> list[str]:
    found = []
    for word in re.findall(r"\b[A-Z][a-zA-Z]+(?:\s[A-Z][a-zA-Z]+)?\b", prompt):
        if word.lower() not in _NOT_CITIES and word not in found:
            found.append(word)
    return found or ["Paris", "Rome"]


def _weather_line(data: dict) -> str:
    """One city's weather as the result gave it: a field the result lacks (a mocked one may) is left out."""
    said = []
    if data.get("temperature") is not None:
        said.append(f"{data['temperature']}° {data.get('unit') or ''}".rstrip())
    if data.get("condition"):
        said.append(str(data["condition"]))
    return f"{data.get('city') or 'a city'}: {', '.join(said) or 'no weather given'}"


def _play_weather(turn: Turn) -> AssistantMessage:
    if turn.number == 0:
        cities = _cities(turn.prompt)
        calls = tuple(turn.call(k, "get_weather", {"city": c}) for k, c in enumerate(cities))
        # what the model says agrees with what it asks for: one city is named, several are looked up together
        said = f"I'll look up the weather in {cities[0]}." if len(cities) == 1 else "I'll look up each city at once."
        return AssistantMessage(content=said, tool_calls=calls)
    lines = []
    for r in turn.results:
        data = _json(r.content)
        if r.is_error:
            lines.append(f"- {r.name} failed: {r.content}")
        elif not isinstance(data, dict):  # a result in words (a mock's, say) is quoted as it came
            lines.append(f"- {r.name}: {r.content}")
        else:
            lines.append(f"- {_weather_line(data)}")
    return _say("Here is the weather (simulated data):\n" + "\n".join(lines))


# -- a tool error and the recovery ----------------------------------------------------


def _play_recovery(turn: Turn) -> AssistantMessage:
    if turn.number == 0:
        bad = '{"expression": "17 * 23 + 4"'  # the closing brace is missing: not JSON
        return AssistantMessage(content="Let me compute that.", tool_calls=(turn.call(0, "calculator", raw=bad),))
    if turn.number == 1:
        return AssistantMessage(
            content="My arguments were malformed; trying again.",
            tool_calls=(turn.call(0, "calculater", {"expression": "17 * 23 + 4"}),),
        )
    if turn.number == 2:
        return AssistantMessage(
            content="That tool name was wrong; the tool is called calculator.",
            tool_calls=(turn.call(0, "calculator", {"expression": "17 * 23 + 4"}),),
        )
    last = turn.last
    if last is not None and last.is_error:
        return _say(f"I could not compute it: {last.content}")
    result = last.content.split("=")[-1].strip() if last else "unknown"
    return _say(f"After two failed attempts the calculator worked: 17 * 23 + 4 = {result}.")


# -- a tool that fails, and the model reading its error --------------------------------


def _play_tool_error(turn: Turn) -> AssistantMessage:
    # the first call makes the calculator raise; what comes next depends on the result the model reads
    if turn.number == 0:
        return AssistantMessage(
            content="I'll use the calculator.",
            tool_calls=(turn.call(0, "calculator", {"expression": "17 \u00d7 23"}),),
        )
    last = turn.last
    if turn.number == 1 and last is not None and last.is_error:
        return AssistantMessage(
            content="The calculator cannot read the \u00d7 sign, its error says; writing * instead.",
            tool_calls=(turn.call(0, "calculator", {"expression": "17 * 23"}),),
        )
    if last is not None and last.is_error:
        return _say(f"The calculator failed again, so I cannot give the result: {last.content}")
    result = last.content.split("=")[-1].strip() if last else "unknown"
    return _say(f"17 \u00d7 23 = {result}.")


# -- long research with a growing context ---------------------------------------------

_RESEARCH_QUERIES = ("agent loop tool calls cost", "tokens caching context", "errors retries debugging")


def _play_research(turn: Turn) -> AssistantMessage:
    # search, read every hit, search again: each read adds a whole note to the context
    read = {r.content.splitlines()[0] for r in turn.results if r.name == "read_note" and not r.is_error}
    searches = [r for r in turn.results if r.name == "search_notes"]
    if searches:
        hits = _json(searches[-1].content) or []
        for hit in hits if isinstance(hits, list) else []:
            note_id = hit.get("id") if isinstance(hit, dict) else None
            reads = [r for r in turn.results if r.name == "read_note"]
            if note_id and not any(note_id == _read_id(turn, r) for r in reads):
                return AssistantMessage(
                    content=f"Reading note {note_id}.",
                    tool_calls=(turn.call(0, "read_note", {"note_id": note_id}),),
                )
    if len(searches) < len(_RESEARCH_QUERIES):
        query = _RESEARCH_QUERIES[len(searches)]
        return AssistantMessage(
            content=f"Searching the notes for: {query}.",
            tool_calls=(turn.call(0, "search_notes", {"query": query, "limit": 2}),),
        )
    titles = "; ".join(sorted(t.lstrip("# ") for t in read))
    return _say(
        f"I read {len(read)} notes ({titles}). In short: an agent calls the model, runs the tools it asks for "
        "and appends every result, so each step resends a longer conversation and cost grows quadratically; "
        "caching and trimming old tool results are the main remedies."
    )


def _read_id(turn: Turn, result: ToolMessage) -> str | None:
    for m in turn.request.messages:
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                if c.id == result.tool_call_id:
                    return c.arguments.get("note_id")
    return None


# -- a runaway loop that hits the step budget -----------------------------------------


def _play_runaway(turn: Turn) -> AssistantMessage:
    if turn.request.tool_choice == "none":  # asked for an answer (the loop guard): it answers from what it found
        found = turn.results[0].content if turn.results else "nothing"
        return _say(f"I kept asking for the same search. From its first result: {found}")
    return AssistantMessage(
        content="I should check the notes again to be sure.",
        tool_calls=(turn.call(0, "search_notes", {"query": "step budget"}),),
    )


# -- a structured final answer ---------------------------------------------------------

STRUCTURED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "topic": {"type": "string"},
        "summary": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["topic", "summary", "confidence"],
    "additionalProperties": False,
}


def _play_structured(turn: Turn) -> AssistantMessage:
    if turn.number == 0:
        return AssistantMessage(
            content="First I look the topic up.",
            tool_calls=(turn.call(0, "search_notes", {"query": "prompt caching"}),),
        )
    if not turn.offers("final_answer"):
        return _say(
            '{"topic": "prompt caching", "summary": "Cached prefixes are billed at a discount.", "confidence": 0.8}'
        )
    if turn.number == 1:
        return AssistantMessage(
            content="Now the final answer.",
            tool_calls=(turn.call(0, "final_answer", {"topic": "prompt caching", "confidence": 1.7}),),
        )
    return AssistantMessage(
        content="Fixing the answer to fit the schema.",
        tool_calls=(
            turn.call(
                0,
                "final_answer",
                {
                    "topic": "prompt caching",
                    "summary": "Providers bill a repeated prompt prefix at a fraction of the input price.",
                    "confidence": 0.8,
                },
            ),
        ),
    )


# -- one city at a time, and a run whose step 3 asks for the wrong city ------------------

_TOUR_PROMPT = "What is the weather in Paris, Rome and Tokyo, one city at a time?"


def _tour(turn: Turn, slip: str | None) -> AssistantMessage:
    # one call a step, counted by the steps made so far: a model that does not check what it looked up, so a wrong
    # city asked at step 3 is kept in the answer; `slip` is the city step 3 asks for instead of the third
    cities = _cities(turn.prompt)
    if turn.number < len(cities):
        city = slip if slip is not None and turn.number == 2 else cities[turn.number]
        return AssistantMessage(
            content=f"Next, the weather in {city}.", tool_calls=(turn.call(0, "get_weather", {"city": city}),)
        )
    lines = [f"- {_weather_line(d)}" for d in map(_json, (r.content for r in turn.results)) if isinstance(d, dict)]
    return _say("The weather, city by city (simulated data):\n" + "\n".join(lines))


def _play_city_by_city(turn: Turn) -> AssistantMessage:
    return _tour(turn, None)


def _play_wrong_city(turn: Turn) -> AssistantMessage:
    return _tour(turn, "Kyoto")


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "weather",
            "Parallel calls: the weather in every city named in the prompt, in one turn.",
            ("get_weather",),
            _play_weather,
            "What is the weather in Paris, Rome and Tokyo?",
            expected_answer=("Paris", "Rome", "Tokyo"),
        ),
        Scenario(
            "recovery",
            "Tool errors and the recovery: malformed JSON arguments, an unknown tool, then the right call.",
            ("calculator",),
            _play_recovery,
            "What is 17 * 23 + 4?",
            expected_answer=("395",),
        ),
        Scenario(
            "tool_error",
            "A failing tool: the calculator raises, and the model reads the error and calls it again correctly.",
            ("calculator",),
            _play_tool_error,
            "What is 17 \u00d7 23?",
            expected_answer=("391",),
        ),
        Scenario(
            "research",
            "A long research task: search and read notes, step after step, so the context grows.",
            ("search_notes", "read_note"),
            _play_research,
            "Research why agents get expensive and what helps.",
        ),
        Scenario(
            "runaway",
            "A runaway loop: the model calls the same tool again and again until the step budget stops it.",
            ("search_notes",),
            _play_runaway,
            "Find out what a step budget is.",
        ),
        Scenario(
            "structured",
            "A structured final answer: the schema is offered as a final_answer tool; a bad answer is corrected.",
            ("search_notes",),
            _play_structured,
            "Summarise prompt caching as a structured answer.",
            final_answer_schema=STRUCTURED_SCHEMA,
            expected_answer=("prompt caching",),
        ),
        Scenario(
            "city_by_city",
            "One call a step: the weather in each city in turn, then the answer; it goes on from any step.",
            ("get_weather",),
            _play_city_by_city,
            _TOUR_PROMPT,
            expected_answer=("Paris", "Rome", "Tokyo"),
        ),
        Scenario(
            "wrong_city",
            "A run that fails: city_by_city, but step 3 asks for Kyoto instead of Tokyo, and the answer keeps it.",
            ("get_weather",),
            _play_wrong_city,
            _TOUR_PROMPT,
            expected_answer=("Paris", "Rome", "Tokyo"),
        ),
    )
}
DEFAULT_SCENARIO = "weather"
# seconds before each word of a streamed reply: a demo (or a test) sees a reply stream in as a remote model's does
PACE_ENV = "AGENTCORE_SCRIPTED_PACE"
MAX_PACE_S = 10.0


def get_scenario(name: str | None) -> Scenario:
    """Look up a bundled scenario; an unknown name is a UsageError that lists the others."""
    name = name or DEFAULT_SCENARIO
    if name not in SCENARIOS:
        raise UsageError(f"unknown scenario {name!r}; available: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


def _pace(pace_s: float | None) -> float:
    """The wait before each streamed word, in seconds: `pace_s`, or AGENTCORE_SCRIPTED_PACE, or none."""
    if pace_s is None:
        text = os.environ.get(PACE_ENV, "").strip()
        if not text:
            return 0.0
        try:
            pace_s = float(text)
        except ValueError:
            raise UsageError(f"{PACE_ENV} must be a number of seconds, not {text[:40]!r}") from None
    if not (math.isfinite(pace_s) and 0 <= pace_s <= MAX_PACE_S):
        raise UsageError(f"the scripted model's pace must be between 0 and {MAX_PACE_S:g} seconds a word, not {pace_s}")
    return pace_s


class ScriptedProvider(BaseProvider):
    """Plays a bundled scenario, or replays the assistant turns of a saved transcript."""

    name: ClassVar[str] = "scripted"
    exact_usage: ClassVar[bool] = False

    def __init__(
        self,
        model: str | None = None,
        *,
        scenario: str | None = None,
        replay: list[AssistantMessage] | None = None,
        pace_s: float | None = None,
        **_: Any,
    ) -> None:
        self.pace_s = _pace(pace_s)  # None: from AGENTCORE_SCRIPTED_PACE, else no wait
        self.replay = list(replay) if replay is not None else None
        self.scenario = None if self.replay is not None else get_scenario(scenario or model)
        self._read: Read | None = None  # the last request's messages as read (Read.of)
        super().__init__(model or ("replay" if self.replay is not None else self.scenario.name))

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelResponse:
        # the last request's read, taken once: a provider shared by threads at worst reads a request whole
        read = self._read = Read.of(request.messages, self._read)
        message = self._next(request, read.turns)
        if on_text is not None and message.content:
            for piece in re.findall(r"\S+\s*", message.content):
                if self.pace_s:
                    time.sleep(self.pace_s)
                on_text(piece)
        return scripted_response(self.model, request, message, read)

    def _next(self, request: ModelRequest, assistant_turns: int) -> AssistantMessage:
        if self.replay is not None:
            if assistant_turns >= len(self.replay):
                raise ProviderError(
                    f"the replayed transcript has only {len(self.replay)} assistant turns", provider=self.name
                )
            return self.replay[assistant_turns]
        last_user = max((i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)), default=-1)
        if last_user < 0:
            raise ProviderError("the request has no user message", provider=self.name, status=400)
        since = request.messages[last_user + 1 :]
        turn = Turn(
            request=request,
            prompt=request.messages[last_user].content,
            number=sum(isinstance(m, AssistantMessage) for m in since),
            results=[m for m in since if isinstance(m, ToolMessage)],
            call_prefix=f"call_{assistant_turns + 1}",
        )
        return self.scenario.play(turn)
