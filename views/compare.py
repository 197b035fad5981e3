"""Compare: one prompt, one system prompt and one tool set on 2 to 4 configurations, side by side.

Step all advances every column one iteration in lockstep; Run all runs each to its end.
Columns run on their own threads, so the page waits for the slowest, not the sum; while
they work, a fragment redraws the columns every half second. API keys are read from the
password boxes on each action and handed to the provider for that action only.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Literal

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from agentcore.compare import MAX_COLUMNS, MIN_COLUMNS, Column, ColumnSpec, Comparison, Origin
from agentcore.compare_report import (
    ExpectedAnswer,
    final_result,
    repeated_summary,
    scenario_expectation,
    stop_words,
)
from agentcore.errors import AgentcoreError
from agentcore.exports import export_bundle, export_filename
from agentcore.messages import Message, reasoning_note, reasoning_sent
from agentcore.providers import FREE_PROVIDERS, REGISTRY, local_available
from agentcore.providers.keys import choose_key
from agentcore.providers.scripted import SCENARIOS
from agentcore.run import Run, RunConfig
from agentcore.steps import ModelRef
from agentcore.transcript import from_dict, to_dict
from ui import compare_users, safe, words
from ui.actions import call_estimate
from ui.messages_view import show_messages
from ui.next_call_view import say_estimate
from ui.page_state import CompareState
from ui.policy_view import with_policies
from ui.state import get_session, get_store, open_stored_run
from ui.tool_registry import available_tools, resolve_tools

PLAYGROUND = "views/playground.py"
POLL_S = 0.5
MAX_STEPS = 100  # the most the Max steps box takes
STATE_COLOURS = {"ready": "blue", "running": "orange", "done": "green", "error": "red"}
SUMMARY_COLUMNS = {
    "config": "configuration",
    "state": "state",
    "steps": "steps",
    "stop_reason": "stop reason",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cost_usd": "cost (USD)",
    "total_ms": "total ms",
    "ms_per_step": "ms per step",
    "tool_errors": "tool errors",
    "final_answer": "final answer",
}


def _state() -> CompareState:
    return CompareState.get()


COLUMN_WIDGETS = ("provider", "scenario", "model", "base_url", "temperature", "max_tokens")
# the setup widgets shared by every column, with their first values
SHARED = {
    "cmp_n": 2,
    "cmp_prompt": "What is the weather in Paris?",
    "cmp_system": "",
    "cmp_tools": ["get_weather"],
    "cmp_max_steps": 4,
    "cmp_from_steps": None,  # from a stored run's step k: the steps each fork makes (None: to the end)
}


def _default_model(provider: str) -> str:
    info = REGISTRY.get(provider)
    return info.default_model if info else ""


@functools.cache
def _local_runs_here() -> bool:
    return local_available()[0]


def _ready_providers() -> list[str]:
    """Providers that answer here with nothing typed: scripted, the embedded model when installed, a key in the env."""
    ready = ["scripted", *(["local"] if _local_runs_here() else [])]
    return ready + [name for name, info in REGISTRY.items() if info.key_env and os.environ.get(info.key_env)]


def _column_defaults(i: int, used: list[tuple[str, str]]) -> dict[str, Any]:
    """A new column's first values: the next provider that runs here and no column uses yet, with its default model.

    When every such provider is taken, the scripted model on a scenario no column uses: never a copy of a column.
    """
    taken = [provider for provider, _ in used]
    provider = next((p for p in _ready_providers() if p not in taken), "scripted")
    scenarios = [model for p, model in used if p == "scripted"]
    scenario = next((s for s in SCENARIOS if s not in scenarios), "weather")
    values = {"provider": provider, "scenario": scenario, "model": _default_model(provider), "base_url": ""}
    values |= {"temperature": None, "max_tokens": None}
    return {f"cmp_{name}_{i}": value for name, value in values.items()}


def _widget_keys() -> list[str]:
    """Every setup widget's key, the shared ones and each possible column's."""
    return [*SHARED, *(f"cmp_{name}_{i}" for i in range(MAX_COLUMNS) for name in COLUMN_WIDGETS)]


def _chosen(i: int) -> tuple[str, str]:
    """Column i's provider and model (the scenario, for the scripted model) as its widgets hold them now."""
    provider = st.session_state[f"cmp_provider_{i}"]
    detail = st.session_state[f"cmp_scenario_{i}"] if provider == "scripted" else st.session_state[f"cmp_model_{i}"]
    return provider, detail


