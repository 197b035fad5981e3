"""ATIF (Agent Trajectory Interchange Format, harbor's RFC 0001, v1.0 to v1.7) trajectories, read as runs.

An agent step is one model call: its message, reasoning_content and tool_calls are the assistant turn, its
observation results (linked by source_call_id, or in call order where a writer left the id out) the tool
results, its metrics the step's usage (prompt_tokens include the cached ones, as Usage counts them). A
result no call asked for (a system event) is kept as a user message that says it is an observation. The
first system step is the system prompt; a later one is kept as a user message marked [system], but for one
whose `extra.context_management` marks a compaction: the steps copied into the new context after it
(`is_copied_context`) are its history, and each later step sends them and what follows. Subagent
trajectories, embedded (v1.7 `subagent_trajectories`, by trajectory_id) or in a file beside this one
(`trajectory_path`), become runs of their own linked to the step whose result names them.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from pydantic import ValidationError

from ..errors import TranscriptError
from ..importers import tool_specs_from
from ..messages import AssistantMessage, ReasoningPart, Usage, UserMessage, as_count, parse_arguments
from ..providers import REGISTRY
from ..run import Run
from ..transcript import read_json
from .builder import Result, SessionBuilder, Turn, clip, first_words, items, provider_of, text_of, word
from .files import Beside

FORMAT = "atif"
MAX_PARTS = 1000  # reasoning parts of one step read back from agentcore's own export


def is_atif(data: Any) -> bool:
    """Whether JSON data is an ATIF trajectory: an object whose schema_version starts `ATIF`."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("schema_version"), str)
        and data["schema_version"].startswith("ATIF")
    )


def read_atif(data: dict[str, Any], name: str, beside: Beside) -> list[Run]:
    """The trajectory's run, then its subagents' runs (each linked to the parent's step that names it)."""
    return _Reader(beside, name).read(data, depth=0)


