"""Annotate a step or a tool call, list a step's labels, and make a labelled step with a correct call a test.

Drawn under a step in the playground's Steps view and under a run on the Runs page. Everything a person
typed here (labels, notes, a tool's name and arguments) is drawn inert through ui.safe.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import streamlit as st

from agentcore.annotations import (
    LABELS,
    MAX_NOTE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    Annotation,
    make_annotation,
    step_calls,
)
from agentcore.errors import AgentcoreError, TranscriptError
from agentcore.exports import export_test
from agentcore.run import Run
from agentcore.steps import StepRecord
from agentcore.store.runs import DEFAULT_PATH, Store
from agentcore.testing.labelled import from_annotation
from agentcore.transcript import read_json, write_atomic

from . import safe
from .page_state import Notice, PageState, TestsState
from .state import get_session, get_store

TESTS_ENV = "AGENTCORE_TESTS"
# beside the runs database in the user's agentcore folder, as the Tests page keeps its tests
DEFAULT_TESTS_FOLDER = str((DEFAULT_PATH.parent / "tests").expanduser())
STEP = "the step"
MAX_ARGUMENT_CHARS = 20_000


@dataclass
class AnnotateState(PageState):
    """What the last annotate, remove or make-a-test action said, drawn where it was pressed."""

    KEY: ClassVar[str] = "annotate_state"
    notice: tuple[str, Notice] | None = None  # (where it was pressed, the notice)


def tests_folder() -> Path:
    """Where a test made here is written: the Tests page's folder, else AGENTCORE_TESTS, else ~/.agentcore/tests."""
    chosen = TestsState.get().widgets.get("tests_folder")
    return Path(chosen or os.environ.get(TESTS_ENV) or DEFAULT_TESTS_FOLDER).expanduser()


def _refresh(store: Store, run_id: str) -> None:
    # the playground's run carries its labels too, so its transcript export holds them
    run = get_session().runs.get(run_id)
    if run is not None:
        run.annotations = store.annotations(run_id)


def _say(where: str, kind: str, text: str) -> None:
    AnnotateState.get().notice = (where, (kind, text))


# -- actions (callbacks change state; the page redraws from it) ---------------------------


# each field's value when the form is empty: what Save leaves it at
_EMPTY = {"labels": [], "tags": "", "score": None, "note": "", "call_name": "", "call_args": ""}


def _form_key(where: str, run_id: str, step: int) -> str:
    """The form's widget keys' prefix: one form per run and step, so what was typed for one step never shows on
    another's (a label copied onto the next step would be counted twice in an error analysis)."""
    return f"annotate_{where}_{run_id}_{step}_"


def _place(where: str, step: int) -> str:
    """Where a notice is shown: the page and the step, so it is not shown under another step."""
    return f"{where}#{step}"


def _annotate(store: Store, run_id: str, step: int, where: str) -> None:
    state = st.session_state
    key = _form_key(where, run_id, step)
    target = state.get(key + "target") or STEP
    tags = [t for t in re.split(r"[,\n]", state.get(key + "tags") or "") if t.strip()]
    name = (state.get(key + "call_name") or "").strip()
    try:  # read within every reader's limits: a paste nested thousands deep is refused, not a RecursionError
        arguments = read_json(state.get(key + "call_args") or "{}") if name else None
    except TranscriptError as exc:
        _say(_place(where, step), "error", f"Not saved: the correct call's arguments are {exc}")
        return
    if name and not isinstance(arguments, dict):
        _say(
            _place(where, step),
            "error",
            'Not saved: the correct call\'s arguments are a JSON object, like {"city": "Paris"}',
        )
        return
    try:
        annotation = make_annotation(
            step=step,
            tool_call_id=None if target == STEP else target,
            labels=list(state.get(key + "labels") or []),
            tags=tags,
            score=state.get(key + "score"),
            note=state.get(key + "note") or "",
            correct_call={"name": name, "arguments": arguments} if name else None,
        )
        store.annotate(run_id, annotation)
    except AgentcoreError as exc:
        _say(_place(where, step), "error", f"Not saved: {exc}")
        return
    _refresh(store, run_id)
    for field, empty in _EMPTY.items():  # set, not deleted: a form's widget keeps a deleted key's value
        state[key + field] = empty
    _say(_place(where, step), "success", f"Annotated {annotation.target}.")


def _remove(store: Store, run_id: str, annotation_id: str, where: str) -> None:
    try:
        store.delete_annotation(run_id, annotation_id)
    except AgentcoreError as exc:
        _say(where, "error", str(exc))
        return
    _refresh(store, run_id)
    _say(where, "success", "Annotation removed.")


