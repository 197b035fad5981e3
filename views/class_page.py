"""Class: a teacher's live view of the class, one row per student (teachers only; its address is /class).

Each student's state in each lesson, their runs in the chosen time with steps, tokens and stop reason,
when they were last active, and a flag on a run that looks stuck. It redraws itself every few seconds
from the runs database, so a Step taken on any app server over the same database shows here: each
redraw asks the database one cheap question (how many runs, the newest save) and reads the runs again
only when the answer moved.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.run import Run
from agentcore.store.access import Teachers
from agentcore.store.runs import RunSummary, Store
from ui import safe, words
from ui.classroom import WINDOWS, StudentRow, class_caption, class_rows, runs_table, since, student_table
from ui.lessons import LESSONS
from ui.open_run import follow_open, open_on_click
from ui.state import current_user, get_session, get_store

LIVE_SECONDS = 2  # how often the page asks the database whether anything changed
ALL_LESSONS = "All lessons"
CACHE_KEY = "class_cache"  # (filters, change mark) -> rows, and each run's stuck flag by (id, saved at)


def _read(store: Store, flags: dict[tuple[str, str], Run | None]) -> Callable[[RunSummary], Run | None]:
    def read(summary: RunSummary) -> Run | None:
        key = (summary.id, summary.updated_at)
        if key not in flags:  # each saved version of a run is read once
            try:
                flags[key] = store.read_run(summary.id)
            except AgentcoreError:
                flags[key] = None
        return flags[key]

    return read


def _rows(store: Store, window: str, lesson_id: str | None) -> tuple[list[StudentRow], list[RunSummary]]:
    """The class's rows, read again only when the database's change mark or the filters moved."""
    cache = st.session_state.setdefault(CACHE_KEY, {"key": None, "rows": None, "runs": None, "read": {}})
    start = since(window)
    key = (start, lesson_id, store.change_mark())
    if cache["key"] != key:
        runs = store.list_runs(since=start, limit=5000)
        leave_out = {store.owner, *Teachers.from_env().names}
        read = _read(store, cache["read"])
        rows = class_rows(runs, read, lesson_id=lesson_id, leave_out=leave_out)
        kept = {(r.id, r.updated_at) for r in runs}
        cache["read"] = {k: v for k, v in cache["read"].items() if k in kept}
        cache.update(key=key, rows=rows, runs=[r for row in rows for r in row.runs])
    return cache["rows"], cache["runs"]


@st.fragment(run_every=LIVE_SECONDS)
def _live(store: Store, window: str, lesson_id: str | None) -> None:
    """The tables and the run picker, redrawn on their own every LIVE_SECONDS."""
    rows, runs = _rows(store, window, lesson_id)
    st.caption(class_caption(rows, runs, LIVE_SECONDS))
    if not rows:
        st.info("No student has saved a run in this time yet: their rows appear here as they start.")
        return
    st.header("Students")
    st.dataframe(pd.DataFrame(student_table(rows, lesson_id)), hide_index=True, width="stretch", key="class_students")
    st.header("Runs")
    st.dataframe(pd.DataFrame(runs_table(runs, rows)), hide_index=True, width="stretch", key="class_runs")
    labels = {r.id: f"{r.owner} · {r.title or '(untitled)'} · {words.plural(r.steps, 'step')} · {r.id}" for r in runs}
    pick, go = st.columns([4, 1], vertical_alignment="bottom")
    chosen = pick.selectbox(
        "Run to open",
        list(labels),
        index=None,
        key="class_open_pick",
        placeholder="Choose a student's run",
        format_func=lambda i: safe.plain(labels.get(i, i)),
    )
    go.button(
        "Open in playground",
        key="class_open",
        icon=":material/open_in_new:",
        disabled=chosen is None,
        on_click=open_on_click,  # a student's run opens as the teacher's own copy of it
        args=("class_open", store, chosen),
        help="Opens your own copy of the run, forked from its end: the student's run stays as they left it",
    )
    follow_open("class_open")


def main() -> None:
    """Draw the page."""
    st.title("Class")
    if not current_user(get_session()).teacher:
        st.error("The class page is for the class's teachers.", icon=":material/lock:")
        return
    try:
        store = get_store()
    except AgentcoreError as exc:
        st.error(safe.block(str(exc)))
        return
    when, which = st.columns(2)
    window = when.selectbox("Time", list(WINDOWS), key="class_window")
    lesson_id = which.selectbox(
        "Lesson",
        [None, *LESSONS],
        key="class_lesson",
        format_func=lambda i: ALL_LESSONS if i is None else f"{list(LESSONS).index(i) + 1}. {LESSONS[i].title}",
    )
    _live(store, window, lesson_id)


main()
