"""A pinned test: a run kept as a test file, with expectations on its trajectory, its answer and its cost.

Test file, version 1, JSON (or YAML when PyYAML is installed): format "agentcore.test", version 1,
name, prompt, system_prompt, tools (toolbox names), max_steps, temperature, final_answer_schema, mocks
(tool results fixed by a rule, as `agentcore run --mock` reads them: a matching call is not run), hooks
(registered hooks by name, as `agentcore run --hook` takes them: the test runs with them), expect
(the expectations below), and pinned (the transcript of the run it was pinned from). A test
imported from a public benchmark also has `benchmark` (which task of which package: its tools, its
environment and its grader come from the installed package when it runs) and `turns`, the scripted
user messages sent one after another, each when the model has answered the one before.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import ValidationError

from ..annotations import step_calls
from ..errors import TranscriptError, UsageError
from ..hooks.examples import HOOKS
from ..hooks.guard import call_key
from ..messages import MAX_COUNT, AssistantMessage, ToolCall, UserMessage
from ..run import Run
from ..schemas import SchemaError, check_schema, schema_errors, search
from ..secrets import scrub_text
from ..steps import FINAL_ANSWER_TOOL
from ..transcript import check_header, describe_validation, json_text, read_file, read_json
from .expectations import (
    AnswerExpect,
    ArgMatch,
    CallExpect,
    Expectations,
    PinnedTest,
    Trajectory,
)

FORMAT = "agentcore.test"
VERSION = 1
YAML_SUFFIXES = (".yaml", ".yml")
TEST_SUFFIXES = (".json", *YAML_SUFFIXES)


# -- what a run did ------------------------------------------------------------------------


def tool_calls(run: Run) -> list[ToolCall]:
    """Every tool call the model made, in order (the final-answer call excluded)."""
    return [
        c for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls if c.name != FINAL_ANSWER_TOOL
    ]


def step_tool_calls(run: Run, step: int) -> list[ToolCall]:
    """The tool calls of step `step`'s model reply (the final-answer call excluded); none for a step not made."""
    if not 1 <= step <= len(run.steps):
        return []
    calls = step_calls(run.messages, run.steps[step - 1].message_count)
    return [c for c in calls if c.name != FINAL_ANSWER_TOOL]


@dataclass(frozen=True)
class RepeatedCall:
    """A tool call made more than once with identical arguments."""

    name: str
    arguments: str
    count: int

    def __str__(self) -> str:
        return f"{self.name}({self.arguments}) × {self.count}"


def repeated_calls(run: Run) -> list[RepeatedCall]:
    """Calls made more than once with the same name and arguments, most repeated first: the loop detector."""
    counts = Counter(map(call_key, tool_calls(run)))
    return [RepeatedCall(n, a, k) for (n, a), k in counts.most_common() if k > 1]


def last_turn_repeats(run: Run) -> RepeatedCall | None:
    """A call in the model's last turn identical to one it made before, with how often it has now been made."""
    turns = [m for m in run.messages if isinstance(m, AssistantMessage)]
    if not turns or not turns[-1].tool_calls:
        return None
    counts = Counter(map(call_key, tool_calls(run)))
    for call in turns[-1].tool_calls:
        key = call_key(call)
        if counts[key] > 1:
            return RepeatedCall(*key, counts[key])
    return None


# -- the checks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """One expectation a run did not meet: which, and why in words."""

    expectation: str
    message: str

    def __str__(self) -> str:
        return f"{self.expectation}: {self.message}"


def _match_trajectory(expected: Trajectory, calls: list[ToolCall]) -> str | None:
    want = expected.calls
    names = ", ".join(c.name for c in calls) or "no calls"
    if expected.mode == "exact":
        for i, (e, c) in enumerate(zip(want, calls, strict=False)):
            why = e.mismatch(c)
            if why is not None:
                return f"call {i + 1}: {why}"
        if len(want) != len(calls):
            return f"expected {len(want)} calls, the run made {len(calls)} ({names})"
        return None
    if expected.mode == "in_order":
        found = 0
        for c in calls:
            if found < len(want) and want[found].mismatch(c) is None:
                found += 1
        if found < len(want):
            return f"{want[found].describe()} (call {found + 1} of {len(want)}) not found in order among: {names}"
        return None
    unmatched = _unmatched(want, calls)
    if unmatched is not None:
        return f"{want[unmatched].describe()} not found among: {names}"
    if expected.mode == "any_order" and len(want) != len(calls):
        return f"expected {len(want)} calls, the run made {len(calls)} ({names})"
    return None


