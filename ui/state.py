"""All app state in one object, how providers are made, and the one place a changed run is reported.

The Session lives in st.session_state["session"]; pages read it and redraw from it. It
never holds an API key: keys are resolved at call time from the password box (kept only
for the current script run), the environment, or st.secrets.

Each browser session has its own Store on the runs database, saving as the session's user: the
Store remembers which revision of a run it last read or wrote, so two tabs stepping the same run
are told apart as two processes are (the second save is refused with RunChanged).
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import streamlit as st

from agentcore.errors import AgentcoreError, UsageError
from agentcore.hooks.examples import HOOKS
from agentcore.hooks.guard import guard_mode
from agentcore.loop import ToolDecision
from agentcore.messages import Message
from agentcore.policies import ContextPolicies
from agentcore.providers import REGISTRY, ProviderInfo, create_provider, default_provider
from agentcore.providers.base import Provider
from agentcore.providers.keys import choose_key
from agentcore.run import Run, RunConfig
from agentcore.secrets import register_secret
from agentcore.steps import LoopGuard
from agentcore.store.access import default_owner, is_teacher, proxy_refusal, valid_name
from agentcore.store.runs import LAST_RUN_KEY, RunChanged, RunSummary, Store, default_path, is_url

from .tool_registry import resolve_tools

if TYPE_CHECKING:
    from .live import PhaseJob

SESSION_KEY = "session"
PROVIDER_ENV = "AGENTCORE_PROVIDER"
MODEL_ENV = "AGENTCORE_MODEL"
USER_HEADER_ENV = "AGENTCORE_USER_HEADER"  # e.g. X-Forwarded-User, set by an authenticating proxy
STORE_KEY = "_runs_store"

Action = Literal["step", "model", "tools", "retry"]
DEFAULT_N_CTX = 4096  # the local provider's own default


@dataclass(frozen=True)
class RunSetting:
    """A sidebar setting a run's config holds by the same name: its widget's key, and how a run's value shows there."""

    name: str  # the field of both AppConfig and RunConfig
    key: str  # the sidebar widget's session-state key
    shown: Any = None  # run config -> the widget's value; None: the config's own value


def _hooks_shown(config: RunConfig) -> Any:
    return [name for name in config.hooks if name in HOOKS]  # a file's unknown name is not offered


# The one list of the sidebar's run settings: a new run takes them (AppConfig.run_config), a run going on takes them
# (ui.actions.apply_settings), and a run that becomes current shows its own in the sidebar (ui.sidebar). A new
# setting is a field of RunConfig and AppConfig, its widget, and one line here.
RUN_SETTINGS: tuple[RunSetting, ...] = (
    RunSetting("max_steps", "cfg_max_steps", lambda c: max(1, min(500, c.max_steps))),
    RunSetting("concurrency", "cfg_concurrency"),
    RunSetting("pause_before_tools", "cfg_pause"),
    RunSetting("temperature", "cfg_temperature"),
    RunSetting("max_tokens", "cfg_max_tokens"),
    RunSetting("loop_guard", "cfg_loop_guard", guard_mode),
    RunSetting("hooks", "cfg_hooks", _hooks_shown),
    RunSetting("breakpoints", "cfg_breakpoints", lambda c: "\n".join(c.breakpoints)),
    RunSetting("policies", ""),  # its own widgets (ui.policy_view.follow_policies)
)


