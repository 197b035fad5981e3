"""What a step keeps as bytes when the body is not plain: a key inside it, a compressed body, a reply over the kept
size. The SDKs' own calls are compared byte for byte in their tests (Rig.assert_faithful)."""

from __future__ import annotations

import gzip
import hashlib
import json

import httpx
from support.proxy_rig import KEY
from support.stand_in import Reply

from agentcore.secrets import REDACTED


def post(rig, body: bytes, **headers: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json", **headers}
    return httpx.post(f"{rig.url}/v1/chat/completions", content=body, headers=headers, timeout=30)


def test_a_key_sent_inside_the_body_is_in_no_stored_byte(rig_of, capsys):
    rig = rig_of(Reply.chat("fine"))
    other = "body-held-credential-0c4d2e9a"  # sent in no header: only its field's name tells it is a key
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "metadata": {"api_key": other}})
    assert post(rig, body.encode()).status_code == 200
    assert rig.upstream.seen[0].body["metadata"]["api_key"] == other  # forwarded as sent
    [run] = rig.runs()
    kept = rig.store.exchange(run.id, 0)
    assert kept.request == body.encode().replace(other.encode(), REDACTED.encode())
    assert kept.request_facts.scrubbed and kept.request_facts.sha256 == hashlib.sha256(body.encode()).hexdigest()
    out = capsys.readouterr()
    rig.assert_no_key(out.out, out.err)
    for path in rig.db.parent.iterdir():
        assert other.encode() not in path.read_bytes(), path


def test_a_compressed_request_is_kept_as_the_client_wrote_it_before_compressing(rig_of):
    rig = rig_of(Reply.chat("fine"))
    body = b'{"model": "m",\n "messages": [{"role": "user", "content": "hi"}]}'
    assert post(rig, gzip.compress(body), **{"content-encoding": "gzip"}).status_code == 200
    [run] = rig.runs()
    kept = rig.store.exchange(run.id, 0)
    assert kept.request == body
    assert kept.request_facts.content_encoding == "gzip"


def test_a_reply_over_the_kept_size_is_kept_cut_with_its_whole_length(rig_of):
    reply = Reply.chat("a long answer " * 50)
    rig = rig_of(reply, max_kept_bytes=64)
    got = post(rig, b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}')
    assert got.status_code == 200 and len(got.content) > 64
    [run] = rig.runs()
    kept = rig.store.exchange(run.id, 0)
    assert kept.reply == got.content[:64]
    assert kept.reply_facts.cut and kept.reply_facts.length == len(got.content)
    assert kept.reply_facts.sha256 == hashlib.sha256(got.content).hexdigest()
    assert run.steps[0].wire.response == json.loads(got.content)  # the wire view keeps the reply whole
