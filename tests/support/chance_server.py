"""A stand-in OpenAI Chat Completions server on 127.0.0.1 whose step 3 asks for the right city with a known chance.

It plays the city_by_city task one call a step: Paris at step 1, Rome at step 2, at step `step` Tokyo with
probability `chance` (else Kyoto), then an answer naming every city it looked up. Each distinct conversation draws
from its own seeded stream, so the trials of one fork (the same conversation, asked N times) draw the same numbers
in whatever order they arrive; the call ids carry `generation`, so a fork's kept steps and the ones it made again
tell its conversation apart from another fork's.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections import defaultdict
from typing import Any

from support.stand_in import QuietHandler, Served

CITIES = ("Paris", "Rome", "Tokyo")


class ChanceServer(Served):
    """The server: `url` to point a provider at; `chance`, `seed` and `generation` may change between runs."""

    def __init__(self, chance: float, *, step: int = 3, seed: int = 0, generation: str = "g0") -> None:
        self.chance, self.step, self.seed, self.generation = chance, step, seed, generation
        self.calls = 0
        self._asked: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # the name http.server calls
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.dumps(owner.answer(json.loads(raw))).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler, "/v1")

    def _right(self, messages: list[dict[str, Any]]) -> bool:
        key = json.dumps(messages, sort_keys=True)
        with self._lock:
            n = self._asked[key]
            self._asked[key] += 1
        digest = hashlib.sha256(f"{self.seed}|{key}".encode()).hexdigest()
        stream = random.Random(int(digest, 16))
        return [stream.random() for _ in range(n + 1)][n] < self.chance

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Chat Completions answer to one request: the next call of the task, or the answer."""
        with self._lock:
            self.calls += 1
        messages = body.get("messages") or []
        step = 1 + sum(m.get("role") == "assistant" for m in messages)
        if step <= len(CITIES):
            city = CITIES[step - 1]
            if step == self.step and not self._right(messages):
                city = "Kyoto"
            call = {
                "id": f"call_{self.generation}_{step}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
            }
            message = {"role": "assistant", "content": f"Next, the weather in {city}.", "tool_calls": [call]}
            finish = "tool_calls"
        else:
            found = [json.loads(m["content"]).get("city", "?") for m in messages if m.get("role") == "tool"]
            message = {"role": "assistant", "content": "The weather in " + ", ".join(found) + "."}
            finish = "stop"
        return {
            "id": "chatcmpl-chance",
            "object": "chat.completion",
            "created": 1,
            "model": "stand-in",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
        }
