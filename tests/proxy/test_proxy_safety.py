"""What a client cannot make the proxy do: listen for other machines unasked, connect elsewhere, take too much,
or stop serving; each refusal one line in the dialect's kind of error."""

from __future__ import annotations

import gzip
import http.client

import httpx
import pytest
from support.proxy_rig import KEY
from support.stand_in import Reply, StandIn

from agentcore.errors import UsageError
from agentcore.proxy import ProxyConfig, ProxyServer
from agentcore.store import Store

openai = pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")


def test_another_machines_address_needs_allow_remote_and_a_token(tmp_path):
    store = Store(str(tmp_path / "runs.db"))
    with pytest.raises(UsageError, match="--allow-remote"):
        ProxyServer(ProxyConfig(upstream="http://127.0.0.1:9", host="0.0.0.0", port=0), store)
    with pytest.raises(UsageError, match="--token"):
        ProxyServer(ProxyConfig(upstream="http://127.0.0.1:9", host="0.0.0.0", port=0, allow_remote=True), store)


@pytest.mark.parametrize("upstream", ["file:///etc/passwd", "http://user:pw@example.com", "ftp://example.com", "x"])
def test_an_upstream_is_a_known_name_or_an_http_url(tmp_path, upstream):
    with pytest.raises(UsageError, match="--upstream"):
        ProxyServer(ProxyConfig(upstream=upstream, port=0), Store(str(tmp_path / "runs.db")))


def test_a_client_without_the_token_is_refused_in_its_sdks_words(rig_of):
    rig = rig_of(Reply.chat("hello"), token="proxy-token-0123456789")
    plain = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0)
    with pytest.raises(openai.AuthenticationError, match="token"):
        plain.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert rig.upstream.seen == []
    allowed = openai.OpenAI(
        api_key=KEY,
        base_url=f"{rig.url}/v1",
        max_retries=0,
        default_headers={"x-agentcore-proxy-token": "proxy-token-0123456789"},
    )
    reply = allowed.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "hello"
    assert "x-agentcore-proxy-token" not in {k.lower() for k in rig.upstream.seen[0].headers}


def raw_post(url: str, path: str) -> int:
    """POST `path` exactly as written (httpx would resolve the dots first); the status."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    try:
        conn.request("POST", path, body=b"{}", headers={"content-type": "application/json"})
        return conn.getresponse().status
    finally:
        conn.close()


def test_hostile_requests_get_one_line_each_and_the_proxy_serves_on(rig_of):
    rig = rig_of(Reply.chat("still here"), max_request_bytes=1000)
    url = rig.url
    with httpx.Client() as http:
        bad_json = http.post(f"{url}/v1/chat/completions", content=b"{not json")
        assert bad_json.status_code == 400
        assert bad_json.json()["error"]["type"] == "invalid_request_error"
        assert "\n" not in bad_json.json()["error"]["message"]
        anthropic_kind = http.post(f"{url}/v1/messages", content=b"[1, 2]")
        assert anthropic_kind.status_code == 400
        assert anthropic_kind.json()["type"] == "error"
        ollama_kind = http.post(f"{url}/api/chat", content=b"nope")
        assert ollama_kind.json() == {"error": "the request body is not JSON"}
        too_big = http.post(f"{url}/v1/chat/completions", content=b"x" * 2000)
        assert too_big.status_code == 413
    for path in ("/v1/../../etc/passwd", "/v1/chat/completions@evil", "http://evil.example/", "/v1/./x"):
        assert raw_post(url, path) == 404
    assert rig.upstream.seen == []
    raw_post(url, "//evil.example/v1/chat/completions")  # a host in the path is only a path on the upstream
    assert [seen.path for seen in rig.upstream.seen] == ["/evil.example/v1/chat/completions"]
    sdk = openai.OpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    reply = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "still here"


def test_the_upstreams_error_goes_back_as_it_came_and_is_no_step(rig_of):
    rig = rig_of(Reply.refused())
    sdk = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0)
    with pytest.raises(openai.AuthenticationError, match="Incorrect API key provided"):
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert rig.runs() == []


def test_an_upstream_that_cannot_be_reached_is_a_502_in_the_dialects_kind(tmp_path):
    proxy = ProxyServer(ProxyConfig(upstream="http://127.0.0.1:9", port=0), Store(str(tmp_path / "runs.db"))).start()
    try:
        reply = httpx.post(f"{proxy.url}/v1/messages", json={"model": "m", "messages": []})
        assert reply.status_code == 502
        assert reply.json()["error"]["type"] == "api_error"
    finally:
        proxy.close()


def test_a_key_in_the_query_is_forwarded_and_kept_nowhere(rig_of, capsys):
    rig = rig_of(Reply.chat("ok"))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(f"{rig.url}/v1/chat/completions?key={KEY}", json=body).status_code == 200
    assert rig.upstream.seen[0].path.endswith(f"?key={KEY}")
    [run] = rig.runs()
    assert KEY not in run.steps[0].wire.url
    out = capsys.readouterr()
    rig.assert_no_key(out.out, out.err)


def test_a_reply_over_the_cap_is_a_502_and_no_step(rig_of):
    rig = rig_of(Reply.chat("a reply longer than the cap " * 20), max_reply_bytes=200)
    sdk = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0)
    with pytest.raises(openai.APIStatusError, match="over 200 bytes") as caught:
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502
    assert rig.runs() == []
    reply = httpx.post(f"{rig.url}/v1/chat/completions", json={"model": "m", "messages": []})
    assert reply.status_code == 502  # and it serves on


def test_the_control_paths_answer_a_loopback_host_alone(rig_of):
    rig = rig_of(Reply.chat("ok"))
    host, port = rig.url.removeprefix("http://").split(":")
    for name, status in (("evil.example", 403), (f"127.0.0.1:{port}", 200), (f"localhost:{port}", 200)):
        conn = http.client.HTTPConnection(host, int(port))
        try:
            conn.request("GET", "/agentcore/holds", headers={"host": name})
            assert conn.getresponse().status == status, name
        finally:
            conn.close()


def test_a_compressed_request_is_read_within_the_cap_once_uncompressed(rig_of):
    rig = rig_of(Reply.chat("ok"), max_request_bytes=10_000)
    bomb = gzip.compress(b'{"messages": "' + b"x" * 1_000_000 + b'"}')
    assert len(bomb) < 10_000
    url = f"{rig.url}/v1/chat/completions"
    gz = {"content-encoding": "gzip", "content-type": "application/json"}
    assert httpx.post(url, content=bomb, headers=gz).status_code == 413
    assert httpx.post(url, content=b"not gzip at all", headers=gz).status_code == 400
    assert rig.upstream.seen == []


def test_an_upstream_given_with_v1_is_not_sent_v1_twice(tmp_path):
    with StandIn(Reply.chat("ok")) as upstream:
        proxy = ProxyServer(ProxyConfig(upstream=f"{upstream.url}/v1", port=0), Store(str(tmp_path / "r.db"))).start()
        try:
            sdk = openai.OpenAI(api_key=KEY, base_url=f"{proxy.url}/v1", max_retries=0)
            sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        finally:
            proxy.close()
    assert [seen.path for seen in upstream.seen] == ["/v1/chat/completions"]
