"""Claude Code sessions (`~/.claude/projects/<project>/<session>.jsonl`), read as runs.

One line is one event. An API response is written over several `assistant` lines, one content block each,
with the same `message.id` and the same `usage` repeated: they are joined into one model turn at the place of
its first line, and its usage counted once (the Messages API's: input without the cached tokens, which
Usage adds back). `tool_result` blocks arrive on `user` lines and are matched to their `tool_use` by id;
`thinking` blocks are kept as reasoning. Subagents become runs of their own, linked to the parent's step:
the inline sidechains of 1.0 (`isSidechain` lines, each chain from a `parentUuid: null` prompt, linked to the
Task call with the same prompt, else the latest one before it), the `agent-<id>.jsonl` files of 2.0 beside
the session, and the `<session>/subagents/agent-<id>.jsonl` files of 2.1 (linked by the Task result's
`toolUseResult.agentId`). Summaries, file-history snapshots, system and progress lines are kept aside and
counted; a line of an unknown type is counted too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..messages import AssistantMessage, ReasoningPart, ToolCall, Usage, parse_arguments
from ..policies import PolicyCall
from ..providers.anthropic import parse_usage
from ..run import Run
from .builder import Budget, Result, SessionBuilder, Turn, first_words, text_of, word
from .files import Beside, json_lines

FORMAT = "claude-code"
KINDS = frozenset({"user", "assistant"})
# what Claude Code writes beside the conversation, kept aside on purpose
MAX_SUBAGENT_FILES = 200
SUMMARISER = "acompact"  # `agent-acompact-<id>.jsonl`: the model call that wrote a compaction's summary
ASIDE = frozenset({"summary", "file-history-snapshot", "system", "progress", "queue-operation", "x-error"})


def is_claude_code(record: dict[str, Any]) -> bool:
    """Whether a JSON Lines record is a Claude Code session line."""
    kind = word(record.get("type"))
    if kind in KINDS:
        return isinstance(record.get("message"), dict) and ("sessionId" in record or "uuid" in record)
    return kind in ASIDE and ("sessionId" in record or "leafUuid" in record or "messageId" in record)


def read_claude_code(records: list[tuple[int, dict]], name: str, beside: Beside, depth: int = 0) -> list[Run]:
    """The session's run, then a run for each subagent, each linked to the parent step that started it."""
    main = [(n, r) for n, r in records if r.get("isSidechain") is not True]
    side = [(n, r) for n, r in records if r.get("isSidechain") is True]
    if not main and side:  # a subagent's own file: every line is on the sidechain
        main, side = side, []
    parent = _Chain(main, name, beside.budget)
    b = parent.b
    runs: list[Run] = []
    for chain in _sidechains(side):
        if beside.another_run(depth + 1):
            run = _built(_Chain(chain, f"{name} (sidechain)", beside.budget).b, chain, "sidechain")
            step, call_id = _task_of(parent, text_of(chain[0][1]["message"].get("content")), chain[0][0])
            b.link(run, step, call_id)
            runs.append(run)
    runs += _subagent_files(b, main, name, beside, depth)
    return [_built(b, main, "session"), *runs]


def _built(b: SessionBuilder, chain: list[tuple[int, dict]], what: str) -> Run:
    first = chain[0][1] if chain else {}
    version = next((r.get("version") for _, r in chain if isinstance(r.get("version"), str)), None)
    session = first.get("sessionId") if isinstance(first.get("sessionId"), str) else None
    agent_id = next((r.get("agentId") for _, r in chain if isinstance(r.get("agentId"), str)), None)
    title = f"Claude Code{' subagent ' + agent_id if agent_id else ''}: {first_words(b.messages, what)}"
    return b.build(
        title=title, session_id=session, agent=f"claude-code {version}" if version else "claude-code", tools=[]
    )


