"""The rules of a simulated user at their edges: what the simulator is sent and how it is asked (its model, seed,
token room, the title and turn of its run, the text its end call returns), how it reads the conversation (flipped,
answers merged), what it may say (a detail at the goal's edges, a turn of exactly the longest length, a recital of the
goal's last words, the last answer with text), how a replay keeps the recorded turns, and how each turn of a test
without a user is budgeted. The stand-ins are OpenAI-compatible servers on 127.0.0.1 (support.stand_in)."""

from __future__ import annotations

from support.simulated_user import AGENT_ANSWER, booking_test, calls, ends
from support.stand_in import Reply, StandIn

from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserAuthor, UserMessage
from agentcore.providers.local_chat import DEFAULT_STYLE
from agentcore.steps import SEED_LIMIT, UserSpec
from agentcore.testing import users
from agentcore.testing.expectations import PinnedTest
from agentcore.testing.runner import parse_config, run_matrix

SPEC = UserSpec(persona="A busy parent.", goal="Book a table for 4 people on Friday at 19:00.", model="openai:sim")


def _cell(simulator: StandIn, agent: StandIn, test=None, **options):
    test = test or booking_test(simulator.url)
    return run_matrix([test], [parse_config(f"openai:agent@{agent.url}/v1")], **options).cells[0][0]


# -- how the simulator is asked ----------------------------------------------------------------------------------


def test_the_simulators_call_names_its_model_seed_and_token_room_and_its_run_the_turn_it_writes() -> None:
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as agent,
        StandIn(Reply.chat("Friday."), ends('{"reason": "goal met"}')) as simulator,
    ):
        cell = _cell(simulator, agent, booking_test(simulator.url, max_words=30))
    body = simulator.seen[0].body
    assert body["max_tokens"] == 4 * 30 + 32  # the persona's longest turn, and no more
    assert body["seed"] == 7 and body["model"] == "sim"
    first, ending = cell.run.conversation.runs
    assert first.config.model == "sim" and first.config.seed == 7
    run_id = cell.run.id
    # three user turns said before: the simulator writes the fourth, then its end call is the fifth's
    assert (first.title, ending.title) == (
        f"simulated user · turn 4 of run {run_id}",
        f"simulated user · turn 5 of run {run_id}",
    )
    # the end call's result, as the simulator's own run keeps it
    assert isinstance(ending.messages[-1], ToolMessage)
    assert ending.messages[-1].content == "conversation ended: goal met"


def test_each_trial_seeds_its_user_with_the_tests_seed_plus_its_index_wrapping_at_the_limit() -> None:
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as agent,
        StandIn(ends('{"reason": "goal met"}')) as simulator,
    ):
        cell = _cell(simulator, agent, booking_test(simulator.url, seed=SEED_LIMIT - 1), trials=3)
    # the trials run side by side: each is read from its own simulator run, not from the order of the calls
    assert [t.run.conversation.runs[0].config.seed for t in cell.trials] == [SEED_LIMIT - 1, SEED_LIMIT, 0]
    assert sorted(s.body["seed"] for s in simulator.seen) == [0, SEED_LIMIT - 1, SEED_LIMIT]


def test_an_end_call_with_a_reason_it_does_not_take_is_unclear() -> None:
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as agent,
        StandIn(ends('{"reason": "bored"}')) as simulator,
    ):
        cell = _cell(simulator, agent)
    record = cell.run.conversation
    assert (record.reason, record.ended_by) == ("unclear", "simulator")
    assert record.note == 'end_conversation gave no reason it takes: {"reason": "bored"}'


def test_the_embedded_model_may_write_first_as_a_user_and_every_other_provider_keeps_its_own_settings() -> None:
    assert DEFAULT_STYLE.call_first is True  # the agent's style: a call required first
    assert users.simulator_options("local")["chat_style"].call_first is False
    assert users.simulator_options("local")["chat_style"].__class__ is DEFAULT_STYLE.__class__
    assert users.simulator_options("openai") == {} and users.simulator_options("scripted") == {}