def _on_provider(i: int) -> None:
    st.session_state[f"cmp_model_{i}"] = _default_model(st.session_state[f"cmp_provider_{i}"])
    st.session_state[f"cmp_base_url_{i}"] = ""


# -- callbacks: they change state; the page redraws from it --------------------------


def _request(action: Literal["step", "run"]) -> None:
    _state().action = action


def _stop() -> None:
    state = _state()
    if state.comparison is not None:
        state.comparison.cancel()


def _new_comparison() -> None:
    state = _state()
    if state.comparison is not None and state.comparison.running:
        state.notice = "The columns are still working: press Stop and wait for them first."
        return
    kept = {"widgets": state.widgets, "policies": state.policies, "expected": state.expected, "origin": state.origin}
    kept |= {"test": state.test}  # a comparison of a test's conversation plays it again
    st.session_state[CompareState.KEY] = CompareState(**kept)


def _leave_origin() -> None:
    """Compare from a prompt again, not from a stored run's step."""
    state = _state()
    if state.comparison is not None and state.comparison.running:
        state.notice = "The columns are still working: press Stop and wait for them first."
        return
    st.session_state[CompareState.KEY] = CompareState(widgets=state.widgets)


def _request_open(i: int) -> None:
    _state().open_index = i


# -- setup ---------------------------------------------------------------------------


def _take_setup(state: CompareState) -> None:
    """Put a setup another page asked for (CompareState.prefill) into the widgets, before they are drawn."""
    setup, state.setup = state.setup, None
    if setup is None:
        return
    values: dict[str, Any] = {
        "cmp_n": max(MIN_COLUMNS, len(setup.columns)),  # the columns not given take the page's defaults
        "cmp_prompt": setup.prompt,
        "cmp_system": setup.system_prompt,
        "cmp_tools": [name for name in setup.tools if name in available_tools()],
        "cmp_max_steps": max(1, min(MAX_STEPS, setup.max_steps)),
    }
    for i, spec in enumerate(setup.columns):
        values |= {f"cmp_provider_{i}": spec.provider, f"cmp_base_url_{i}": spec.base_url or ""}
        values[f"cmp_scenario_{i}" if spec.provider == "scripted" else f"cmp_model_{i}"] = spec.model or ""
    st.session_state.update(values)
    state.widgets.update(values)


def _column_setup(i: int, locked: bool) -> tuple[ColumnSpec, str | None]:
    """One column's configuration widgets; returns its spec and the typed key (None when none typed)."""
    provider = st.selectbox(
        "Provider", list(REGISTRY), key=f"cmp_provider_{i}", disabled=locked, on_change=_on_provider, args=(i,)
    )
    info = REGISTRY[provider]
    if provider == "scripted":
        model = st.selectbox("Scenario", list(SCENARIOS), key=f"cmp_scenario_{i}", disabled=locked)
    else:
        model = st.text_input("Model", key=f"cmp_model_{i}", disabled=locked, placeholder=info.default_model)
    base_url = None
    if info.default_base_url is not None:
        base_url = st.text_input(
            "Base URL", key=f"cmp_base_url_{i}", disabled=locked, placeholder=info.default_base_url
        )
    temperature = st.number_input(
        "Temperature", 0.0, 2.0, step=0.1, key=f"cmp_temperature_{i}", disabled=locked, placeholder="default"
    )
    max_tokens = st.number_input(
        "Max output tokens", 1, 100_000, step=64, key=f"cmp_max_tokens_{i}", disabled=locked, placeholder="default"
    )
    key = None
    if info.key_env is not None:
        # no widget key: the typed value is read here and passed on for one action, never stored by this page
        key = st.text_input(
            f"API key (column {i + 1})",
            type="password",
            disabled=locked,
            help=f"Leave empty to use {info.key_env} from the environment. Never saved or exported.",
        )
    spec = ColumnSpec(
        provider=provider,
        model=(model or "").strip() or None,
        base_url=(base_url or "").strip() or None,
        temperature=temperature,
        max_tokens=int(max_tokens) if max_tokens is not None else None,
    )
    if info.key_env is not None:
        st.caption(f"Key: {safe.inline(choose_key(info, spec.base_url, given=key or None).source)}")
    return spec, key or None


