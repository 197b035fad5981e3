"""Which step broke it? on a run's Steps view: the run forked before each step, each fork continued N times, and a
chart of the pass rate by fork step with its intervals, the step to blame highlighted (agentcore.testing.blame)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.run import Run
from agentcore.testing.blame import MAX_CALLS, Blame, Grader, blame, own_spec
from agentcore.testing.runner import parse_config

from . import safe
from .open_run import follow_open, open_on_click
from .state import Session, get_store

ASKED_KEY = "blame_asked"  # session_state: run id -> Asked
MAX_FORM_TRIALS = 50


@dataclass
class Asked:
    """What a person asked of one run, and what came of it: the blame, or why there is none."""

    trials: int
    config: str
    expect: str
    found: Blame | None = None
    error: str | None = None
    pending: bool = True


def _asked() -> dict[str, Asked]:
    return st.session_state.setdefault(ASKED_KEY, {})


def _ask(run_id: str) -> None:
    """The form's callback: keep what was asked; the page runs it as it draws, under a spinner."""
    state = st.session_state
    trials, config = int(state.get("blame_trials") or 5), str(state.get("blame_config") or "").strip()
    _asked()[run_id] = Asked(trials, config, str(state.get("blame_expect") or ""))


def _carry_out(run: Run, asked: Asked) -> None:
    asked.pending = False
    try:
        spec = parse_config(asked.config) if asked.config else None
        found = blame(run, Grader.of_text(asked.expect), spec=spec, trials=asked.trials, max_calls=MAX_CALLS)
    except AgentcoreError as exc:
        asked.error = str(exc)
        return
    store = get_store()
    for fork in found.runs:
        store.save_run(fork)
    asked.found = found


def chart(found: Blame) -> go.Figure:
    """The pass rate by fork step, each with its 95% interval; the blamed step's point in another colour."""
    fig = go.Figure()
    steps = [r.step for r in found.rates]
    rates = [r.rate for r in found.rates]
    fig.add_scatter(
        x=steps,
        y=rates,
        mode="lines+markers",
        name="pass rate",
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [r.interval[1] - r.rate for r in found.rates],
            "arrayminus": [r.rate - r.interval[0] for r in found.rates],
        },
        customdata=[[r.passed, r.trials, step == found.blamed] for r, step in zip(found.rates, steps, strict=True)],
        hovertemplate="fork before step %{x}: %{customdata[0]}/%{customdata[1]} passed<extra></extra>",
        marker={"size": 9},
    )
    if found.blamed is not None:
        at = steps.index(found.blamed)
        fig.add_scatter(
            x=[found.blamed], y=[rates[at]], mode="markers", name=f"blamed: step {found.blamed}", marker={"size": 16}
        )
    fig.update_layout(
        title="Pass rate by fork step (95% intervals)",
        xaxis={"title": "fork before step", "dtick": 1},
        yaxis={"title": "pass rate", "range": [-0.05, 1.05]},
        height=320,
        margin={"t": 50, "b": 45},
    )
    return fig


def _show(asked: Asked) -> None:
    if asked.error is not None:
        st.error(safe.inline(asked.error))
        return
    found = asked.found
    if found is None:
        return
    if found.run_passed:
        st.success(safe.inline(f"This run passes {found.grader}: there is nothing to blame."))
        return
    st.plotly_chart(chart(found), key="blame_chart")
    st.caption(
        safe.inline(
            f"{found.forks} forks on {found.config}, {found.plan.trials} trials each, in {found.wall_s:.1f} s; "
            f"every fork is saved under this run (Runs page)."
        )
    )
    _open_fork(found)
    if found.alike and found.plan.trials > 1:
        st.info("Every trial of each fork made the same run: raise the temperature to sample.")
    if found.blamed is None:
        st.warning("No step to blame: the forks fail as often as the run does.")
        return
    st.markdown(safe.markdown(f"**Blamed: step {found.blamed}**, where the pass rate falls by {found.fall:.2f}."))
    if found.reply is not None:
        st.markdown(safe.markdown(f"This run's step {found.blamed}: `{found.reply.text}`"))
    for reply in found.instead:
        st.markdown(safe.markdown(f"Passing continuations there ({reply.count}): `{reply.text}`"))


def _open_fork(found: Blame) -> None:
    """Each point opens its forks: pick a fork step and one of its trials, and open that run in the playground."""
    left, right = st.columns(2)
    step = left.selectbox("Fork step", [r.step for r in found.rates], key="blame_fork_step")
    ids = next((r.run_ids for r in found.rates if r.step == step), ())
    chosen = right.selectbox(
        "Trial", list(ids), key="blame_fork_run", format_func=lambda rid: f"trial {ids.index(rid) + 1}: run {rid}"
    )
    st.button("Open this fork", key="blame_open", on_click=open_on_click, args=("blame_open", get_store(), chosen))


def render_blame(session: Session) -> None:
    """The form and, once asked, the chart; shown for a run that has ended."""
    run = session.run
    if run is None or not run.steps or not run.finished:
        return
    follow_open("blame_open")
    asked = _asked().get(run.id)
    with st.expander("Which step broke it?", expanded=asked is not None):
        with st.form("blame_form"):
            left, middle = st.columns(2)
            left.number_input("Trials per fork", 1, MAX_FORM_TRIALS, 5, key="blame_trials")
            middle.text_input("Configuration", value=own_spec(run).name, key="blame_config", help=_CONFIG_HELP)
            st.text_input("Expected text in the answer", key="blame_expect")
            st.form_submit_button("Which step broke it?", on_click=_ask, args=(run.id,))
        if asked is not None and asked.pending:
            with st.spinner("Forking before each step and going on from each…"):
                _carry_out(run, asked)
        if asked is not None:
            _show(asked)


_CONFIG_HELP: Any = "`PROVIDER[:MODEL][@BASE_URL]` the forks go on with; for scripted the model is the scenario."
