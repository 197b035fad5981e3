"""No page makes Streamlit log a deprecation: each page is drawn with content under AppTest, and what
Streamlit logs (where it says "`use_container_width` will be removed after 2025-12-31") and every
Python warning is read while it draws."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
import streamlit.deprecation_util  # noqa: F401 - the logger Streamlit says its deprecations with

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.store.runs import Store
from agentcore.testing import pinned

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "views").glob("*.py"))
DEPRECATION_LOGGER = "streamlit.deprecation_util"


class Said(logging.Handler):
    """Every record of a warning or worse, as `logger: message`."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def said():
    """What Streamlit's loggers say (each keeps its records to itself: none propagates) and Python's warnings."""
    handler = Said()
    loggers = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if n.startswith("streamlit")]
    assert DEPRECATION_LOGGER in {lg.name for lg in loggers}
    for logger in loggers:
        logger.addHandler(handler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield handler.lines, caught
    for logger in loggers:
        logger.removeHandler(handler)


@pytest.fixture
def content(tmp_path, monkeypatch):
    """A finished run with tool calls, stored and pinned as a test file, so every page has something to draw."""
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    monkeypatch.setenv("AGENTCORE_TESTS", str(tmp_path / "suite"))
    run = Run.start("Weather in Paris and Rome?", RunConfig(provider="scripted", model="weather"))
    Agent(create_provider("scripted", "weather", scenario="weather"), toolbox.get_tools("get_weather")).run(run)
    Store(tmp_path / "runs.db").save_run(run)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "weather.json").write_text(pinned.dumps(pinned.propose(run, "weather")), encoding="utf-8")
    return run


def test_the_pages_are_found():
    assert {"views/playground.py", "views/tests.py", "views/cost.py"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_drawing_a_page_logs_no_deprecation(page, content, open_app, said, monkeypatch):
    from ui.state import Session

    if page == "views/class_page.py":  # a teacher's page: listed only for one, and the run is a student's
        monkeypatch.setenv("AGENTCORE_USER", "tina")
        monkeypatch.setenv("AGENTCORE_TEACHERS", "tina")

    session = Session()
    session.add_run(content)
    at = open_app(page, session=session)
    if page == "views/playground.py":
        from ui.page_state import PLAYGROUND_VIEW_KEY

        at.session_state[PLAYGROUND_VIEW_KEY] = "Steps"  # the other tab: only the open one is drawn
        at.run()
    assert not at.exception
    if page == "views/tests.py":
        assert list(at.dataframe[0].value["file"]) == ["weather.json"]  # the table of test files was drawn
    if page == "views/class_page.py":
        assert content.id in list(at.dataframe[1].value["id"])  # the class's tables were drawn
    lines, caught = said
    logged = [line for line in lines if "deprecat" in line.lower() or "will be removed" in line]
    assert logged == []
    deprecations = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
    warned = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught if issubclass(w.category, deprecations)]
    assert [w for w in warned if str(ROOT) in w and "/.venv/" not in w] == []
