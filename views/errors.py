"""Error analysis: the labels people put on steps, counted across the stored runs, with a chart.

Read the runs, label each failure by its kind, count the kinds: the most frequent kind is the one to fix
first. Filters keep the runs a provider or a model answered, one person's runs, or the runs with a tag
(a free label on any of their steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from agentcore.annotations import LABELS, Annotation, ordered_counts
from agentcore.errors import AgentcoreError
from agentcore.store.runs import RunSummary
from ui import safe, words
from ui.page_state import PageState
from ui.state import get_store

ALL = "All"
FILTERS = ("provider", "model", "owner", "tag")
WIDGETS = {f"errors_{name}": ALL for name in FILTERS}


@dataclass
class ErrorsState(PageState):
    """The error analysis page: only its filters, kept while another page is open."""

    KEY: ClassVar[str] = "errors_state"


def _chart(counts: list[tuple[str, int]], runs: int) -> go.Figure:
    fig = go.Figure()
    names = [safe.plotly(safe.plain(label)) for label, _ in counts]
    kinds = ["failure" if k in LABELS and k != "good" else "good" if k == "good" else "free label" for k, _ in counts]
    fig.add_bar(x=[n for _, n in counts], y=names, orientation="h", name="annotations", customdata=kinds)
    fig.update_layout(
        title=f"Labels across {words.plural(runs, 'run')}",
        xaxis_title="annotations",
        yaxis={"autorange": "reversed"},
        height=120 + 28 * len(counts),
    )
    return fig


def _rows(labelled: list[tuple[RunSummary, list[Annotation]]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run": safe.plain(r.title or r.id),
                "model": safe.plain(r.models_label),
                "step": a.step,
                "call": safe.plain(a.tool_call_id or ""),
                "labels": safe.plain(", ".join(a.all_labels)),
                "score": a.score,
                "correct call": safe.plain(a.correct_call.text if a.correct_call else ""),
                "note": safe.plain(a.note),
                "by": safe.plain(a.author or ""),
                "id": r.id,
            }
            for r, annotations in labelled
            for a in annotations
        ]
    )


def main() -> None:
    """Draw the page."""
    st.title("Error analysis")
    try:
        store = get_store()
    except AgentcoreError as exc:
        st.error(safe.block(str(exc)))
        return
    everything = store.annotated_runs()
    if not everything:
        st.info(
            "No labelled steps yet: annotate a step in the playground's Steps view or on the Runs page "
            "(a label such as wrong tool or looped), then count the labels here."
        )
        return
    state = ErrorsState.get()
    state.restore(WIDGETS)
    options = {
        "provider": sorted({m.provider for r, _ in everything for m in r.models}),
        "model": sorted({m.model for r, _ in everything for m in r.models if m.model}),
        "owner": sorted({r.owner for r, _ in everything if r.owner}),
        "tag": sorted({t for _, annotations in everything for a in annotations for t in a.tags}),
    }
    chosen = {}
    for col, name in zip(st.columns(len(FILTERS)), FILTERS, strict=True):
        key = f"errors_{name}"
        if st.session_state.get(key) not in (ALL, *options[name]):
            st.session_state[key] = ALL  # a value gone from the library (its runs deleted)
        value = col.selectbox(name.capitalize(), [ALL, *options[name]], key=key, format_func=safe.plain)
        chosen[name] = None if value == ALL else value
    state.keep(WIDGETS)

    labelled = store.annotated_runs(**chosen)
    annotations = [a for _, found in labelled for a in found]
    if not annotations:
        st.info("No labelled steps match these filters.")
        return
    counts = ordered_counts(annotations)
    failures = sum(1 for a in annotations if any(label != "good" for label in a.labels))
    st.caption(
        f"{words.plural(len(annotations), 'annotation')} on {words.plural(len(labelled), 'run')}; "
        f"{failures:,} of them label a failure. The most frequent failure is the one to fix first."
    )
    st.plotly_chart(_chart(counts, len(labelled)), key="errors_chart")
    st.dataframe(pd.DataFrame(counts, columns=["label", "annotations"]), hide_index=True, key="errors_counts")
    st.header("Labelled steps")
    st.dataframe(_rows(labelled), hide_index=True, width="stretch", key="errors_steps")


main()