@dataclass
class AppConfig:
    """What the sidebar sets: how the next run is made and how the current one continues."""

    provider: str = "scripted"
    model: str = ""
    base_url: str | None = None
    scenario: str | None = None
    tools: list[str] = field(default_factory=list)
    system_prompt: str = ""
    max_steps: int = 10
    concurrency: bool = True
    pause_before_tools: bool = False
    temperature: float | None = None
    max_tokens: int | None = None  # the most tokens one reply may write; None: the provider's default
    final_answer_schema: dict[str, Any] | None = None
    n_ctx: int = DEFAULT_N_CTX  # the embedded model's context size, in tokens
    policies: ContextPolicies | None = None  # what each model call sends of the history
    loop_guard: LoopGuard | None = None  # what the loop does about repeated identical calls (agentcore.hooks.guard)
    hooks: list[str] = field(default_factory=list)  # registered hooks by name (agentcore.hooks.examples)
    breakpoints: list[str] = field(default_factory=list)  # the valid breakpoint specs (agentcore.hooks.specs)

    @property
    def provider_options(self) -> dict[str, Any]:
        """Settings of the provider object itself, not of the run: the embedded model's context size."""
        return {"n_ctx": self.n_ctx} if self.provider == "local" else {}

    def settings_update(self) -> dict[str, Any]:
        """What a run's config takes from the sidebar, new or going on: who answers, and RUN_SETTINGS."""
        update: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url or None,
            "scenario": self.scenario if self.provider == "scripted" else None,
        }
        for setting in RUN_SETTINGS:
            value = getattr(self, setting.name)
            update[setting.name] = list(value) if isinstance(value, list) else value
        return update

    def run_config(self) -> RunConfig:
        """The RunConfig of a new run made with these settings."""
        return RunConfig(
            **self.settings_update(),
            system_prompt=self.system_prompt or None,
            tools=[t.spec() for t in resolve_tools(self.tools)],
            final_answer_schema=self.final_answer_schema if self.provider == "scripted" else None,
        )


@dataclass
class Session:
    """The runs of this browser session (forks kept), the current one, and what the page is doing."""

    config: AppConfig = field(default_factory=AppConfig)
    runs: dict[str, Run] = field(default_factory=dict)
    current_id: str | None = None
    draft: list[Message] | None = None  # the message list being edited, not yet applied
    editing: int | None = None  # index of the message whose editor is open
    action: Action | None = None  # a phase the page runs on its next draw
    phase_job: PhaseJob | None = None  # a phase running on its own thread, which the page follows to its end
    decisions: dict[str, ToolDecision] = field(default_factory=dict)
    running: bool = False  # "Run to end" in progress
    stop_requested: bool = False
    notice: str | None = None  # one line about the last thing that failed
    info: str | None = None  # one line about the last thing done that is worth saying, not a failure
    refused: tuple[str, str] | None = None  # a field's value that could not be used: its widget key, and why
    store_error: str | None = None
    inspect_step: int | None = None
    open_view: str | None = None  # the playground tab another page asked for, opened on the playground's next draw
    # the page a run was opened from, in one line, shown above it while it is the current run: (run id, line)
    opened_from: tuple[str, str] | None = None
    message_page: int | None = None  # pages back from the newest; None: the newest
    sync_sidebar: bool = False  # the sidebar shows the current run's provider and limits on its next draw
    last_run: RunSummary | None = None  # the run the last session looked at, offered to reopen
    user: str | None = None  # the name typed in the sidebar, kept for this browser session
    conflict: str | None = None  # a run whose save was refused: someone else saved it since this session read it
    remembered: str | None = None  # the run this session last recorded as its user's last run
    going_on: set[str] = field(default_factory=set)  # imported runs a person here chose a provider to go on with
    # someone else's imported runs that a run here is a copy of (open_stored_run): not in `runs`, still its origin
    imports: dict[str, Run] = field(default_factory=dict)

    @property
    def run(self) -> Run | None:
        """The current run, if there is one."""
        return self.runs.get(self.current_id) if self.current_id else None

    def held_import(self, run: Run | None = None) -> Run | None:
        """The imported run that `run` (the current one by default) is, or was forked from in this session, while
        nobody here has chosen a provider to go on with it; None when `run` may go on.

        An imported session is someone's real work on a paid model: it opens read-only, and nothing sends its
        history to a model or runs its tools (which may not exist here) until a person chooses who goes on.
        """
        run = run or self.run
        seen: set[str] = set()
        while run is not None and run.id not in seen:
            if run.id in self.going_on:
                return None
            if run.origin is not None:
                return run
            seen.add(run.id)
            parent = run.parent.run_id if run.parent is not None else ""
            run = self.runs.get(parent) or self.imports.get(parent)
        return None

    def show_step(self, step: int) -> None:
        """Have the playground open on one step of the current run: its Steps tab, with that step picked."""
        self.inspect_step, self.open_view = step, "Steps"

    def add_run(self, run: Run) -> None:
        """Keep a run and make it current; a pending edit or action belongs to the old one."""
        self.runs[run.id] = run
        self.current_id = run.id
        self.draft, self.editing, self.action, self.decisions = None, None, None, {}
        self.running = self.stop_requested = False
        self.inspect_step, self.message_page, self.open_view = None, None, None
        self.sync_sidebar = True
        self.last_run = None


