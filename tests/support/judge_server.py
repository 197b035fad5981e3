"""A stand-in judge on 127.0.0.1: an OpenAI-compatible server whose verdicts the test sets, counting its requests.

`rule(prompt)` reads the user message of each judge call (the rubric and the numbered messages) and gives the
verdict: a dict is sent as the arguments of a final_answer call (whatever it holds, so a test can send wrong
types), a str as the reply's plain text (so a test can send prose, a huge text or broken JSON).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from support.stand_in import QuietHandler, Served

Rule = Callable[[str], "dict[str, Any] | str"]


def says(verdict: Any, reason: str = "as the rubric asks", messages: Any = (0,)) -> dict[str, Any]:
    """A final answer's arguments: the verdict, the reason, the messages relied on."""
    return {
        "verdict": verdict,
        "reason": reason,
        "messages": list(messages) if isinstance(messages, tuple) else messages,
    }


class JudgeServer(Served):
    """The server: `url` (…/v1) to name in a judge's model, `bodies` the requests it answered, in order."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # the name http.server calls
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                with owner._lock:
                    owner.bodies.append(body)
                    owner.headers.append(dict(self.headers))
                reply = json.dumps(owner.answer(body)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.headers: list[dict[str, str]] = []
        self.serve(Handler, "/v1")

    @property
    def calls(self) -> int:
        return len(self.bodies)

    def model(self, name: str = "stand-in-judge") -> str:
        """The judge's `model` as a test file names it."""
        return f"openai:{name}@{self.url}"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Chat Completions answer: a final_answer call with the rule's arguments, or its plain text."""
        prompt = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"), "")
        said = self.rule(prompt)
        if isinstance(said, str):
            message: dict[str, Any] = {"role": "assistant", "content": said}
            finish = "stop"
        else:
            call = {
                "id": "call_v",
                "type": "function",
                "function": {"name": "final_answer", "arguments": json.dumps(said)},
            }
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        return {
            "id": "chatcmpl-judge",
            "object": "chat.completion",
            "created": 1,
            "model": "stand-in-judge",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
        }