def _make_test(store: Store, run_id: str, annotation: Annotation, where: str) -> None:
    folder = tests_folder()
    try:
        test = from_annotation(store.read_run(run_id), annotation)
        folder.mkdir(parents=True, exist_ok=True)
        slug = re.sub(r"[^a-z0-9]+", "-", annotation.summary().lower()).strip("-")[:40] or "labelled"
        path = folder / f"step-{annotation.step}-{slug}-{run_id}.json"
        write_atomic(path, export_test(test))
    except (AgentcoreError, OSError) as exc:
        _say(where, "error", f"No test made: {exc}")
        return
    _say(
        where,
        "success",
        f"Saved test {test.name!r} as {path}: it expects {annotation.correct_call.text} at step {annotation.step}, "
        "so it fails on this run; run it on the Tests page.",
    )


# -- drawing ------------------------------------------------------------------------------


def _call_label(calls: dict[str, str], target: str) -> str:
    return STEP if target == STEP else f"call {target}: {calls.get(target, '')}"


def _form(store: Store, run: Run, step: StepRecord, where: str) -> None:
    key = _form_key(where, run.id, step.index)
    calls = {c.id: f"{c.name}({c.arguments_text})"[:80] for c in step_calls(run.messages, step.message_count)}
    with st.form(key=key + "form", border=False):
        st.selectbox(
            "Annotate", [STEP, *calls], key=key + "target", format_func=lambda t: safe.plain(_call_label(calls, t))
        )
        st.multiselect("Labels", list(LABELS), key=key + "labels", placeholder="wrong tool, looped, good…")
        left, right = st.columns([3, 1])
        left.text_input(
            "Free labels, comma separated",
            key=key + "tags",
            max_chars=MAX_TAGS * (MAX_TAG_CHARS + 2),
            help=f"Your own labels (at most {MAX_TAGS}, {MAX_TAG_CHARS} characters each); the error analysis "
            "can filter on them as tags",
        )
        right.number_input("Score", value=None, key=key + "score", placeholder="none")
        st.text_area("Note", key=key + "note", max_chars=MAX_NOTE_CHARS, height=80)
        left, right = st.columns([1, 2])
        left.text_input("Correct call: tool", key=key + "call_name", placeholder="get_weather", max_chars=200)
        right.text_input(
            "Correct call: arguments (JSON)",
            key=key + "call_args",
            placeholder='{"city": "Paris"}',
            max_chars=MAX_ARGUMENT_CHARS,
        )
        st.form_submit_button(
            "Save annotation",
            key=key + "save",
            on_click=_annotate,
            args=(store, run.id, step.index, where),
            icon=":material/label:",
        )


def _listed(store: Store, run_id: str, annotations: list[Annotation], where: str) -> None:
    for a in annotations:
        cols = st.columns([6, 2, 1])
        who = f" · {safe.inline(safe.plain(a.author))}" if a.author else ""
        # a person's text, and an imported run's: drawn inert, its bidi controls shown as escapes
        cols[0].markdown(f"**{safe.inline(safe.plain(a.target))}** · {safe.inline(safe.plain(a.summary()))}")
        cols[0].caption(f"{safe.inline(safe.plain(a.created_at[:19].replace('T', ' ')))}{who}")
        if a.correct_call is not None:
            cols[1].button(
                "Make this a test",
                key=f"annotate_{where}_test_{a.id}",
                on_click=_make_test,
                args=(store, run_id, a, where),
                icon=":material/checklist:",
                help="A pinned test that expects this call at this step: it fails on this run",
            )
        if a.author in (None, store.owner):
            cols[2].button(
                "Remove", key=f"annotate_{where}_remove_{a.id}", on_click=_remove, args=(store, run_id, a.id, where)
            )


def render_annotations(store: Store, run: Run, step: StepRecord, where: str) -> None:
    """A step's annotations with Make this a test and Remove, and a form to add one; `where` keeps keys apart."""
    notice = AnnotateState.get().notice
    found = [a for a in store.annotations(run.id) if a.step == step.index] if store.exists(run.id) else None
    title = f"Annotations ({len(found)})" if found else f"Annotate step {step.index}"
    here = notice is not None and notice[0] in (where, _place(where, step.index))
    with st.expander(title, expanded=bool(found) or here):
        if here:
            AnnotateState.get().notice = None
            kind, text = notice[1]
            getattr(st, kind)(safe.block(text))
        if found is None:
            st.caption("Annotations are kept with saved runs; this run is not saved yet.")
            return
        _listed(store, run.id, found, where)
        _form(store, run, step, where)


def annotate_step(run: Run, step: StepRecord, where: str) -> None:
    """render_annotations on this session's runs database; a database that cannot be opened is said in a line."""
    try:
        store = get_store()
    except AgentcoreError as exc:
        st.caption(f"Annotations need the runs database: {safe.inline(str(exc))}")
        return
    render_annotations(store, run, step, where)
