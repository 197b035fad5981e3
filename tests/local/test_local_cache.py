"""The embedded model's prompt cache and its queue: reuse that changes no answer, and fair turns for every caller."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from support.embedded import embedded_model

from agentcore import toolbox
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.base import ModelRequest, Settings
from agentcore.providers.llama_state import FairQueue, longest_prefix, report_waits
from agentcore.providers.local_chat import render_pieces, tokenize_prompt

# -- the fair queue (no model needed) ---------------------------------------------------


def _queue_up(queue: FairQueue, n: int, order: list[int], heard: dict[int, list[int]]) -> list[threading.Thread]:
    """Start n callers one after another, each in the queue before the next starts."""
    threads = []
    for i in range(n):
        heard[i] = []

        def call(i: int = i) -> None:
            with queue.hold(on_wait=heard[i].append):
                order.append(i)

        t = threading.Thread(target=call)
        t.start()
        while queue.waiting < i + 1:  # the caller has drawn its ticket
            threading.Event().wait(0.001)
        threads.append(t)
    return threads


def test_the_queue_serves_callers_in_the_order_they_came_and_tells_each_its_place():
    queue, order, heard = FairQueue(), [], {}
    with queue.hold():
        threads = _queue_up(queue, 5, order, heard)
    for t in threads:
        t.join(timeout=30)
    assert order == [0, 1, 2, 3, 4]
    for i in range(5):  # each heard its place on arrival, then fewer ahead (a quick turn may pass unheard), then 0
        assert heard[i][0] == i + 1 and heard[i][-1] == 0
        assert heard[i] == sorted(set(heard[i]), reverse=True)
    assert queue.waiting == 0


def test_a_caller_that_stops_waiting_does_not_stall_the_queue():
    queue, order = FairQueue(), []

    def impatient(ahead: int) -> None:
        raise KeyboardInterrupt  # what a Streamlit rerun does to a waiting script thread

    with queue.hold():
        with pytest.raises(KeyboardInterrupt):
            with queue.hold(on_wait=impatient):
                pass
        heard: dict[int, list[int]] = {}
        threads = _queue_up(queue, 1, order, heard)
    threads[0].join(timeout=30)
    assert order == [0]


def test_report_waits_reaches_a_call_made_deeper_down():
    queue, heard, done = FairQueue(), [], threading.Event()

    def call() -> None:
        with report_waits(heard.append), queue.hold():
            done.set()

    with queue.hold():
        t = threading.Thread(target=call)
        t.start()
        while queue.waiting < 1:
            threading.Event().wait(0.001)
    t.join(timeout=30)
    assert done.is_set() and heard == [1, 0]


def test_longest_prefix():
    assert longest_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert longest_prefix([], [1]) == 0


# -- the prompt cache, on the real model -------------------------------------------------

local, _ = embedded_model()

TOOLS = tuple(t.spec() for t in toolbox.get_tools("get_weather,calculator"))
CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
RUN = (
    UserMessage(content="What is the weather in Paris?"),
    AssistantMessage(tool_calls=(CALL,)),
    ToolMessage(tool_call_id="call_1", name="get_weather", content='{"temperature": 18.5, "condition": "cloudy"}'),
)


@pytest.fixture(scope="module")
def provider():
    return local.LocalProvider()


@pytest.fixture
def llama(provider):
    llama = provider.load().llama
    llama.forget()
    return llama


def ask(provider, messages, tools=TOOLS, **settings):
    settings.setdefault("max_tokens", 24)
    return provider.complete(ModelRequest(messages=messages, tools=tools, settings=Settings(temperature=0, **settings)))


def said(response):
    m = response.message
    return m.content, [(c.name, c.arguments, c.raw_arguments) for c in m.tool_calls]


def tokens_of(llama, messages, tools=TOOLS):
    return tokenize_prompt(llama, render_pieces(messages, tools), add_bos=False)


def next_logits(llama, tokens):
    """Evaluate a prompt as a call would (reusing what the cache holds) and return the next token's logits."""
    kept = llama.reuse(tokens)
    llama.eval(tokens[kept:])
    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).copy()


NOTES = (
    "<|im_start|>system\nYou are a helpful assistant. "
    + "Notes about loops, tools and the weather in many cities. " * 40
)


