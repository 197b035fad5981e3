"""Who is using the app, in the sidebar: the name runs are saved under, and a save refused because someone else saved first."""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from . import safe
from .state import LOGIN_NAME, Session, current_user, get_session, keep_as_new_run, valid_name

NAME_KEY = "user_name"


def _on_name() -> None:
    """Take the typed name for this browser session; an unusable one is refused and the old name kept."""
    session = get_session()
    typed = st.session_state.get(NAME_KEY, "")
    if not typed.strip():
        session.user, st.session_state["user_name_error"] = None, None
        return
    try:
        session.user = valid_name(typed)
        st.session_state["user_name_error"] = None
    except ValueError as exc:
        st.session_state["user_name_error"] = f"Name not changed: {exc}."
        st.session_state[NAME_KEY] = session.user or ""


def render_user(sb: DeltaGenerator, session: Session) -> None:
    """The name this session's runs are saved under: from the deployment's header, or typed here."""
    name, source, from_header, teacher = current_user(session)
    if from_header:
        role = ", teacher" if teacher else ""
        sb.caption(f"Signed in as **{safe.inline(name)}** ({safe.inline(source)}{role})")
    else:
        st.session_state.setdefault(NAME_KEY, session.user or "")
        # the operating system's account (root, in a container) is nobody's name: it is not offered as one
        chosen = source != LOGIN_NAME
        sb.text_input(
            "Your name",
            key=NAME_KEY,
            on_change=_on_name,
            placeholder=name if chosen else "type your name",
            help="Runs you save are yours under this name; until you type one, "
            + (f"{name} ({source})." if chosen else f"they are saved under {source}."),
        )
        error = st.session_state.get("user_name_error")
        if error:
            sb.error(safe.block(error), icon=":material/person:")


def render_conflict(sb: DeltaGenerator, session: Session) -> None:
    """When saving the run on screen was refused, a way to keep this page's version of it."""
    if session.conflict is not None and session.conflict == session.current_id:
        sb.button("Keep my version as a new run", key="keep_as_new_run", on_click=keep_as_new_run, width="stretch")
