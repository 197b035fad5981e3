"""Secrets are removed by value, whatever their shape: from files, the database, bundles, stdout, stderr and the app.

A real server on 127.0.0.1 echoes the request's key back (in a 401 JSON error, an HTML error
page, a 200 answer's text split over two streamed deltas), and keys that look like no key
at all must still appear nowhere that agentcore writes, prints or shows.
"""

from __future__ import annotations

import base64
import html
import json
import os
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from support.servers import ROOT
from support.stand_in import POLL_S, QuietServer

from agentcore import secrets
from agentcore.cli.main import main
from agentcore.errors import ProviderError
from agentcore.secrets import REDACTED, StreamScrubber, register_secret, scrub, scrub_text

OPENAI_KEY = "correct-horse-battery-staple-42"  # nothing about it says "key": no sk-, no Bearer
ANTHROPIC_KEY = "tr0ub4dor-and-three-more-words"
TYPED_KEY = "my typed passphrase 7"


class EchoHandler(BaseHTTPRequestHandler):
    """Answers every POST with the key it was sent, in the form the first part of the path names."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        auth = self.headers.get("authorization") or ""
        key = auth.removeprefix("Bearer ") if auth else self.headers.get("x-api-key", "")
        mode = self.path.strip("/").split("/")[0]
        if mode == "json401":
            self._send(401, "application/json", json.dumps({"error": {"message": f"bad key {key}", "type": "auth"}}))
        elif mode == "html":
            page = f"<html><head><title>Forbidden: {key}</title></head><body>key {key} refused</body></html>"
            self._send(403, "text/html", page)
        elif self.path.endswith("/chat/completions"):  # a 200 streamed answer, the key split over two deltas
            half = len(key) // 2
            chunks = [{"choices": [{"index": 0, "delta": {"content": text}}]} for text in ("Your key is ", key[:half])]
            chunks.append({"choices": [{"index": 0, "delta": {"content": key[half:] + "."}, "finish_reason": "stop"}]})
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(200, "text/event-stream", body)
        else:  # Anthropic's Messages API, answered whole
            answer = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": f"Your key is {key}."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 5},
            }
            self._send(200, "application/json", json.dumps(answer))

    def _send(self, status: int, ctype: str, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    server = QuietServer(("127.0.0.1", 0), EchoHandler)
    thread = threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def _no_secrets_left_over():
    secrets.forget_secrets()
    yield
    secrets.forget_secrets()


@dataclass
class Said:
    """What a command returned and wrote to its standard output and error."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def agentcore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]):
    """The command line, run in this process with both keys in its environment and its database in tmp_path.

    Output is caught at the file descriptors, so whatever reaches stdout or stderr is read, as from a process.
    """
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    monkeypatch.chdir(ROOT)

    def run(*args: str) -> Said:
        capfd.readouterr()
        code = main(list(args))
        out, err = capfd.readouterr()
        return Said(code, out, err)

    return run


def written(tmp_path: Path) -> bytes:
    """Every file the command left in the test's folder: transcripts, bundles, the database and its WAL."""
    return b"".join(p.read_bytes() for p in sorted(tmp_path.iterdir()) if p.is_file())


def assert_nowhere(key: str, *texts: str | bytes) -> None:
    for text in texts:
        assert key not in (text.decode("utf-8", "replace") if isinstance(text, bytes) else text)


@pytest.mark.parametrize("mode", ["json401", "html", "ok"])
@pytest.mark.parametrize(
    "provider, key, path",
    [("openai", OPENAI_KEY, "/v1"), ("anthropic", ANTHROPIC_KEY, "")],
    ids=["openai", "anthropic"],
)
def test_a_key_the_server_echoes_reaches_no_file_no_database_and_no_output(
    agentcore, echo, tmp_path, provider, key, path, mode
):
    out = tmp_path / "t.json"
    result = agentcore("run", "hello", "--provider", provider, "--base-url", f"{echo}/{mode}{path}", "--out", str(out))
    assert result.returncode == (0 if mode == "ok" else 4), result.stderr
    assert out.exists() and (tmp_path / "runs.db").exists()
    assert_nowhere(key, result.stdout, result.stderr, written(tmp_path))
    assert REDACTED in (result.stdout if mode == "ok" else result.stderr)  # the echo arrived, without the key


