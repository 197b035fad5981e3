"""A step's bytes (store/exchanges.py): kept and read back exactly on SQLite and PostgreSQL, each secret replaced,
cut at the kept size, seen only by whom the run is visible to, and gone with the run."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from agentcore.run import Run
from agentcore.secrets import REDACTED, register_secret
from agentcore.store import PRIVATE_RUNS_ENV, Store
from agentcore.store.exchanges import kept_exchange

REQUEST = b'{"model":"m",  "messages":[{"role":"user","content":"caf\\u00e9 \xff\xfe"}]}'  # not UTF-8 at the end
REPLY = b'data: {"choices":[]}\r\n\r\ndata: [DONE]\r\n\r\n'


def test_bytes_kept_for_a_step_read_back_exactly(location) -> None:
    store = Store(location, owner="ada")
    run = Run()
    store.save_run(run)
    store.keep_exchange(run.id, 0, kept_exchange(REQUEST, REPLY, reply_type="text/event-stream"))
    kept = store.exchange(run.id, 0)
    assert kept is not None
    assert (kept.request, kept.reply) == (REQUEST, REPLY)
    assert kept.reply_facts.content_type == "text/event-stream"
    assert kept.request_facts.length == len(REQUEST)
    assert kept.request_facts.sha256 == hashlib.sha256(REQUEST).hexdigest()
    assert store.exchange(run.id, 1) is None
    store.delete_run(run.id)
    assert store.exchange(run.id, 0) is None


def test_a_secret_in_a_body_is_replaced_and_a_long_body_is_cut() -> None:
    secret = "exchange-secret-5b1e9d0c77"
    register_secret(secret)
    body = b'{"metadata":{"api_key":"' + secret.encode() + b'"},"n":1}'
    kept = kept_exchange(body, b"x" * 100, limit=len(body))
    assert kept.request == body.replace(secret.encode(), REDACTED.encode())
    assert kept.request_facts.scrubbed and not kept.request_facts.cut
    assert kept.request_facts.sha256 == hashlib.sha256(body).hexdigest()
    assert kept.reply == b"x" * len(body)
    assert kept.reply_facts.cut and kept.reply_facts.length == 100 and not kept.reply_facts.scrubbed
    with pytest.raises(dataclasses.FrozenInstanceError):  # what was kept is a value, changed by no reader
        kept.request = b""
    with pytest.raises(dataclasses.FrozenInstanceError):
        kept.request_facts.scrubbed = False


def test_a_private_run_s_bytes_are_not_read_by_another_student(location, monkeypatch) -> None:
    monkeypatch.setenv(PRIVATE_RUNS_ENV, "1")
    ada = Store(location, owner="ada", teacher=False)
    run = Run()
    ada.save_run(run)
    ada.keep_exchange(run.id, 0, kept_exchange(REQUEST, REPLY))
    bob = Store(location, owner="bob", teacher=False)
    assert bob.exchange(run.id, 0) is None
    assert ada.exchange(run.id, 0) is not None
