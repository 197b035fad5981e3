"""Cost: tokens per step, the quadratic growth of the input, cost, and what-if curves for trimming and caching."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from agentcore.accounting import COST_FORMAT, PART_LABELS, PARTS, CostReport, account, cache_saving
from agentcore.errors import TranscriptError
from agentcore.exports import export_csv, export_filename
from agentcore.gauge import step_gauges
from agentcore.policies import Compaction, compactions
from agentcore.providers.prices import PriceRef, model_price_ref, parse_price_as, price_choices, run_price_ref
from agentcore.run import Run
from agentcore.steps import models_label
from agentcore.transcript import loads
from agentcore.whatif import PolicyCurves, WhatIf, policy_curves, what_ifs
from ui import safe, words
from ui.page_state import CompareState, CostState
from ui.policy_view import local_window
from ui.state import get_session

OWN_MODEL = "(the run's own model)"
# the settings kept while another page is open, with their first values
WIDGETS = {"cost_price_as": OWN_MODEL, "cost_keep_results": 3, "cost_truncate": 50, "cost_keep_turns": 3}


PAGE_STYLE = "<style>.stMainBlockContainer{padding-top:2rem}</style>"  # the first chart on the first screen


def _uploaded_run() -> Run | None:
    with st.expander("Open a transcript JSON", expanded=st.session_state.get("cost_upload") is not None):
        upload = st.file_uploader("Open a transcript JSON", type=["json"], key="cost_upload")
    if upload is None:
        return None
    try:
        return loads(upload.getvalue())
    except TranscriptError as exc:
        st.error(f"{safe.inline(upload.name)}: {safe.block(str(exc))}")
        return None


def _own_price(run: Run) -> str:
    """What "the run's own model" prices as, in words: one model, or each step's own for a mixed run."""
    if not run.mixed:
        return f"{run_price_ref(run).label} (the run's own model)"
    labels = dict.fromkeys(model_price_ref(run, m).label for m in run.models)
    return f"{' → '.join(labels)} (each step as the model that answered it)"


def _price_ref(run: Run) -> PriceRef | None:
    own = _own_price(run)
    choice = st.selectbox(
        "Price as",
        [OWN_MODEL, *price_choices()],
        key="cost_price_as",
        format_func=lambda c: own if c == OWN_MODEL else c,
        help="Re-price the same token counts as another provider's model, from the genai-prices database.",
    )
    return None if choice == OWN_MODEL else parse_price_as(choice)


def _tokens_chart(report: CostReport, compacted: list[tuple[int, Compaction]] = ()) -> go.Figure:
    steps = [s.index for s in report.steps]
    fig = go.Figure()
    for part in PARTS:
        fig.add_bar(x=steps, y=[s.composition[part] for s in report.steps], name=PART_LABELS[part])
    fig.add_scatter(x=steps, y=[s.output_tokens for s in report.steps], name="output", mode="lines+markers")
    for step, point in compacted:  # where the agent replaced its history with a summary: the drop that follows
        before = f" from {point.tokens_before:,} tokens" if point.tokens_before is not None else ""
        fig.add_vline(
            x=step - 0.5, line_dash="dash", line_color="#495057", annotation_text=f"compacted{before} ({point.by})"
        )
    fig.update_layout(
        barmode="stack",
        xaxis_title="step",
        yaxis_title="tokens",
        title="Tokens per step",
        height=340,
        margin={"t": 40, "b": 40},
    )
    return fig


def _growth_charts(report: CostReport, up_to: int) -> tuple[go.Figure, go.Figure]:
    steps = [s.index for s in report.steps]
    n = list(range(1, len(report.steps) + 1))
    cumulative = go.Figure()
    cumulative.add_scatter(
        x=n, y=[s.cumulative_input_tokens for s in report.steps], mode="markers", name="cumulative input"
    )
    if report.fit is not None:
        cumulative.add_scatter(x=list(range(1, up_to + 1)), y=report.project(up_to), name="fit a + b·n + c·n²")
    cumulative.update_layout(title="Cumulative input tokens", xaxis_title="step", yaxis_title="tokens")
    per_step = go.Figure()
    per_step.add_scatter(x=steps, y=[s.input_tokens for s in report.steps], mode="markers", name="input per step")
    if report.per_step_fit is not None:
        line = report.per_step_fit
        per_step.add_scatter(x=list(range(1, up_to + 1)), y=[line.at(k) for k in range(1, up_to + 1)], name="p + q·n")
    per_step.update_layout(title="Input per step: linear", xaxis_title="step", yaxis_title="tokens")
    return cumulative, per_step