def _sharing(specs: list[ColumnSpec], i: int) -> list[int]:
    """The other columns (numbered from 1) that run the same embedded model as column i, so take turns with it."""
    if specs[i].provider != "local":
        return []
    model = specs[i].model or _default_model("local")
    return [
        j + 1
        for j, other in enumerate(specs)
        if j != i and other.provider == "local" and (other.model or _default_model("local")) == model
    ]


def _say_sharing(others: list[int]) -> None:
    if others:
        st.caption(
            f":material/hourglass_top: Takes turns with {words.numbered('column', others)}: the embedded model "
            "is loaded once and answers one call at a time, so these columns wait for each other."
        )


def _setup(state: CompareState, locked: bool) -> tuple[list[ColumnSpec], dict[int, str]]:
    if state.origin is not None:
        _origin_setup(state.origin, locked)
    else:
        st.text_area("Prompt (the same for every configuration)", key="cmp_prompt", height=80, disabled=locked)
        left, mid, right = st.columns([3, 3, 1])
        left.text_area("System prompt", key="cmp_system", height=68, disabled=locked)
        mid.multiselect("Tools", list(available_tools()), key="cmp_tools", disabled=locked)
        right.number_input("Max steps", 1, MAX_STEPS, key="cmp_max_steps", disabled=locked)
        right.number_input("Configurations", MIN_COLUMNS, MAX_COLUMNS, key="cmp_n", disabled=locked)
    specs, keys = [], {}
    slots = st.columns(int(st.session_state["cmp_n"]))
    for i, slot in enumerate(slots):
        state.restore(_column_defaults(i, [_chosen(j) for j in range(i)]))  # a new column: not a copy of one
        with slot, st.container(border=True):
            spec, key = _column_setup(i, locked)
        specs.append(spec)
        if key:
            keys[i] = key
    for i, slot in enumerate(slots):
        with slot:
            _say_sharing(_sharing(specs, i))
            _say_missing_tools(specs[i], st.session_state["cmp_tools"])
            if not locked:
                _say_first_call(state, specs[i])
    return specs, keys


def _say_first_call(state: CompareState, spec: ColumnSpec) -> None:
    """Before Step all or Run all sends anything: what a paid column's first call would send, and its price."""
    if spec.provider in FREE_PROVIDERS:
        return
    model = spec.model or REGISTRY[spec.provider].default_model or ""
    if state.origin is not None:  # the fork before step k: the run's history as it stood there
        try:
            run = Origin(state.origin.run, state.origin.step).fork(spec, model, spec.name)
        except AgentcoreError:  # a step the run does not have: Step all says so in one line
            return
    elif (st.session_state.get("cmp_prompt") or "").strip():
        tools = resolve_tools(st.session_state["cmp_tools"])
        config = RunConfig.made_for(
            spec.provider, model, tools, spec.base_url, system_prompt=st.session_state["cmp_system"] or None
        )
        run = Run.start(st.session_state["cmp_prompt"], config)
    else:
        return
    say_estimate(call_estimate(run, ModelRef(spec.provider, model)))


