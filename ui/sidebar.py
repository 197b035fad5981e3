"""The shared sidebar: provider, model, key, tools and loop settings, kept as the Session's config (AppConfig).

Drawing it never changes a run: the callbacks that step a run write these settings into it (actions.apply_settings).
"""

from __future__ import annotations

import os
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from agentcore.hooks.examples import HOOKS
from agentcore.hooks.guard import LOOP_GUARDS, default_mode
from agentcore.messages import UserMessage
from agentcore.providers import REGISTRY, ProviderInfo
from agentcore.providers.scripted import DEFAULT_SCENARIO, SCENARIOS
from agentcore.secrets import redacted_url
from agentcore.toolbox import DEFAULT_TOOLS as TOOLBOX_DEFAULT

from . import safe
from .actions import start_scenario_run
from .debug_view import breakpoint_settings
from .mcp_view import render_mcp_servers
from .policy_view import follow_policies, policy_settings
from .state import (
    DEFAULT_N_CTX,
    MODEL_ENV,
    RUN_SETTINGS,
    AppConfig,
    Session,
    get_session,
    initial_provider,
    provider_problem,
    resolve_api_key,
    set_typed_key,
)
from .tool_registry import available_tools, tool_spec
from .user_view import render_conflict, render_user

DEFAULT_PROMPT = "What is the weather in Paris and Rome?"
DEFAULT_TOOLS = list(TOOLBOX_DEFAULT)  # the CLI's default too
EMBEDDED_MODEL_NOTE = (
    "The embedded model is here to watch the loop with no key and no network. At 135M parameters it often "
    "calls the wrong tool or answers wrongly: for runs you can count on, pick a scripted scenario (provider "
    "scripted) or a real provider."
)
LOOP_GUARD_HELP = (
    "What the loop does when the model repeats an identical call (same tool, same arguments). "
    "off: nothing. warn: the call runs again and the page warns. guard: the call is not run again, its earlier "
    "result is returned with a note, and after a second repeat the model is asked to answer with no tool to call. "
    "Guard is the embedded model's default, warn every other provider's."
)
HOOKS_HELP = "Code run around each model call; each step records what a hook changed. " + " ".join(
    f"{name}: {h.description}" for name, h in HOOKS.items()
)
DEFAULT_MAX_STEPS = 10
MAX_OUTPUT_TOKENS = 1_000_000  # above any model's own limit: the provider refuses what its model cannot write


def _seed_defaults() -> None:
    """Put first values into the widgets' state once, so widgets never get a default and a state value both."""
    if "cfg_provider" in st.session_state:
        return
    provider, why = initial_provider()
    st.session_state["cfg_provider"] = provider
    st.session_state["cfg_provider_why"] = why
    _provider_defaults(provider, os.environ.get(MODEL_ENV) or None)
    st.session_state.setdefault("cfg_system", "")
    st.session_state.setdefault("cfg_concurrency", True)
    st.session_state.setdefault("cfg_pause", False)
    st.session_state.setdefault("cfg_hooks", [])
    st.session_state.setdefault("cfg_breakpoints", "")


def _provider_defaults(provider: str, model: str | None = None, previous: str | None = None) -> None:
    """A provider's own settings; leaving the scripted model also drops its scenario's tools and step budget."""
    info = REGISTRY[provider]
    st.session_state["cfg_model"] = model or info.default_model
    st.session_state["cfg_loop_guard"] = default_mode(provider)
    st.session_state["cfg_base_url"] = (os.environ.get(info.base_url_env or "") or info.default_base_url) or ""
    if provider == "scripted":
        _scenario_defaults(model if model in SCENARIOS else DEFAULT_SCENARIO)
    elif previous == "scripted":
        st.session_state["cfg_tools"] = list(DEFAULT_TOOLS)
        st.session_state["cfg_max_steps"] = DEFAULT_MAX_STEPS
    else:
        st.session_state.setdefault("cfg_tools", list(DEFAULT_TOOLS))
        st.session_state.setdefault("cfg_max_steps", DEFAULT_MAX_STEPS)


def _scenario_defaults(name: str) -> None:
    """A scenario's tools and budget; its prompt too, unless a run is on screen (the box shows that run's)."""
    scenario = SCENARIOS[name]
    st.session_state["cfg_scenario"] = name
    st.session_state["cfg_tools"] = list(scenario.tools)
    st.session_state["cfg_max_steps"] = scenario.max_steps or DEFAULT_MAX_STEPS
    if get_session().run is None:
        st.session_state["prompt"] = scenario.prompt


