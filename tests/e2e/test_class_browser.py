"""A class on two app servers over one PostgreSQL behind nginx, in real headless Chromium: the teacher's class page
on one server sees a student's Step on the other, and with private runs another student sees nothing of it.

nginx is started with the block docs/deployment.md gives to copy (tests/support/proxy.py): it signs each browser in by
password, sets the user header from that name, keeps each browser on one server by its cookie, and passes the
websocket. Each browser's cookie is chosen so the student's session lives on one server and the teacher's on
the other, and the access log shows that each websocket went where it should.
"""

from __future__ import annotations

import re
import time

import pytest
from support.browser import WAIT, expect
from support.proxy import start_nginx
from support.servers import start_app

from agentcore.store.runs import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HEADER = "X-Forwarded-User"
VIEWPORT = {"width": 1280, "height": 900}


def _servers(workdir, db: str, users: list[str], **env: str):
    """Two app servers on the scripted model over one database, users named by nginx's header, and nginx in front:
    the servers, their host:port as nginx reaches them, and nginx."""
    env = {
        "AGENTCORE_PROVIDER": "scripted",
        "AGENTCORE_DB": db,
        "AGENTCORE_USER_HEADER": HEADER,
        "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none",
        **env,
    }
    Store(db)  # migrated once, before two servers race to do it
    servers = [start_app(workdir, env), start_app(workdir, env)]
    upstreams = [s.url.removeprefix("http://") for s in servers]
    return servers, upstreams, start_nginx(upstreams, users)


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory, pg_cluster):
    """Two app servers on one PostgreSQL database with private runs and a teacher, and nginx in front."""
    db = pg_cluster.new_database()
    servers, upstreams, proxy = _servers(
        tmp_path_factory.mktemp("class-replicas"),
        db,
        ["ada", "bob", "tina"],
        AGENTCORE_TEACHERS="tina",
        AGENTCORE_PRIVATE_RUNS="1",
    )
    yield proxy, upstreams, db
    proxy.stop()
    for server in servers:
        server.stop()


def _cookie_for(proxy, upstream: str) -> str:
    """A sticky cookie value nginx sends to `upstream`."""
    seen = set()
    for n in range(200):
        seen.add(proxy.upstream_of(f"browser{n}"))
        if upstream in seen:
            return f"browser{n}"
    raise AssertionError(f"no cookie value of 200 is sent to {upstream}, only to {seen}")


def _browser_on(browser, proxy, user: str, upstream: str):
    """A browser signed in as `user` whose session nginx keeps on `upstream`."""
    context = browser.new_context(viewport=VIEWPORT, http_credentials={"username": user, "password": user})
    host = proxy.url.removeprefix("http://").split(":")[0]
    context.add_cookies(
        [{"name": "agentcore_replica", "value": _cookie_for(proxy, upstream), "domain": host, "path": "/"}]
    )
    return context


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)


def _websockets(proxy, user: str) -> set[str]:
    """The servers that nginx passed `user`'s websocket upgrades to (status 101)."""
    return {
        line.rsplit("upstream=", 1)[1]
        for line in proxy.log.read_text().splitlines()
        if line.startswith(f"{user} ") and "/_stcore/stream" in line and " 101 " in line
    }


# each page a classmate opens, and a text it draws once its script has run (read before it, a page is blank)
CLASSMATE_PAGES = {
    "runs": "No saved runs yet: runs are saved as they happen.",  # none of ada's, her lesson's hidden or not
    "cost": "Cost",
    "compare": "Compare providers",
    "errors": "Error analysis",
    "tests": "Tests",
    # the playground offers a first visit the first lesson: the classmate's library is empty, ada's run not in it
    "": "Start the first lesson: The loop itself",
}


