"""A run as one self-contained HTML file that steps through it offline: the replay to share.

The page holds its own script, style and data, and a Content-Security-Policy that lets it fetch
nothing. The run goes in as JSON inside `<script type="application/json">`, written by the one
writer every export uses (`transcript.json_text`, after `redact_fields`), so the same secrets
are removed; the page writes that data with textContent only.

Each step's wire request resends the whole conversation, so a run's wire bodies grow with the
square of its steps. The replay keeps every larger value once, in a pool, and the messages and
the bodies refer to it: a reference is a string of NUL followed by the value's index in the
pool, and a string of their own that starts with NUL gets one more NUL in front (`_Pool.share`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources
from typing import Any, assert_never

from .accounting import account
from .annotations import Annotation
from .messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from .run import Run
from .secrets import redact_fields
from .steps import StepRecord, ToolRun
from .transcript import json_text, to_dict

FORMAT = "agentcore.replay"
VERSION = 1
SHARED_MIN_CHARS = 64  # a smaller value costs less written out than as a reference
_REF = "\x00"
# inside <script> these could end the element or start a comment; JavaScript reads U+2028/9 as line breaks.
# Every other character past ASCII is escaped too, so the page reads the same through any channel or encoding.
_EMBED = re.compile(r"[<>&\u0080-\U0010ffff]")
# A bidi control's JSON escape (after an even number of backslashes, so not text that reads `\u202e`): these
# characters make a browser show text in another order than it is written (`txt.exe` shown as `exe.txt`),
# so the page shows each as its escape, as the app's pages do
_BIDI_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u(061c|200e|200f|202[a-e]|206[6-9])")


def replay_html(run: Run) -> str:
    """The run as one HTML page that steps through it with no server and no network request."""
    page = resources.files("agentcore") / "replay_page"
    script = (page / "replay.js").read_text("utf-8")
    style = (page / "replay.css").read_text("utf-8")
    template = (page / "replay.html").read_text("utf-8")
    policy = (
        f"default-src 'none'; script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    filled = template.replace("__POLICY__", policy).replace("__STYLE__", style).replace("__SCRIPT__", script)
    return filled.replace("__DATA__", embed_json(replay_data(run)))  # last: data is never searched for a mark


def embed_json(data: Any) -> str:
    """JSON text for inside a `<script>` element, all ASCII: through `json_text`, then `<`, `>`, `&` and
    every non-ASCII character (U+2028/9 among them) written as a JSON escape; a bidi control reads back
    as the text of its escape (`\\u202e`), to be shown, not obeyed."""
    return _BIDI_ESCAPE.sub(r"\1\\\\u\2", _EMBED.sub(_escape, json_text(data)))


def _escape(found: re.Match[str]) -> str:
    # these characters only occur inside JSON strings, where an escape reads back as the character
    code = ord(found.group())
    if code > 0xFFFF:  # outside the BMP: a surrogate pair, as JSON writes it
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def replay_data(run: Run) -> dict[str, Any]:
    """What the page shows: the run's messages once, its frames, and each step's tokens and wire exchange."""
    body = redact_fields(to_dict(run))  # as export_json: headers and credential-named fields blanked
    pool = _Pool()
    report = account(run)
    steps: list[dict[str, Any]] = []
    previous: int | None = None
    for record, figures, kept in zip(run.steps, report.steps, body["steps"], strict=True):
        steps.append(
            {
                "index": record.index,
                "model": run.answered_by(record).label,
                "provider": run.answered_by(record).provider,
                "model_name": run.answered_by(record).model,
                "policies": _policies(record),
                "tools_withheld": record.tools_withheld,
                "sent": figures.input_tokens,
                "growth": None if previous is None else figures.input_tokens - previous,
                "received": figures.output_tokens,
                "cache_read": figures.cache_read_tokens,
                "cache_write": figures.cache_write_tokens,
                "estimated": figures.estimated,
                "latency_ms": round(record.latency_ms, 1),
                "finish_reason": record.finish_reason,
                "message_count": record.message_count,
                "tool_runs": [_tool_run(t, k, pool) for t, k in zip(record.tool_runs, kept["tool_runs"], strict=True)],
                "wire": _wire(kept.get("wire"), pool),
                "annotations": [_annotation(a) for a in run.annotations if a.step == record.index],
            }
        )
        previous = figures.input_tokens
    return {
        "format": FORMAT,
        "version": VERSION,
        "run": {
            "id": run.id,
            "title": run.title,
            "created_at": run.created_at,
            "provider": run.config.provider,
            "model": run.config.model,
            "max_steps": run.config.max_steps,
            "stop_reason": run.ending,  # "output limit" for a reply cut off, never "answer"
            "error": run.error,
            "final_output": run.final_output,
            "parent": body["parent"],
        },
        "messages": pool.share([_message(m) for m in run.messages]),
        "frames": frames(run),
        "steps": steps,
        "pool": pool.values,
    }


def frames(run: Run) -> list[dict[str, Any]]:
    """The replay's stops: the prompt, then each step's model phase and tools phase, then the end.

    `shown` is how many messages are in the list at that stop; `failed` marks a model phase with no reply.
    """
    count = len(run.messages)
    shown = min(run.steps[0].message_count, count) if run.steps else count
    out: list[dict[str, Any]] = [{"phase": "prompt", "step": 0, "shown": shown}]
    for i, record in enumerate(run.steps):
        end = max(shown, min(run.steps[i + 1].message_count, count) if i + 1 < len(run.steps) else count)
        start = max(shown, min(record.message_count, end))
        replied = start < end and isinstance(run.messages[start], AssistantMessage)
        shown = start + 1 if replied else start
        out.append({"phase": "model", "step": record.index, "shown": shown, "failed": not replied})
        if end > shown:
            shown = end
            out.append({"phase": "tools", "step": record.index, "shown": shown})
    if run.stop_reason or run.finished:
        out.append({"phase": "done", "step": run.steps[-1].index if run.steps else 0, "shown": count})
    return out


def _message(m: Message) -> dict[str, Any]:
    if isinstance(m, SystemMessage | UserMessage):
        return {"role": m.role, "content": m.content}
    if isinstance(m, AssistantMessage):
        return {
            "role": "assistant",
            "content": m.content,
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments_text} for c in m.tool_calls],
            "reasoning": [p.display_text for p in m.reasoning if p.display_text],
        }
    if isinstance(m, ToolMessage):
        return {"role": "tool", "content": m.content, "id": m.tool_call_id, "name": m.name, "is_error": m.is_error}
    assert_never(m)


def _tool_run(tool_run: ToolRun, kept: dict[str, Any], pool: _Pool) -> dict[str, Any]:
    """A tool run with its badge's words (a person's decision, the loop guard's repeat) and, after an edit,
    what the model asked and what the tool returned, as the app shows them."""
    fields = ("tool_call_id", "name", "source", "duration_ms", "is_error", "error", "original_content")
    asked = None  # from the kept copy: its credential-named fields are blanked as in the export
    if tool_run.source in ("edited", "hook_edited") and tool_run.original_arguments_text is not None:
        raw, args = kept.get("original_raw_arguments"), kept.get("original_arguments")
        asked = raw if raw is not None else json.dumps(args)
    return {
        **{k: kept.get(k) for k in fields},
        "badge": tool_run.badge,
        "original_arguments": asked,
        "wire": _wire(kept.get("wire"), pool),
    }


def _annotation(annotation: Annotation) -> dict[str, Any]:
    """A person's label on the step or one of its calls, in the words the app shows it with."""
    return {
        "target": annotation.target,
        "tool_call_id": annotation.tool_call_id,
        "labels": annotation.all_labels,
        "summary": annotation.summary(),
        "author": annotation.author,
    }