def initial_provider() -> tuple[str, str]:
    """The provider a new session starts on: AGENTCORE_PROVIDER if set, else the registry default."""
    wanted = os.environ.get(PROVIDER_ENV, "").strip()
    if wanted in REGISTRY:
        return wanted, f"{wanted}: chosen by {PROVIDER_ENV}"
    name, why = default_provider()
    if wanted:
        why = f"{PROVIDER_ENV}={wanted!r} is not a provider; {why}"
    return name, why


def init_session() -> Session:
    """The one Session of this browser session, created on first use."""
    if SESSION_KEY not in st.session_state:
        session = Session()
        st.session_state[SESSION_KEY] = session  # first, since the offer below opens this session's store
        _offer_last_run(session)
    return st.session_state[SESSION_KEY]


def get_session() -> Session:
    """The Session (pages call this; app.py has created it)."""
    return init_session()


# -- who is using the app ---------------------------------------------------------------------

LOGIN_NAME = "the account the server runs as"  # where a name comes from when nobody chose one


class User(NamedTuple):
    """Whose runs a browser session saves, where that name came from, whether the deployment vouched for it, and
    whether they teach (AGENTCORE_TEACHERS; a name typed in the sidebar never does)."""

    name: str
    source: str
    from_header: bool = False
    teacher: bool = False


class NotSignedIn(Exception):
    """The deployment names users by a header, and this request holds no usable name in it."""

    def __init__(self, header: str, why: str | None = None) -> None:
        super().__init__(
            f"Not signed in: {why}."
            if why
            else f"Not signed in: this app takes your name from the {header} header, and this request holds no "
            "valid name in it, so nothing here can be opened or saved; open the app through its sign-in page."
        )


def _listening_on() -> str | None:
    """The address this Streamlit server listens on (server.address; unset: every interface)."""
    try:
        return st.get_option("server.address") or None
    except Exception:  # noqa: BLE001 - no server config: every interface, the safe assumption
        return None


def resolve_user(headers: Mapping[str, str], typed: str | None) -> User:
    """Whose runs this browser session saves, and where that name came from.

    Where the deployment names an authentication header (AGENTCORE_USER_HEADER), only that header names
    the user: a request without a valid name in it raises NotSignedIn, since a typed name there would let
    anyone act as anyone. Otherwise the name typed in the sidebar, then the server's default
    (AGENTCORE_USER, else the login name).
    """
    header = os.environ.get(USER_HEADER_ENV, "").strip()
    if header:
        refusal = proxy_refusal(header, headers, _listening_on())
        if refusal is not None:
            raise NotSignedIn(header, refusal)
        try:
            name = valid_name(headers.get(header))
        except ValueError:
            raise NotSignedIn(header) from None
        return User(name, f"from the {header} header", from_header=True, teacher=is_teacher(name, headers))
    if typed:
        return User(typed, "typed here, for this browser session")
    if os.environ.get("AGENTCORE_USER"):
        return User(default_owner(), "the server's default (AGENTCORE_USER)", teacher=is_teacher(default_owner()))
    return User(default_owner(), LOGIN_NAME, teacher=is_teacher(default_owner()))


def request_headers() -> Mapping[str, str]:
    """The headers of the request that opened this browser session (none under AppTest)."""
    try:
        return st.context.headers
    except Exception:  # noqa: BLE001 - no request context: no headers
        return {}


def current_user(session: Session) -> User:
    """This browser session's user and where the name came from (see resolve_user); NotSignedIn without one."""
    return resolve_user(request_headers(), session.user)


def sign_in_refusal() -> str | None:
    """Why this request may not use the app, in one line: the deployment's user header is missing or unusable."""
    try:
        resolve_user(request_headers(), None)
    except NotSignedIn as exc:
        return str(exc)
    return None


# -- the runs store --------------------------------------------------------------------------