def _on_provider() -> None:
    _provider_defaults(st.session_state["cfg_provider"], previous=get_session().config.provider)


def _on_scenario() -> None:
    _scenario_defaults(st.session_state["cfg_scenario"])


def _follow_run(session: Session) -> None:
    """Show a run that just became current (opened, picked, forked) with its own provider, model and limits.

    Without this, a run opened from the library would silently go on with whatever the sidebar last held.
    """
    run, session.sync_sidebar = session.run, False
    if run is None or run.config.provider not in REGISTRY:
        return
    config = run.config
    if config.provider != st.session_state.get("cfg_provider"):
        st.session_state["cfg_provider"] = config.provider
        _provider_defaults(config.provider)
    if config.provider == "scripted":
        scenario = config.scenario or config.model
        if scenario in SCENARIOS:
            st.session_state["cfg_scenario"] = scenario
    elif config.model:
        st.session_state["cfg_model"] = config.model
    if config.base_url and REGISTRY[config.provider].key_env is None:
        st.session_state["cfg_base_url"] = config.base_url
    elif config.base_url and config.base_url != st.session_state.get("cfg_base_url"):
        # a run may come from someone else's file: its address must not receive this person's API key
        session.notice = (
            f"This run was made against {redacted_url(config.base_url)}; the sidebar keeps its own base URL, so your API key "
            "goes only where you send it. Type that address under Base URL to go on there."
        )
    st.session_state["cfg_tools"] = [t.name for t in config.tools if t.name in available_tools()]
    for setting in RUN_SETTINGS:
        if setting.key:
            st.session_state[setting.key] = setting.shown(config) if setting.shown else getattr(config, setting.name)
    follow_policies(run)
    prompt = next((m.content for m in run.messages if isinstance(m, UserMessage)), None)
    if prompt is not None:
        st.session_state["prompt"] = prompt


def _provider(sb: DeltaGenerator) -> tuple[ProviderInfo, str, str | None, dict[str, Any] | None]:
    """The provider and its model (for the scripted model, its scenario and that scenario's answer schema)."""
    provider = sb.selectbox(
        "Provider",
        list(REGISTRY),
        key="cfg_provider",
        on_change=_on_provider,
        help=f"Started on {st.session_state.get('cfg_provider_why', '')}",
    )
    info = REGISTRY[provider]
    problem = provider_problem(provider)
    if problem:
        sb.error(safe.block(problem), icon=":material/error:")
    else:
        sb.caption(info.description)
    if provider == "local":
        sb.caption(EMBEDDED_MODEL_NOTE)
    if provider != "scripted":
        current = st.session_state.get("cfg_model")  # a loaded run's model stays offered, listed or not
        options = [*info.known_models, *([current] if current and current not in info.known_models else [])]
        model = sb.selectbox("Model", options, key="cfg_model", accept_new_options=True, help="Or type another name")
        return info, model, None, None
    scenario = sb.selectbox("Scenario", list(SCENARIOS), key="cfg_scenario", on_change=_on_scenario)
    sb.caption(SCENARIOS[scenario].description)
    return info, scenario, scenario, SCENARIOS[scenario].final_answer_schema


def _context_size(sb: DeltaGenerator, info: ProviderInfo) -> int:
    """The embedded model's context size: a setting here, since its overflow error says to raise it."""
    if info.name != "local":
        return DEFAULT_N_CTX
    size = sb.number_input(
        "Context size",
        min_value=256,
        max_value=131_072,
        value=DEFAULT_N_CTX,
        step=256,
        key="cfg_n_ctx",
        help="Tokens the model reads at once (llama.cpp's n_ctx). A longer run needs more; more costs memory.",
    )
    return int(size)


def _connection(sb: DeltaGenerator, info: ProviderInfo) -> str | None:
    """The base URL and the API key; the typed key is kept for this script run only. Returns the base URL."""
    base_url = None
    if info.default_base_url or info.base_url_env:
        base_url = sb.text_input("Base URL", key="cfg_base_url", help="Any compatible server, e.g. a local one")
    typed = None
    if info.key_env:
        typed = sb.text_input(
            "API key",
            type="password",
            help=f"Used for this page load only: never stored. Or set {info.key_env} or st.secrets.",
        )
    set_typed_key(info.name, typed)
    base_url = (base_url or "").strip() or None
    if info.key_env:
        _, source = resolve_api_key(info, base_url)
        sb.caption(f"Key: {safe.inline(source)}")  # an address in it shows as written, never a link
    return base_url


