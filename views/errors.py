"""Error analysis: the labels people put on steps, counted across the stored runs, with a chart.

Read the runs, label each failure by its kind, count the kinds: the most frequent kind is the one to fix
first. Filters keep the runs a provider or a model answered, one person's runs, or the runs with a tag
(a free label on any of their steps), and the labels' source: people, the scanners, or one scanner.
The Scan button runs the scanners (agentcore.store.scanners) over the runs the filters keep; each finding lands
as a label on its step, beside people's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from agentcore.annotations import (
    JUDGE_PREFIX,
    LABELS,
    SCANNER_PREFIX,
    Annotation,
    by_judge,
    by_scanner,
    labels_said,
    ordered_counts,
)
from agentcore.errors import AgentcoreError
from agentcore.run import Run
from agentcore.store.runs import RunSummary, Store
from agentcore.store.scanners import BUILTINS, scan_library
from agentcore.testing.agreement import JudgeReport, judge_report
from ui import safe, words
from ui.open_run import follow_open, open_on_click
from ui.page_state import PageState
from ui.state import get_session, get_store

ALL = "All"
FILTERS = ("provider", "model", "owner", "tag", "source")
PEOPLE, SCANNERS = "people", "scanners"
WIDGETS = {f"errors_{name}": ALL for name in FILTERS}


@dataclass
class ErrorsState(PageState):
    """The error analysis page: only its filters, kept while another page is open."""

    KEY: ClassVar[str] = "errors_state"


BAR_PX = 36  # each label's bar and its gap: a bar a person can read and point at


def _total(counts: list[tuple[str, int]], runs: int) -> str:
    """The labels the bars add up to: the chart's title and the caption's first words."""
    return f"{words.plural(sum(n for _, n in counts), 'label')} across {words.plural(runs, 'run')}"


def _chart(counts: list[tuple[str, int]], title: str) -> go.Figure:
    fig = go.Figure()
    names = [safe.plotly(safe.plain(label)) for label, _ in counts]
    kinds = ["failure" if k in LABELS and k != "good" else "good" if k == "good" else "free label" for k, _ in counts]
    fig.add_bar(
        x=[n for _, n in counts],
        y=names,
        orientation="h",
        name="annotations",
        customdata=kinds,
        text=[n for _, n in counts],
        textposition="auto",
    )
    top, bottom = 50, 45
    fig.update_layout(
        title=title,
        xaxis={"title": "annotations", "dtick": 1 if max((n for _, n in counts), default=1) <= 10 else None},
        yaxis={"autorange": "reversed"},
        height=top + bottom + BAR_PX * max(3, len(counts)),
        margin={"t": top, "b": bottom},
        bargap=0.25,
    )
    return fig


def _rows(labelled: list[tuple[RunSummary, list[Annotation]]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run": safe.plain(r.title or r.id),
                "id": r.id,
                "model": safe.plain(r.models_label),
                "step": a.step,
                "call": safe.plain(a.tool_call_id or ""),
                "labels": safe.plain(", ".join(a.all_labels)),
                "score": a.score,
                "correct call": safe.plain(a.correct_call.text if a.correct_call else ""),
                "note": safe.plain(a.note),
                "by": safe.plain(a.author or ""),
                "source": "scanner" if by_scanner(a) else "person",
            }
            for r, annotations in labelled
            for a in annotations
        ]
    )


def _scan_targets(store: Store, chosen: dict[str, str | None]) -> list[str]:
    """The ids of the runs the filters keep (a label's source aside): what a scan goes over."""
    runs = store.list_runs(provider=chosen["provider"], owner=chosen["owner"], limit=10**9)
    if chosen["model"]:
        runs = [r for r in runs if any(m.model == chosen["model"] for m in r.models)]
    if chosen["tag"]:
        tagged = {r.id for r, _ in store.annotated_runs(tag=chosen["tag"])}
        runs = [r for r in runs if r.id in tagged]
    return [r.id for r in reversed(runs)]


def _ask_scan() -> None:
    st.session_state["errors_scan_go"] = True


def _scan_section(store: Store, chosen: dict[str, str | None]) -> None:
    """The scanners to run, the Scan button, and the scan itself with its progress, when asked for."""
    pick, go_on = st.columns([3, 1], vertical_alignment="bottom")
    names = pick.multiselect(
        "Scanners",
        list(BUILTINS),
        default=list(BUILTINS),
        key="errors_scanners",
        help="; ".join(f"{n}: {s.description}" for n, s in BUILTINS.items()),
    )
    go_on.button(
        "Scan",
        key="errors_scan",
        icon=":material/search:",
        disabled=not names,
        on_click=_ask_scan,
        help="Run the scanners over the runs these filters keep; each finding becomes a label on its step",
    )
    if st.session_state.pop("errors_scan_go", False) and names:
        ids = _scan_targets(store, chosen)
        bar = st.progress(0.0, text=f"Scanning {words.plural(len(ids), 'run')}…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=f"Scanned {done:,} of {total:,} runs")

        try:
            report = scan_library(store, [BUILTINS[n] for n in names], ids, progress)
        except AgentcoreError as exc:
            st.session_state["errors_scan_done"] = ("error", f"The scan stopped: {exc}")
        else:
            st.session_state["errors_scan_done"] = (
                "success",
                f"Scanned {words.plural(report.runs, 'run')}: {report.added:,} findings added, "
                f"{report.removed:,} removed."
                + (
                    f" {words.plural(report.skipped, 'run')} skipped: read already as they stand."
                    if report.skipped
                    else ""
                ),
            )
        st.rerun()
    done = st.session_state.pop("errors_scan_done", None)
    if done is not None:
        (st.success if done[0] == "success" else st.error)(safe.block(done[1]))


def main() -> None:
    """Draw the page."""
    st.title("Error analysis")
    try:
        store = get_store()
    except AgentcoreError as exc:
        st.error(safe.block(str(exc)))
        return
    everything = store.annotated_runs()
    state = ErrorsState.get()
    state.restore(WIDGETS)
    scanners = sorted({a.author for _, found in everything for a in found if by_scanner(a)})
    options = {
        "provider": sorted({m.provider for r, _ in everything for m in r.models}),
        "model": sorted({m.model for r, _ in everything for m in r.models if m.model}),
        "owner": sorted({r.owner for r, _ in everything if r.owner}),
        "tag": sorted({t for _, annotations in everything for a in annotations for t in a.tags}),
        "source": [PEOPLE, SCANNERS, *(a.removeprefix(SCANNER_PREFIX) for a in scanners)],
    }
    chosen = {}
    for col, name in zip(st.columns(len(FILTERS)), FILTERS, strict=True):
        key = f"errors_{name}"
        if st.session_state.get(key) not in (ALL, *options[name]):
            st.session_state[key] = ALL  # a value gone from the library (its runs deleted)
        value = col.selectbox(name.capitalize(), [ALL, *options[name]], key=key, format_func=safe.plain)
        chosen[name] = None if value == ALL else value
    state.keep(WIDGETS)
    _scan_section(store, chosen)
    if not everything:
        st.info(
            "No labelled steps yet: annotate a step in the playground's Steps view or on the Runs page "
            "(a label such as wrong tool or looped), or press Scan, then count the labels here."
        )
        return

    labelled = store.annotated_runs(**chosen)
    annotations = [a for _, found in labelled for a in found]
    if not annotations:
        st.info("No labelled steps match these filters.")
        return
    counts = ordered_counts(annotations)
    failures = sum(1 for a in annotations if any(label != "good" for label in a.labels))
    found = sum(map(by_scanner, annotations))
    total = _total(counts, len(labelled))
    st.caption(
        f"{labels_said(annotations, len(labelled))}; {failures:,} of the annotations label a failure. "
        f"The most frequent failure is the one to fix first. "
        f"Annotations by people: {len(annotations) - found:,}; by scanners: {found:,}."
    )
    st.plotly_chart(_chart(counts, total), key="errors_chart")
    st.dataframe(pd.DataFrame(counts, columns=["label", "annotations"]), hide_index=True, key="errors_counts")
    st.header("Labelled steps")
    st.dataframe(_rows(labelled), hide_index=True, width="stretch", key="errors_steps")
    _open_section(store, labelled)
    _judges_section(store, everything)


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "-"


def _figures(report: JudgeReport) -> list[dict[str, str]]:
    """The judge's agreement with people as rows: each rate beside the counts it is made of."""
    a = report.agreement
    kappa = a.kappa
    label, count = a.majority
    return [
        {"figure": "raw agreement", "value": _share(a.agree, a.n), "counts": f"{a.agree} of {a.n} steps"},
        {
            "figure": "Cohen's kappa",
            "value": "undefined" if kappa is None else f"{kappa.value:.3f}",
            "counts": "both gave every step one label"
            if kappa is None
            else f"95% interval {kappa.low:.3f} to {kappa.high:.3f} (standard error {kappa.se:.3f})",
        },
        {
            "figure": "majority baseline",
            "value": _share(count, a.n),
            "counts": f"{count} of {a.n} labelled {'pass' if label else 'fail'}: a judge always saying so agrees this often",
        },
        {"figure": "TPR (pass)", "value": _share(a.tp, a.tp + a.fn), "counts": f"{a.tp} of {a.tp + a.fn} passes"},
        {"figure": "TNR (fail)", "value": _share(a.tn, a.tn + a.fp), "counts": f"{a.tn} of {a.tn + a.fp} fails"},
    ]


def _judges_section(store: Store, everything: list[tuple[RunSummary, list[Annotation]]]) -> None:
    """Each LLM judge's agreement with people's labels, and each step they disagree on, to open with the judge's call."""
    judges = sorted({a.author.removeprefix(JUDGE_PREFIX) for _, found in everything for a in found if by_judge(a)})
    if not judges:
        return
    st.header("Judges against people")
    name = st.selectbox("Judge", judges, key="errors_judge", format_func=safe.plain)
    report = judge_report(store.annotations_by_run(), name)
    a = report.agreement
    st.caption(
        f"On the {a.n} steps judge {safe.inline(name)} and people both labelled pass (good) or fail (a failure "
        f"label). Cohen's kappa corrects the raw agreement for chance; its interval is kappa ± 1.96 times the "
        f"asymptotic standard error of Fleiss, Cohen & Everitt (1969). The judge gave a verdict on {report.judged} "
        f"steps; {report.no_verdict} had none."
    )
    st.dataframe(_figures(report), hide_index=True, width="stretch", key="errors_judge_figures")
    st.dataframe(
        [
            {"": "labelled pass", "judge pass": a.tp, "judge fail": a.fn},
            {"": "labelled fail", "judge pass": a.fp, "judge fail": a.tn},
        ],
        hide_index=True,
        key="errors_judge_confusion",
    )
    consistency = (
        f"Self-consistency: {report.repeated} steps judged more than once, {report.unanimous} alike every time; "
        f"{report.pairs_agree} of {report.pairs} pairs of verdicts agree."
        if report.repeated
        else "Self-consistency: no step judged more than once (scan again with --again to measure it)."
    )
    people = "; ".join(
        f"{x} and {y}: {b.agree} of {b.n} alike" + ("" if b.kappa is None else f", kappa {b.kappa.value:.3f}")
        for x, y, b in report.between_people
    )
    st.caption(safe.inline(consistency + (f" Between people (the ceiling): {people}." if people else "")))
    if not report.disagreements:
        return
    rows = {f"{r}:{s}": (r, s, p, j, call) for r, s, p, j, call in report.disagreements}
    pick, step, call = st.columns([3, 1, 1], vertical_alignment="bottom")
    chosen = pick.selectbox(
        "Open a disagreement",
        list(rows),
        index=None,
        key="errors_disagreement",
        placeholder="Choose a step people and the judge disagree on",
        format_func=lambda k: safe.plain(
            f"run {rows[k][0]} · step {rows[k][1]} · people: {'pass' if rows[k][2] else 'fail'} · "
            f"judge: {'pass' if rows[k][3] else 'fail'}"
        ),
    )
    found = rows.get(chosen or "")
    step.button(
        "Open the step",
        key="errors_disagreement_step",
        disabled=found is None,
        on_click=_open_disagreement,
        args=(store, found, False),
    )
    call.button(
        "Open the judge's call",
        key="errors_disagreement_call",
        disabled=found is None or found[4] is None,
        on_click=_open_disagreement,
        args=(store, found, True),
    )
    follow_open("errors_disagreement")


def _open_disagreement(store: Store, found: tuple | None, the_call: bool) -> None:
    """Open the step people and the judge disagree on, or the judge's call on it."""
    if found is None:
        return
    run_id, step, people, judge, call = found
    said = f"People labelled step {step} of run {run_id} {'pass' if people else 'fail'}; the judge said "
    said += "pass" if judge else "fail"

    def on_the_step(run: Run) -> None:
        session = get_session()
        if not the_call:
            session.show_step(step)
        session.opened_from = (run.id, said + ("." if the_call else ". The Steps tab below is open on that step."))

    open_on_click("errors_disagreement", store, call if the_call else run_id, then=on_the_step)


def _open_section(store, labelled: list[tuple[RunSummary, list[Annotation]]]) -> None:
    """Pick a labelled step and open its run in the playground on that step."""
    steps = {f"{r.id}:{a.step}": (r, a) for r, found in labelled for a in found}
    pick, go_on = st.columns([3, 1], vertical_alignment="bottom")
    chosen = pick.selectbox(
        "Open a labelled step",
        list(steps),
        index=None,
        key="errors_open_pick",
        placeholder="Choose a run and step",
        format_func=lambda k: safe.plain(
            f"{steps[k][0].title or steps[k][0].id} · step {steps[k][1].step} · {', '.join(steps[k][1].all_labels)}"
        ),
    )
    go_on.button(
        "Open in the playground",
        key="errors_open",
        icon=":material/open_in_new:",
        disabled=chosen is None,
        on_click=_open_step,
        args=(store, *(steps[chosen] if chosen else (None, None))),
    )
    follow_open("errors_open")


def _open_step(store, summary: RunSummary | None, annotation: Annotation | None) -> None:
    """Open the labelled run on its labelled step, saying why it is open."""
    if summary is None or annotation is None:
        return

    def on_the_step(run: Run) -> None:
        session = get_session()
        session.show_step(annotation.step)
        who = "A scanner found at" if by_scanner(annotation) else "Labelled"
        line = f"{who} step {annotation.step}: {', '.join(annotation.all_labels) or 'no label'}"
        if annotation.note:
            line += f" ({annotation.note[:200]})"
        session.opened_from = (run.id, line + ". The Steps tab below is open on that step.")

    open_on_click("errors_open", store, summary.id, then=on_the_step)


main()