def test_a_comparison_keeps_echoed_keys_out_of_its_bundle_and_its_output(agentcore, echo, tmp_path):
    bundle = tmp_path / "bundle.json"
    result = agentcore(
        "compare",
        "hello",
        "--config",
        f"openai@{echo}/ok/v1",
        "--config",
        f"anthropic@{echo}/json401",
        "--config",
        f"openai:gpt-4o@{echo}/html/v1",
        "--out",
        str(bundle),
    )
    assert result.returncode == 4 and bundle.exists(), result.stderr
    for key in (OPENAI_KEY, ANTHROPIC_KEY):
        assert_nowhere(key, result.stdout, result.stderr, written(tmp_path))
    assert REDACTED in bundle.read_text(encoding="utf-8")


def test_a_key_typed_in_the_app_reaches_neither_the_database_nor_the_export(echo, open_app, downloads):
    at = open_app()
    at.selectbox(key="cfg_provider").set_value("openai").run()
    at.text_input(key="cfg_base_url").set_value(f"{echo}/ok/v1").run()
    next(t for t in at.sidebar.text_input if t.label == "API key").set_value(TYPED_KEY).run()
    prompt = f"Is {TYPED_KEY} my key?"  # pasted in the prompt too
    at.text_input(key="prompt").set_value(prompt).run()
    at.button(key="start").click().run()
    at.button(key="step").click().run()
    assert not at.exception, at.exception
    at.run()  # `downloads` sees the buttons drawn from here on
    exported = downloads.data(at.download_button(key="export")).decode()
    database = Path(os.environ["AGENTCORE_DB"])
    stored = b"".join(p.read_bytes() for p in database.parent.iterdir() if p.name.startswith(database.name))
    assert_nowhere(TYPED_KEY, exported, stored)
    run = at.session_state["session"].run
    assert len(run.steps) == 1 and REDACTED in run.messages[-1].content  # the echo arrived, without the key
    shown = [str(m.value) for m in [*at.markdown, *at.caption, *at.code, *at.json] if TYPED_KEY in str(m.value)]
    # the user's own message, as typed, is the one element that shows it: nothing the server sent back does
    assert len(shown) == 1 and shown[0].endswith("\n\n" + prompt), shown


def test_each_form_a_key_takes_in_text_is_removed():
    key = 'pass"word/with spaces&<é>'
    register_secret(key)
    forms = [
        key,
        json.dumps(key)[1:-1],
        json.dumps(key, ensure_ascii=False)[1:-1],
        urllib.parse.quote(key, safe=""),
        urllib.parse.quote_plus(key),
        html.escape(key),
    ]
    forms += [base64.b64encode(f"{user}:{key}".encode()).decode() for user in ("", "a", "ab", "abc", "someone")]
    for form in forms:
        assert key not in scrub_text(f"before {form} after") and REDACTED in scrub_text(f"before {form} after"), form


def test_values_under_eight_characters_are_not_registered_so_words_are_not_scrubbed():
    for value in ("local", "   ", None, "1234567", "localhost-key"):
        register_secret(value)
    assert scrub_text("a local model, run 1234567 times") == "a local model, run 1234567 times"
    assert scrub_text("on localhost-key") == f"on {REDACTED}"


def test_a_key_in_the_environment_is_removed_whatever_its_shape_and_encoding(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "just some words 123")
    assert scrub_text("echo: just some words 123!") == f"echo: {REDACTED}!"
    assert scrub_text("GET /?key=just%20some%20words%20123&x=1") == f"GET /?key={REDACTED}&x=1"
    basic = base64.b64encode(b"me:just some words 123").decode()
    assert REDACTED in scrub_text(f"sent {basic} as basic auth")