def _origin_setup(origin: Origin, locked: bool) -> None:
    """What a comparison from a stored run's step k starts from, the steps each fork makes, and how many forks."""
    run, k = origin.run, origin.step
    with st.container(border=True, key="cmp_origin"):
        st.markdown(
            f":material/call_split: **From step {k} of run {safe.code(run.id)}** · {safe.inline(run.title or '')}"
        )
        st.caption(
            f"Each configuration forks the run just before step {k}'s model call: the {run.steps[k - 1].message_count} "
            "messages before it, and the run's tools, system prompt, settings, policies, hooks and mocks. "
            "The first column is the original, as it went on from there."
        )
        left, mid, right = st.columns([2, 1, 1], vertical_alignment="bottom")
        left.caption(f"Prompt: {safe.inline(origin.prompt[:200])}")
        most = max(1, origin.run.config.max_steps - k + 1)
        mid.number_input(
            "Steps each fork makes",
            1,
            max(most, MAX_STEPS),
            key="cmp_from_steps",
            disabled=locked,
            placeholder=f"to the end ({most})",
            help=f"1 asks step {k} again: the quickest way to see whether a step's mistake is the model's or the "
            "request's. Empty: to the end of the run's step budget.",
        )
        right.number_input("Configurations", MIN_COLUMNS, MAX_COLUMNS, key="cmp_n", disabled=locked)
        compare_users.say_going_on(run, k)
        st.button("Compare from a prompt instead", key="cmp_leave_origin", on_click=_leave_origin, disabled=locked)


def _say_missing_tools(spec: ColumnSpec, offered: list[str]) -> None:
    """Warn when a scripted scenario calls tools the comparison does not offer: its calls would come back as errors."""
    scenario = SCENARIOS.get(spec.model or "") if spec.provider == "scripted" else None
    missing = [name for name in scenario.tools if name not in offered] if scenario is not None else []
    if missing:
        names = ", ".join(missing)
        st.warning(
            safe.inline(
                f"The {scenario.name} scenario calls {names}, which this comparison does not offer: "
                "those calls will come back as unknown-tool errors. Add them under Tools."
            ),
            icon=":material/warning:",
        )


def _act(state: CompareState, specs: list[ColumnSpec], keys: dict[int, str]) -> None:
    """Carry out a pressed Step all / Run all: build the comparison if there is none, then start the columns."""
    action, state.action = state.action, None
    if action is None:
        return
    if state.comparison is None and state.origin is not None:
        chosen = st.session_state.get("cmp_from_steps")
        try:
            origin = Origin(state.origin.run, state.origin.step, int(chosen) if chosen else None)
            names = [t.name for t in origin.run.config.tools]
            state.comparison = Comparison.from_step(
                origin, specs, tools=resolve_tools(names), api_keys=keys, play=compare_users.going_on(origin)
            )
        except AgentcoreError as exc:
            state.notice = str(exc)
            return
    elif state.comparison is None:
        try:
            state.comparison = Comparison(
                st.session_state["cmp_prompt"],
                specs,
                system_prompt=st.session_state["cmp_system"] or None,
                tools=resolve_tools(st.session_state["cmp_tools"]),
                max_steps=int(st.session_state["cmp_max_steps"]),
                api_keys=keys,
                expected=state.expected,
                play=compare_users.playing(state.test, st.session_state["cmp_prompt"]),
            )
        except AgentcoreError as exc:
            state.notice = str(exc)
            return
        with_policies(state.comparison, state.policies)
    if state.comparison.start(action, keys):
        state.live = state.comparison.running
        state.unsaved = state.comparison.origin is not None
    else:
        state.notice = "The columns are still working on the last action."


# -- the columns ---------------------------------------------------------------------


