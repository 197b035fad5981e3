"""Dashboard: cost, tokens, cache hit rate and the most expensive runs across the runs library, as charts.

The same figures as `agentcore stats` (agentcore.store.stats): each run's step usage and step costs, added up per
day, model and provider. Filters as on the Runs page: search, provider, owner, and a first day.
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from agentcore.accounting import COST_FORMAT
from agentcore.errors import AgentcoreError
from agentcore.store.runs import RunSummary, Store
from agentcore.store.stats import GroupStats, add_up, library_figures, most_expensive, totals
from ui import safe, words
from ui.open_run import follow_open, open_on_click
from ui.state import get_store

ALL = "All"
TOP = 10  # the most expensive runs listed


@st.cache_resource(max_entries=8, show_spinner=False)
def _figures(location: str, fingerprint: tuple, filters: tuple, _store: Store) -> list:
    # read once per library state and filters: on a library of 20,000 runs the reading takes seconds, the
    # charts a moment; the rows are only read, never changed, so every session may share them
    return library_figures(_store, **dict(filters))


def _filters(store: Store) -> dict[str, str | None]:
    search_col, provider_col, owner_col, since_col = st.columns([3, 2, 2, 2])
    search = search_col.text_input("Search", key="dash_search", placeholder="title, prompt, model or id")
    provider = provider_col.selectbox("Provider", [ALL, *store.providers()], key="dash_provider")
    owner = owner_col.selectbox("Owner", [ALL, *store.owners()], key="dash_owner", format_func=safe.plain)
    since = since_col.date_input("Since", value=None, key="dash_since", max_value=date.today())
    return {
        "search": search or None,
        "provider": None if provider == ALL else provider,
        "owner": None if owner == ALL else owner,
        "since": since.isoformat() if since else None,
    }


def _over_time(by_day_model: list[GroupStats], title: str, value, axis: str) -> go.Figure:
    fig = go.Figure()
    for model in sorted({g.key["model"] for g in by_day_model}):
        mine = [g for g in by_day_model if g.key["model"] == model]
        fig.add_bar(x=[g.key["day"] for g in mine], y=[value(g) for g in mine], name=safe.plotly(model))
    fig.update_layout(title=title, barmode="stack", xaxis={"title": "day", "type": "category"}, yaxis={"title": axis})
    return fig


def _bars(groups: list[GroupStats], by: str, title: str, value, axis: str, percent: bool = False) -> go.Figure:
    fig = go.Figure()
    kept = [g for g in groups if value(g) is not None]
    fig.add_bar(x=[safe.plotly(g.key[by]) for g in kept], y=[value(g) for g in kept], name=axis)
    fig.update_layout(title=title, xaxis={"title": by}, yaxis={"title": axis, "tickformat": ".0%" if percent else None})
    return fig


def _table(groups: list[GroupStats]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "model": safe.plain(g.key["model"]),
                "runs": g.runs,
                "steps": g.steps,
                "answered": g.answered_runs,
                "input": g.input_tokens,
                "output": g.output_tokens,
                "cache read": g.cache_read_tokens,
                "cache write": g.cache_write_tokens,
                "cache hit (%)": words.shown(g.cache_hit_rate and g.cache_hit_rate * 100, ".1f"),
                "cost ($)": words.shown(g.cost_usd, COST_FORMAT),
                "$ / answered run": words.shown(g.cost_per_answered_run, COST_FORMAT),
                "p50 step (ms)": words.shown(g.latency_ms(0.5)),
                "p95 step (ms)": words.shown(g.latency_ms(0.95)),
                "budget reached": g.budget_runs,
                "failed": g.failed_runs,
                "estimated steps": g.estimated_steps,
            }
            for g in groups
        ]
    )


def _expensive(store: Store, runs: list[RunSummary]) -> None:
    st.header("The most expensive runs")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "title": safe.plain(r.title or ""),
                    "model": safe.plain(r.models_label),
                    "steps": r.steps,
                    "stop": r.stop_reason or "open",
                    "cost ($)": words.shown(r.cost_usd, COST_FORMAT),
                    "tokens": r.total_tokens,
                    "id": r.id,
                }
                for r in runs
            ]
        ),
        hide_index=True,
        width="stretch",
        key="dash_expensive",
    )
    by_id = {r.id: r for r in runs}
    pick, go_on = st.columns([3, 1], vertical_alignment="bottom")
    chosen = pick.selectbox(
        "Open one of them",
        list(by_id),
        index=None,
        key="dash_open_pick",
        placeholder="Choose a run",
        format_func=lambda k: safe.plain(
            f"{by_id[k].title or k} · {words.shown(by_id[k].cost_usd, COST_FORMAT)} $ · {k}"
        ),
    )
    go_on.button(
        "Open in the playground",
        key="dash_open",
        icon=":material/open_in_new:",
        disabled=chosen is None,
        on_click=open_on_click,
        args=("dash_open", store, chosen),
    )
    follow_open("dash_open")


def main() -> None:
    """Draw the page."""
    st.title("Dashboard")
    try:
        store = get_store()
    except AgentcoreError as exc:
        st.error(safe.block(str(exc)))
        return
    chosen = _filters(store)
    rows = _figures(store.location, store.fingerprint(), tuple(sorted(chosen.items())), store)
    if not rows:
        st.info("No stored runs match these filters." if any(chosen.values()) else "No stored runs yet.")
        return
    by_model = add_up(rows, ["model"])
    whole = totals(by_model)
    answered = sum(g.answered_runs for g in add_up(rows, ["provider"]))
    cols = st.columns(4)
    cols[0].metric("Runs", f"{len(rows):,}")
    cols[1].metric("Answered", f"{answered:,}")
    cols[2].metric("Cost ($)", words.shown(whole["cost_usd"], COST_FORMAT))
    hit = whole["cache_read_tokens"] / whole["input_tokens"] if whole["input_tokens"] else None
    cols[3].metric(
        "Cache hit rate", words.shown(hit and hit * 100, ".1f", prefix="") + ("%" if hit is not None else "")
    )
    if whole["estimated_steps"]:
        st.caption(
            f"{words.plural(whole['estimated_steps'], 'step')} recorded no usage: their tokens (and cost) are "
            "estimated from what they sent, as on the Cost page."
        )
    by_day_model = add_up(rows, ["day", "model"])
    left, right = st.columns(2)
    left.plotly_chart(
        _over_time(by_day_model, "Cost per day, by model", lambda g: g.cost_usd or 0.0, "cost ($)"),
        key="dash_cost_time",
    )
    right.plotly_chart(
        _over_time(by_day_model, "Tokens per day, by model", lambda g: g.input_tokens + g.output_tokens, "tokens"),
        key="dash_tokens_time",
    )
    left, right = st.columns(2)
    by_provider = add_up(rows, ["provider"])
    left.plotly_chart(
        _bars(by_provider, "provider", "Cost per answered run, by provider", lambda g: g.cost_per_answered_run, "$"),
        key="dash_cost_answered",
    )
    right.plotly_chart(
        _bars(by_model, "model", "Cache hit rate, by model", lambda g: g.cache_hit_rate, "hit rate", percent=True),
        key="dash_cache",
    )
    st.header("By model")
    st.dataframe(_table(by_model), hide_index=True, width="stretch", key="dash_models")
    _expensive(store, most_expensive(rows, TOP))


main()
