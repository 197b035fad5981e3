"""A server's key goes only where its operator sends it: its provider's own address or the base URL set in the
environment. Every other address (a page user's, a stored run's, a test configuration's) gets no key, or the key
its own caller gave; a listening stand-in on 127.0.0.1 reads what each request carried."""

from __future__ import annotations

import json
import time

import pytest
from support.stand_in import Reply, StandIn

from agentcore import Agent, Run, RunConfig
from agentcore.cli.main import main
from agentcore.compare import ColumnSpec
from agentcore.providers import create_operator_provider, create_provider, get_info
from agentcore.providers.keys import ANY_ADDRESS_ENV, address, choose_key, may_carry_server_key
from agentcore.store import Store
from agentcore.testing.pinned import PinnedTest
from agentcore.testing.runner import run_matrix

OPENAI_KEY = "sk-server-openai-key-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-server-anthropic-key-0123456789"
TYPED = "sk-typed-by-the-user-0123456789abcdef"
CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key")

OPENAI_TEXT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


@pytest.fixture(autouse=True)
def server_keys(monkeypatch):
    """The server holds both keys; no base URL of the operator's unless a test sets one."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", ANY_ADDRESS_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def listener():
    """A stand-in that answers each request with a plain answer in either wire format."""
    with StandIn(Reply(json.dumps(OPENAI_TEXT).encode()), Reply(json.dumps(OPENAI_TEXT).encode())) as server:
        yield server


def carried(server: StandIn) -> list[str]:
    """The credential header values every request to the stand-in carried."""
    return [v for seen in server.seen for k, v in seen.headers.items() if k.lower() in CREDENTIAL_HEADERS]


def ask(provider) -> None:
    run = Run.start("hi", RunConfig(provider=provider.name, model=provider.model))
    Agent(provider, []).step(run)
    assert run.stop_reason == "answer", run.error


@pytest.mark.parametrize("name", ["openai", "openai-responses", "anthropic"])
def test_an_address_named_by_a_caller_gets_none_of_the_servers_keys(listener, name):
    provider = create_provider(name, "gpt-4o-mini", base_url=listener.url + "/v1", stream=False, max_retries=0)
    Agent(provider, []).step(Run.start("hi", RunConfig(provider=name, model="gpt-4o-mini")))  # its answer aside
    assert len(listener.seen) == 1
    assert carried(listener) == []
    assert OPENAI_KEY not in json.dumps(listener.seen[0].headers) + json.dumps(listener.seen[0].body)
    assert ANTHROPIC_KEY not in json.dumps(listener.seen[0].headers)


def test_the_operators_base_url_gets_the_key_in_any_spelling_of_it(listener, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", listener.url + "/v1")
    ask(create_provider("openai", "gpt-4o-mini", stream=False))  # the configured address
    ask(create_provider("openai", "gpt-4o-mini", base_url=listener.url.upper().replace("HTTP", "http") + "/v1/"))
    assert carried(listener) == [f"Bearer {OPENAI_KEY}"] * 2


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_key_the_caller_gave_goes_where_the_caller_points(listener):
    ask(create_provider("openai", "gpt-4o-mini", base_url=listener.url + "/v1", api_key=TYPED, stream=False))
    assert carried(listener) == [f"Bearer {TYPED}"]


def test_a_deployment_that_sends_its_key_anywhere_says_so_by_name(listener, monkeypatch):
    monkeypatch.setenv(ANY_ADDRESS_ENV, "1")
    ask(create_provider("openai", "gpt-4o-mini", base_url=listener.url + "/v1", stream=False))
    assert carried(listener) == [f"Bearer {OPENAI_KEY}"]


def test_the_command_line_sends_the_key_to_the_address_its_user_typed(listener, capsys):
    args = ["run", "hi", "--provider", "openai", "--model", "gpt-4o-mini", "--base-url", listener.url + "/v1"]
    assert main([*args, "--no-stream", "--max-steps", "1"]) == 0, capsys.readouterr().err
    assert carried(listener) == [f"Bearer {OPENAI_KEY}"]
    assert OPENAI_KEY not in "".join(capsys.readouterr())


def test_the_operators_factory_and_the_plain_one_differ_only_on_a_named_address(listener):
    ask(create_operator_provider("openai", "gpt-4o-mini", base_url=listener.url + "/v1", stream=False))
    ask(create_provider("openai", "gpt-4o-mini", base_url=listener.url + "/v1", stream=False))
    assert carried(listener) == [f"Bearer {OPENAI_KEY}"]  # the first request only


def test_a_stored_runs_address_gets_no_key_when_the_run_goes_on(listener, tmp_path):
    """An imported run names the importer's address; going on with it from the library sends no server key."""
    store = Store(tmp_path / "runs.db", owner="ada")
    run = Run.start("hi", RunConfig(provider="openai", model="gpt-4o-mini", base_url=listener.url + "/v1"))
    store.import_run(run)
    stored = store.load_run(store.list_runs()[0].id)
    config = stored.config
    Agent(create_provider(config.provider, config.model, base_url=config.base_url, stream=False), []).step(stored)
    assert stored.stop_reason == "answer" and carried(listener) == []