def _say_expected(expected: ExpectedAnswer | None) -> None:
    """The answer the columns are checked for, above them: what it must contain and who declared it."""
    if expected is None:
        return
    parts = ", ".join(safe.code(part) for part in expected.contains)
    with st.container(key="cmp_expected"):
        st.markdown(f":material/task_alt: **Expected answer** ({safe.inline(expected.source)}): contains {parts}")


def _say_verdict(run: Run, expected: ExpectedAnswer | None) -> None:
    """Whether the column's final answer contains the expected texts: only containment is checked, not correctness."""
    if expected is None:
        return
    missing = expected.missing(final_result(run))
    if missing is None:
        if run.finished:
            st.caption(":gray-badge[no answer to check against the expected one]")
    elif not missing:
        st.markdown(":green-badge[:material/check: contains the expected answer]")
    else:
        lacks = ", ".join(safe.code(part) for part in missing)
        st.markdown(f":orange-badge[:material/close: does not contain it] {lacks} missing")


def _first_shown(comparison: Comparison) -> int:
    """The first message a column shows: from step k's reply on, for a comparison of a stored run's step k."""
    origin = comparison.origin
    return origin.run.steps[origin.step - 1].message_count if origin is not None else 0


def _original_view(comparison: Comparison) -> None:
    """The original run as it went on from step k: the first column of a comparison from a stored run."""
    origin = comparison.origin
    assert origin is not None
    run, first = origin.run, _first_shown(comparison)
    st.markdown(f"**{safe.inline(comparison.original_label)}**  :gray-badge[recorded]")
    stop = stop_words(run, origin.step) or "open"
    st.caption(f"steps {origin.step}–{len(run.steps)} of run {safe.code(run.id)} · stop: {safe.inline(stop)}")
    with st.container(height=460, key="cmp_original"):
        show_messages(run.messages[first:], run, start=first)
    final = final_result(run)
    if final is not None:
        text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
        st.success(f"**Final answer**  \n{safe.block(text)}", icon=":material/flag:")


def _column_view(
    column: Column, sharing: list[int], expected: ExpectedAnswer | None = None, first: int = 0, first_step: int = 1
) -> None:
    """One configuration's column: its state, where it is, its messages (numbered as in the run) from `first` on,
    and its final answer; `first_step` is the first step it made (k, from a stored run's step k)."""
    run = column.run
    state = column.state
    st.markdown(f"**{safe.inline(column.label)}**  :{STATE_COLOURS[state]}-badge[{state}]")
    where = f"step {len(run.steps)} of {run.config.max_steps} · next phase: {run.next_phase}"
    if first:
        where = f"from step {run.parent.step if run.parent else '?'} · " + where
    if column.busy:
        where += f" · {column.activity}"
    elif run.stop_reason:
        where += f" · stop: {stop_words(run, first_step)}"
    st.caption(safe.inline(where))
    if not column.busy:  # a paid model: what its next call would send, before Step all or Run all sends it
        say_estimate(call_estimate(run, ModelRef(column.spec.provider, run.config.model or column.spec.model or "")))
    _say_sharing(sharing)
    if column.error:
        st.error(safe.block(column.error), icon=":material/error:")
    with st.container(height=460, autoscroll=True):
        show_messages(run.messages[first:], run, start=first)  # the run gives each turn's reported reasoning tokens
        if column.live_text:
            with st.chat_message("assistant"):
                st.markdown(safe.markdown(column.live_text + " ▌"))
    final = final_result(run)
    if final is not None:
        text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
        st.success(f"**Final answer**  \n{safe.block(text)}", icon=":material/flag:")
    _say_verdict(run, expected)
    compare_users.say_conversation(run)


def _columns_view(comparison: Comparison) -> None:
    specs = [c.spec for c in comparison.columns]
    _say_expected(comparison.expected)
    slots = st.columns(len(specs) + (comparison.origin is not None))
    if comparison.origin is not None:
        with slots[0]:
            _original_view(comparison)
        slots = slots[1:]
    first = _first_shown(comparison)
    for i, (slot, column) in enumerate(zip(slots, comparison.columns, strict=True)):
        with slot:
            _column_view(column, _sharing(specs, i), comparison.expected, first, comparison.first_step)