def _cost_chart(report: CostReport) -> go.Figure:
    steps = [s.index for s in report.steps]
    fig = go.Figure()
    fig.add_bar(x=steps, y=[s.cost_usd for s in report.steps], name="cost per step")
    fig.add_scatter(x=steps, y=[s.cumulative_cost_usd for s in report.steps], name="cumulative", yaxis="y2")
    fig.update_layout(
        title=f"Cost (USD, priced as {safe.plotly(report.price_label or '')})",
        xaxis_title="step",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
    )
    # costs are never negative: both axes start at 0 and go up, where autorange padded the line's axis below 0
    money = {"rangemode": "tozero", "autorange": True, "tickformat": "$.2~g"}
    fig.update_layout(
        yaxis={"title": "per step", **money},
        yaxis2={"title": "cumulative", "overlaying": "y", "side": "right", **money},
    )
    return fig


def _what_if_charts(report: CostReport, whatifs: list[WhatIf]) -> list[go.Figure]:
    steps = [s.index for s in report.steps]
    tokens = go.Figure()
    tokens.add_scatter(x=steps, y=[s.cumulative_input_tokens for s in report.steps], name="actual")
    for w in whatifs:
        if w.key != "caching":  # caching sends the same tokens; it changes only their price
            tokens.add_scatter(x=steps, y=w.cumulative_input_tokens, name=w.label)
    tokens.update_layout(title="What-if: cumulative input tokens", xaxis_title="step", yaxis_title="tokens")
    figures = [tokens]
    if report.priced:
        cost = go.Figure()
        cost.add_scatter(x=steps, y=[s.cumulative_cost_usd for s in report.steps], name="actual")
        for w in whatifs:
            cost.add_scatter(x=steps, y=w.cumulative_cost_usd, name=w.label)
        cost.update_layout(title="What-if: cumulative cost (USD)", xaxis_title="step", yaxis_title="USD")
        figures.append(cost)
    return figures


def _savings_table(whatifs: list[WhatIf]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "strategy": w.label,
                "input tokens": sum(w.input_tokens),
                "token saving %": words.number(w.token_saving_pct),
                "cost saving %": words.shown(w.cost_saving_pct),
            }
            for w in whatifs
        ]
    )


def _totals(report: CostReport, cols: list) -> None:
    cols[0].metric("steps", len(report.steps))
    cols[1].metric("input tokens", f"{report.total_input_tokens:,}")
    cols[2].metric("output tokens", f"{report.total_output_tokens:,}")
    total = report.total_cost_usd
    cols[3].metric("cost (USD)", words.usd(total))


def _growth(report: CostReport) -> None:
    st.header("Why it grows quadratically")
    up_to = st.number_input(
        "Project to step", min_value=len(report.steps), value=max(2 * len(report.steps), 20), key="cost_project"
    )
    if report.fit is not None:
        f = report.fit
        st.write(
            f"Cumulative input ≈ a + b·n + c·n² with a = {f.a:,.1f}, b = {f.b:,.1f}, c = {f.c:,.2f}, "
            f"R² = {f.r2:.5f}; projected to step {up_to}: {report.fit.at(up_to):,.0f} tokens."
        )
    st.write(report.explanation())
    left, right = st.columns(2)
    cumulative, per_step = _growth_charts(report, int(up_to))
    left.plotly_chart(cumulative, key="cost_cumulative")
    right.plotly_chart(per_step, key="cost_per_step")


def _cost(report: CostReport) -> None:
    st.header("Cost")
    if report.mixed:
        st.caption(
            f"A mixed run, answered by {safe.inline(models_label(report.models))}: "
            f"its costs are in {safe.inline(report.price_label or 'no known price')}."
        )
    if report.priced:
        st.plotly_chart(_cost_chart(report), key="cost_cost")
    else:
        st.info("No price for this model: pick one under Price as to see the cost.")


def _policy_chart(curves: PolicyCurves, report: CostReport) -> go.Figure:
    """Measured cumulative input beside the same policy's what-if projection and the history sent whole."""
    steps = [s.index for s in report.steps]
    fig = go.Figure()
    totals = curves.cumulative
    fig.add_scatter(x=steps, y=totals["measured"], name=f"measured, with {safe.plotly(curves.label)}")
    fig.add_scatter(x=steps, y=totals["projected"], name="what-if projection of the same policy", line={"dash": "dot"})
    fig.add_scatter(x=steps, y=totals["whole"], name="the same run without it (whole history)", line={"dash": "dash"})
    if any(curves.summariser):
        fig.add_scatter(x=steps, y=totals["summariser"], name="the summariser's own input")
    fig.update_layout(title="Measured against projected: cumulative input", xaxis_title="step", yaxis_title="tokens")
    return fig


