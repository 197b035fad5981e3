"""A conversation with a user in the playground: who wrote each user turn, and the user's next turn after each answer.

The person at the page plays the user (`human`): after each answer the page waits for their next turn. A simulated
user (a persona, a goal and a model, agentcore.testing.users) drafts its turn into the same box, one turn at a time:
the conversation pauses there, and the person sends the draft as it is (the simulator's turn) or types over it (the
person's, over the simulator's). Either way the turn is recorded with its author, and the agent answers it.
"""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from agentcore.compare import parse_spec
from agentcore.errors import AgentcoreError
from agentcore.messages import UserAuthor, UserMessage
from agentcore.providers import create_provider
from agentcore.run import Run
from agentcore.steps import HUMAN, Conversation, UserSpec
from agentcore.testing import users

from . import actions, safe
from .state import Session, get_session, get_store, on_run_changed

TURN_KEY = "conversation_turn"  # the user's next turn, typed or drafted by the simulator
DRAFT_KEY = "_conversation_draft"  # (run id, the simulator's text, its model, its run id) while a draft is offered
PERSONA_KEY, GOAL_KEY, MODEL_KEY = "sim_persona", "sim_goal", "sim_model"
PERSON = UserSpec(persona="The person at the playground.", goal="Their own.", model=HUMAN)


def author_badge(run: Run, i: int) -> str | None:
    """A user turn's author as a badge (`script`, `simulator openai:gpt-4o-mini`, `person`); None for any other."""
    m = run.messages[i] if 0 <= i < len(run.messages) else None
    if not isinstance(m, UserMessage) or m.author is None:
        return None
    return f":orange-badge[:material/person: {safe.inline(m.author.words)}]"


def waiting(run: Run | None) -> bool:
    """Whether the run waits for the user's next turn: the agent answered and the conversation was not ended."""
    if run is None or run.stop_reason != "answer" or run.next_phase != "done":
        return False
    return run.conversation is None or run.conversation.ended_by is None


def send_turn() -> None:
    """Append the turn in the box as the user's, with its author, and have the agent answer it."""
    session = get_session()
    run = session.run
    text = (st.session_state.get(TURN_KEY) or "").strip()
    if not waiting(run):
        return
    if not text:
        session.notice = "Type the user's next turn first."
        return
    draft = st.session_state.get(DRAFT_KEY)
    drafted = draft is not None and draft[0] == run.id
    if drafted and draft[1] == text:
        author = UserAuthor(kind="simulator", model=draft[2], run_id=draft[3])
    else:
        author = UserAuthor(kind="person", typed_over=draft[2] if drafted else None)
    if run.conversation is None:  # the person played the user from the start: the prompt was theirs
        run.conversation = Conversation(user=PERSON)
        first = next(k for k, m in enumerate(run.messages) if isinstance(m, UserMessage))
        run.messages[first] = run.messages[first].model_copy(update={"author": UserAuthor(kind="person")})
    if author.kind == "simulator":
        run.conversation.simulated_turns += 1
    run.append(UserMessage(content=text[: users.MAX_TURN_CHARS], author=author))
    run.stop_reason = None
    st.session_state[TURN_KEY], st.session_state[DRAFT_KEY] = "", None
    on_run_changed(run)
    actions.start_run_to_end()


def draw_turn() -> None:
    """Ask the simulated user for its next turn: drafted into the box for the person to send or type over, or the
    conversation ended with its reason. Its call is a run of its own, kept and linked to this one."""
    session = get_session()
    run = session.run
    if not waiting(run):
        return
    try:
        spec = UserSpec(
            persona=st.session_state.get(PERSONA_KEY) or "",
            goal=st.session_state.get(GOAL_KEY) or "",
            model=st.session_state.get(MODEL_KEY) or "",
        )
        users.check(spec)
        if spec.human:
            raise AgentcoreError("the simulated user needs a model, PROVIDER:MODEL")
        parsed = parse_spec(spec.model)
        options = users.simulator_options(parsed.provider)
        provider = create_provider(parsed.provider, parsed.model, base_url=parsed.base_url, **options)
    except ValidationError as exc:
        session.notice = f"The simulated user: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}"
        return
    except AgentcoreError as exc:
        session.notice = f"The simulated user: {exc}"
        return
    if run.conversation is None or run.conversation.user.human:
        run.conversation = Conversation(user=spec)
    turn = sum(isinstance(m, UserMessage) for m in run.messages)
    sim, said = users.simulate_turn(provider, spec, run, seed=spec.seed + turn)
    run.conversation.simulator_runs.append(sim.id)
    try:
        get_store().save_run(sim)
    except Exception as exc:  # noqa: BLE001 - a failing store must not stop the conversation; it is shown instead
        session.store_error = f"the simulator's run could not be saved: {type(exc).__name__}: {exc}"
    if isinstance(said, users.Ending):
        run.conversation.ended_by, run.conversation.reason = "simulator", said.reason
        run.conversation.note = said.note
        session.notice = f"The simulated user ended the conversation: {said.reason}" + (
            f" ({said.note})" if said.note else ""
        )
    else:
        st.session_state[TURN_KEY] = said
        st.session_state[DRAFT_KEY] = (run.id, said, users.label(spec), sim.id)
    on_run_changed(run)


def render_conversation(session: Session) -> None:
    """After an answer: the box for the user's next turn, Send, and the simulated user's form and Draw."""
    run = session.run
    if not waiting(run):
        if run is not None and run.conversation is not None and run.conversation.ended_by is not None:
            st.caption(safe.inline(f"Conversation: {run.conversation.words()}"))
        return
    with st.container(border=True, key="conversation"):
        draft = st.session_state.get(DRAFT_KEY)
        if draft is not None and draft[0] == run.id:
            st.caption(f"The simulated user ({safe.inline(draft[2])}) drafted this turn: send it, or type over it.")
        st.text_area("Your turn as the user", key=TURN_KEY, height=80, placeholder="What the user says next…")
        st.button("Send", key="send_turn", type="primary", icon=":material/send:", on_click=send_turn)
        with st.expander("Simulated user", expanded=False):
            st.text_input("Persona", key=PERSONA_KEY, placeholder="A busy parent who writes short messages.")
            st.text_input("Goal", key=GOAL_KEY, placeholder="Book a table for 4 on Friday at 19:00.")
            st.text_input("Model", key=MODEL_KEY, placeholder="PROVIDER:MODEL, e.g. local or openai:gpt-4o-mini")
            st.button("Draw its next turn", key="draw_turn", icon=":material/smart_toy:", on_click=draw_turn)
