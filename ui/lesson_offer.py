"""What the app offers from a person's stored lessons: the first lesson on a first visit, and on the Lesson page
their own last run of each lesson, so a lesson goes on from its saved run on whichever app server opens the page.

A lesson's run is known by its title ("Lesson: TITLE", a fork's too); only runs the Store's user owns count, so a
teacher, or a classmate where runs are not private, is never put into someone else's lesson.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from agentcore.store.runs import RunSummary, Store

from .classroom import lesson_done
from .lessons import Lesson, get_lesson, lesson_titled
from .state import Session, get_store

SAVED_KEY = "lesson_saved"  # what this session found of the user's saved lesson runs (Saved)
LOOKED_AT = 50  # a person's newest lesson runs read to find where they left off: more than a class makes in a day


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


@dataclass
class Saved:
    """What this browser session found of its user's saved lesson runs.

    Each lesson's saved run is looked for once per session, on its first draw: a lesson restarted here stays
    restarted, and a redraw asks the database nothing.
    """

    placed: bool = False  # the picker was set from the address or the lesson left off, on the page's first draw
    looked: set[str] = field(default_factory=set)  # lessons whose saved run this session looked for
    offers: dict[str, RunSummary] = field(default_factory=dict)  # lesson id -> the user's last run of it, to reopen
    said: str | None = None  # one line about the run just taken up from the database

    @classmethod
    def get(cls) -> Saved:
        """This session's, made on first use."""
        return st.session_state.setdefault(SAVED_KEY, cls())


def _own_lesson_runs(store: Store, lesson: Lesson | None = None) -> list[RunSummary]:
    """The Store user's own runs of `lesson` (of any lesson for None), newest saved first."""
    words = f"Lesson: {lesson.title}" if lesson else "Lesson:"
    found = store.list_runs(search=words, owner=store.owner, limit=LOOKED_AT)
    titled = [(r, lesson_titled(r.title)) for r in found]  # the search's words may also be in another run's prompt
    return [r for r, of in titled if of is not None and (lesson is None or of is lesson)]


def last_lesson_run(store: Store, lesson: Lesson) -> RunSummary | None:
    """The Store user's newest saved run of `lesson` (its fork, once the lesson forked), or None."""
    return next(iter(_own_lesson_runs(store, lesson)), None)


def left_off(store: Store) -> Lesson | None:
    """The lesson the Store user was last in the middle of: that of their newest lesson run, when it is not done."""
    newest = next(iter(_own_lesson_runs(store)), None)
    lesson = lesson_titled(newest.title) if newest else None
    return lesson if newest is not None and lesson is not None and not lesson_done(lesson, newest) else None