def get_store() -> Store:
    """This browser session's Store on the app's runs database (AGENTCORE_DB or ~/.agentcore/runs.db).

    One per browser session, not one per server: a Store remembers the revision of each run it read or
    wrote, and that is what refuses a save over someone else's (another tab's) newer revision. It saves
    as the session's user. It is closed when the session ends.
    """
    session = get_session()
    where = str(default_path())
    store = st.session_state.get(STORE_KEY)
    if store is None or store.path != _opened_path(where):
        if store is not None:
            store.close()
        store = Store(where)
        weakref.finalize(session, store.close)
        st.session_state[STORE_KEY] = store
    user = current_user(session)
    store.owner, store.teacher = user.name, user.teacher  # whose runs it saves, and which it may read
    return store


def _opened_path(where: str) -> Path | str:
    # what Store.path holds for a location: the connection string itself, or the expanded file path
    return where if is_url(where) else Path(where).expanduser()


def _offer_last_run(session: Session) -> None:
    """A new browser session starts clean and offers the run its user last looked at, when it is still stored.

    Opening it by itself would put a run on the page that this tab never chose, under a sidebar set for another;
    offering someone else's run would show a stranger's work first.
    """
    try:
        store = get_store()
        last = store.get_meta(_last_run_key(store.owner)) or store.get_meta(LAST_RUN_KEY)
        found = store.summary(last) if last else None
        session.last_run = found if found is not None and found.owner in (None, store.owner) else None
    except Exception as exc:  # noqa: BLE001 - an unreadable store must not stop the app from opening
        session.store_error = f"the last run could not be found: {type(exc).__name__}: {exc}"


def _last_run_key(owner: str) -> str:
    return f"{LAST_RUN_KEY}:{owner}"


def remember_last_run(store: Store, run_id: str) -> None:
    """Record the run this session's user looked at last, for the next tab to offer."""
    store.set_meta(LAST_RUN_KEY, run_id)
    store.set_meta(_last_run_key(store.owner), run_id)


def open_stored_run(store: Store, run_id: str) -> Run:
    """Make a stored run current in this session's playground, remembered as the last run looked at.

    Someone else's run opens as a copy of one's own (forked from theirs at its end): stepping it must not change
    their work, and the copy is what its owner may delete; the session's notice says so. Raises AgentcoreError.
    """
    summary = store.summary(run_id)
    owner = summary.owner if summary else None
    if owner in (None, store.owner):
        run = store.load_run(run_id)
    else:
        theirs = store.read_run(run_id)
        run = theirs.fork_with_messages(list(theirs.messages), keep_later=True)
        store.save_run(run)
        if theirs.origin is not None:  # a copy of an imported session is read-only as the session is
            get_session().imports[theirs.id] = theirs
    remember_last_run(store, run.id)
    session = get_session()
    session.add_run(run)
    if run.id != run_id:
        session.notice = f"Run {run_id} is {owner}'s: this is your own copy of it, {run.id}, forked from its end."
    return run


def reopen_last_run(session: Session) -> None:
    """Make the offered last run current, loaded from the store."""
    offered, session.last_run = session.last_run, None
    if offered is None:
        return
    try:
        session.add_run(get_store().load_run(offered.id))
    except Exception as exc:  # noqa: BLE001 - a run deleted or unreadable since is shown, not raised
        session.notice = f"The last run could not be reopened: {type(exc).__name__}: {exc}"


def on_run_changed(run: Run) -> None:
    """Every finished phase and every edit comes through here, so persistence happens in one place."""
    session = get_session()
    try:
        store = get_store()
        store.save_run(run)
        if session.remembered != run.id:  # two writes to the database, not needed again for every phase
            remember_last_run(store, run.id)
            session.remembered = run.id
        session.store_error = session.conflict = None
    except RunChanged:
        session.conflict = run.id
        session.store_error = session.notice = (
            f"Not saved: run {run.id} was saved from another tab or by someone else since this page opened it. "
            "Your change stays on this page only: keep it as a new run (the button in the sidebar), "
            "or open the run again from the Runs page to go on from what is stored."
        )
    except Exception as exc:  # noqa: BLE001 - a failing store must not stop the loop; it is shown instead
        session.store_error = f"the run could not be saved: {type(exc).__name__}: {exc}"