def test_a_person_as_the_user_is_named_human_and_a_model_by_its_provider_and_name_without_its_address() -> None:
    assert users.label(SPEC.model_copy(update={"model": "human"})) == "human"
    assert users.label(SPEC.model_copy(update={"model": "openai:sim@http://127.0.0.1:9/v1"})) == "openai:sim"
    assert users.label(SPEC.model_copy(update={"model": "scripted"})) == "scripted"


# -- how the simulator reads the conversation -------------------------------------------------------------------------


def test_the_simulator_reads_the_agents_words_of_one_turn_as_one_message_and_its_own_turns_as_its_replies() -> None:
    waiting = "(The assistant is waiting for your first message.)"
    call = ToolCall(id="c1", name="lookup", arguments={})
    messages = [
        AssistantMessage(content="Welcome!"),  # the agent speaks before any user turn
        AssistantMessage(content="How can I help?"),
        UserMessage(content="A table, please."),
        AssistantMessage(content="Checking.", tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="lookup", content="free on Friday"),
        AssistantMessage(content="Friday is free."),
    ]
    seen = [(type(m).__name__, m.content) for m in users.flipped(messages)]
    assert seen == [
        ("UserMessage", waiting),
        ("UserMessage", "Welcome!\n\nHow can I help?"),
        ("AssistantMessage", "A table, please."),
        ("UserMessage", "Checking.\n\nFriday is free."),
    ]


def test_a_turn_answered_by_tool_calls_alone_reads_as_an_answer_with_no_text() -> None:
    call = ToolCall(id="c1", name="lookup", arguments={})
    messages = [
        UserMessage(content="A table, please."),
        AssistantMessage(content=None, tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="lookup", content="free"),
        UserMessage(content="Hello?"),
    ]
    seen = [(type(m).__name__, m.content) for m in users.flipped(messages)][1:]
    assert seen == [
        ("AssistantMessage", "A table, please."),
        ("UserMessage", users.SILENT),
        ("AssistantMessage", "Hello?"),
        ("UserMessage", users.SILENT),
    ]


# -- what a simulated turn may say ------------------------------------------------------------------------------


def test_a_goals_details_are_its_numbers_anywhere_and_its_capitalised_words_after_a_sentences_first() -> None:
    assert users.goal_details("Ada wants a table.") == []  # the first word of a sentence is no name
    assert users.goal_details("Book Ada a table.") == ["Ada"]  # the second word is
    assert users.goal_details("4 people. I want Rome") == ["4", "Rome"]  # a number opens a sentence; "I" is no name


def test_a_turn_of_exactly_the_longest_length_is_too_long_and_one_character_shorter_is_not() -> None:
    wordy = SPEC.model_copy(update={"max_words": 2000})
    assert [b.rule for b in users.fidelity(wordy, [], "a" * users.MAX_TURN_CHARS)] == ["too long"]
    assert users.fidelity(wordy, [], "a" * (users.MAX_TURN_CHARS - 1)) == []


def test_a_recital_of_the_goals_last_six_words_leaks_it() -> None:
    spec = SPEC.model_copy(update={"goal": "one two three four five six seven"})
    assert [b.rule for b in users.fidelity(spec, [], "two three four five six seven")] == ["goal leaked"]
    assert users.fidelity(spec, [], "three four five six seven") == []


def test_the_question_that_allows_a_detail_is_the_agents_last_words_not_a_tool_result_after_them() -> None:
    call = ToolCall(id="c1", name="lookup", arguments={})
    before = [
        UserMessage(content="A table, please."),
        AssistantMessage(content="Which day?", tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="lookup", content="calendar loaded"),
        AssistantMessage(content=None, tool_calls=(ToolCall(id="c2", name="lookup", arguments={}),)),
        ToolMessage(tool_call_id="c2", name="lookup", content="still loading"),
    ]
    assert users.fidelity(SPEC, before, "Friday.") == []