class _Reader:
    def __init__(self, beside: Beside, name: str) -> None:
        self.beside, self.name = beside, name

    def read(self, data: dict[str, Any], depth: int) -> list[Run]:
        steps = data.get("steps")
        if not isinstance(steps, list):
            raise TranscriptError("steps: an ATIF trajectory has a list of steps")
        agent = data.get("agent") if isinstance(data.get("agent"), dict) else {}
        agent_model = agent.get("model_name") if isinstance(agent.get("model_name"), str) else ""
        provider, _ = provider_of(agent_model) if agent_model else ("openai", "")
        extra = agent.get("extra") if isinstance(agent.get("extra"), dict) else {}
        if word(extra.get("provider")) in REGISTRY:  # agentcore's own export says which provider answered
            provider = extra["provider"]
        b = SessionBuilder(FORMAT, self.name, provider, {}, self.beside.budget)
        embedded = {
            t["trajectory_id"]: t
            for t in items(data.get("subagent_trajectories"))
            if isinstance(t, dict) and isinstance(t.get("trajectory_id"), str)
        }
        later: list[Run] = []
        compacting = False  # after a compaction step: the steps copied into the new context, until the first other
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                b.skipped["steps that are not objects"] += 1
                continue
            source = step.get("source")
            text = text_of(step.get("message"))
            management = _context_management(step)
            compacting = management is not None or (compacting and step.get("is_copied_context") is True)
            if management is not None:
                before, after = management.get("tokens_before"), management.get("tokens_after")
                summary = management.get("summary")
                b.compact(
                    word(management.get("by")) or word(agent.get("name")) or FORMAT,
                    word(management.get("trigger")) or None,
                    before if isinstance(before, int) and before >= 0 else None,
                    clip(summary) if isinstance(summary, str) else None,
                    after if isinstance(after, int) and after >= 0 else None,
                )
            elif compacting and source in ("user", "agent") and text.strip():
                b.copied(UserMessage(content=clip(text)) if source == "user" else AssistantMessage(content=clip(text)))
            elif source == "system":
                b.system(text)
            elif source == "user":
                b.user(text)
            elif source == "agent":
                self.agent_step(b, step, i, agent_model)
            else:
                b.skipped[f"steps of source {str(source)[:20]!r}"] += 1
                continue
            later += self.observations(b, step, source, embedded, depth)
        named = {r.origin.session_id for r in later if r.origin}
        for tid, sub in embedded.items():  # an embedded trajectory no step names is still the run's subagent
            if tid not in named and self.beside.another_run(depth + 1):
                runs = self.read(sub, depth + 1)
                b.link(runs[0], len(b.steps), None)
                later += runs
                named.update(r.origin.session_id for r in runs if r.origin)
        continued = data.get("continued_trajectory_ref")
        if isinstance(continued, str) and continued:  # another document goes on where this one stops
            b.skipped[f"continuation not read: {continued[:100]} (import it as a run of its own)"] += 1
        name = agent.get("name") if isinstance(agent.get("name"), str) else "ATIF"
        version = agent.get("version") if isinstance(agent.get("version"), str) else ""
        session = data.get("trajectory_id") or data.get("session_id")
        run = b.build(
            title=f"{name}: {first_words(b.messages, 'trajectory')}",
            session_id=session if isinstance(session, str) else None,
            agent=f"{name} {version}".strip()[:200],
            tools=tool_specs_from(agent.get("tool_definitions")),
        )
        return [run, *later]

    def agent_step(self, b: SessionBuilder, step: dict[str, Any], i: int, agent_model: str) -> None:
        calls = []
        for k, c in enumerate(items(step.get("tool_calls"))):
            if not isinstance(c, dict):
                continue
            call_id = c.get("tool_call_id") if isinstance(c.get("tool_call_id"), str) else f"call_{i + 1}_{k + 1}"
            fname = c.get("function_name") if isinstance(c.get("function_name"), str) else "tool"
            extra = c.get("extra") if isinstance(c.get("extra"), dict) else {}
            args = c.get("arguments")
            # agentcore's own export keeps arguments that were not JSON, or JSON written otherwise, as the model wrote
            raw = extra.get("raw_arguments") if "raw_arguments" in extra else extra.get("written_arguments")
            if isinstance(raw, str):
                calls.append(parse_arguments(call_id, fname, raw))
            elif isinstance(args, dict):
                calls.append(parse_arguments(call_id, fname, json.dumps(args)))
            else:
                calls.append(parse_arguments(call_id, fname, args if isinstance(args, str) else None))
        reasoning = step.get("reasoning_content")
        parts = _reasoning_parts(step.get("extra"))
        if parts is None:
            parts = [ReasoningPart(provider=FORMAT, text=reasoning)] if isinstance(reasoning, str) and reasoning else []
        model = step.get("model_name") if isinstance(step.get("model_name"), str) else agent_model
        stamp = step.get("timestamp")
        turn = Turn(
            texts=[text_of(step.get("message"))],
            calls=calls,
            reasoning=parts,
            usage=_usage(step.get("metrics")),
            estimated=_estimated(step.get("metrics")),
            model=provider_of(model)[1] if model else None,
            started_at=stamp if isinstance(stamp, str) else None,
            record={k: v for k, v in step.items() if k != "observation"},
            where=f"step {step.get('step_id', i + 1)}",
        )
        results, loose = _results(calls, step.get("observation"))
        b.turn(turn, results)
        for text in loose:
            _observed(b, text)

    def observations(
        self, b: SessionBuilder, step: dict[str, Any], source: Any, embedded: dict[str, Any], depth: int
    ) -> list[Run]:
        """The subagent runs the step's results name; a system or user step's results kept as text."""
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, dict) else None
        if not isinstance(results, list):
            return []
        runs: list[Run] = []
        for r in results:
            if not isinstance(r, dict):
                continue
            for ref in items(r.get("subagent_trajectory_ref")):
                if isinstance(ref, dict):
                    runs += self.subagent(b, ref, r.get("source_call_id"), embedded, depth)
            if source != "agent":
                _observed(b, text_of(r.get("content")))
        return runs

    def subagent(
        self, b: SessionBuilder, ref: dict[str, Any], call_id: Any, embedded: dict[str, Any], depth: int
    ) -> list[Run]:
        tid, path = ref.get("trajectory_id"), ref.get("trajectory_path")
        data: Any = embedded.pop(tid, None) if isinstance(tid, str) else None
        where = tid if isinstance(tid, str) else path
        if data is None and isinstance(path, str):
            found = self.beside.path(path)
            if found is None:
                b.skipped["subagent trajectories not found beside the file"] += 1
                return []
            data = read_json(self.beside.read(found))
        if not is_atif(data):
            b.skipped["subagent references that lead to no trajectory"] += 1
            return []
        if not self.beside.another_run(depth + 1):
            return []
        runs = _Reader(self.beside, str(where)[:200]).read(data, depth + 1)
        step = max(1, len(b.steps))
        b.link(runs[0], step, call_id if isinstance(call_id, str) else None)
        return runs