def _policies(record: StepRecord) -> dict[str, Any] | None:
    """What the context policies did to this step's request: their names and how many messages each mark got."""
    sent = record.sent
    if sent is None:
        return None
    marks: dict[str, int] = {}
    for change in sent.changes.values():
        marks[change.mark] = marks.get(change.mark, 0) + 1
    return {"names": sent.policies, "marks": marks, "summary": sent.summary is not None}


def _wire(wire: dict[str, Any] | None, pool: _Pool) -> dict[str, Any] | None:
    if wire is None:
        return None
    return {**wire, "request": pool.share(wire.get("request")), "response": pool.share(wire.get("response"))}


class _Pool:
    """Values kept once for the whole replay; a body refers to each by its index."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[str, int] = {}

    def share(self, body: Any) -> Any:
        """`body` with each long string, and each long object that is an item of a list, replaced by a reference.

        A pooled string is kept as it is; a pooled object is kept in this same shared form, so
        that a long text inside it (a tool result, a system prompt) is kept once as well. Lists,
        and the objects under an object's keys, are walked rather than pooled whole: a request's
        message list differs at every step, the messages in it do not.
        """
        if isinstance(body, str) and body.startswith(_REF):
            return _REF + body  # a whole body that is a string of its own, escaped as any string in a body
        if not isinstance(body, dict | list):
            return body
        stack: list[tuple[Any, dict | list]] = []  # a server's body may be deep: no recursion
        root = self._walk_later(body, stack)
        while stack:
            source, target = stack.pop()
            items = source.items() if isinstance(source, dict) else enumerate(source)
            for key, value in items:
                value = self._shared(value, isinstance(source, list), stack)
                if isinstance(target, dict):
                    target[key] = value
                else:
                    target.append(value)
        return root

    def _shared(self, value: Any, in_list: bool, stack: list[tuple[Any, dict | list]]) -> Any:
        if isinstance(value, str) or (in_list and isinstance(value, dict)):
            text = json.dumps(value)
            if len(text) >= SHARED_MIN_CHARS:
                at = self._index.get(text)
                if at is None:
                    at = self._index[text] = len(self.values)
                    self.values.append(value if isinstance(value, str) else self._walk_later(value, stack))
                return f"{_REF}{at}"
        if isinstance(value, dict | list):
            return self._walk_later(value, stack)
        if isinstance(value, str) and value.startswith(_REF):
            return _REF + value  # a string of the body's own that would read as a reference
        return value

    @staticmethod
    def _walk_later(value: dict | list, stack: list[tuple[Any, dict | list]]) -> dict | list:
        """An empty copy of `value`, filled in shared form when the walk comes to it."""
        copy: dict | list = {} if isinstance(value, dict) else []
        stack.append((value, copy))
        return copy
