"""Stand-ins for a conversation test: a simulator server whose turns the test sets, an agent server that answers
every turn alike, and a pinned test with scripted turns and a simulated user pointed at them.

Both are OpenAI Chat Completions servers on 127.0.0.1 (support.stand_in): each request is kept, so a test counts
the simulator's calls and reads what it was sent. SimulatorServer plays many conversations at once, each on its own.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from agentcore.testing.expectations import PinnedTest
from support.stand_in import QuietHandler, Reply, Served

AGENT_ANSWER = "Happy to help with the booking. Which day, and for how many people?"


def ends(arguments: str) -> Reply:
    """A simulator reply that calls end_conversation with `arguments` as written (valid JSON or not)."""
    call = {"id": "call_end", "type": "function", "function": {"name": "end_conversation", "arguments": arguments}}
    return _reply({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


def calls(name: str, text: str | None = None) -> Reply:
    """A reply that calls the tool `name` (for a simulator, one it was not offered), saying `text` beside the call."""
    call = {"id": "call_x", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return _reply({"role": "assistant", "content": text, "tool_calls": [call]}, "tool_calls")


def _reply(message: dict[str, Any], finish: str) -> Reply:
    body = {
        "id": "chatcmpl-sim",
        "object": "chat.completion",
        "created": 1,
        "model": "sim",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38},
    }
    return Reply(json.dumps(body).encode())


def booking_test(simulator_url: str, *, max_turns: int = 4, seed: int = 7, **user: Any) -> PinnedTest:
    """A booking conversation: a prompt, two scripted turns, then a simulated user played by the server at
    `simulator_url` (its base URL, without /v1)."""
    return PinnedTest(
        name="booking",
        prompt="Hi, I want to book a table.",
        turns=["It's for a birthday dinner.", "Somewhere quiet, please."],
        max_steps=3,
        user={
            "persona": "A busy parent who writes short messages.",
            "goal": "Book a table for 4 people on Friday at 19:00.",
            "guidelines": ["Answer only what you are asked."],
            "model": f"openai:sim@{simulator_url}/v1",
            "seed": seed,
            "max_turns": max_turns,
            **user,
        },
    )


class SimulatorServer(Served):
    """A simulator that plays each conversation on its own, whatever order their calls arrive in: it writes `turns`
    in order (the next one not yet in the conversation it is sent), then ends with `reason`. `seen` holds each
    request's body, in order of arrival. For columns played side by side on one server."""

    def __init__(self, turns: list[str], reason: str = "goal met") -> None:
        self.turns, self.reason, self.seen = list(turns), reason, []
        self._lock = threading.Lock()
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # the name http.server calls
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                with owner._lock:
                    owner.seen.append(body)
                said = {m.get("content") for m in body.get("messages", []) if m.get("role") == "assistant"}
                left = [t for t in owner.turns if t not in said]
                reply = Reply.chat(left[0]) if left else ends(json.dumps({"reason": owner.reason}))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

        self.serve(Handler)  # the base URL, without /v1