def _policies(run: Run, report: CostReport) -> None:
    """For a run made with context policies: measured against projected, the summariser, and a comparison."""
    policies = run.config.policies
    if policies is None or not policies.labels():
        return
    st.header("Context policies")
    st.caption(f"This run was made with {safe.inline(policies.label)}.")
    curves = policy_curves(run, report)
    if curves is not None:
        st.plotly_chart(_policy_chart(curves, report), key="cost_policy")
        st.markdown(f"**{safe.inline(curves.saving)}**")
    calls = [(s.index, c) for s in run.steps for c in s.policy_calls]
    if calls:
        rows = [
            {
                "step": i,
                "summariser": f"{c.provider}/{c.model}",
                "input tokens": c.usage.input_tokens,
                "output tokens": c.usage.output_tokens,
                "cost (USD)": words.shown(c.cost_usd, ".8f"),
            }
            for i, c in calls
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="cost_summariser")
        costs = [c.cost_usd for _, c in calls]
        total = None if any(c is None for c in costs) else sum(costs)
        st.caption(
            f"The summariser read {sum(c.usage.input_tokens for _, c in calls):,} and wrote "
            f"{sum(c.usage.output_tokens for _, c in calls):,} tokens in {words.plural(len(calls), 'call')} "
            f"({words.usd(total)}), charged to the steps above on top of their own input."
        )
    st.button(
        "Compare with and without this policy",
        on_click=_compare_policy,
        args=(run,),
        icon=":material/compare_arrows:",
        key="cost_compare_policy",
    )


def _compare_policy(run: Run) -> None:
    """Set the compare page up with this run's prompt and model twice, the second column with its policies."""
    CompareState.prefill(run)
    CostState.get().open_compare = True


def _dollars(value: float | None) -> str:
    """A cost as the headline says it, its dollar sign kept from Markdown's formulas."""
    return words.shown(value, COST_FORMAT, prefix="\\$")


def _caching(run: Run, report: CostReport, whatifs: list[WhatIf]) -> None:
    """Cache writes and reads per step as reported, against the what-if caching curve."""
    reported = any(s.cache_read_tokens or s.cache_write_tokens for s in report.steps)
    asked = run.config.policies is not None and run.config.policies.cache_breakpoints
    if not (reported or asked):
        return
    st.header("Prompt caching")
    steps = [s.index for s in report.steps]
    caching = next(w for w in whatifs if w.key == "caching")
    fig = go.Figure()
    fig.add_bar(x=steps, y=[s.cache_write_tokens for s in report.steps], name="cache write (reported)")
    fig.add_bar(x=steps, y=[s.cache_read_tokens for s in report.steps], name="cache read (reported)")
    fig.add_scatter(x=steps, y=caching.cache_read_tokens, name="what-if: read", line={"dash": "dot"})
    fig.add_scatter(x=steps, y=caching.cache_write_tokens, name="what-if: write", line={"dash": "dot"})
    fig.update_layout(barmode="group", title="Cached tokens per step", xaxis_title="step", yaxis_title="tokens")
    st.plotly_chart(fig, key="cost_caching")
    saving = cache_saving(run, report) if reported else None
    if saving is not None:
        st.markdown(
            f"**What the cache saved:** {_dollars(saving.saved_usd)} of {_dollars(saving.uncached_usd)} "
            f"({saving.saved_share:.0%}): the run cost {_dollars(saving.cost_usd)} with its cache reads and writes "
            "as reported, against every prompt token billed as plain input."
        )
    if reported and run.config.provider == "local":
        st.caption(
            "The embedded model keeps the prompt it evaluated in memory: a cache read is a prompt token "
            "it did not evaluate again, so a step costs only its new tokens."
        )
    if not reported:
        st.caption(
            "No cached tokens reported yet: a prompt shorter than the model's minimum (1,024 to 4,096 tokens) "
            "is not cached."
        )


def _gauge(run: Run) -> None:
    """Each step's share of the model's context window."""
    gauges = step_gauges(run, window=local_window(run, get_session().config))
    if not gauges or gauges[0].window is None:
        st.caption("The model's context window is not known, so the requests are not gauged against it.")
        return
    st.header("Context window")
    fig = go.Figure()
    fig.add_bar(x=[g.step for g in gauges], y=[100 * (g.share or 0) for g in gauges], name="share of the window")
    fig.add_hline(y=90, line_dash="dot", annotation_text="warning")
    fig.update_layout(
        title=f"Share of the {gauges[0].window:,}-token context window",
        xaxis_title="step",
        yaxis_title="%",
    )
    st.plotly_chart(fig, key="cost_gauge")