@pytest.mark.slow  # the real model
def test_a_prompt_read_partly_from_the_cache_gives_the_same_logits_as_a_fresh_evaluation(llama):
    # at 96 tokens of these notes (300 too, not 24 or 48), a last token evaluated alone gets logits up to 0.56 away
    # from a fresh evaluation's (the portable AVX2 build, measured); a batch of two or more tokens matches it exactly,
    # whatever the split. 96, not more: the test evaluates the prompt six times over
    tokens = llama.tokenize(NOTES.encode(), add_bos=False, special=True)[:96]
    fresh = next_logits(llama, tokens)
    again = next_logits(llama, tokens)  # the whole prompt is cached
    # llama.cpp's kernels for a batch of one token differ in the last bits from those for more, so
    # every split, the one that leaves a single token included, must evaluate batches of two or more
    for cut in (len(tokens) - 1, len(tokens) - 2, len(tokens) // 2, 3):
        llama.forget()
        next_logits(llama, tokens[:cut])
        assert np.array_equal(next_logits(llama, tokens), fresh), cut
    assert np.array_equal(again, fresh)


@pytest.mark.slow  # the real model
def test_a_warm_run_answers_exactly_as_a_cold_one_and_reads_its_prefix_from_the_cache(provider, llama):
    warm = [ask(provider, RUN[:1]), ask(provider, RUN)]
    llama.forget()
    cold = ask(provider, RUN)
    assert said(warm[1]) == said(cold)
    assert warm[1].usage.input_tokens == cold.usage.input_tokens
    assert cold.usage.cache_read_tokens == 0
    # all of the last call's prompt; its reply (generated a token at a time) and what follows are evaluated
    assert warm[1].usage.cache_read_tokens == warm[0].usage.input_tokens


@pytest.mark.slow  # the real model
def test_an_edit_or_a_fork_evaluates_only_what_changed(provider, llama):
    ask(provider, RUN)
    edited = (*RUN[:2], RUN[2].model_copy(update={"content": '{"temperature": 3.0, "condition": "snow"}'}))
    shared = longest_prefix(tokens_of(llama, RUN), tokens_of(llama, edited))
    after_edit = ask(provider, edited)
    assert after_edit.usage.cache_read_tokens == shared
    assert after_edit.usage.input_tokens - shared > 0
    fork = ask(provider, RUN[:1])  # back to the first step: all of it is cached
    assert fork.usage.cache_read_tokens == fork.usage.input_tokens - 2


@pytest.mark.slow  # the real model
def test_another_conversation_in_between_does_not_cost_a_run_its_cache(provider, llama):
    first = ask(provider, RUN)
    other = (SystemMessage(content="You answer in French. " * 8), UserMessage(content="Bonjour, ça va ?"))
    ask(provider, other, tools=())
    back = ask(provider, RUN)
    assert back.usage.cache_read_tokens == first.usage.input_tokens - 2
    llama.forget()
    assert said(back) == said(ask(provider, RUN))


@pytest.mark.slow  # the real model
def test_a_shorter_conversation_in_between_keeps_the_longer_ones_saved_state(provider, llama):
    rome = ToolCall(id="call_2", name="get_weather", arguments={"city": "Rome"})
    longer = (
        UserMessage(content="What is the weather in Paris and in Rome?"),
        *RUN[1:],
        AssistantMessage(tool_calls=(rome,)),
        ToolMessage(tool_call_id="call_2", name="get_weather", content='{"temperature": 24.0, "condition": "sunny"}'),
    )
    first = ask(provider, longer)
    # the same tools, another question: it shares the system prompt, then differs, and is much shorter
    shorter = (UserMessage(content="What is 12 * 12?"),)
    short = ask(provider, shorter)
    assert 0 < short.usage.cache_read_tokens < short.usage.input_tokens < first.usage.input_tokens
    # the longer conversation goes on: its whole last prompt comes from its saved state, its new turn is evaluated
    went_on = (*longer, AssistantMessage(content="Paris is cloudy, Rome is sunny."), UserMessage(content="And Tokyo?"))
    back = ask(provider, went_on)
    assert back.usage.cache_read_tokens == first.usage.input_tokens
    short_again = ask(provider, shorter)  # and the shorter one's own state was kept in turn
    assert short_again.usage.cache_read_tokens == short.usage.input_tokens - 2
    llama.forget()
    assert said(back) == said(ask(provider, went_on))


@pytest.mark.slow  # the real model
def test_two_threads_on_the_one_model_get_their_own_answers(provider, llama):
    other = (UserMessage(content="What is 12 * 12?"),)
    expected = [said(ask(provider, RUN)), said(ask(provider, other))]
    results: list = [None, None]

    def turn(i, messages):
        results[i] = said(ask(local.LocalProvider(), messages))

    threads = [threading.Thread(target=turn, args=(i, m)) for i, m in enumerate((RUN, other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert results == expected


@pytest.mark.slow  # the real model
def test_the_answer_and_the_tool_call_are_the_models_own_choice(provider, llama):
    response = ask(provider, RUN, max_tokens=48)
    grammar = response.wire.request["grammar"]
    assert "get_weather" in grammar and "calculator" in grammar
    prompt = response.wire.request["prompt"]
    assert prompt.rsplit("<|im_start|>", 1)[1].startswith("assistant\n")  # the model's own turn, left open
    assert "<|im_end|>" not in prompt.rsplit("<|im_start|>", 1)[1]
    assert response.message.content or response.message.tool_calls


@pytest.mark.slow  # the real model
def test_a_saved_state_evicted_while_switching_to_it_still_gives_the_cold_answer(provider, llama, monkeypatch):
    from agentcore.providers import llama_state

    # room for one saved state only: saving the conversation being left evicts the one about to be loaded
    monkeypatch.setattr(llama_state, "SAVED_STATE_BYTES", 1)
    other = (SystemMessage(content="You answer in French. " * 8), UserMessage(content="Bonjour, ça va ?"))
    first = ask(provider, RUN)
    other_warm = ask(provider, other, tools=())
    back = ask(provider, RUN)
    assert back.usage.cache_read_tokens == first.usage.input_tokens - 2  # read from the saved state
    other_back = ask(provider, other, tools=())  # the next call, from the other conversation
    llama.forget()
    assert said(back) == said(ask(provider, RUN))
    llama.forget()
    assert said(other_back) == said(other_warm) == said(ask(provider, other, tools=()))