def _unmatched(want: list[CallExpect], calls: list[ToolCall]) -> int | None:
    """The index of an expected call that no distinct actual call can match (a bipartite matching); else None."""
    owner: dict[int, int] = {}  # actual call → expected call

    def assign(i: int, seen: set[int]) -> bool:
        for j, c in enumerate(calls):
            if j not in seen and want[i].mismatch(c) is None:
                seen.add(j)
                if j not in owner or assign(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return next((i for i in range(len(want)) if not assign(i, set())), None)


def _check_answer(expected: AnswerExpect, run: Run) -> str | None:
    structured = run.final_output is not None
    text = json.dumps(run.final_output) if structured else run.final_answer()
    if text is None:
        return f"the run has no answer (stop: {run.stop_reason})"
    for part in expected.contains:
        if part not in text:
            return f"{_cut(text)!r} does not contain {part!r}"
    if expected.regex is not None:
        try:
            if not search(expected.regex, text):
                return f"{_cut(text)!r} does not match /{expected.regex}/"
        except SchemaError as exc:
            return f"the answer could not be matched: {exc}"
    if expected.schema_ is not None:
        value = run.final_output if structured else _as_json(text)
        try:
            errors = schema_errors(expected.schema_, value)
        except SchemaError as exc:
            return f"the answer could not be checked: the schema cannot be applied: {exc}"
        if errors:
            return f"the answer does not fill the schema: {jsonschema.exceptions.best_match(errors).message}"
    return None


def _as_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _cut(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _ceiling(what: str, found: float, most: float | None, unit: str = "") -> Failure | None:
    if most is None or found <= most:
        return None
    return Failure(what, f"{found:g}{unit} is over the ceiling of {most:g}{unit}")


def check(expect: Expectations, run: Run, cost_usd: float | None = None) -> list[Failure]:
    """Every expectation the run does not meet, in the order the file lists them; empty when it passes."""
    failures: list[Failure] = []
    if run.stop_reason == "error":
        failures.append(Failure("run", f"provider error: {run.error}"))
    calls = tool_calls(run)
    if expect.tool_calls is not None:
        at = expect.tool_calls.step
        why = _match_trajectory(expect.tool_calls, calls if at is None else step_tool_calls(run, at))
        if why is not None:
            where = "" if at is None else f" at step {at}"
            failures.append(Failure(f"tool_calls ({expect.tool_calls.mode}){where}", why))
    used = [c.name for c in calls if c.name in expect.forbidden_tools]
    if used:
        failures.append(Failure("forbidden_tools", f"the run called {used[0]}"))
    repeats = repeated_calls(run)
    if expect.max_repeated_calls is not None and repeats and repeats[0].count > expect.max_repeated_calls:
        failures.append(Failure("max_repeated_calls", f"{repeats[0]}, over {expect.max_repeated_calls}"))
    if expect.max_steps is not None and len(run.steps) > expect.max_steps:
        failures.append(Failure("max_steps", f"the run took {len(run.steps)} steps, over {expect.max_steps}"))
    if expect.stop_reason is not None and run.stop_reason not in expect.stop_reason:
        failures.append(Failure("stop_reason", f"{run.stop_reason} is not {' or '.join(expect.stop_reason)}"))
    if expect.answer is not None:
        why = _check_answer(expect.answer, run)
        if why is not None:
            failures.append(Failure("answer", why))
    usage = run.usage
    found = (
        _ceiling("max_input_tokens", usage.input_tokens, expect.max_input_tokens, " tokens"),
        _ceiling("max_output_tokens", usage.output_tokens, expect.max_output_tokens, " tokens"),
    )
    failures += [f for f in found if f is not None]
    if expect.max_cost_usd is not None:
        if cost_usd is None:
            failures.append(Failure("max_cost_usd", "the run's cost is unknown (no price for its model)"))
        elif (over := _ceiling("max_cost_usd", cost_usd, expect.max_cost_usd, " $")) is not None:
            failures.append(over)
    return failures


# -- proposing a test from a run ---------------------------------------------------------


def _call_expect(call: ToolCall) -> CallExpect:
    if call.raw_arguments is not None:
        return CallExpect(name=call.name)  # arguments that were not JSON: the name is what can be pinned
    return CallExpect(name=call.name, args=ArgMatch(equals=call.arguments))


def propose(run: Run, name: str | None = None) -> PinnedTest:
    """A test from a run, with the expectations it meets: its tool sequence, its answer, generous ceilings."""
    prompt = next((m.content for m in run.messages if m.role == "user"), None)
    if not prompt:
        raise UsageError(f"run {run.id} has no user prompt to pin")
    if run.config.final_answer_schema is not None:  # an imported run's schema is untrusted, as a test file's is
        try:
            check_schema(run.config.final_answer_schema)
        except SchemaError as exc:
            raise UsageError(f"run {run.id}: its final-answer schema cannot be pinned: {exc}") from None
    unknown = [h for h in run.config.hooks if h not in HOOKS]
    if unknown:  # an imported run may name a hook this install does not have
        raise UsageError(f"run {run.id}: its hook {unknown[0][:80]!r} is not registered, so it cannot be pinned")
    usage = run.usage
    answer = None
    if run.final_output is not None and run.config.final_answer_schema is not None:
        answer = AnswerExpect(schema=run.config.final_answer_schema)
    elif run.stop_reason == "answer" and run.final_answer():
        answer = AnswerExpect(contains=[run.final_answer().strip()])
    repeats = repeated_calls(run)
    expect = Expectations(
        tool_calls=Trajectory(mode="in_order", calls=[_call_expect(c) for c in tool_calls(run)]),
        max_repeated_calls=max(2, repeats[0].count if repeats else 1),
        max_steps=min(MAX_COUNT, max(2 * len(run.steps), len(run.steps) + 2)),
        stop_reason=[run.stop_reason] if run.stop_reason and run.stop_reason != "error" else None,
        answer=answer,
        max_input_tokens=min(MAX_COUNT, max(2 * usage.input_tokens, usage.input_tokens + 1000)),
        max_output_tokens=min(MAX_COUNT, max(2 * usage.output_tokens, usage.output_tokens + 500)),
    )
    return PinnedTest(
        name=name or run.title or run.id,
        prompt=prompt,
        system_prompt=run.config.system_prompt,
        tools=[t.name for t in run.config.tools if t.name != FINAL_ANSWER_TOOL],
        max_steps=run.config.max_steps,
        temperature=run.config.temperature,
        final_answer_schema=run.config.final_answer_schema,
        mocks=list(run.config.mocks),
        hooks=list(run.config.hooks),
        expect=expect,
        pinned=_without_wire(run),
        **_conversation_parts(run),
    )


def _conversation_parts(run: Run) -> dict[str, Any]:
    """What a test pinned from a conversation keeps of its user: the scripted turns after the prompt and the user
    (agentcore.steps.UserSpec), so that it replays the recorded turns or draws new ones; nothing for another run."""
    if run.conversation is None:
        return {}
    said = [m for m in run.messages if isinstance(m, UserMessage)][1:]
    ends = next((k for k, m in enumerate(said) if m.author is None or m.author.kind != "script"), len(said))
    return {"turns": [m.content for m in said[:ends]], "user": run.conversation.user}


def _without_wire(run: Run) -> Run:
    """The run as a test keeps it: the wire bodies (every request resends the whole history) are left out."""
    kept = run.model_copy(deep=True)
    for step in kept.steps:
        step.wire = None
    return kept


# -- reading and writing ------------------------------------------------------------------


def to_data(test: PinnedTest) -> dict[str, Any]:
    """The test as plain data, header first; empty expectations left out."""
    body = test.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not test.turns:
        del body["turns"]  # a one-prompt test reads as it always has
    if not test.mocks:
        del body["mocks"]
    if not test.hooks:
        del body["hooks"]
    if not test.verdicts:
        del body["verdicts"]
    expect = test.expect.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
    if test.expect.tool_calls is not None:  # the mode is said even when it is the default
        expect["tool_calls"] = {"mode": test.expect.tool_calls.mode, **expect.get("tool_calls", {})}
    body["expect"] = expect
    return {"format": FORMAT, "version": VERSION, **body}


def dumps(test: PinnedTest, yaml_format: bool = False) -> str:
    """The test file's text: JSON, or YAML when asked (PyYAML needed)."""
    return data_text(to_data(test), yaml_format)


def data_text(data: dict[str, Any], yaml_format: bool = False) -> str:
    """Test file data (`to_data`) as the file's text: JSON, or YAML when asked (PyYAML needed)."""
    if not yaml_format:
        return json_text(data, indent=2) + "\n"
    return scrub_text(_yaml().write_yaml(data))


def from_data(data: Any) -> PinnedTest:
    """A test from parsed file data; a TranscriptError names the field and the reason."""
    check_header(data, "a test file", FORMAT, VERSION)
    try:
        return PinnedTest.model_validate({k: v for k, v in data.items() if k not in ("format", "version")})
    except ValidationError as exc:
        raise TranscriptError(describe_validation(exc)) from None


def loads(raw: str | bytes, yaml_format: bool = False) -> PinnedTest:
    """A test from a file's text."""
    return from_data(_yaml().read_yaml(raw) if yaml_format else read_json(raw))


def load(path: str | Path) -> PinnedTest:
    """Read a test file (JSON, or YAML by its suffix); every failure is a TranscriptError naming the file."""
    path = Path(path)
    try:
        raw = read_file(path)
    except TranscriptError as exc:
        raise TranscriptError(f"{path}: {exc}") from None
    try:
        test = loads(raw, path.suffix.lower() in YAML_SUFFIXES)
    except (TranscriptError, UsageError) as exc:
        raise TranscriptError(f"{path}: {exc}") from None
    return test if test.name else test.model_copy(update={"name": path.stem})


MAX_TEST_FILES = 10_000  # files listed from the folders named, subfolders included
MAX_FOLDER_DEPTH = 8  # subfolders below a folder named, when they are read


def find_tests(paths: list[str | Path], *, subfolders: bool = False) -> list[Path]:
    """The test files named, and those inside each folder named (and its subfolders, with `subfolders`, to
    MAX_FOLDER_DEPTH levels; links to folders are not followed), sorted; a missing path is a UsageError."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += _folder_tests(p, MAX_FOLDER_DEPTH if subfolders else 0)
        elif p.is_file():
            found.append(p)
        elif p.exists():
            raise UsageError(f"{p}: not a regular file (a device, a pipe or a folder is not read)")
        else:
            raise UsageError(f"{p}: no such file or folder")
        if len(found) > MAX_TEST_FILES:
            raise UsageError(f"{p}: more than {MAX_TEST_FILES:,} test files; name a smaller folder")
    return list(dict.fromkeys(found))


def _folder_tests(folder: Path, depth: int) -> list[Path]:
    """The test files of `folder`, sorted, then those of each subfolder in name order, `depth` levels down."""
    entries = sorted(folder.iterdir())
    files = [f for f in entries if f.is_file() and f.suffix.lower() in TEST_SUFFIXES]
    if depth > 0:
        for sub in entries:
            if sub.is_dir() and not sub.is_symlink() and not sub.name.startswith("."):
                files += _folder_tests(sub, depth - 1)
                if len(files) > MAX_TEST_FILES:
                    break
    return files


def _yaml() -> Any:
    # PyYAML is optional: only a YAML test file needs it
    try:
        from . import yaml_file
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("yaml"):
            raise
        raise UsageError("YAML test files need PyYAML (pip install pyyaml); JSON needs nothing") from None
    return yaml_file
