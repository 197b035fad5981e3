"""What another page sets up on the compare page: each column's model is the one a run's next call would go to."""

from __future__ import annotations

import streamlit as st
from support.runs import priced_run

from agentcore.testing.pinned import propose
from ui.page_state import CompareState


def _stale_scenario():
    """An OpenAI run whose config still names a scripted scenario (a file written before the sidebar cleared it)."""
    run = priced_run([(100, 10, 0, 5.0)])
    run.config = run.config.model_copy(update={"scenario": "weather"})
    assert run.config.next_model.model == "gpt-4o-mini"
    return run


def test_compare_from_a_run_sets_its_columns_on_the_model_its_next_call_goes_to():
    CompareState.prefill(_stale_scenario())
    columns = st.session_state[CompareState.KEY].setup.columns
    assert [(c.provider, c.model) for c in columns] == [("openai", "gpt-4o-mini")] * 2  # not the scenario "weather"


def test_compare_from_a_pinned_test_sets_its_column_on_the_model_its_next_call_goes_to():
    CompareState.prefill_test(propose(_stale_scenario(), name="greeting"))
    columns = st.session_state[CompareState.KEY].setup.columns
    assert [(c.provider, c.model) for c in columns] == [("openai", "gpt-4o-mini")]
