"""Codex CLI and desktop rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), read as runs.

Each line is `{timestamp, type, payload}`. A model call is a run of consecutive output items (`reasoning`,
an assistant `message`, `function_call`, `custom_tool_call`, `web_search_call`), ended by a tool output, a
user message or its `token_count` event, whose `last_token_usage` is the call's usage (input including the
cached tokens, as Usage counts it; an event repeating the previous totals is the same call, counted once). Some
files write each count before its call's items instead: the order is told from the file (`_counts_first`).
The model is `turn_context`'s; the system prompt `session_meta`'s base instructions. The person's words are
the `user_message` events (the `user` response items repeat them with injected context, and are read only
in a file without such events). `custom_tool_call` input and function arguments are kept as written, valid
JSON or not. A `web_search_call` has no call id: it takes its `web_search_end` event's, in order. Events
that repeat the items (agent_message, agent_reasoning, exec_command_end, ...) are kept aside.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from ..messages import MAX_COUNT, AssistantMessage, ReasoningPart, ToolCall, Usage, UserMessage, parse_arguments
from ..providers.openai_responses import parse_usage
from ..run import Run
from .builder import Budget, Result, SessionBuilder, Turn, clip, first_words, items, text_of, word

FORMAT = "codex"
LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
OUTPUTS = frozenset({"reasoning", "function_call", "custom_tool_call", "web_search_call", "local_shell_call"})
RESULTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
# events that repeat what the response items say, or mark a turn's bounds: read for nothing more
EVENTS_ASIDE = frozenset(
    {
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "task_started",
        "task_complete",
        "turn_aborted",
        "exec_command_begin",
        "exec_command_end",
        "exec_command_output_delta",
        "patch_apply_begin",
        "patch_apply_end",
        "web_search_begin",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "context_compacted",
        "entered_review_mode",
        "exited_review_mode",
    }
)


def is_codex(record: dict[str, Any]) -> bool:
    """Whether a JSON Lines record is a Codex rollout line."""
    return word(record.get("type")) in LINE_TYPES and isinstance(record.get("payload"), dict) and "timestamp" in record


def read_codex(records: list[tuple[int, dict]], name: str, budget: Budget | None = None) -> list[Run]:
    """The rollout's run (Codex writes no subagent in a file of its own that these records name)."""
    return [_Rollout(records, name, budget or Budget()).run()]


