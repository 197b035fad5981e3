"""AgentDojo user tasks (the `agentdojo` package) as pinned tests, graded by each task's own `utility`.

Four suites (banking, slack, travel, workspace): each task has a prompt, the suite's tools over a
pydantic environment, `ground_truth(pre_env)` calls and a deterministic `utility(output, pre_env,
post_env)` check (or `utility_from_traces`, which also reads the calls made). A run binds the suite's
tools to a fresh environment, loaded as AgentDojo loads it (default injection texts, i.e. no attack),
and runs them through AgentDojo's own `FunctionsRuntime`, whose results it formats as AgentDojo does.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import yaml
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suite, get_suites

from ...errors import UsageError
from ...messages import AssistantMessage, ToolCall
from ...run import Run
from ...steps import FINAL_ANSWER_TOOL
from ...tools import Tool
from ..expectations import BenchmarkRef, Expectations, PinnedTest
from .episode import Skipped, reference_call

VERSION = "v1.2.2"  # the latest benchmark version the package ships
MAX_STEPS = 15  # AgentDojo's own tool loop stops after 15 iterations


@functools.cache
def system_prompt() -> str:
    """AgentDojo's default system message, as its pipelines send it."""
    text = (resources.files("agentdojo") / "data" / "system_messages.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)["default"]


def _suite(name: str, version: str) -> Any:
    suites = get_suites(version)
    if not suites:
        raise UsageError(f"agentdojo has no benchmark version {version!r}")
    if name not in suites:
        raise UsageError(f"unknown AgentDojo suite {name!r}; available: {', '.join(sorted(suites))}")
    return get_suite(version, name)


def _as_call(call: FunctionCall) -> tuple[str, dict[str, Any]]:
    if any(isinstance(v, FunctionCall) for v in call.args.values()):
        raise ValueError(f"the reference call {call.function} nests another call, which a model cannot make")
    return call.function, dict(call.args)


class DojoEpisode:
    """One AgentDojo user task on a fresh environment: the suite's tools bound to it, and the task's grader."""

    def __init__(self, suite: Any, task: Any) -> None:
        self.suite, self.task = suite, task
        environment = suite.load_and_inject_default_environment({})
        self.env = task.init_environment(environment)
        self.pre_env = self.env.model_copy(deep=True)
        self.runtime = FunctionsRuntime(suite.tools)
        self.tools = [self._tool(f) for f in suite.tools]

    def _tool(self, function: Any) -> Tool:
        def run(**arguments: Any) -> str:
            result, _ = self.runtime.run_function(self.env, function.name, arguments, raise_on_error=True)
            return tool_result_to_str(result)

        schema = function.parameters.model_json_schema()
        schema.pop("title", None)
        schema.setdefault("properties", {})
        return Tool(
            name=function.name,
            description=function.description,
            fn=run,
            args_model=function.parameters,
            sequential=True,  # every tool reads or writes the one environment
            max_output_chars=60_000,
            _schema=schema,
        )

    def offered(self, turn: int) -> list[str]:
        return [t.name for t in self.tools]

    def begin_turn(self, turn: int) -> None:
        return None

    def reference(self) -> list[list[ToolCall]]:
        calls = [_as_call(c) for c in self.task.ground_truth(self.pre_env.model_copy(deep=True))]
        return [[reference_call(f"ref_1_{k + 1}", n, a) for k, (n, a) in enumerate(calls)]]

    def reference_answer(self, turn: int) -> str:
        return self.task.GROUND_TRUTH_OUTPUT or "Done."

    def grade(self, run: Run) -> str | None:
        output = next((m.content for m in reversed(run.messages) if isinstance(m, AssistantMessage)), "") or ""
        traces = [
            FunctionCall(function=c.name, args=dict(c.arguments), id=c.id)
            for m in run.messages
            if isinstance(m, AssistantMessage)
            for c in m.tool_calls
            if c.name != FINAL_ANSWER_TOOL and not c.arguments_invalid
        ]
        try:
            passed = self.task.utility_from_traces(output, self.pre_env, self.env, traces)
            if passed is None:
                passed = self.task.utility(output, self.pre_env, self.env)
        except Exception as exc:  # noqa: BLE001 - a grader that raises on this run's output fails it, in one line
            return f"the task's utility check raised {type(exc).__name__}: {exc}"
        return None if passed else f"utility: {type(self.task).__name__} is not done (AgentDojo's own check)"


def episode(ref: BenchmarkRef) -> DojoEpisode:
    """A fresh episode of the AgentDojo task the test names."""
    suite = _suite(ref.category or "", ref.version or VERSION)
    task = suite.user_tasks.get(ref.task_id)
    if task is None:
        raise UsageError(f"AgentDojo suite {suite.name} has no user task {ref.task_id!r}")
    return DojoEpisode(suite, task)


def to_test(suite: Any, task_id: str, version: str, max_steps: int | None = None) -> PinnedTest:
    """The task as a test file: its prompt, the suite's tools' names, the task's utility as the expectation.

    Its step budget is AgentDojo's, or more where the reference makes more calls; `max_steps` sets it.
    """
    built = DojoEpisode(suite, suite.user_tasks[task_id])
    calls = built.reference()[0]  # a reference that cannot be played is a reason to list the task, not import it
    return PinnedTest(
        name=f"agentdojo {suite.name} {task_id}",
        prompt=built.task.PROMPT,
        system_prompt=system_prompt(),
        tools=[t.name for t in built.tools],
        max_steps=max_steps or max(MAX_STEPS, len(calls) + 1),
        benchmark=BenchmarkRef(name="agentdojo", task_id=task_id, category=suite.name, version=version),
        expect=Expectations(benchmark=True),
    )


def import_tasks(
    suite_name: str,
    ids: list[str] | None = None,
    limit: int | None = None,
    max_steps: int | None = None,
    version: str = VERSION,
) -> tuple[list[PinnedTest], list[Skipped]]:
    """The suite's user tasks (those named, or the first `limit`) as tests, and those that could not be, with why."""
    suite = _suite(suite_name, version)
    known = list(suite.user_tasks)
    if ids:
        missing = [i for i in ids if i not in suite.user_tasks]
        if missing:
            raise UsageError(f"AgentDojo suite {suite_name} has no user task {missing[0]!r}")
        chosen = ids
    else:
        chosen = sorted(known, key=lambda i: int(i.rsplit("_", 1)[-1]) if i.rsplit("_", 1)[-1].isdigit() else 0)
        chosen = chosen[:limit]
    tests, skipped = [], []
    for task_id in chosen:
        try:
            tests.append(to_test(suite, task_id, version, max_steps))
        except Exception as exc:  # noqa: BLE001 - a task the package cannot build offline is listed, not dropped
            skipped.append(Skipped(task_id, f"{type(exc).__name__}: {exc}"))
    return tests, skipped
