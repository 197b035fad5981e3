"""The bytes of a step's exchange: the request body exactly as its client sent it and the reply body exactly as the
client received it (a whole body, or a stream's bytes as they were passed on), kept beside the step.

A step's wire view (`StepRecord.wire`) is the parsed JSON; a recording proxy keeps the bytes too, since what a
client sent is more than what its JSON says (key order, spacing, escapes, the stream's framing). Headers are never
kept here (the wire view keeps them redacted). Every registered secret and anything shaped like a key is replaced
in the bytes before they are written, and `scrubbed` says so; a body over the kept size is kept to that size and
`cut` says so, with the whole body's length and SHA-256. Reads go through the viewer's rule (access.py), as a
run's own do. The Store has these methods (ExchangesTable is one of its parts).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ..secrets import scrub_text

if TYPE_CHECKING:
    from .runs import Store

KEPT_BYTES = 8 * 2**20  # of each body, at most: a longer one is kept to this size and marked cut

PUT_EXCHANGE = (
    "INSERT INTO exchanges (run_id, idx, request, reply, body) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id, idx) DO UPDATE SET request = excluded.request, reply = excluded.reply, body = excluded.body"
)


@dataclass(frozen=True)
class BodyFacts:
    """What is known of one kept body beyond its bytes."""

    length: int  # the whole body's length in bytes, as it went
    sha256: str  # of the whole body as it went (before any secret was replaced)
    cut: bool  # only the first KEPT_BYTES are kept
    scrubbed: bool  # a secret was replaced in the kept bytes
    content_type: str
    content_encoding: str  # the request's, when the client compressed it: the bytes kept are uncompressed


@dataclass(frozen=True)
class KeptExchange:
    """A step's request and reply bodies as bytes, and what is known of each."""

    request: bytes
    reply: bytes
    request_facts: BodyFacts
    reply_facts: BodyFacts

    def facts_json(self) -> str:
        return json.dumps({"request": asdict(self.request_facts), "reply": asdict(self.reply_facts)})


def kept_body(
    raw: bytes, content_type: str = "", content_encoding: str = "", limit: int = KEPT_BYTES
) -> tuple[bytes, BodyFacts]:
    """`raw` as it may be stored: cut to `limit`, every secret replaced; and its facts."""
    facts = {"length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    cut = len(raw) > limit
    head = raw[:limit] if cut else raw
    # surrogateescape: bytes that are not UTF-8 come back as they were; only a secret's text is replaced
    text = head.decode("utf-8", errors="surrogateescape")
    clean = scrub_text(text)
    scrubbed = clean != text
    kept = clean.encode("utf-8", errors="surrogateescape") if scrubbed else head
    return kept, BodyFacts(
        **facts, cut=cut, scrubbed=scrubbed, content_type=content_type[:200], content_encoding=content_encoding[:40]
    )


def kept_exchange(
    request: bytes,
    reply: bytes,
    *,
    request_type: str = "",
    reply_type: str = "",
    request_encoding: str = "",
    limit: int = KEPT_BYTES,
) -> KeptExchange:
    """A step's bodies as they may be stored (see `kept_body`)."""
    sent, sent_facts = kept_body(request, request_type, request_encoding, limit)
    got, got_facts = kept_body(reply, reply_type, "", limit)
    return KeptExchange(sent, got, sent_facts, got_facts)


class ExchangesTable:
    """The Store's kept bytes of steps' exchanges: keep one, read one back."""

    def keep_exchange(self: Store, run_id: str, index: int, exchange: KeptExchange) -> None:
        """Keep the bytes of the stored run's step `index` (from 0); the run must be stored, and visible."""
        with self._transaction() as db:
            visible, params = self._visible()
            if db.execute(f"SELECT 1 FROM runs WHERE id = ?{visible}", (run_id, *params)).fetchone() is None:
                raise self._no_run(run_id)
            db.execute(PUT_EXCHANGE, (run_id, index, exchange.request, exchange.reply, exchange.facts_json()))

    def exchange(self: Store, run_id: str, index: int) -> KeptExchange | None:
        """The kept bytes of step `index` (from 0) of a run this Store's viewer may see; None when none were kept."""
        visible, params = self._visible("r.owner")
        found = self._one(
            "SELECT e.request, e.reply, e.body FROM exchanges e JOIN runs r ON r.id = e.run_id "
            f"WHERE e.run_id = ? AND e.idx = ?{visible}",
            (run_id, index, *params),
        )
        if found is None:
            return None
        facts = json.loads(found[2])
        return KeptExchange(
            bytes(found[0]), bytes(found[1]), BodyFacts(**facts["request"]), BodyFacts(**facts["reply"])
        )