@st.fragment(run_every=POLL_S)
def _live_columns() -> None:
    state = _state()
    if state.comparison is None:
        return
    _columns_view(state.comparison)
    if not state.comparison.running and state.live:
        state.live = False
        st.rerun()  # the whole page: the summary, charts and export follow the finished columns


# -- results -------------------------------------------------------------------------


def _summary(comparison: Comparison) -> None:
    st.markdown("### Summary")
    rows = comparison.summary()
    table = pd.DataFrame(rows)[list(SUMMARY_COLUMNS)].rename(columns=SUMMARY_COLUMNS)
    table["final answer"] = [
        f"error: {r['error']}" if r["error"] else ("" if r["final_answer"] is None else str(r["final_answer"]))
        for r in rows
    ]
    # a column that has not stopped, or has no price or no step yet: a dash, not None
    table["stop reason"] = [words.text(r["stop"]) for r in rows]
    table["cost (USD)"] = [words.usd(r["cost_usd"]) for r in rows]
    table["ms per step"] = [words.shown(r["ms_per_step"]) for r in rows]
    if comparison.expected is not None:  # beside the answers: whether each holds the expected texts
        verdicts = {True: "contains it", False: "does not contain it", None: "-"}
        table.insert(len(table.columns), "expected answer", [verdicts[r["contains_expected"]] for r in rows])
    st.dataframe(table, hide_index=True)
    if any(r["estimated"] for r in rows):
        st.caption("Token counts of the scripted model (and of any step without reported usage) are estimates.")
    series = pd.DataFrame(comparison.series())
    if series.empty:
        return
    tokens, cost = st.columns(2)
    with tokens:
        st.plotly_chart(_overlay(series, "cumulative_tokens", "Cumulative tokens (input + output)"), key="cmp_tokens")
    with cost:
        priced = series.dropna(subset=["cumulative_cost_usd"])
        if priced.empty:
            st.info("No configuration here has a known price, so there is no cost to chart.")
        elif not priced["cumulative_cost_usd"].any():
            st.info(
                "Every priced configuration here ran for free (the scripted and local models cost nothing), "
                "so there is no cost to chart. The Cost page can price a run as another model."
            )
        else:
            st.plotly_chart(_overlay(priced, "cumulative_cost_usd", "Cumulative cost (USD)"), key="cmp_cost")


def _overlay(series: pd.DataFrame, column: str, title: str) -> go.Figure:
    fig = go.Figure()
    for label, group in series.groupby("config", sort=False):
        fig.add_scatter(x=group["step"], y=group[column], mode="lines+markers", name=safe.plotly(str(label)))
    fig.update_layout(title=title, xaxis_title="step", height=320, margin={"t": 40, "b": 30, "l": 10, "r": 10})
    fig.update_xaxes(dtick=1)
    return fig


def _wire(comparison: Comparison) -> None:
    longest = max(len(c.run.steps) for c in comparison.columns)
    st.markdown("### The same conversation in each dialect")
    if longest == 0:
        st.caption("No step has run yet.")
        return
    st.caption("The request body each provider received at the chosen step, side by side (credentials removed).")
    st.session_state["cmp_wire_step"] = min(st.session_state.get("cmp_wire_step", comparison.first_step), longest)
    step = int(st.number_input("Step", 1, longest, key="cmp_wire_step"))
    for slot, column in zip(st.columns(len(comparison.columns)), comparison.columns, strict=True):
        with slot:
            st.markdown(f"**{safe.inline(column.label)}**")
            record = column.run.steps[step - 1] if step <= len(column.run.steps) else None
            if record is None or record.wire is None:
                st.caption(f"No request at step {step}.")
                continue
            st.caption(safe.code(record.wire.url or ""))
            st.json(record.wire.request, expanded=3)
            _reasoning_caption(column.run.messages[: record.message_count], record.provider or column.spec.provider)


