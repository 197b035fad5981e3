"""The agentcore app: a shared sidebar and navigation over the pages that exist in views/."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui.sidebar import render_sidebar
from ui.state import current_user, init_session, sign_in_refusal
from ui.style import apply_style

HERE = Path(__file__).resolve().parent
ICON = HERE / "ui" / "static" / "icon.png"

# (file, title, icon): a page is listed only once its file exists, so new pages appear by being added
PAGES = (
    ("views/playground.py", "Playground", ":material/play_circle:"),
    ("views/lesson.py", "Lesson", ":material/school:"),
    ("views/runs.py", "Runs", ":material/history:"),
    ("views/cost.py", "Cost", ":material/payments:"),
    ("views/dashboard.py", "Dashboard", ":material/monitoring:"),
    ("views/compare.py", "Compare", ":material/compare_arrows:"),
    ("views/tests.py", "Tests", ":material/checklist:"),
    ("views/errors.py", "Error analysis", ":material/bug_report:"),
    ("views/held.py", "Held calls", ":material/front_hand:"),
)
# the teachers' pages (AGENTCORE_TEACHERS), listed after the others only for them: (file, title, icon, address)
TEACHER_PAGES = (("views/class_page.py", "Class", ":material/groups:", "class"),)


def main() -> None:
    """Set up the page, the session, the sidebar, and run the chosen page."""
    # the icon is a file the app serves itself: a Material icon as page_icon makes the browser ask a font host
    st.set_page_config(page_title="agentcore", page_icon=str(ICON), layout="wide")
    apply_style()
    refusal = sign_in_refusal()
    if refusal is not None:  # behind a sign-in proxy, no name is typed in its place: the app stays shut
        st.error(refusal, icon=":material/lock:")
        st.stop()
    session = init_session()
    pages = [
        st.Page(path, title=title, icon=icon, default=(i == 0))
        for i, (path, title, icon) in enumerate(PAGES)
        if (HERE / path).is_file()
    ]
    if current_user(session).teacher:
        pages += [st.Page(path, title=title, icon=icon, url_path=url) for path, title, icon, url in TEACHER_PAGES]
    current = st.navigation(pages)
    render_sidebar(session, folded=current.title != "Playground")
    current.run()


main()
