"""A page's "Open in the playground" button over a stored run: one way for every page that lists runs.

A button's callback cannot change page, so opening is two halves: `open_on_click` (the callback) opens the run in
this session (someone else's as one's own copy, ui.state.open_stored_run) and marks the page; `follow_open`, where
the page draws, shows the one line of a run that could not be opened, or goes to the playground.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.run import Run
from agentcore.store.runs import Store

from . import safe
from .state import in_app_words, open_stored_run

PLAYGROUND = "views/playground.py"


def open_on_click(key: str, store: Store, run_id: str | None, then: Callable[[Run], None] | None = None) -> None:
    """The callback of the button `key`: open the run (`then` given the run opened), for `follow_open(key)` to go."""
    if not run_id:
        return
    try:
        run = open_stored_run(store, run_id)
    except AgentcoreError as exc:
        st.session_state[f"{key}_problem"] = in_app_words(str(exc))
        return
    if then is not None:
        then(run)
    st.session_state[f"{key}_go"] = True


def follow_open(key: str) -> None:
    """Where the page draws after the button `key`: the line of a run that could not be opened, or the playground."""
    problem = st.session_state.pop(f"{key}_problem", None)
    if problem:
        st.error(f"Cannot open that run: {safe.block(problem)}")
    if st.session_state.pop(f"{key}_go", False):
        st.switch_page(PLAYGROUND)