class _Chain:
    """One conversation's lines as a run's messages and steps, and the line each step starts at."""

    def __init__(self, records: list[tuple[int, dict]], name: str, budget: Budget) -> None:
        results: dict[str, Result] = {}
        for _, r in records:
            content = r.get("message", {}).get("content") if isinstance(r.get("message"), dict) else None
            if r.get("type") == "user" and isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        call_id = block.get("tool_use_id")
                        if isinstance(call_id, str) and call_id not in results:
                            results[call_id] = Result(text_of(block.get("content")), block.get("is_error") is True)
        self.b = SessionBuilder(FORMAT, name, "anthropic", results, budget)
        self.first_line: dict[int, int] = {}
        # in the file's order: a turn at its first line, a person's text, or a compaction
        said: list[tuple[int, Turn | str | _Boundary]] = []
        turns: dict[str, Turn] = {}
        for number, r in records:
            kind = word(r.get("type"))
            message = r.get("message") if isinstance(r.get("message"), dict) else None
            if kind == "system" and r.get("subtype") == "compact_boundary":
                said.append((number, _boundary(r)))
            elif kind in ASIDE:
                self.b.skipped[f"{kind} lines"] += 1
            elif kind not in KINDS or message is None:
                self.b.skipped[f"lines of unknown type {str(kind)[:40]!r}"] += 1
            elif kind == "user":
                said.append((number, _user_text(message.get("content"))))
            else:
                turn = _assistant(turns, message, r, number)
                if turn is not None:
                    said.append((number, turn))
        for number, item in said:
            if isinstance(item, Turn):
                self.first_line[self.b.turn(item)] = number
            elif isinstance(item, _Boundary):
                self.b.compact(FORMAT, item.trigger, item.tokens_before)
            else:
                self.b.user(item)

    @cached_property
    def tasks(self) -> list[tuple[int, int, ToolCall]]:
        """Each Task (or Agent) call of the chain: its step, the line the step starts at, the call; read once."""
        found = []
        for step in self.b.steps:
            reply = self.b.messages[step.message_count]
            if isinstance(reply, AssistantMessage):
                for call in reply.tool_calls:
                    if call.name in ("Task", "Agent"):
                        found.append((step.index, self.first_line.get(step.index, 0), call))
        return found


@dataclass
class _Boundary:
    """A `compact_boundary` line: Claude Code summarised the conversation here (the next user line is the summary)."""

    trigger: str | None
    tokens_before: int | None


def _boundary(record: dict) -> _Boundary:
    meta = record.get("compactMetadata") if isinstance(record.get("compactMetadata"), dict) else {}
    before = meta.get("preTokens")
    return _Boundary(word(meta.get("trigger")) or None, before if isinstance(before, int) and before >= 0 else None)


def _user_text(content: Any) -> str:
    if isinstance(content, list):  # the tool results were read first; what is left is the person's text
        content = [x for x in content if not (isinstance(x, dict) and x.get("type") == "tool_result")]
    return text_of(content)