def _reasoning_caption(before: list[Message], provider: str) -> None:
    """What the request did with earlier reasoning: its own passed back unchanged, another provider's left out."""
    passed = reasoning_sent(before, provider)
    if passed:
        st.caption(f"Passes back {len(passed)} reasoning part(s) of earlier turns, unchanged.")
    note = reasoning_note(before, provider)
    if note:
        st.caption(safe.inline(note[0].upper() + note[1:] + "."))


def _export(comparison: Comparison) -> None:
    st.markdown("### Export and open")
    text = export_bundle(comparison.bundle())
    st.download_button(
        "Export the comparison (JSON bundle)",
        text,
        file_name=export_filename(comparison.columns[0].run, "comparison"),
        mime="application/json",
        on_click="ignore",
        icon=":material/download:",
    )
    if st.toggle("Show the bundle JSON", key="cmp_show_bundle"):
        st.code(text, language="json", height=300)
    for slot, (i, column) in zip(st.columns(len(comparison.columns)), enumerate(comparison.columns), strict=True):
        slot.button(
            f"Open {safe.inline(column.label)} in the playground",
            key=f"cmp_open_{i}",
            on_click=_request_open,
            args=(i,),
            disabled=column.busy,
            icon=":material/open_in_new:",
        )


MAX_REPEATS = 20


def _run_repeats(state: CompareState, specs: list[ColumnSpec], keys: dict[int, str]) -> None:
    """Run the comparison's configurations again, each its own fresh run, the asked number of times."""
    first = state.comparison
    n = int(st.session_state.get("cmp_repeat_n") or 1)
    made = []
    with st.spinner(f"Running each configuration {n} more times…"):
        for _ in range(n):
            again = Comparison(
                first.prompt,
                specs,
                system_prompt=first.system_prompt,
                tools=first.tools,
                max_steps=first.max_steps,
                api_keys=keys,
                expected=first.expected,
                play=first.play,
            )
            with_policies(again, state.policies)
            again.start("run", keys)
            again.wait()
            made.append(again)
    state.repeats = [first, *made]


def _repeats(state: CompareState, specs: list[ColumnSpec], keys: dict[int, str]) -> None:
    """Runs per configuration: the same comparison run again, read as counts and spreads, each run openable."""
    st.header("Runs per configuration")
    ask, go_on = st.columns([1, 2], vertical_alignment="bottom")
    ask.number_input("More runs of each", min_value=1, max_value=MAX_REPEATS, value=2, key="cmp_repeat_n")
    if go_on.button("Run each again", key="cmp_repeat", icon=":material/repeat:"):
        _run_repeats(state, specs, keys)
    done = [c for c in state.repeats if len(c.columns) == len(specs)]
    if len(done) < 2:
        st.caption("One run of a model is one sample: run each configuration again to see how often it answers alike.")
        return
    expected = done[0].expected
    rows = [
        repeated_summary(col.label, [c.columns[j].run for c in done], [c.columns[j].wall_s for c in done], expected)
        for j, col in enumerate(done[0].columns)
    ]
    st.dataframe(
        [
            {
                "configuration": r["config"],
                "answered": f"{r['answered']}/{r['runs']}",
                "contains the expected answer": (
                    "-" if r["contains_expected"] is None else f"{r['contains_expected']}/{r['runs']}"
                ),
                "steps": r["steps"].words(),
                "tokens": r["tokens"].words(),
                "cost ($)": r["cost_usd"].words(digits=6),
                "time": r["wall_s"].words(" s", 2),
            }
            for r in rows
        ],
        hide_index=True,
        width="stretch",
        key="cmp_repeats_table",
    )
    runs = {f"{j}:{k}": c.columns[j].run for k, c in enumerate(done) for j in range(len(c.columns))}
    pick, open_it = st.columns([3, 1], vertical_alignment="bottom")
    chosen = pick.selectbox(
        "Open one of these runs",
        list(runs),
        index=None,
        key="cmp_repeat_pick",
        format_func=lambda key: safe.plain(
            f"{done[0].columns[int(key.split(':')[0])].label} · run {int(key.split(':')[1]) + 1} · "
            f"{stop_words(runs[key]) or 'open'} · {runs[key].id}"
        ),
        placeholder="Choose a configuration's run",
    )
    if open_it.button("Open in the playground", key="cmp_repeat_open", disabled=chosen is None) and chosen:
        _open_in_playground(runs[chosen])