def _context_management(step: dict[str, Any]) -> dict[str, Any] | None:
    """A system step's `extra.context_management` (ATIF v1.7: the history was compacted here), else None."""
    extra = step.get("extra")
    found = extra.get("context_management") if isinstance(extra, dict) and step.get("source") == "system" else None
    return found if isinstance(found, dict) else None


def _observed(b: SessionBuilder, text: str) -> None:
    if text.strip():
        b.user(f"[observation] {text}")


def _results(calls: list[Any], observation: Any) -> tuple[dict[str, Result], list[str]]:
    """Each call's result: by source_call_id, else the step's results without one in call order; and the text
    of the results no call takes."""
    results = observation.get("results") if isinstance(observation, dict) else None
    if not isinstance(results, list):
        return {}, []
    ids = {c.id for c in calls}
    out: dict[str, Result] = {}
    loose: deque[Result] = deque()
    strays: list[str] = []
    for r in results:
        if not isinstance(r, dict):
            continue
        extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
        result = Result(text_of(r.get("content")), is_error=extra.get("is_error") is True)
        source_call_id = word(r.get("source_call_id"))
        if source_call_id in ids and source_call_id not in out:
            out[source_call_id] = result
        elif r.get("source_call_id") is None:
            loose.append(result)
        else:
            strays.append(result.content)
    for call in calls:
        if call.id not in out and loose:
            out[call.id] = loose.popleft()
    return out, [r.content for r in loose] + strays


def _reasoning_parts(extra: Any) -> list[ReasoningPart] | None:
    """The reasoning parts agentcore's own export keeps in a step's extra, as the provider gave them; None when
    the step has none (or they do not read as parts, when reasoning_content stands instead)."""
    parts = extra.get("agentcore_reasoning") if isinstance(extra, dict) else None
    if not isinstance(parts, list) or not parts:
        return None
    try:
        return [ReasoningPart.model_validate(p) for p in parts[:MAX_PARTS]]
    except ValidationError:
        return None


def _estimated(metrics: Any) -> bool:
    extra = metrics.get("extra") if isinstance(metrics, dict) else None
    return isinstance(extra, dict) and extra.get("estimated") is True


def _usage(metrics: Any) -> Usage | None:
    if not isinstance(metrics, dict) or not any(k in metrics for k in ("prompt_tokens", "completion_tokens")):
        return None
    extra = metrics.get("extra") if isinstance(metrics.get("extra"), dict) else {}
    prompt = as_count(metrics.get("prompt_tokens"))
    cached = min(as_count(metrics.get("cached_tokens")), prompt)
    return Usage(
        input_tokens=prompt,
        output_tokens=as_count(metrics.get("completion_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=min(as_count(extra.get("cache_creation_tokens")), prompt - cached),
        reasoning_tokens=as_count(extra.get("reasoning_tokens")),
    )