def _assistant(turns: dict[str, Turn], message: dict, record: dict, number: int) -> Turn | None:
    """One line of a model turn: a new Turn, or None when it adds to the turn with the same message id."""
    msg_id = message.get("id")
    turn = turns.get(msg_id) if isinstance(msg_id, str) else None
    fresh = turn is None
    if turn is None:
        stamp = record.get("timestamp")
        model = message.get("model")
        turn = Turn(
            model=model if isinstance(model, str) else None,
            started_at=stamp if isinstance(stamp, str) else None,
            record=[],
            where=f"line {number}",
        )
        if isinstance(msg_id, str):
            turns[msg_id] = turn
    else:
        turn.where = f"lines {turn.where.split()[-1].split('-')[0]}-{number}"
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            turn.add_text(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            signature = block.get("signature")
            turn.reasoning.append(
                ReasoningPart(
                    provider="anthropic",
                    text=block["thinking"],
                    signature=signature if isinstance(signature, str) else None,
                )
            )
        elif kind == "redacted_thinking" and isinstance(block.get("data"), str):
            turn.reasoning.append(ReasoningPart(provider="anthropic", redacted=block["data"]))
        elif kind == "tool_use":
            turn.calls.append(_call(block, number, len(turn.calls)))
    if isinstance(message.get("usage"), dict):
        turn.usage = parse_usage(message["usage"])  # repeated on each line of the message: counted once
    if isinstance(message.get("stop_reason"), str):
        turn.finish_reason = message["stop_reason"]
    turn.record.append(message)
    return turn if fresh else None


def _call(block: dict, line: int, k: int) -> ToolCall:
    call_id = block.get("id") if isinstance(block.get("id"), str) and block.get("id") else f"toolu_{line}_{k + 1}"
    name = block.get("name") if isinstance(block.get("name"), str) and block.get("name") else "tool"
    args = block.get("input")
    if isinstance(args, dict):
        return parse_arguments(call_id, name, json.dumps(args))
    return parse_arguments(call_id, name, args if isinstance(args, str) else None)


def _sidechains(side: list[tuple[int, dict]]) -> list[list[tuple[int, dict]]]:
    """The inline sidechains, each from a line with no parent to the line before the next such one."""
    chains: list[list[tuple[int, dict]]] = []
    for number, r in side:
        if r.get("parentUuid") is None or not chains:
            chains.append([])
        chains[-1].append((number, r))
    return [c for c in chains if c and isinstance(c[0][1].get("message"), dict)]


def _task_of(parent: _Chain, prompt: str, line: int) -> tuple[int, str | None]:
    """The step and Task call that started a sidechain: the call with its prompt, else the latest one before it."""
    b = parent.b
    linked = {link.tool_call_id for link in b.links}
    latest: tuple[int, str | None] = (max(1, len(b.steps)), None)
    for index, first_line, call in parent.tasks:
        if first_line > line or call.id in linked:
            continue
        if call.arguments.get("prompt") == prompt:
            return index, call.id
        latest = (index, call.id)
    return latest


def _summariser(b: SessionBuilder, path: Path, beside: Beside) -> None:
    """A compaction's summariser file: its model calls are the compaction's own, charged to the step after it."""
    records, _ = json_lines(beside.read(path), beside.budget)
    chain = _Chain(records, path.name, beside.budget).b
    usage = sum((s.usage for s in chain.steps), Usage())
    kept = next((s.sent.compaction.kept_from for s in b.steps if s.sent and s.sent.compaction), 0)
    call = PolicyCall(provider="anthropic", model=chain.model or None, usage=usage, summarised=kept)
    if not b.summariser(call):
        b.skipped["compaction summaries without a compaction in the session (not charged to a step)"] += 1


def _subagent_files(
    b: SessionBuilder, main: list[tuple[int, dict]], name: str, beside: Beside, depth: int
) -> list[Run]:
    """The subagents' own files: `<session>/subagents/agent-*.jsonl` (2.1) and `agent-<id>.jsonl` beside (2.0)."""
    by_agent: dict[str, str] = {}  # agentId -> the Task call whose result names it
    for _, r in main:
        result = r.get("toolUseResult")
        agent_id = result.get("agentId") if isinstance(result, dict) else None
        content = r.get("message", {}).get("content") if isinstance(r.get("message"), dict) else None
        if isinstance(agent_id, str) and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and isinstance(block.get("tool_use_id"), str):
                    by_agent[agent_id] = block["tool_use_id"]
    if beside.folder is None:
        if by_agent:
            b.skipped["subagent files not read (an upload has no folder: import the file from disk)"] += len(by_agent)
        return []
    stem = Path(name).name.removesuffix(".jsonl")
    found: list[tuple[str, Path]] = []
    folder = beside.folder / stem / "subagents"
    if folder.is_dir():
        for path in sorted(folder.glob("agent-*.jsonl"))[:MAX_SUBAGENT_FILES]:
            inside = beside.path(f"{stem}/subagents/{path.name}")
            if inside is not None:
                found.append((path.stem.removeprefix("agent-"), inside))
    seen = {a for a, _ in found}
    absent = [a for a in by_agent if a not in seen and beside.path(f"agent-{a}.jsonl") is None]
    for agent_id in absent[:20]:  # named, so a person knows which file to look for
        b.skipped[f"subagent files absent: {stem}/subagents/agent-{agent_id[:60]}.jsonl"] += 1
    if len(absent) > 20:
        b.skipped["more subagent files absent"] += len(absent) - 20
    # 2.0: agent files beside the session, only those the session's results name, as many as a folder may hold
    for agent_id in list(by_agent)[:MAX_SUBAGENT_FILES]:
        path = beside.path(f"agent-{agent_id}.jsonl")
        if path is not None and agent_id not in seen:
            found.append((agent_id, path))
    runs: list[Run] = []
    steps = {t.tool_call_id: s.index for s in b.steps for t in s.tool_runs}
    for agent_id, path in found:
        if agent_id.startswith(SUMMARISER):
            _summariser(b, path, beside)
            continue
        if not beside.another_run(depth + 1):
            break
        records, bad = json_lines(beside.read(path), beside.budget)
        sub = read_claude_code(records, f"{stem}/subagents/{path.name}", beside, depth + 1)
        if bad:
            sub[0].origin.notes.append(f"{bad} lines not JSON")
        call_id = by_agent.get(agent_id)
        b.link(sub[0], steps.get(call_id, max(1, len(b.steps))) if call_id else max(1, len(b.steps)), call_id)
        runs += sub
    return runs
