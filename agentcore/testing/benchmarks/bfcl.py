"""BFCL multi-turn tasks (the `bfcl-eval` package) as pinned tests, graded by BFCL's own checker.

Each task has scripted user turns, the reference calls per turn, the tools' JSON schemas and
stateful classes (a file system, messaging, posting, tickets, trading, travel, a vehicle, math)
that implement them. A run binds the tools to fresh instances loaded from the task's initial
configuration; BFCL's `multi_turn_checker` then plays the calls that ran, turn by turn, on its own
instances and compares their end state and results with the reference's after each turn.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import json
import uuid
from importlib import resources
from typing import Any

from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC, MAXIMUM_STEP_LIMIT
from bfcl_eval.constants.executable_backend_config import (
    CLASS_FILE_PATH_MAPPING,
    MULTI_TURN_FUNC_DOC_FILE_MAPPING,
    STATELESS_CLASSES,
)
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from pydantic import BaseModel, ConfigDict, create_model

from ...errors import UsageError
from ...messages import ToolCall, UserMessage
from ...run import Run
from ...tools import Tool
from ..expectations import BenchmarkRef, Expectations, PinnedTest
from .episode import Skipped, reference_call

CATEGORIES = ("multi_turn_base", "multi_turn_miss_param", "multi_turn_miss_func", "multi_turn_long_context")
MAX_OUTPUT_CHARS = 60_000  # long-context tasks list long folders and files; BFCL shows them whole
_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def _data() -> Any:
    return resources.files("bfcl_eval") / "data"


@functools.cache
def _entries(category: str) -> dict[str, dict[str, Any]]:
    if category not in CATEGORIES:
        raise UsageError(f"unknown BFCL category {category!r}; available: {', '.join(CATEGORIES)}")
    lines = (_data() / f"BFCL_v4_{category}.json").read_text(encoding="utf-8").splitlines()
    answers = (_data() / "possible_answer" / f"BFCL_v4_{category}.json").read_text(encoding="utf-8").splitlines()
    truth = {a["id"]: a["ground_truth"] for a in map(json.loads, answers)}
    entries = {}
    for e in map(json.loads, lines):
        e["ground_truth"] = truth.get(e["id"])
        entries[e["id"]] = e
    return entries


@functools.cache
def _docs(class_name: str) -> tuple[dict[str, Any], ...]:
    path = _data() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    return tuple(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def _json_schema(node: Any) -> Any:
    """BFCL's parameter schema as JSON Schema: its `dict`, `float` and `tuple` types renamed, `any` left open."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            if value == "any":
                continue
            out[key] = _TYPES.get(value, value)
        elif key in ("properties",) and isinstance(value, dict):
            out[key] = {k: _json_schema(v) for k, v in value.items()}
        else:
            out[key] = _json_schema(value)
    return out


def _result_text(value: Any) -> str:
    """A call's result as BFCL's checker writes it: text as is, a dict as JSON, anything else by str()."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    """A call as BFCL's decoded model output writes it, each argument a Python literal."""
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