def _open_in_playground(run: Run) -> None:
    """Give the playground a copy of the column's run as its current run, and go there; a fork of a stored run
    is opened from the runs library, where it is saved under its parent."""
    if run.parent is not None and _state().origin is not None:
        get_store().save_run(run)
        open_stored_run(get_store(), run.id)
    else:
        copy = from_dict(to_dict(run), check_messages=False)  # an independent run; the column keeps its own
        get_session().add_run(copy)
    st.switch_page(PLAYGROUND)


def _save_forks(state: CompareState) -> None:
    """Keep every fork of a comparison from a stored run in the runs library, under its parent, once it has moved."""
    comparison = state.comparison
    if not state.unsaved or comparison is None or comparison.running:
        return
    state.unsaved = False
    store = get_store()
    try:
        for column in comparison.columns:
            compare_users.save(store, column.run)
    except AgentcoreError as exc:
        state.notice = f"The forks could not be saved: {exc}"


def main() -> None:
    """Draw the compare page from its state."""
    state = _state()
    _take_setup(state)
    state.restore(SHARED)
    st.markdown("## Compare providers")
    st.caption(
        "One prompt, system prompt and tool set on 2 to 4 configurations. **Step all** advances every column "
        "one iteration in lockstep; **Run all** runs each to its end. Columns run at the same time, so the "
        "wait is the slowest column's, and one failing column never stops the others."
    )
    specs, keys = _setup(state, locked=state.comparison is not None or state.action is not None)
    state.keep(_widget_keys())
    _act(state, specs, keys)  # before the buttons, so they show whether the columns are now busy
    busy = state.comparison is not None and state.comparison.running
    # a person's user: one line says why, and neither button starts the columns
    refused = state.comparison is None and compare_users.refusal(state.test, st.session_state["cmp_prompt"]) is not None
    with st.container(horizontal=True):
        st.button("Step all", on_click=_request, args=("step",), disabled=busy or refused, icon=":material/skip_next:")
        st.button("Run all", on_click=_request, args=("run",), disabled=busy or refused, icon=":material/fast_forward:")
        st.button("Stop", on_click=_stop, disabled=not busy, icon=":material/stop:")
        st.button("New comparison", on_click=_new_comparison, disabled=busy, icon=":material/restart_alt:")
    if state.notice:
        st.warning(safe.block(state.notice))
        state.notice = None
    comparison = state.comparison
    if comparison is None:
        prompt = st.session_state["cmp_prompt"]
        asked = (
            state.expected if state.expected is not None and state.expected.prompt.strip() == prompt.strip() else None
        )
        _say_expected(asked or scenario_expectation(prompt, specs))
        compare_users.say_test(state.test, prompt)
        if not refused:
            st.info("Choose the configurations, then press **Step all** or **Run all**.")
        return
    if state.open_index is not None:
        index, state.open_index = state.open_index, None
        if index < len(comparison.columns):
            _open_in_playground(comparison.columns[index].run)
    if state.live and not comparison.running:
        state.live = False
    if state.live:
        _live_columns()
        return
    _save_forks(state)
    _columns_view(comparison)
    _summary(comparison)
    if comparison.finished and comparison.origin is None:
        _repeats(state, specs, keys)
    _wire(comparison)
    _export(comparison)


main()
