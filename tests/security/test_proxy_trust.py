"""A server that takes its users' names from a header believes whoever reaches it: only its proxy may. It listens
on loopback, or the proxy proves itself with a secret the server holds; otherwise every request is refused."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from agentcore.secrets import scrub_text
from agentcore.store.access import PROXY_SECRET_ENV, PROXY_SECRET_HEADER, loopback, proxy_refusal
from ui import state

HEADER = "X-Forwarded-User"
SECRET = "proxy-secret-0123456789abcdef"


@pytest.fixture(autouse=True)
def no_secret(monkeypatch):
    monkeypatch.delenv(PROXY_SECRET_ENV, raising=False)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_a_loopback_listener_trusts_its_proxys_header(host):
    assert loopback(host) and proxy_refusal(HEADER, {HEADER: "ada"}, host) is None


@pytest.mark.parametrize("host", [None, "", "0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "app.example.org"])
def test_any_other_listener_refuses_every_request_and_says_what_to_do(host):
    refusal = proxy_refusal(HEADER, {HEADER: "tina"}, host)
    assert refusal is not None and not loopback(host)
    assert HEADER in refusal and "127.0.0.1" in refusal and PROXY_SECRET_ENV in refusal and "\n" not in refusal


def test_with_a_secret_only_a_request_that_carries_it_is_trusted_on_any_address(monkeypatch):
    monkeypatch.setenv(PROXY_SECRET_ENV, SECRET)
    assert proxy_refusal(HEADER, {HEADER: "ada", PROXY_SECRET_HEADER.lower(): SECRET}, "0.0.0.0") is None
    for headers in ({HEADER: "ada"}, {HEADER: "ada", PROXY_SECRET_HEADER: SECRET[:-1]}, {PROXY_SECRET_HEADER: ""}):
        refusal = proxy_refusal(HEADER, headers, "0.0.0.0")
        assert refusal is not None and "proxy" in refusal and SECRET not in refusal
    # a secret set is checked on loopback too: the proxy is then the only way in, wherever the server listens
    assert proxy_refusal(HEADER, {HEADER: "ada"}, "127.0.0.1") is not None
    assert SECRET not in scrub_text(f"header {SECRET}")  # held as a secret: never written or shown


def test_the_app_refuses_a_forged_header_when_it_listens_beyond_loopback(monkeypatch):
    monkeypatch.setenv(state.USER_HEADER_ENV, HEADER)
    monkeypatch.setenv("AGENTCORE_TEACHERS", "tina")
    monkeypatch.setattr(state, "_listening_on", lambda: "0.0.0.0")
    with pytest.raises(state.NotSignedIn, match="listens on 0.0.0.0"):
        state.resolve_user({HEADER: "tina"}, None)
    monkeypatch.setattr(state, "_listening_on", lambda: "127.0.0.1")
    user = state.resolve_user({HEADER: "tina"}, None)
    assert user.name == "tina" and user.teacher and user.from_header


def test_the_app_listens_on_loopback_unless_told_otherwise():
    config = tomllib.loads((Path(__file__).parents[2] / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"


def test_the_viewer_rule_in_its_parts(monkeypatch):
    """Who teaches, who sees whom and the cache key of what they see: the values the Store's every query asks."""
    from dataclasses import FrozenInstanceError

    from agentcore.store.access import Teachers, Viewer, is_teacher

    monkeypatch.setenv("AGENTCORE_TEACHERS", "tina, X-Groups: teachers, bad:, : nobody")
    assert is_teacher("tina") is True and is_teacher("ada") is False
    assert Teachers.from_env().headers == (("x-groups", "teachers"),)  # half an entry is no entry
    monkeypatch.setenv("AGENTCORE_PRIVATE_RUNS", "1")
    student, teacher = Viewer("ada"), Viewer("tina", teacher=True)
    assert not student.teacher and not student.may_see("bob") and student.may_see("ada")
    assert student.scope == ("owner", "ada") and teacher.scope == () and teacher.may_see("bob")
    monkeypatch.setenv("AGENTCORE_PRIVATE_RUNS", "0")
    assert student.scope == () and student.may_see("bob")
    for value, field in ((student, "name"), (Teachers.from_env(), "names")):
        with pytest.raises(FrozenInstanceError):  # shared between threads and sessions: never changed in place
            setattr(value, field, None)
    assert loopback("0.0.0.0") is False and loopback("app.example.org") is False and loopback("localhost") is True