def test_a_step_on_one_server_reaches_the_teachers_class_page_on_the_other_and_no_classmate(two_servers, browser):
    proxy, (server_a, server_b), db = two_servers
    student_context, teacher_context = (
        _browser_on(browser, proxy, "ada", server_a),
        _browser_on(browser, proxy, "tina", server_b),
    )
    student, teacher = student_context.new_page(), teacher_context.new_page()

    teacher.goto(f"{proxy.url}/class")
    expect(teacher.get_by_role("heading", name="Class")).to_be_visible(timeout=WAIT)
    _idle(teacher)
    student.goto(f"{proxy.url}/lesson")
    step = student.locator(".st-key-lesson_step button")
    expect(step).to_be_enabled(timeout=WAIT)
    _idle(student)

    students = teacher.get_by_test_id("stDataFrame").first
    for shown in ("step 1 of 2", "done"):
        step.click()
        clicked = time.monotonic()
        expect(students).to_contain_text(shown, timeout=WAIT)  # the class page redraws itself: no reload
        print(f"teacher's page showed {shown!r} {time.monotonic() - clicked:.2f} s after the student's click")
        _idle(student)
    expect(students).to_contain_text("ada")

    (run,) = Store(db, owner="tina").list_runs(owner="ada")
    assert run.title == "Lesson: The loop itself" and run.steps == 2
    classmate = _browser_on(browser, proxy, "bob", server_a).new_page()
    for address, drawn in CLASSMATE_PAGES.items():
        classmate.goto(f"{proxy.url}/{address}")
        main = classmate.get_by_test_id("stMain")
        expect(main.get_by_text(drawn, exact=True).first).to_be_visible(timeout=WAIT)  # the page has drawn
        _idle(classmate)
        text = classmate.locator("body").inner_text()
        assert run.id not in text and run.title not in text, address
    classmate.goto(f"{proxy.url}/runs?run={run.id}")
    expect(classmate.get_by_text(f"No run {run.id} here that you may open.")).to_be_visible(timeout=WAIT)
    classmate.goto(f"{proxy.url}/class")
    expect(classmate.get_by_test_id("stSidebar")).to_be_visible(timeout=WAIT)
    _idle(classmate)
    assert "step 1 of 2" not in classmate.locator("body").inner_text()
    assert "Class" not in [n.strip() for n in classmate.get_by_test_id("stSidebarNavLink").all_inner_texts()]

    # nginx logs a websocket when it closes: each browser's went to its own server, upgraded (101)
    student_context.close()
    teacher_context.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (_websockets(proxy, "ada") and _websockets(proxy, "tina")):
        time.sleep(0.2)
    assert _websockets(proxy, "ada") == {server_a} and _websockets(proxy, "tina") == {server_b}


def test_a_student_whose_server_stops_goes_on_on_the_other_with_every_step_kept(tmp_path, pg_cluster, browser):
    """nginx sends a browser whose server has stopped to the other one; the new session offers the student's last
    run, saved in PostgreSQL by every Step, and the student goes on from its last step. The lesson open in another tab,
    not reloaded, takes its next click on the other server too: the click steps the lesson's saved run, no new one."""
    db = pg_cluster.new_database()
    servers, upstreams, proxy = _servers(tmp_path, db, ["ada"])
    try:
        context = _browser_on(browser, proxy, "ada", upstreams[0])
        tab = context.new_page()  # the lesson, in a tab of its own
        tab.goto(f"{proxy.url}/lesson")
        lesson_step = tab.locator(".st-key-lesson_step button")
        expect(lesson_step).to_be_enabled(timeout=WAIT)
        _idle(tab)
        lesson_step.click()
        expect(tab.get_by_role("heading", name=re.compile(r"^Step 1: sent"))).to_be_visible(timeout=WAIT)
        _idle(tab)
        (lesson,) = Store(db, owner="ada").list_runs()

        page = context.new_page()
        page.goto(proxy.url)
        start = page.locator(".st-key-start button")
        expect(start).to_be_visible(timeout=WAIT)
        start.click()
        step = page.get_by_role("button", name="Step", exact=True)
        expect(step).to_be_enabled(timeout=WAIT)
        _idle(page)
        budget = page.get_by_test_id("stMetricValue").first
        step.click()
        expect(budget).to_have_text(re.compile(r"^1 / \d+$"), timeout=WAIT)
        _idle(page)
        before, _ = Store(db, owner="ada").list_runs()
        assert before.steps == 1 and before.owner == "ada" and before.id != lesson.id

        servers[0].stop()  # server A is gone; the browser's websocket with it
        page.reload()  # what a student does on "Connection error"; nginx now finds A down and passes to B
        reopen = page.locator(".st-key-reopen button")
        expect(reopen).to_be_visible(timeout=WAIT)
        expect(page.get_by_text(f"Reopen your last run: {before.title}")).to_be_visible()
        reopen.click()
        expect(budget).to_have_text(re.compile(r"^1 / \d+$"), timeout=WAIT)  # the step made on A
        expect(step).to_be_enabled(timeout=WAIT)
        _idle(page)
        step.click()
        expect(budget).to_have_text(re.compile(r"^2 / \d+$"), timeout=WAIT)
        _idle(page)

        after, _ = Store(db, owner="ada").list_runs()
        assert (after.id, after.steps, after.owner) == (before.id, 2, "ada")  # the same run, one step further

        # the lesson's tab, drawn by A, reconnected to B by itself; its click reaches a session that never drew it
        lesson_step.click()
        expect(tab.get_by_role("heading", name=re.compile(r"^Step 2: sent"))).to_be_visible(timeout=WAIT)
        expect(tab.get_by_text("Resumed your run of this lesson")).to_be_visible()
        _idle(tab)
        runs = {r.id: r.steps for r in Store(db, owner="ada").list_runs()}
        assert runs == {before.id: 2, lesson.id: 2}  # the lesson's run one step further, no new run
        context.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and upstreams[1] not in _websockets(proxy, "ada"):
            time.sleep(0.2)
        assert _websockets(proxy, "ada") >= {upstreams[1]}  # the websocket after the stop went to B
    finally:
        proxy.stop()
        for server in servers:
            server.stop()