class _Rollout:
    def __init__(self, records: list[tuple[int, dict]], name: str, budget: Budget) -> None:
        self.records = records
        payloads = [r["payload"] for _, r in records]
        self.prompts_as_events = any(p.get("type") == "user_message" for p in payloads)
        results: dict[str, Result] = {}
        for p in payloads:
            if word(p.get("type")) in RESULTS and isinstance(p.get("call_id"), str):
                results.setdefault(p["call_id"], _output(p.get("output")))
        self.searches = deque(
            p for p in payloads if p.get("type") == "web_search_end" and isinstance(p.get("call_id"), str)
        )
        for p in self.searches:
            results.setdefault(p["call_id"], Result(f"web search: {_query(p)}"))
        self.b = SessionBuilder(FORMAT, name, "openai-responses", results, budget)
        self.turn: Turn | None = None
        self.counts_first = _counts_first(payloads)
        self.pending: Usage | None = None  # a count written before its call's items, for the turn they open
        self.model: str | None = None
        self.last_total: Any = None
        self.meta: dict[str, Any] = {}

    def run(self) -> Run:
        for number, r in self.records:
            kind, p = r["type"], r["payload"]
            if kind == "session_meta":
                self.meta = self.meta or p
                base = p.get("base_instructions")
                self.b.system(text_of(base.get("text")) if isinstance(base, dict) else "")
            elif kind == "turn_context":
                self.model = p.get("model") if isinstance(p.get("model"), str) else self.model
            elif kind == "response_item":
                self.item(p, r.get("timestamp"), number)
            elif kind == "event_msg":
                self.event(p)
            elif kind == "compacted":
                self.compacted(p)
            else:
                self.b.skipped[f"{kind} lines"] += 1
        self.end_turn()
        version = self.meta.get("cli_version")
        origin = self.meta.get("originator")
        agent = " ".join(x for x in ("codex", origin, version) if isinstance(x, str) and x)
        session = self.meta.get("id")
        return self.b.build(
            title=f"Codex: {first_words(self.b.messages, 'rollout')}",
            session_id=session if isinstance(session, str) else None,
            agent=agent[:200],
            tools=[],
        )

    def item(self, p: dict[str, Any], stamp: Any, number: int) -> None:
        kind = word(p.get("type"))
        if kind == "message":
            role = word(p.get("role"))
            if role == "assistant":
                turn = self.open_turn(stamp, number)
                turn.add_text(text_of(p.get("content")))
                turn.record.append(p)
            elif role == "user" and not self.prompts_as_events:
                self.end_turn()
                self.b.user(text_of(p.get("content")))
            else:
                self.b.skipped[f"{role} messages (injected context)"] += 1
        elif kind in OUTPUTS:
            turn = self.open_turn(stamp, number)
            turn.record.append(p)
            if kind == "reasoning":
                turn.reasoning.append(_reasoning(p))
            else:
                turn.calls.append(self.call(p, number, len(turn.calls)))
        elif kind in RESULTS:
            self.end_turn()  # its result is placed after its call by the builder
        else:
            self.b.skipped[f"response items of unknown type {str(kind)[:40]!r}"] += 1

    def compacted(self, p: dict[str, Any]) -> None:
        """Codex replaced its history: `replacement_history` is what each later call sends before what follows
        (an older file has only the summary, as `message`)."""
        self.end_turn()
        self.b.compact(FORMAT)
        history = p.get("replacement_history")
        if not isinstance(history, list):
            history = [{"type": "message", "role": "user", "content": p.get("message")}]
        for item in history[:MAX_COUNT]:
            item = item if isinstance(item, dict) else {}
            kind, role, text = word(item.get("type")), word(item.get("role")), text_of(item.get("content"))
            if kind == "message" and role in ("user", "assistant") and text.strip():
                message = UserMessage(content=clip(text)) if role == "user" else AssistantMessage(content=clip(text))
                self.b.copied(message)
            elif kind == "compaction":
                kept = item.get("encrypted_content")
                size = f"{len(kept):,} characters" if isinstance(kept, str) else "its text not in the file"
                self.b.copied(UserMessage(content=f"(the compaction's summary, which Codex keeps encrypted: {size})"))
            else:
                self.b.skipped[f"{role or kind or 'unknown'} items of a compacted history (injected context)"] += 1

    def event(self, p: dict[str, Any]) -> None:
        kind = word(p.get("type"))
        if kind == "user_message":
            self.end_turn()
            self.b.user(text_of(p.get("message")))
        elif kind == "token_count":
            info = p.get("info")
            if not isinstance(info, dict) or info.get("total_token_usage") == self.last_total:
                return  # no count yet, or the same call's count again
            self.last_total = info.get("total_token_usage")
            last = info.get("last_token_usage")
            if not isinstance(last, dict):
                return
            if self.counts_first:  # this count is the next call's: the open turn (the previous call) is done
                self.end_turn()
                self.pending = _usage(last)
            elif self.turn is not None:
                self.turn.usage = _usage(last)
                self.end_turn()
            elif self.b.steps and self.b.steps[-1].estimated:  # the count came after the call's output
                self.b.steps[-1].usage, self.b.steps[-1].estimated = _usage(last), False
        elif kind == "web_search_end":
            pass  # read ahead for the call id
        elif kind not in EVENTS_ASIDE:
            self.b.skipped[f"events of unknown type {str(kind)[:40]!r}"] += 1

    def open_turn(self, stamp: Any, number: int) -> Turn:
        if self.turn is None:
            self.turn = Turn(
                usage=self.pending,
                model=self.model,
                started_at=stamp if isinstance(stamp, str) else None,
                record=[],
                where=f"line {number}",
            )
            self.pending = None
        else:
            self.turn.where = f"lines {self.turn.where.split()[-1].split('-')[0]}-{number}"
        return self.turn

    def end_turn(self) -> None:
        if self.turn is not None:
            self.b.turn(self.turn)
            self.turn = None

    def call(self, p: dict[str, Any], number: int, k: int) -> ToolCall:
        kind = word(p.get("type"))
        call_id = p.get("call_id")
        if kind == "web_search_call" and not isinstance(call_id, str):
            call_id = self.searches.popleft()["call_id"] if self.searches else None
        if not isinstance(call_id, str) or not call_id:
            call_id = p.get("id") if isinstance(p.get("id"), str) and p.get("id") else f"call_{number}_{k + 1}"
        name = p.get("name") if isinstance(p.get("name"), str) and p.get("name") else kind.removesuffix("_call")
        if kind == "web_search_call":
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            if p.get("status") == "completed":  # the provider searched within the call: done, with or without its event
                self.b.results.setdefault(call_id, Result(f"web search: {_query(action)}"))
            return parse_arguments(call_id, "web_search", json.dumps(action))
        raw = p.get("input") if kind == "custom_tool_call" else p.get("arguments")
        if isinstance(raw, dict):
            raw = json.dumps(raw)
        elif kind == "local_shell_call":
            raw = json.dumps(p.get("action") if isinstance(p.get("action"), dict) else {})
        call = parse_arguments(call_id, name, raw if isinstance(raw, str) else None)
        item_id = p.get("id")
        return call.model_copy(update={"item_id": item_id}) if isinstance(item_id, str) else call