def test_a_test_configuration_from_a_page_or_a_client_gets_no_key(listener):
    test = PinnedTest(name="hello", prompt="hi", max_steps=1)
    spec = ColumnSpec("openai", "gpt-4o-mini", listener.url + "/v1")
    matrix = run_matrix([test], [spec])
    assert matrix.cells[0][0].run is not None and len(listener.seen) == 1
    assert carried(listener) == []
    run_matrix([test], [spec], factory=create_operator_provider)  # typed on the command line: the operator's
    assert carried(listener) == [f"Bearer {OPENAI_KEY}"]


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        (None, True),
        ("", True),
        ("https://api.openai.com/v1", True),
        ("HTTPS://API.OpenAI.com:443/v1/", True),
        ("https://api.openai.com.example.net/v1", False),
        ("https://api.openai.com/v1@example.net", False),
        ("https://user:pw@api.openai.com/v1", False),
        ("https://example.net@api.openai.com/v1", False),
        ("http://api.openai.com/v1", False),
        ("https://api.openai.com:8443/v1", False),
        ("https://api.openai.com/v1?to=example.net", False),
        ("https://api.openai.com/v1/../v2", False),
        ("https://api.openai.com", False),
        ("not a url at all", False),
        ("ftp://api.openai.com/v1", False),
    ],
)
def test_an_address_is_the_providers_own_only_when_it_is_that_address_whole(url, allowed):
    assert may_carry_server_key(get_info("openai"), url) is allowed


def test_two_spellings_of_one_address_are_one_and_others_are_not():
    assert address("http://LocalHost:80/v1/") == address("http://localhost/v1") == "http://localhost/v1"
    assert address("127.0.0.1:11434") == "http://127.0.0.1:11434"
    assert address("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert address("http://localhost:99999/v1") is None and address("ftp://host/v1") is None


def test_the_key_choice_says_in_words_which_key_a_call_will_carry(monkeypatch):
    openai = get_info("openai")
    own = choose_key(openai, None)
    assert own.key == OPENAI_KEY and own.source == "from the environment (OPENAI_API_KEY)"
    named = choose_key(openai, "http://127.0.0.1:9/v1")
    assert named.key is None and named.server_key_refused
    assert "https://api.openai.com/v1" in named.source and OPENAI_KEY not in named.source
    assert choose_key(openai, "http://127.0.0.1:9/v1", given=TYPED).key == TYPED
    monkeypatch.delenv("OPENAI_API_KEY")
    stored = choose_key(openai, None, stored=lambda name: "sk-from-secrets-file-0123456789")
    assert stored.key == "sk-from-secrets-file-0123456789" and "st.secrets" in stored.source
    refused = choose_key(openai, "http://127.0.0.1:9/v1", stored=lambda name: "sk-from-secrets-file-0123456789")
    assert refused.key is None and refused.server_key_refused
    missing = choose_key(openai, None)
    assert missing.source.startswith("missing") and not missing.server_key_refused  # no key: nothing refused
    assert not choose_key(openai, None, given=TYPED).server_key_refused
    with pytest.raises(AttributeError):  # a choice is a value: no one changes the key it says
        missing.key = OPENAI_KEY
    assert choose_key(get_info("ollama"), "http://127.0.0.1:9").key is None


def test_a_page_users_base_url_gets_no_server_key_and_the_sidebar_says_so(listener, open_app):
    at = open_app()
    at.selectbox(key="cfg_provider").set_value("openai").run()
    at.text_input(key="cfg_base_url").set_value(listener.url + "/v1").run()
    captions = [str(c.value) for c in at.sidebar.caption]
    assert any(c.startswith("Key: none for this address") for c in captions), captions
    at.text_input(key="prompt").set_value("hi").run()
    at.button(key="start").click().run()
    at.button(key="step").click().run()
    assert not at.exception, at.exception
    assert len(listener.seen) == 1 and carried(listener) == []


def test_the_app_sends_the_key_to_the_operators_base_url(listener, open_app, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", listener.url + "/v1")
    at = open_app()
    at.selectbox(key="cfg_provider").set_value("openai").run()
    captions = [str(c.value) for c in at.sidebar.caption]
    assert "Key: from the environment (OPENAI_API_KEY)" in captions, captions
    at.text_input(key="prompt").set_value("hi").run()
    at.button(key="start").click().run()
    at.button(key="step").click().run()
    assert not at.exception, at.exception
    assert carried(listener) == [f"Bearer {OPENAI_KEY}"]


def test_a_compare_column_on_a_named_address_gets_no_server_key_and_says_so(listener, open_app):
    at = open_app("views/compare.py")
    at.number_input(key="cmp_n").set_value(2).run()
    at.selectbox(key="cmp_provider_0").set_value("openai").run()
    at.text_input(key="cmp_base_url_0").set_value(listener.url + "/v1").run()
    at.selectbox(key="cmp_provider_1").set_value("openai").run()
    captions = [str(c.value) for c in at.main.caption]
    assert any(c.startswith("Key: none for this address") for c in captions), captions
    assert "Key: from the environment (OPENAI_API_KEY)" in captions  # column 2: OpenAI's own address
    at.selectbox(key="cmp_provider_1").set_value("scripted").run()  # and no call leaves this machine
    next(b for b in at.main.button if b.label == "Step all").click().run()
    for _ in range(100):  # the columns step on threads of their own; the page redraws while they work
        if listener.seen:
            break
        time.sleep(0.05)
        at.run()
    assert len(listener.seen) == 1 and carried(listener) == []