def keep_as_new_run() -> None:
    """The current run, whose save was refused, saved as a new run forked from it with everything it holds."""
    session = get_session()
    run = session.run
    if run is None or session.conflict != run.id:
        return
    fork = run.fork_with_messages(list(run.messages), keep_later=True)
    session.add_run(fork)
    session.notice = session.info = None
    on_run_changed(fork)


# -- providers ----------------------------------------------------------------------------

_typed = threading.local()  # the password box's value for the current script run only


def set_typed_key(provider: str, key: str | None) -> None:
    """Remember the key typed in the sidebar for this script run only (each run sets it again).

    Its value is registered as a secret: removed from what the app saves and exports, and from what servers send back.
    """
    register_secret(key)
    _typed.keys = {provider: key} if key else {}


def resolve_api_key(info: ProviderInfo, base_url: str | None = None) -> tuple[str | None, str]:
    """The key a call to `base_url` carries and where it came from: typed, the server's (environment or
    st.secrets, only to an address its operator set: agentcore.providers.keys), or none, with why."""
    typed = getattr(_typed, "keys", {}).get(info.name)
    choice = choose_key(info, base_url, given=typed, stored=_secret)
    return choice.key, choice.source


def _secret(name: str) -> str | None:
    try:
        secret = st.secrets.get(name)
    except Exception:  # noqa: BLE001 - no secrets file is the normal case
        return None
    if secret:
        register_secret(str(secret))
    return str(secret) if secret else None


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def _cached_provider(name: str, model: str, base_url: str | None, n_ctx: int | None = None) -> Provider:
    options = {} if n_ctx is None else {"n_ctx": n_ctx}
    return create_provider(name, model or None, base_url=base_url, **options)


def make_provider(config: RunConfig, options: dict[str, Any] | None = None) -> Provider:
    """The provider for the next call. Raises AgentcoreError (or the provider's own error) if it cannot load.

    `options` are the provider object's own settings (AppConfig.provider_options). Providers that
    need no key are cached per (name, model, base_url, context size); a cached object is shared by
    every browser session, so providers that hold a key are built per call instead.
    """
    info = REGISTRY.get(config.provider)
    if info is None:
        raise AgentcoreError(f"unknown provider {config.provider!r}; available: {', '.join(REGISTRY)}")
    model = config.next_model.model
    if info.key_env is None:
        return _cached_provider(info.name, model, config.base_url, (options or {}).get("n_ctx"))
    key, _ = resolve_api_key(info, config.base_url)
    if key is None and _vendor_url(info, config.base_url):
        # the library's own message speaks to a caller of create_provider; this one names the app's fields
        raise UsageError(
            f"{info.name}: no API key: type it under API key in the sidebar, or set {info.key_env} "
            "(a compatible server's Base URL needs none)"
        )
    return create_provider(info.name, model or None, base_url=config.base_url, api_key=key)


def _vendor_url(info: ProviderInfo, base_url: str | None) -> bool:
    url = base_url or os.environ.get(info.base_url_env or "") or info.default_base_url or ""
    return url.rstrip("/") == (info.default_base_url or "").rstrip("/")


# the library's errors name its own options; in the app the same advice names the field to change
_APP_WORDS = (
    ("(n_ctx): ", "(Context size): "),
    ("or raise n_ctx", "or raise Context size in the sidebar"),
    ("raise max_steps to go on", "raise Max steps in the sidebar to go on"),
)


# advice meant for whoever runs the server, which a person using the page can do nothing with
_SERVER_ADVICE = re.compile(r" \(a deployment that wants otherwise sets [A-Z_]+=1\)")


def in_app_words(text: str) -> str:
    """An error from the library with its advice in the app's terms: the sidebar's fields, not option names,
    and no server setting a person using the page cannot reach."""
    for library, app in _APP_WORDS:
        text = text.replace(library, app)
    return _SERVER_ADVICE.sub("", text)


def provider_problem(name: str) -> str | None:
    """Why a provider cannot be used here, as one line, or None when its module loads."""
    info = REGISTRY.get(name)
    if info is None:
        return f"unknown provider {name!r}"
    try:
        info.load()
    except Exception as exc:  # noqa: BLE001 - any import failure is shown, never raised into the page
        return f"provider {name!r} cannot be loaded: {type(exc).__name__}: {exc}"
    return None
