"""The first lesson, offered to someone opening the app for the first time: no runs stored, none on screen."""

from __future__ import annotations

import streamlit as st

from .lessons import get_lesson
from .state import Session, get_store


def first_visit(session: Session) -> bool:
    """Whether this looks like a first visit: no run in this tab, none offered to reopen, none in the store."""
    if session.runs or session.last_run is not None:
        return False
    try:
        return not get_store().list_runs(limit=1)
    except Exception:  # noqa: BLE001 - an unreadable store is shown by the sidebar; the offer just stays away
        return False


def offer_first_lesson(session: Session) -> None:
    """A notice with a link to the first lesson, on a first visit only."""
    if not first_visit(session):
        return
    lesson = get_lesson(None)
    with st.container(border=True, key="lesson_offer"):
        st.markdown(f"**New here?** The one-minute lesson steps the loop for you: *{lesson.goal}*")
        st.page_link("views/lesson.py", label=f"Start the first lesson: {lesson.title}", icon=":material/school:")