def _counts_first(payloads: list[dict[str, Any]]) -> bool:
    """Whether the file writes each call's `token_count` before the call's items rather than after them.

    Told from the file, not its version: between two counts lie one call's items in either order, so only the
    ends tell. Counts after their calls leave the first call's items before the first count; counts before them
    leave no item before the first and the last call's items after the last.
    """
    first = last = None
    seen: Any = None
    for k, p in enumerate(payloads):
        info = p.get("info") if p.get("type") == "token_count" else None
        if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
            if info.get("total_token_usage") != seen:
                seen = info.get("total_token_usage")
                first = k if first is None else first
                last = k
    if first is None or last is None:
        return False
    before = any(_is_output(p) for p in payloads[:first])
    after = any(_is_output(p) for p in payloads[last + 1 :])
    return not before and after


def _is_output(p: dict[str, Any]) -> bool:
    kind = word(p.get("type"))
    return kind in OUTPUTS or (kind == "message" and p.get("role") == "assistant")


def _output(value: Any) -> Result:
    # a function_call_output's output is text, or (newer CLIs) an object with `content` and `success`
    if isinstance(value, dict):
        return Result(text_of(value.get("content")), value.get("success") is False)
    return Result(text_of(value))


def _query(p: dict[str, Any]) -> str:
    query = p.get("query")
    return query if isinstance(query, str) else text_of(json.dumps(p.get("action")) if p.get("action") else "")


def _reasoning(p: dict[str, Any]) -> ReasoningPart:
    summary = tuple(
        s["text"] for s in items(p.get("summary")) if isinstance(s, dict) and isinstance(s.get("text"), str)
    )
    encrypted = p.get("encrypted_content")
    item_id = p.get("id")
    return ReasoningPart(
        provider="openai-responses",
        text=text_of(p.get("content")) if isinstance(p.get("content"), list) else "",
        summary=summary,
        encrypted_content=encrypted if isinstance(encrypted, str) else None,
        id=item_id if isinstance(item_id, str) else None,
    )


def _usage(last: dict[str, Any]) -> Any:
    # Codex writes the Responses API's counts flat: cached_input_tokens, reasoning_output_tokens
    return parse_usage(
        {
            "input_tokens": last.get("input_tokens"),
            "output_tokens": last.get("output_tokens"),
            "input_tokens_details": {"cached_tokens": last.get("cached_input_tokens")},
            "output_tokens_details": {"reasoning_tokens": last.get("reasoning_output_tokens")},
        }
    )
