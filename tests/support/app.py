"""Driving the app under Streamlit's AppTest: clicks, the session, a started run, what a page drew."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from agentcore.run import Run


def session(at: AppTest):
    return at.session_state["session"]


def click(at: AppTest, key: str) -> AppTest:
    button = at.button(key=key)
    assert not button.disabled, f"{key} is disabled"
    button.click().run()
    assert not at.exception, at.exception
    return at


def open_menu(at: AppTest, index: int) -> AppTest:
    """Open the menu of the message at `index`, as a click on it does: its actions are drawn once it is open."""
    from ui.messages_view import menu_key

    at.session_state[menu_key(index)] = True
    at.run()
    assert not at.exception, at.exception
    return at


def in_menu(at: AppTest, key: str, index: int) -> AppTest:
    """Open the menu of the message at `index` and click its button `key`."""
    return click(open_menu(at, index), key)


def open_insert(at: AppTest) -> AppTest:
    """Open the message list's Insert a message, as a click on it does: its form is drawn once it is open."""
    from ui.messages_view import INSERT_KEY

    at.session_state[INSERT_KEY] = True
    at.run()
    return at


def menus(at: AppTest) -> list[int]:
    """The indices of the messages whose rows are drawn, read from their menus."""
    from ui.style import MENU_PREFIX

    found = (b.proto.id.rpartition(MENU_PREFIX) for b in at.get("popover"))
    return [int(index) for _, prefix, index in found if prefix]


def start(at: AppTest, scenario: str = "weather", **widgets: Any) -> Run:
    if at.selectbox(key="cfg_provider").value != "scripted":
        at.selectbox(key="cfg_provider").set_value("scripted").run()
    at.selectbox(key="cfg_scenario").set_value(scenario).run()
    for key, value in widgets.items():
        at.session_state[key] = value
    at.run()
    click(at, "start" if session(at).run is None else "scenario_run")
    return session(at).run


def texts(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown) + "\n".join(str(e.value) for e in at.error)


def settle(at: AppTest) -> AppTest:
    """Draw, wait for the columns started by that draw, and draw again: a wait, never a timing check."""
    at.run()
    comparison = at.session_state["compare_state"].comparison
    if comparison is not None:
        assert comparison.wait(timeout=60), "the columns did not finish"
    return at.run()


def set_up(at: AppTest, *columns: tuple[str, str], max_steps: int = 4, tools=("get_weather",)) -> AppTest:
    at.number_input(key="cmp_n").set_value(len(columns))
    at.number_input(key="cmp_max_steps").set_value(max_steps)
    at.multiselect(key="cmp_tools").set_value(list(tools))
    at.run()
    for i, (provider, detail) in enumerate(columns):
        at.selectbox(key=f"cmp_provider_{i}").set_value(provider)
        at.run()
        if provider == "scripted":
            at.selectbox(key=f"cmp_scenario_{i}").set_value(detail)
        else:
            at.text_input(key=f"cmp_base_url_{i}").set_value(detail)
    return at.run()


def button(at: AppTest, label: str):
    return next(b for b in at.main.button if b.label == label)


def comparison(at: AppTest):
    return at.session_state["compare_state"].comparison


def page_text(at) -> str:
    """Everything the app drew, main area and sidebar, as the text of each element's message."""
    parts, todo = [], [at.main, at.sidebar]
    while todo:
        node = todo.pop()
        todo += list(getattr(node, "children", {}).values())
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
    return "\n".join(parts)


def holds_text(root: object, text: str) -> bool:
    """Whether `text` is reachable from `root` through attributes, containers and closures."""
    import types

    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type | types.ModuleType):
            continue
        seen.add(id(obj))
        if isinstance(obj, str | bytes):
            if (text if isinstance(obj, str) else text.encode()) in obj:
                return True
        elif isinstance(obj, dict):
            stack += [*obj.keys(), *obj.values()]
        elif isinstance(obj, list | tuple | set | frozenset):
            stack += list(obj)
        elif isinstance(obj, types.FunctionType | types.MethodType):
            stack += [c.cell_contents for c in (getattr(obj, "__closure__", None) or ()) if c.cell_contents is not None]
            stack.append(getattr(obj, "__self__", None))
        else:
            stack += [v for v in (getattr(obj, "__dict__", None) or {}).values()]
            stack += [getattr(obj, slot, None) for slot in getattr(type(obj), "__slots__", ()) if isinstance(slot, str)]
            stack.append(getattr(obj, "__pydantic_private__", None))
    return False


def compare_from_runs_page(open_app, run: Run, step: int, *, test_run: bool = False) -> AppTest:
    """The Compare page as the Runs page's Compare from step `step` of the stored `run` opens it (a test's or a
    lesson's run listed by turning on Show test and lesson runs)."""
    at = open_app("views/runs.py")
    if test_run:
        at.toggle(key="runs_made").set_value(True).run()
    at.selectbox(key="runs_selected").set_value(run.id).run()
    at.selectbox(key=f"runs_compare_step_{run.id}").set_value(step).run()
    at.button(key="runs_compare_from").click().run()
    assert not at.exception, at.exception
    at.switch_page("views/compare.py")  # AppTest draws the page it was last sent to, as a browser does after the switch
    at.run()
    return at