def _tools(sb: DeltaGenerator) -> list[str]:
    tools = sb.multiselect("Tools", list(available_tools()), key="cfg_tools", help="The tools offered to the model")
    with sb.expander("What these tools do"):
        for name in tools:
            spec = tool_spec(name)
            st.markdown(f"**{safe.code(name)}**")
            if spec.description:  # a server's words: drawn as text, never read as Markdown
                st.text(safe.plain(spec.description))
            st.json(spec.parameters, expanded=False)
        if not tools:
            st.caption("No tools: the model can only answer.")
    render_mcp_servers(sb)
    return list(tools)


def render_sidebar(session: Session, *, folded: bool = False) -> None:
    """Draw the configuration and keep it as session.config; the typed key is kept for this run only.

    `folded` puts the settings in a closed expander: pages other than the playground do not use
    them, but they are still drawn there, since a widget not drawn on a rerun loses its value.
    """
    _seed_defaults()
    if session.sync_sidebar:
        _follow_run(session)
    st.session_state.setdefault("prompt", DEFAULT_PROMPT)
    st.sidebar.markdown("### agentcore")
    st.sidebar.caption("Step through the ReAct loop: call the model, run the tools it asks for, repeat.")
    render_user(st.sidebar, session)
    sb = st.sidebar.expander("Playground settings", expanded=False) if folded else st.sidebar

    info, model, scenario, schema = _provider(sb)
    if scenario is not None and session.run is not None and not folded:
        # the prompt box shows the run on screen, so a scenario's own prompt is taken by choice
        sb.button("New run of this scenario", key="scenario_run", on_click=start_scenario_run, width="stretch")
    n_ctx = _context_size(sb, info)
    base_url = _connection(sb, info)
    sb.divider()
    tools = _tools(sb)
    system_prompt = sb.text_area("System prompt", key="cfg_system", height=80, placeholder="(none)")
    max_steps = sb.number_input("Max steps", min_value=1, max_value=500, step=1, key="cfg_max_steps")
    temperature = sb.number_input(
        "Temperature",
        min_value=0.0,
        max_value=2.0,
        value=None,
        step=0.1,
        key="cfg_temperature",
        placeholder="provider default",
    )
    max_tokens = sb.number_input(
        "Max output tokens",
        min_value=1,
        max_value=MAX_OUTPUT_TOKENS,
        value=None,
        step=256,
        key="cfg_max_tokens",
        placeholder="provider default",
        help="The most tokens one reply may write; a reply cut there stops the run at the output limit",
    )
    concurrency = sb.toggle("Run tool calls concurrently", key="cfg_concurrency")
    pause = sb.toggle("Pause before tools", key="cfg_pause", help="Approve, edit, deny or answer each tool call")
    loop_guard = sb.selectbox("Loop guard", LOOP_GUARDS, key="cfg_loop_guard", help=LOOP_GUARD_HELP)
    hooks = sb.multiselect("Hooks", list(HOOKS), key="cfg_hooks", help=HOOKS_HELP)
    # each RUN_SETTINGS name, as its widget gave it (the breakpoints and policies parsed from theirs)
    drawn = {
        "max_steps": int(max_steps),
        "concurrency": concurrency,
        "pause_before_tools": pause,
        "temperature": temperature,
        "max_tokens": None if max_tokens is None else int(max_tokens),
        "loop_guard": loop_guard,
        "hooks": list(hooks),
        "breakpoints": breakpoint_settings(sb, session),
        "policies": policy_settings(sb, info.name),
    }
    session.config = AppConfig(
        provider=info.name,
        model=model or info.default_model,
        base_url=base_url,
        scenario=scenario,
        tools=tools,
        system_prompt=system_prompt,
        final_answer_schema=schema,
        n_ctx=n_ctx,
        **{setting.name: drawn[setting.name] for setting in RUN_SETTINGS},
    )
    if session.store_error:
        sb.warning(safe.block(session.store_error), icon=":material/database:")
        render_conflict(sb, session)