def _arguments_model(name: str, method: Any) -> type[BaseModel]:
    """The method's parameters, each taking any value: as BFCL calls a method with the arguments the model
    wrote, unconverted (a ticket id the reference writes as text must reach the method as text)."""
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(method).parameters.items():
        if param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            fields[pname] = (Any, ... if param.default is inspect.Parameter.empty else param.default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def _parse_reference(text: str, methods: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`cd(folder='document')` or `sort('final_report.pdf')` as (name, arguments), read as literals only."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {text}")
    name = node.func.id
    if name not in methods:
        raise ValueError(f"the reference calls {name}, which the task does not offer")
    params = [p for p in inspect.signature(methods[name]).parameters]
    arguments = {params[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    arguments.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    return name, arguments


class BfclEpisode:
    """One BFCL task on fresh instances of its classes: the tools, the calls that ran per turn, the grader."""

    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry
        self.long_context = "long_context" in entry["id"]
        self.turn = 0
        self.ran: list[list[str]] = [[] for _ in entry["question"]]  # call texts that ran, per user turn
        self.instances: dict[str, Any] = {}
        for class_name in entry["involved_classes"]:
            module = importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name])
            instance = getattr(module, class_name)()
            if class_name not in STATELESS_CLASSES:
                config = copy.deepcopy(entry["initial_config"].get(class_name, {}))
                instance._load_scenario(config, long_context=self.long_context)
            self.instances[class_name] = instance
        excluded = set(entry.get("excluded_function") or [])
        held = {n: int(t) for t, names in (entry.get("missed_function") or {}).items() for n in names}
        self.held_until = held
        self.methods: dict[str, Any] = {}
        self.tools: list[Tool] = []
        for class_name, instance in self.instances.items():
            for doc in _docs(class_name):
                name = doc["name"]
                if name in excluded or name in self.methods:
                    continue
                self.methods[name] = getattr(instance, name)
                self.tools.append(self._tool(name, doc))

    def _tool(self, name: str, doc: dict[str, Any]) -> Tool:
        method = self.methods[name]

        @functools.wraps(method)
        def run(**arguments: Any) -> str:
            self.ran[self.turn].append(_call_text(name, arguments))
            return _result_text(method(**arguments))

        return Tool(
            name=name,
            description=doc.get("description", ""),
            fn=run,
            args_model=_arguments_model(name, method),
            sequential=True,  # the calls of one turn share the instances' state: they run in the order asked
            max_output_chars=MAX_OUTPUT_CHARS,
            _schema=_json_schema(doc.get("parameters") or {"type": "object", "properties": {}}),
        )

    def offered(self, turn: int) -> list[str]:
        return [t.name for t in self.tools if self.held_until.get(t.name, 0) <= turn]

    def begin_turn(self, turn: int) -> None:
        self.turn = min(turn, len(self.ran) - 1)

    def reference(self) -> list[list[ToolCall]]:
        turns = []
        for t, calls in enumerate(self.entry["ground_truth"]):
            parsed = [_parse_reference(c, self.methods) for c in calls]
            turns.append([reference_call(f"ref_{t + 1}_{k + 1}", n, a) for k, (n, a) in enumerate(parsed)])
        return turns

    def reference_answer(self, turn: int) -> str:
        return "Done."

    def grade(self, run: Run) -> str | None:
        asked = sum(isinstance(m, UserMessage) for m in run.messages)
        if asked < len(self.ran):
            return f"the run answered {asked} of the task's {len(self.ran)} user turns"
        decoded = [[calls] if calls else [] for calls in self.ran]
        name = f"agentcore_{uuid.uuid4().hex}"
        try:
            verdict = multi_turn_checker(decoded, self.entry["ground_truth"], self.entry, self.entry["id"], name)
        except Exception as exc:  # noqa: BLE001 - the package's checker failing is a verdict to report, not a crash
            return f"BFCL's checker failed: {type(exc).__name__}: {exc}"
        finally:
            # the checker keeps its instances in its module's globals, by model name: ours are let go
            for key in [k for k in vars(multi_turn_utils) if name.replace("-", "_") in k]:
                del vars(multi_turn_utils)[key]
        if verdict.get("valid"):
            return None
        return f"{verdict.get('error_type', 'multi_turn')}: {verdict.get('error_message', 'the state differs')}"


def episode(ref: BenchmarkRef) -> BfclEpisode:
    """A fresh episode of the BFCL task the test names."""
    category = ref.category or ref.task_id.rsplit("_", 1)[0]
    entry = _entries(category).get(ref.task_id)
    if entry is None:
        raise UsageError(f"BFCL {category} has no task {ref.task_id!r}")
    return BfclEpisode(entry)


def _said(turn: list[dict[str, Any]]) -> str:
    text = "\n\n".join(m.get("content", "") for m in turn if m.get("role") == "user").strip()
    return text or DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC


def to_test(entry: dict[str, Any], category: str, max_steps: int | None = None) -> PinnedTest:
    """The task as a test file: its turns, its tools' names, BFCL's grader as the expectation.

    Each turn's step budget is BFCL's (20), or more where the reference makes more calls; `max_steps` sets it.
    An environment that cannot be built, or a reference call that cannot be read, raises ValueError.
    """
    if entry.get("ground_truth") is None:
        raise ValueError("the package has no reference calls for it")
    try:
        built = BfclEpisode(entry)
        reference = built.reference()
    except (ImportError, SyntaxError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from None
    for turn, calls in enumerate(reference):
        for call in calls:
            if built.held_until.get(call.name, 0) > turn:  # no model could make that call: none could pass
                raise ValueError(
                    f"BFCL's reference calls {call.name} in turn {turn}, but the task offers it only from "
                    f"turn {built.held_until[call.name]} (BFCL's turn numbers, from 0)"
                )
    most = max(map(len, reference), default=0)
    turns = [_said(t) for t in entry["question"]]
    return PinnedTest(
        name=f"bfcl {entry['id']}",
        prompt=turns[0],
        tools=[t.name for t in built.tools],
        max_steps=max_steps or max(MAXIMUM_STEP_LIMIT, most + 1),
        turns=turns[1:],
        benchmark=BenchmarkRef(name="bfcl", task_id=entry["id"], category=category),
        expect=Expectations(benchmark=True),
    )


def import_tasks(
    category: str, ids: list[str] | None = None, limit: int | None = None, max_steps: int | None = None
) -> tuple[list[PinnedTest], list[Skipped]]:
    """The category's tasks (those named, or the first `limit`) as tests, and those that could not be, with why."""
    entries = _entries(category)
    if ids:
        missing = [i for i in ids if i not in entries]
        if missing:
            raise UsageError(f"BFCL {category} has no task {missing[0]!r}")
        chosen = [entries[i] for i in ids]
    else:
        chosen = list(entries.values())[:limit]
    tests, skipped = [], []
    for entry in chosen:
        try:
            tests.append(to_test(entry, category, max_steps))
        except Exception as exc:  # noqa: BLE001 - a task the package cannot build offline is listed, not dropped
            skipped.append(Skipped(entry["id"], str(exc) or type(exc).__name__))
    return tests, skipped
