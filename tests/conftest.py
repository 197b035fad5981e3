"""Shared fixtures: the real peer servers, a private runs database, a fresh flaky schedule, the app under AppTest."""

from __future__ import annotations

import atexit
import functools
import io
import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from streamlit import config as streamlit_config
from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest, local_script_runner
from support.pg import pg_cluster, pg_url  # noqa: F401 - a throwaway PostgreSQL cluster, a database per test
from support.servers import APP_WAIT, ROOT, katan, katan_pool, llama_server  # noqa: F401 - session fixtures of the real peer servers
from support.tls import contexts_built_once

from agentcore import toolbox

APP = str(ROOT / "app.py")

# pytest keeps each test module, its asserts rewritten, in __pycache__, but only where bytecode may be written: in a
# shell that sets PYTHONDONTWRITEBYTECODE each worker would rewrite every test module's asserts on every run (7 of
# the 12 s collecting the suite took on two cores). The test modules are imported after this file.
sys.dont_write_bytecode = False

# Each pytest-xdist worker runs the embedded model in a process of its own (and so does an app server it starts). With
# a worker per core, llama.cpp's second thread for reading a prompt only waits for the core another worker holds: with
# one core kept busy beside it, three prompts took 14.7 s and 18.8 CPU-seconds on two threads, 12.1 s and 12.0 on one
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1:
    os.environ.setdefault("AGENTCORE_LOCAL_THREADS", str(max(1, (os.cpu_count() or 1) // _workers)))

# `make test` runs the same property examples every time, so a red build is the code's doing, not the draw's;
# HYPOTHESIS_PROFILE=explore draws new ones (with AGENTCORE_FUZZ_EXAMPLES for a long run)
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
# a test that uses one of these starts a real server: it is marked slow (pytest -m "not slow" skips it)
SERVER_FIXTURES = {"katan", "katan_pool", "llama_server", "pg_cluster", "pg_url"}
# Under `make test` the suite runs on pytest-xdist workers with --dist loadgroup: the tests of one server share
# one worker, so each session's server starts once, and a module of browser tests keeps its one Chromium and app.
SERVER_GROUPS = {"katan": "katan", "katan_pool": "katan", "llama_server": "llama", "pg_cluster": "pg", "pg_url": "pg"}


def _on_postgresql(item: pytest.Item) -> bool:
    """A case of a fixture parametrised by backend whose value is "postgresql": it asks for the cluster by
    `request.getfixturevalue`, so the fixture's name is not among the test's."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgresql" in callspec.params.values()


def _group(item: pytest.Item) -> str | None:
    fixtures = set(getattr(item, "fixturenames", ()))
    if _on_postgresql(item):
        return "pg"
    for fixture, group in SERVER_GROUPS.items():
        if fixture in fixtures:
            return group
    if item.get_closest_marker("browser") is not None or "phoenix" in item.module.__name__:
        return item.module.__name__  # a module-scoped browser, app server or Phoenix: one worker per module
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())) or _on_postgresql(item):
            item.add_marker(pytest.mark.slow)
        elif item.get_closest_marker("long") is not None:  # slow for the fast subset; make mutate selects it
            item.add_marker(pytest.mark.slow)
        group = _group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A pytest-xdist worker ends as soon as its last hook has run: its results reached the controller when its
    session finished, and the exit handlers (the tool worker processes, the MCP servers it started) run here first.

    Python's own finalization of a worker's heap, which the controller waited on, took two to three seconds of each
    fast run's sixty.
    """
    if hasattr(config, "workerinput"):
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


@pytest.fixture(autouse=True, scope="session")
def _session_runs_database(tmp_path_factory):
    # module- and session-scoped fixtures run before the per-test one below: cover them too
    saved = os.environ.get("AGENTCORE_DB")
    os.environ["AGENTCORE_DB"] = str(tmp_path_factory.mktemp("db") / "session-runs.db")
    yield
    if saved is None:
        os.environ.pop("AGENTCORE_DB", None)
    else:
        os.environ["AGENTCORE_DB"] = saved


@pytest.fixture(autouse=True, scope="session")
def _tls_contexts_built_once():
    """Each HTTP client the tests build gets the TLS context it would build, built once (tests/support/tls.py)."""
    with contexts_built_once():
        yield


def _script_run_awaited(runner: local_script_runner.LocalScriptRunner, timeout: float = 3) -> None:
    """Wait for an AppTest's script run as Streamlit's own wait does, on its thread rather than by looking every
    millisecond: each look took the interpreter's lock from the script it waited for, and read every event so far."""
    thread = runner._script_thread
    if thread is not None:
        thread.join(timeout)
    if runner.script_stopped():
        return
    runner.request_stop()  # as Streamlit's wait does when the time is up: stop the script, then say so
    runner.join()
    raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")


@pytest.fixture(autouse=True, scope="session")
def _app_scripts_compiled_once():
    """Each AppTest run compiles app.py and its page afresh and scans every installed package for components,
    three quarters of a page test's time; a server does both once, for all its sessions, and so do the tests.

    A script is compiled again when its text changes, so a page edited during a session still runs as written.
    """
    compiled: dict[tuple[str, bytes, bool], Any] = {}
    compile_script = ScriptCache.get_bytecode

    def get_bytecode(self: ScriptCache, script_path: str) -> Any:
        path = os.path.abspath(script_path)
        try:
            key = (path, Path(path).read_bytes(), bool(streamlit_config.get_option("runner.magicEnabled")))
        except OSError:  # Streamlit's own error for a missing script
            return compile_script(self, script_path)
        if key not in compiled:
            compiled[key] = compile_script(self, script_path)
        return compiled[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(local_script_runner, "require_widgets_deltas", _script_run_awaited)
        patch.setattr(ScriptCache, "get_bytecode", get_bytecode)
        patch.setattr(
            manifest_scanner, "scan_component_manifests", functools.cache(manifest_scanner.scan_component_manifests)
        )
        yield


_RUNS_DATABASES = itertools.count()


@pytest.fixture(autouse=True)
def _private_runs_database(tmp_path_factory, monkeypatch):
    """No test may read or write the user's own ~/.agentcore/runs.db: each gets a database of its own, a name no
    other test of the session has (not a folder of its own: most never open it, and tmp_path made one each)."""
    name = f"default-runs-{next(_RUNS_DATABASES)}.db"
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path_factory.getbasetemp() / name))


@pytest.fixture(autouse=True)
def _reset_flaky():
    toolbox.reset_flaky()
    yield


@pytest.fixture
def open_app(monkeypatch) -> Callable[..., AppTest]:
    """Open the app as a browser does (app.py, on the scripted model), then go to `page` when one is given.

    `session` is put in place before the first draw, as the playground would have left it; `view` opens
    the playground's Messages or Steps tab.
    """
    monkeypatch.setenv("AGENTCORE_PROVIDER", "scripted")
    monkeypatch.delenv("AGENTCORE_MODEL", raising=False)

    def open_(
        page: str | None = None, *, session: Any = None, timeout: float = APP_WAIT, view: str | None = None
    ) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=timeout)
        if session is not None:
            at.session_state["session"] = session
        if view is not None:  # the playground's open tab: only the open one is drawn
            from ui.page_state import PLAYGROUND_VIEW_KEY

            at.session_state[PLAYGROUND_VIEW_KEY] = view
        at.run()
        assert not at.exception, at.exception
        if page is not None:
            at.switch_page(page).run()
            assert not at.exception, at.exception
        return at

    return open_


class Downloads:
    """What each download button would hand the browser, recorded while AppTest draws the page."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.deferred: dict[str, Callable[[], Any]] = {}

    def data(self, button: Any) -> bytes:
        """The bytes behind a download button, its data built now when the page defers it to the click."""
        proto = button.proto
        if proto.deferred_file_id:
            value = self.deferred[proto.deferred_file_id]()
        else:
            value = self.files[Path(proto.url).stem]
        if isinstance(value, io.IOBase):
            value = value.read()
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)


@pytest.fixture
def downloads(monkeypatch) -> Downloads:
    """Record the data of every download button drawn from now on (AppTest keeps only the file's URL)."""
    seen = Downloads()
    store = MemoryMediaFileStorage.load_and_get_id
    defer = MediaFileManager.add_deferred

    def load_and_get_id(self, path_or_data, mimetype, kind, filename=None):
        file_id = store(self, path_or_data, mimetype, kind, filename)
        seen.files[file_id] = path_or_data
        return file_id

    def add_deferred(self, data_callable, *args, **kwargs):
        file_id = defer(self, data_callable, *args, **kwargs)
        seen.deferred[file_id] = data_callable
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load_and_get_id)
    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return seen


@pytest.fixture
def steps_tab() -> Callable[[AppTest], AppTest]:
    """Open the playground's Steps tab, as a click on it does: only the open tab is drawn."""
    from ui.page_state import PLAYGROUND_VIEW_KEY

    def open_(at: AppTest, view: str = "Steps") -> AppTest:
        at.session_state[PLAYGROUND_VIEW_KEY] = view
        at.run()
        assert not at.exception, at.exception
        return at

    return open_