def _what_if(run: Run, report: CostReport) -> list[WhatIf]:
    st.header("What if")
    st.caption(
        "These curves are recomputed from the recorded messages, not by calling the model again: "
        "a trimmed run could have taken other steps."
    )
    c1, c2, c3 = st.columns(3)
    keep_results = c1.number_input("Keep the last k tool results", min_value=0, key="cost_keep_results")
    truncate = c2.number_input("Truncate tool results to n tokens", min_value=1, key="cost_truncate")
    keep_turns = c3.number_input("Drop turns older than k steps", min_value=1, key="cost_keep_turns")
    whatifs = what_ifs(
        run, report, keep_results=int(keep_results), truncate_tokens=int(truncate), keep_turns=int(keep_turns)
    )
    for i, fig in enumerate(_what_if_charts(report, whatifs)):
        st.plotly_chart(fig, key=f"cost_what_if_{i}")
    if not report.priced:
        st.caption("Prompt caching changes the price, not the tokens: pick a model under Price as to see its saving.")
    st.dataframe(_savings_table(whatifs), hide_index=True, key="cost_savings")
    if report.priced:
        read = sum(s.cache_read_tokens for s in report.steps)
        cached = f", its {read:,} cache-read tokens billed as they were" if read else ""
        st.caption(f"Each cost saving is against what the run cost, {_dollars(report.total_cost_usd)}{cached}.")
    return whatifs


def _shown_steps(table: pd.DataFrame) -> pd.DataFrame:
    """The step table as the page shows it: a dash for a cost or a price it does not have."""
    shown = table.copy()
    for column in ("cost_usd", "cumulative_cost_usd"):
        shown[column] = [words.shown(c, ".8f") for c in table[column]]
    shown["priced_as"] = [words.text(p) for p in table["priced_as"]]
    return shown


def _step_table(run: Run, report: CostReport) -> None:
    st.header("Every step")
    table = pd.DataFrame(report.rows())
    st.dataframe(_shown_steps(table), hide_index=True, key="cost_steps")
    st.download_button(
        "Download CSV",
        export_csv(report.rows()),  # the numbers as they are: an unknown cost is an empty cell
        file_name=export_filename(run, "cost"),
        mime="text/csv",
        key="cost_csv",
    )


def _report(run: Run) -> None:
    what = models_label(run.models) if run.mixed else f"{run.config.provider}/{run.config.model}"
    mixed = " :orange-badge[mixed run]" if run.mixed else ""
    steps = words.plural(len(run.steps), "step")
    st.write(f"**{safe.inline(run.title or run.id)}** · {safe.inline(what)} · {steps}{mixed}")
    if not run.steps:
        st.info("This run has no steps yet: there is nothing to count.")
        return
    # the price, the totals and the first chart on the first screen (1280×720): a row for the price and totals
    price, *totals = st.columns([2, 1, 1, 1, 1], vertical_alignment="bottom")
    with price:
        report = account(run, _price_ref(run))
    _totals(report, totals)
    st.plotly_chart(_tokens_chart(report, compactions(run)), key="cost_tokens")
    estimated = [s.index for s in report.steps if s.estimated]
    if estimated:  # the notes under the chart they qualify: the chart stays on the first screen
        st.caption(f"Estimated usage (about four characters a token) on {words.numbered('step', estimated)}.")
    if report.price_note:
        st.caption(f"{safe.inline(report.price_note)} (under Price as); costs are shown only for a priced model.")
    _growth(report)
    _cost(report)
    whatifs = _what_if(run, report)
    _policies(run, report)
    _caching(run, report, whatifs)
    _gauge(run)
    _step_table(run, report)


def render() -> None:
    """Draw the page for the current run, or for a transcript opened here."""
    state = CostState.get()
    state.restore(WIDGETS)
    if state.open_compare:
        state.open_compare = False
        st.switch_page("views/compare.py")
    st.html(PAGE_STYLE)
    st.title("Cost")
    st.caption(
        "Every step resends the whole conversation, so the input grows with each step and its sum quadratically."
    )
    run = _uploaded_run() or get_session().run
    if run is None:
        st.info("No run yet: run one in the playground, open one from the runs library, or open a transcript above.")
    else:
        _report(run)
    state.keep(WIDGETS)


render()