def test_a_note_is_cut_to_its_limit_with_an_ellipsis() -> None:
    assert users._cut("a" * 300) == "a" * 300
    assert users._cut("a" * 301) == "a" * 299 + "…"
    assert users._cut("abcdef", limit=5) == "abcd…"


# -- replays and turns ------------------------------------------------------------------------------------------


def _pinned(spec: UserSpec, turns: list[UserMessage], stop: str = "answer"):
    from agentcore.run import Run, RunConfig
    from agentcore.steps import Conversation

    run = Run.start(turns[0].content, RunConfig(provider="openai", model="agent"))
    run.messages[-1] = turns[0]
    for turn in turns[1:]:
        run.messages += [AssistantMessage(content=AGENT_ANSWER), turn]
    run.messages.append(AssistantMessage(content=AGENT_ANSWER))
    run.stop_reason = stop
    run.conversation = Conversation(user=spec, ended_by="simulator", reason="goal met", simulated_turns=1)
    return run


def test_a_replay_keeps_each_recorded_turn_as_it_was_recorded_where_the_test_says_the_same() -> None:
    """A pinned run recorded before turns named their author: the turns the test still says are sent as recorded
    (no author), so the replay matches it; a turn the test now says otherwise is sent as the script's."""
    spec = SPEC.model_copy(update={"model": "openai:sim@http://127.0.0.1:9/v1"})
    recorded = [
        UserMessage(content="Hi, I want to book a table."),
        UserMessage(content="It's for a birthday dinner."),
        UserMessage(content="Friday.", author=UserAuthor(kind="simulator", model="openai:sim")),
    ]
    test = PinnedTest(
        name="booking",
        prompt="Hi, I want to book a table.",
        turns=["It's for a dinner."],
        user=spec.model_dump(),
        pinned=_pinned(spec, recorded),
    )
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent:
        cell = run_matrix([test], [parse_config(f"openai:agent@{agent.url}/v1")]).cells[0][0]
    turns = [(m.content, m.author.kind if m.author else None) for m in cell.run.messages if isinstance(m, UserMessage)]
    assert turns == [("Hi, I want to book a table.", None), ("It's for a dinner.", "script"), ("Friday.", "simulator")]
    assert cell.run.conversation.replayed


def test_a_replay_whose_agent_stops_early_says_before_which_turn() -> None:
    spec = SPEC.model_copy(update={"model": "openai:sim@http://127.0.0.1:9/v1"})
    recorded = [UserMessage(content=t, author=users.SCRIPT) for t in ("Hi.", "More.", "Even more.")]
    test = PinnedTest(
        name="t", prompt="Hi.", turns=["More.", "Even more."], user=spec.model_dump(), pinned=_pinned(spec, recorded)
    )
    with StandIn(Reply.refused()) as agent:  # the agent's first call fails: the run stops on its first turn
        cell = run_matrix([test], [parse_config(f"openai:agent@{agent.url}/v1")]).cells[0][0]
    record = cell.run.conversation
    assert (record.ended_by, record.reason) == ("agent", "agent stopped")
    assert record.note == "the agent's run stopped (error) before turn 2"


def test_each_scripted_turn_of_a_test_without_a_user_has_the_tests_step_budget() -> None:
    """An agent that calls a tool once, then answers: two steps a turn, the test's budget; each turn answered."""
    test = PinnedTest(name="t", prompt="First?", turns=["Second?"], max_steps=2)
    with StandIn(calls("lookup"), Reply.chat("one"), calls("lookup"), Reply.chat("two")) as agent:
        cell = run_matrix([test], [parse_config(f"openai:agent@{agent.url}/v1")]).cells[0][0]
    run = cell.run
    assert run.stop_reason == "answer" and len(run.steps) == 4
    assert [m.content for m in run.messages if isinstance(m, AssistantMessage) and m.content] == ["one", "two"]
