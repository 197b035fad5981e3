"""Runs library: every saved run, search, rename, open in the playground, delete, fork tree, diff, import, export."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from agentcore.accounting import COST_FORMAT
from agentcore.annotations import count_labels
from agentcore.diff import RunDiff, diff_runs
from agentcore.errors import AgentcoreError
from agentcore.exports import (
    ATIF,
    REPLAY,
    WIRE_FORMATS,
    export_body,
    export_filename,
    export_json,
    export_run,
    export_zip,
)
from agentcore.run import Run
from agentcore.sessions import read_import, store_imported
from agentcore.store.runs import RunSummary, Store
from agentcore.telemetry import OTLP_JSON, otel_missing
from ui import safe, words
from ui.annotate_view import render_annotations
from ui.page_state import CompareState, RunsState
from ui.state import get_store, in_app_words, open_stored_run

ALL = "All providers"
EVERYONE = "Everyone"
PLAYGROUND = "views/playground.py"
COMPARE = "views/compare.py"
WIDGETS = {"runs_search": "", "runs_provider": ALL, "runs_made": False}


def _label(r: RunSummary) -> str:
    return f"{r.title or '(untitled)'} · {r.models_label} · {words.plural(r.steps, 'step')} · {r.id}"


def _made_by_app(r: RunSummary) -> bool:
    """Whether the run was made by Run tests or a lesson, not by a person in the playground.

    They are known by the titles they are given: `test NAME · CONFIGURATION` (agentcore.testing.runner)
    and `Lesson: TITLE` (ui.lessons), a fork of a lesson's run included.
    """
    title = r.title or ""
    return title.startswith("Lesson: ") or (title.startswith("test ") and " · " in title)


def _table(runs: list[RunSummary]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "title": r.title or "",
                "provider": r.provider,
                "model": r.model,
                "steps": r.steps,
                "stop": r.stop_reason or "open",
                "tokens": r.total_tokens,
                "cost ($)": words.shown(r.cost_usd, COST_FORMAT),
                "time (s)": round(r.duration_ms / 1000, 2),
                "saved": r.updated_at[:19].replace("T", " "),
                "forked from": f"{r.parent_id} @ step {r.parent_step}" if r.parent_id else "",
                "id": r.id,
            }
            for r in runs
        ]
    )


# -- owners: a shared database lists one's own runs unless asked for everyone's -------------


def _owner_filter(store: Store) -> tuple[str | None, bool]:
    """Whose runs to list (None: everyone's), and whether to show the owner column.

    A database that holds nobody else's runs this user may see shows neither the filter nor the column. A
    student starts on their own runs; a teacher on everyone's, with an owner to pick.
    """
    owners = store.owners()
    others = [o for o in owners if o != store.owner]
    if not others:
        return None, False
    mine = st.toggle(
        f"Only my runs ({safe.inline(store.owner)})",
        key="runs_mine",
        help=f"{words.plural(len(others), 'other person', 'other people')} saved runs here. Only a run's owner "
        "may rename or delete it; opening someone else's run makes your own copy.",
    )
    if mine:
        return store.owner, True
    if st.session_state.get("runs_owner") not in (EVERYONE, *owners):
        st.session_state["runs_owner"] = EVERYONE
    owner = st.selectbox("Owner", [EVERYONE, *owners], key="runs_owner")
    return (None if owner == EVERYONE else owner), True


def _linked_run(store: Store) -> None:
    """A link to one run (`?run=ID`) chooses it, filters cleared; a run this user may not see is refused in words
    that say nothing of it, as for one that does not exist."""
    linked = st.query_params.get("run")
    if not linked or RunsState.get().linked == linked:
        return
    RunsState.get().linked = linked
    if store.summary(linked) is None:
        RunsState.get().notice = ("error", f"No run {linked} here that you may open.")
        return
    _select(linked)
    st.session_state["runs_mine"] = False
    st.session_state["runs_owner"] = EVERYONE
    st.session_state["runs_made"] = True


# -- actions (callbacks change state; the page redraws from it) ---------------------------


def _rename(store: Store, run_id: str) -> None:
    state = RunsState.get()
    key = f"runs_title_{run_id}"
    try:
        store.set_title(run_id, st.session_state.get(key, ""))
        state.run_notice = ("success", "Title saved.")
    except AgentcoreError as exc:
        state.run_notice = ("error", f"Title not saved: {in_app_words(str(exc))}")
        kept = store.summary(run_id)
        st.session_state[key] = (kept.title or "") if kept is not None else ""  # the box shows the title kept


def _delete(store: Store, run_id: str) -> None:
    state = RunsState.get()
    try:
        store.delete_run(run_id)
        state.run_notice = ("success", f"Deleted run {run_id}.")
    except AgentcoreError as exc:
        state.run_notice = ("error", in_app_words(str(exc)))
    state.confirm_delete = None
    st.session_state.pop("runs_selected", None)
    state.widgets.pop("runs_selected", None)


def _confirm_delete(run_id: str | None) -> None:
    RunsState.get().confirm_delete = run_id


def _open(run_id: str) -> None:
    RunsState.get().open_id = run_id


def _select(run_id: str) -> None:
    st.session_state["runs_selected"] = run_id
    st.session_state["runs_search"] = ""
    st.session_state["runs_provider"] = ALL


def _open_in_playground(store: Store, run_id: str) -> None:
    """Make the run current in the playground's session and go there (someone else's as one's own copy)."""
    try:
        open_stored_run(store, run_id)
    except AgentcoreError as exc:
        st.error(f"Cannot open run {safe.inline(run_id)}: {safe.block(str(exc))}")
        return
    st.switch_page(PLAYGROUND)


def _subagents(store: Store, run: Run) -> list[Run]:
    """The stored runs an imported session's subagent links name (a deleted one is left out)."""
    return [store.read_run(link.run_id) for link in run.subagents if store.exists(link.run_id)]


def _import(store: Store, state: RunsState) -> None:
    upload = st.file_uploader(
        "Import a transcript (agentcore JSON, an OpenAI/Anthropic message list, an OpenTelemetry trace: OTLP-JSON "
        "of the GenAI conventions or OpenInference) or another agent's session (an ATIF trajectory, a Claude Code "
        "session, a Codex rollout)",
        type=["json", "jsonl"],
    )
    if upload is None or state.imported == upload.file_id:
        return
    state.imported = upload.file_id
    try:
        imported = read_import(upload.getvalue(), upload.name)
        run, *subagents = store_imported(store, imported)
    except AgentcoreError as exc:
        state.notice = ("error", f"Refused: {exc}")
        return
    _select(run.id)  # shown and chosen, whatever the filters hid: the search, the provider, a lesson's run
    summary = store.summary(run.id)
    if summary is not None and _made_by_app(summary):
        st.session_state["runs_made"] = True
    more = f", with {len(subagents)} subagent runs linked to it" if subagents else ""
    kept = f" {imported.notes}." if imported.notes else ""
    state.notice = ("success", f"Imported {upload.name} as run {run.id}{more}.{kept}")


# -- sections -----------------------------------------------------------------------------


def _show_notice(state: RunsState, which: str) -> None:
    """Draw and clear a notice where it belongs: `notice` under the file box, `run_notice` by the run's buttons."""
    notice = getattr(state, which)
    if notice:
        kind, text = notice
        setattr(state, which, None)
        getattr(st, kind)(safe.block(text))


def _details(store: Store, summary: RunSummary) -> None:
    run_id = summary.id
    st.header(safe.inline(summary.title or "(untitled)"))
    cost = "unknown" if summary.cost_usd is None else words.usd(summary.cost_usd).replace("$", "\\$")
    what = f"{run_id} · {summary.models_label}"
    stop = summary.stop_reason or "open"
    st.caption(
        f"{safe.inline(what)} · {words.plural(summary.steps, 'step')} · stop: {safe.inline(stop)}"
        f" · {summary.input_tokens:,} in / {summary.output_tokens:,} out tokens · cost {cost}"
        f" · created {safe.inline(summary.created_at[:19].replace('T', ' '))}"
    )
    cols = st.columns([4, 1])
    cols[0].text_input("Title", value=summary.title or "", key=f"runs_title_{run_id}")
    cols[1].button("Save title", key=f"runs_rename_{run_id}", on_click=_rename, args=(store, run_id))
    _show_notice(RunsState.get(), "run_notice")  # where the Save title or Delete just pressed was

    cols = st.columns(3)
    cols[0].button("Open in playground", key="runs_open_current", on_click=_open, args=(run_id,), type="primary")
    if RunsState.get().confirm_delete == run_id:
        cols[1].warning(f"Delete run {safe.inline(run_id)} for good?")
        cols[1].button("Yes, delete", key="runs_delete_yes", on_click=_delete, args=(store, run_id))
        cols[2].button("Cancel", key="runs_delete_no", on_click=_confirm_delete, args=(None,))
    else:
        cols[1].button("Delete…", key="runs_delete", on_click=_confirm_delete, args=(run_id,))

    run = store.read_run(run_id)
    with st.expander("Export"):
        st.download_button(
            "Transcript JSON", export_json(run), export_filename(run, "json"), "application/json", key="runs_dl_json"
        )
        st.download_button(
            "Replay (HTML)",
            lambda: export_run(run, REPLAY),  # built on click: a page that steps through the run offline
            export_filename(run, REPLAY),
            "text/html",
            key="runs_dl_html",
            on_click="ignore",
        )
        if otel_missing() is None:
            st.download_button(
                "OpenTelemetry (OTLP-JSON)",
                lambda: export_run(run, OTLP_JSON),  # built on click: the run's GenAI trace, with its messages
                export_filename(run, OTLP_JSON),
                "application/json",
                key="runs_dl_otlp",
                on_click="ignore",
            )
        st.download_button(
            "ATIF trajectory (v1.7)",
            lambda: export_run(run, ATIF, subagents=_subagents(store, run)),  # built on click, subagents embedded
            export_filename(run, ATIF),
            "application/json",
            key="runs_dl_atif",
            on_click="ignore",
        )
        for fmt in WIRE_FORMATS:
            try:
                body = export_body(run, fmt)
            except AgentcoreError as exc:
                st.caption(f"{fmt}: {safe.block(str(exc))}")
                continue
            name = export_filename(run, fmt)
            st.download_button(f"{fmt} request body", body, name, "application/json", key=f"runs_dl_{fmt}")

    if run.steps:
        _compare_from(run)
    _annotations(store, run)
    _fork_tree(store, run_id)
    _diff(store, run, summary)


def _labels(store: Store, run_ids: list[str]) -> list[str]:
    """Each run's labels and how often, `wrong tool ×2, good`, for the table's labels column."""
    labelled = store.annotations_by_run(run_ids)
    counted = {i: count_labels(a) for i, a in labelled.items()}
    return [safe.plain(", ".join(f"{k} ×{n}" if n > 1 else k for k, n in counted.get(i, {}).items())) for i in run_ids]


def _annotations(store: Store, run: Run) -> None:
    if not run.steps:
        return
    st.markdown("**Annotations**")
    labelled = sorted({a.step for a in run.annotations})
    if labelled:
        st.caption("Labelled: " + ", ".join(f"step {n}" for n in labelled))
    numbers = [s.index for s in run.steps]
    first = numbers.index(labelled[0]) if labelled else 0
    chosen = st.selectbox("Step to annotate", numbers, index=first, key=f"runs_annotate_step_{run.id}")
    render_annotations(store, run, run.steps[chosen - 1], "runs")


def _compare_from(run: Run) -> None:
    """Compare from a chosen step: each configuration forks the run just before that step's model call."""
    pick, go = st.columns([1, 2], vertical_alignment="bottom")
    numbers = [s.index for s in run.steps]
    step = pick.selectbox("Compare from step", numbers, key=f"runs_compare_step_{run.id}")
    if go.button(
        "Compare from here",
        key="runs_compare_from",
        icon=":material/compare_arrows:",
        help="Ask that step again on 2 to 4 models side by side, beside what this run did from there",
    ):
        CompareState.prefill_from(run, int(step))
        st.switch_page(COMPARE)


def _fork_tree(store: Store, run_id: str) -> None:
    tree = store.fork_tree(run_id)
    if tree is None or (not tree.children and tree.run.parent_id is None):
        st.caption("No forks: this run has no parent and no branches.")
        return
    st.markdown("**Fork tree**")
    if tree.run.parent_id:
        st.caption(
            f"The oldest stored run was forked from {safe.inline(tree.run.parent_id)}, which is no longer stored."
        )
    for node, depth in tree.walk():
        r = node.run
        here = " ← this run" if r.id == run_id else ""
        where = f" · forked at step {r.parent_step} · {safe.inline(r.models_label)}" if r.parent_id else ""
        cols = st.columns([6, 1, 1])
        name = f"{safe.code(r.id)} {safe.inline(r.title or '')}"
        cols[0].markdown(f"{'&nbsp;' * 6 * depth}{'↳ ' if depth else ''}{name}{where}{here}")
        cols[1].button("View", key=f"runs_view_{r.id}", on_click=_select, args=(r.id,), disabled=bool(here))
        cols[2].button("Open", key=f"runs_tree_open_{r.id}", on_click=_open, args=(r.id,))


def _diff(store: Store, run: Run, summary: RunSummary) -> None:
    others = [r for r in store.list_runs(limit=500) if r.id != run.id]
    if not others:
        return
    st.markdown("**Compare with another run**")
    ids = [r.id for r in others]
    default = next((ids.index(i) for i in _nearest(store, summary) if i in ids), None)
    labels = {r.id: _label(r) for r in others}
    other_id = st.selectbox(
        "Compare with",
        ids,
        index=default,
        format_func=labels.get,
        key=f"runs_diff_{run.id}",
        placeholder="Choose a run to compare with",
    )
    if other_id is None:
        st.caption("No fork, parent or other run of this prompt is stored: choose a run to compare with.")
        return
    base = store.read_run(other_id)
    diff = diff_runs(base, run)
    if diff.related:
        st.caption(safe.block(diff.related))
    st.info(safe.block(diff.summary()))
    st.dataframe(_diff_table(diff, base, run), hide_index=True, width="stretch")


def _nearest(store: Store, summary: RunSummary) -> list[str]:
    """The runs this one is most likely compared with, nearest first: the run it was forked from, its forks, then
    the runs of the same prompt, newest first. An unrelated run (another task, an imported session) is never one."""
    forks = [c.id for c in store.children(summary.id)]
    return [i for i in (summary.parent_id, *forks) if i] + [r.id for r in store.same_prompt(summary.id)]


def _diff_names(a: Run, b: Run) -> tuple[str, str]:
    """The two runs' names for the diff's column titles: their titles, with the ids when the titles alone are the same."""
    name_a, name_b = a.title or a.id, b.title or b.id
    if name_a == name_b:
        name_a, name_b = f"{name_a} ({a.id})", f"{name_b} ({b.id})"
    return name_a, name_b


def _diff_table(diff: RunDiff, a: Run, b: Run) -> pd.DataFrame:
    """One row per aligned message: a mark, then each run's message text, a changed text cut where it differs."""
    name_a, name_b = _diff_names(a, b)
    marks = {"same": "", "changed": "≠", "only_a": "−", "only_b": "+"}
    rows = []
    for r in diff.rows:
        text_a, text_b = r.cells()
        rows.append(
            {
                "change": marks[r.kind],  # a column with no name is a table header a screen reader reads as nothing
                name_a: text_a,
                name_b: text_b,
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    """Draw the page."""
    st.title("Runs")
    try:
        store = get_store()
    except AgentcoreError as exc:
        st.error(safe.block(str(exc)))
        return
    state = RunsState.get()
    teacher = store.viewer.teacher  # a teacher starts on everyone's runs, the lessons' included
    state.restore({**WIDGETS, "runs_made": teacher, "runs_mine": not teacher, "runs_owner": EVERYONE})
    state.restore({"runs_selected": None})
    if state.open_id:
        run_id, state.open_id = state.open_id, None
        _open_in_playground(store, run_id)
    _linked_run(store)
    _import(store, state)
    _show_notice(state, "notice")

    cols = st.columns([3, 1])
    search = cols[0].text_input("Search", key="runs_search", placeholder="title, prompt, model or id")
    provider = cols[1].selectbox("Provider", [ALL, *store.providers()], key="runs_provider")
    owner, show_owner = _owner_filter(store)
    state.keep([*WIDGETS, "runs_mine", "runs_owner"])
    runs = store.list_runs(search or None, None if provider == ALL else provider, owner=owner)
    made = [r for r in runs if _made_by_app(r)]
    show_made = st.toggle(
        f"Show test and lesson runs ({len(made)})",
        key="runs_made",
        disabled=not made,
        help="Runs made by Run tests (a failed test's run) and by the lessons; hidden unless shown",
    )
    if not show_made:
        runs = [r for r in runs if not _made_by_app(r)]
    if not runs and made and not show_made:
        st.info("Only test and lesson runs match: turn on **Show test and lesson runs** to list them.")
        return
    if not runs:
        _show_notice(state, "run_notice")  # the last run was just deleted
        st.info(
            "No runs match."
            if search or provider != ALL or owner
            else "No saved runs yet: runs are saved as they happen."
        )
        return
    table = _table(runs)
    table.insert(len(table.columns) - 1, "labels", _labels(store, [r.id for r in runs]))
    if show_owner:
        table.insert(1, "owner", [r.owner or "" for r in runs])
    st.dataframe(table, hide_index=True, width="stretch")

    ids = [r.id for r in runs]
    by_id = {r.id: r for r in runs}
    if st.session_state.get("runs_selected") not in ids:  # nothing chosen, or a run the filters now hide
        st.session_state["runs_selected"] = ids[0]  # the table's first row, whoever's runs are listed
    selected = st.selectbox("Run", ids, format_func=lambda i: _label(by_id[i]), key="runs_selected")
    state.keep(["runs_selected"])

    chosen = st.multiselect("Export several runs as one zip", ids, format_func=lambda i: _label(by_id[i]))
    if chosen:
        data = export_zip([store.read_run(i) for i in chosen])
        st.download_button(f"Download {len(chosen)} runs (.zip)", data, "runs.zip", "application/zip", key="runs_zip")
    st.divider()
    _details(store, by_id[selected])


main()