def test_scrub_copies_what_holds_a_secret_and_returns_the_rest_unchanged():
    register_secret(OPENAI_KEY)
    data = {"keep": ["a", {"b": 1}], "echo": [{"deep": (f"key {OPENAI_KEY}",)}], OPENAI_KEY: True}
    clean = scrub(data)
    assert clean == {"keep": ["a", {"b": 1}], "echo": [{"deep": (f"key {REDACTED}",)}], REDACTED: True}
    assert clean["keep"] is data["keep"] and data["echo"][0]["deep"][0] == f"key {OPENAI_KEY}"
    nested = json.loads("[" * 800 + json.dumps(OPENAI_KEY) + "]" * 800)  # as deep as a server may send
    assert OPENAI_KEY not in json.dumps(scrub(nested))


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_key_anywhere_in_a_large_answer_is_removed_in_each_form_its_json_text_holds():
    # a large answer is searched once as JSON text before it is walked: every form must still be found there
    key = 'pass"word\\with é and 42'
    register_secret(key)
    forms = (key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1])
    filler = [{"type": "summary_text", "text": ""}] * 50_000
    answer = {"output": filler}
    assert scrub(answer) is answer
    for echo in (key, json.dumps({"key": key}), json.dumps({"key": key}, ensure_ascii=False), "Bearer\n" + "x" * 20):
        answer = {"output": [*filler, {"deep": ({"text": f"said {echo}"},)}], f"{echo}": 1}
        clean = scrub(answer)
        said, name = clean["output"][-1]["deep"][0]["text"], next(k for k in clean if k != "output")
        for text in (said, name):
            assert REDACTED in text and not any(form in text for form in forms), (echo, text)
        assert answer["output"][-1]["deep"][0]["text"] == f"said {echo}"  # copied, not changed


def test_a_provider_error_keeps_no_echoed_key():
    from agentcore.providers.base import WireExchange

    register_secret(OPENAI_KEY)
    wire = WireExchange(url="http://x", status=401, response={"error": {"message": f"bad key {OPENAI_KEY}"}})
    err = ProviderError(f"bad key {OPENAI_KEY}", provider="openai", status=401, request_id=OPENAI_KEY, wire=wire)
    assert OPENAI_KEY not in str(err) and OPENAI_KEY not in err.wire.model_dump_json()
    assert wire.response["error"]["message"].endswith(OPENAI_KEY)  # the exchange given is copied, not changed


def test_streamed_text_never_passes_on_a_key_split_over_deltas():
    register_secret(OPENAI_KEY)
    text = f"key {OPENAI_KEY} and again {OPENAI_KEY[:5]}... {OPENAI_KEY}!"
    for size in (1, 2, 3, 7, 40):
        seen: list[str] = []
        sink = StreamScrubber(seen.append)
        for i in range(0, len(text), size):
            sink(text[i : i + size])
            assert all(OPENAI_KEY not in "".join(seen[j:]) for j in range(len(seen)))
        sink.close()
        assert "".join(seen) == f"key {REDACTED} and again {OPENAI_KEY[:5]}... {REDACTED}!"


def test_text_shaped_like_a_key_streamed_a_few_characters_at_a_time_is_redacted_as_it_streams():
    seen: list[str] = []
    sink = StreamScrubber(seen.append)
    text = (
        "Found sk-proj-abcdefghijklmnopqrstu in .env; send Authorization: Bearer tok0123456789abcdef next. Ask skills."
    )
    for at in range(0, len(text), 3):  # a model writes a few characters at a time
        sink(text[at : at + 3])
    sink.close()
    assert "".join(seen) == "Found [redacted] in .env; send Authorization: [redacted] next. Ask skills."


def test_a_key_shaped_text_that_never_ends_is_held_back_no_more_than_a_bounded_tail():
    from agentcore.secrets import MOST_HELD

    seen: list[str] = []
    sink = StreamScrubber(seen.append)
    sink("sk-")
    for _ in range(3000):
        sink("abcdefgh")
        assert len(sink.held) <= MOST_HELD + 8
    sink.close()
    assert "".join(seen).startswith(REDACTED) and len("".join(seen)) > 20_000


def test_a_provider_that_streams_a_key_reaches_no_observer_whole():
    """The loop scrubs every provider's stream, not only the HTTP ones' (the embedded model's, the scripted one's)."""
    from agentcore import Agent, Run, RunConfig
    from agentcore.messages import AssistantMessage
    from agentcore.providers.scripted import ScriptedProvider

    register_secret(OPENAI_KEY)
    provider = ScriptedProvider(replay=[AssistantMessage(content=f"The key is {OPENAI_KEY} and that is all.")])
    deltas: list[str] = []
    run = Run.start("what is the key?", RunConfig(provider="scripted", model="replay"))
    Agent(provider, observers=[lambda e: deltas.append(e.text) if e.kind == "text_delta" else None]).run(run)
    streamed = "".join(deltas)
    assert OPENAI_KEY not in streamed and streamed == f"The key is {REDACTED} and that is all."
