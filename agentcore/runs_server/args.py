"""The runs server's tool arguments as a client reads them in `tools/list`, and a refused argument as one line.

The SDK builds each tool's input schema from its signature: an argument annotated here carries its description,
its bounds (`minimum`/`maximum`, `minItems`/`maxItems`, `maxLength`) and, where its value is one of a set, its
`enum`, so a client (or the model behind it) can form a valid call before making one. The SDK checks a call's
arguments against the same model before the tool runs; `RunsServer` turns what it refuses into one line that
names the argument, where the SDK would send pydantic's report, several lines with a link to its documentation.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ..annotations import LABELS, MAX_ID_CHARS, MAX_NOTE_CHARS, Label
from ..compare import MAX_COLUMNS, MIN_COLUMNS
from ..messages import MAX_COUNT
from ..testing.runner import MAX_TRIALS

MAX_LIST = 200  # runs list_runs returns
MAX_MOCKS = 1000  # mock rules fork_run takes
MAX_TEXT = 1000  # a filter's text, a path, a name
LABEL_NAMES = "wrong tool, wrong arguments, ignored the result, stopped too early, looped, hallucinated a fact, good"

RunId = Annotated[
    str, Field(min_length=1, max_length=MAX_ID_CHARS, description="The run's id, as list_runs or get_run gives it.")
]
Step = Annotated[int, Field(ge=1, le=MAX_COUNT, description="A step of the run, numbered from 1.")]


def _filter(what: str) -> Any:
    """A filter's type: text of at most MAX_TEXT characters, with what it keeps; empty keeps every run."""
    return Annotated[str, Field(max_length=MAX_TEXT, description=f"{what}; empty: every run.")]


Text = _filter("Text the run's id, title, models or first prompt contain")
Provider = _filter("The provider that answered the run: openai, anthropic, ollama, scripted, …")
Model = _filter("Text a model that answered the run has in its name")
Owner = _filter("The user who owns the run")
StepLabel = Annotated[
    Literal[("", *LABELS)],  # type: ignore[valid-type]  # the taxonomy's labels, and empty for no filter
    Field(description="A label on one of the run's steps; empty: every run."),
]
Limit = Annotated[int, Field(ge=1, le=MAX_LIST, description=f"How many runs to return, 1 to {MAX_LIST}.")]
ShownStep = Annotated[
    int | None,
    Field(ge=1, le=MAX_COUNT, description="A step (from 1) to show the messages of; omitted: the newest messages."),
]
EditedMessages = Annotated[
    list[dict[str, Any]] | None,
    Field(
        description="The whole edited message list (role, content, tool_calls, tool_call_id); omitted: the run's "
        "messages before `step`, unchanged."
    ),
]
Mocks = Annotated[
    list[dict[str, Any]] | None,
    Field(
        max_length=MAX_MOCKS,
        description='Tool results fixed in the fork, each {"tool": NAME, "when": ["$.city=Paris"], "result": TEXT} '
        f'or with "error": TEXT; at most {MAX_MOCKS:,}.',
    ),
]
Phase = Annotated[
    Literal["step", "model", "tools"],
    Field(description="step: the model call and the tools it asked for; model or tools: that phase alone."),
]
Configurations = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]],
    Field(
        min_length=MIN_COLUMNS,
        max_length=MAX_COLUMNS,
        description=f"{MIN_COLUMNS} to {MAX_COLUMNS} configurations, each PROVIDER[:MODEL][@BASE_URL] (for scripted "
        "the model is the scenario; a base URL only one this server calls).",
    ),
]
Steps = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_COUNT,
        description="Model calls each configuration makes (1 asks the step again); omitted: to the end of the "
        "run's budget. Within this server's model calls for one call.",
    ),
]
Labels = Annotated[
    list[Label],
    Field(
        min_length=1,
        max_length=len(LABELS),
        description=f"One or more of the error analysis's labels: {LABEL_NAMES} ('good' stands alone).",
    ),
]
Note = Annotated[str, Field(max_length=MAX_NOTE_CHARS, description="Why, in a person's words; may be empty.")]
ToolCallId = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="One tool call of the step's reply to label, by its id; omitted: the whole step.",
    ),
]
GroupBy = Annotated[
    Literal["provider", "model", "day", "owner", "label", "tag"], Field(description="What one row of figures is.")
]
Since = Annotated[
    str | None,
    Field(
        pattern=r"^\d{4}-\d{2}-\d{2}$",
        description="A day, YYYY-MM-DD: only runs created on or after it; omitted: every run.",
    ),
]
Scanners = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]] | None,
    Field(
        max_length=50,
        description="Built-in scanners by name (loop, ignored_error, unknown_tool, step_budget, context, "
        "unread_results, key_in_reply) or regex:PATTERN over replies; omitted: every built-in.",
    ),
]
Again = Annotated[bool, Field(description="Read every run anew, even one scanned already as it stands.")]
TestPath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="A path under the server's working folder: a test file (.json, .yaml) or a folder of them.",
    ),
]
TestName = Annotated[
    str | None, Field(max_length=MAX_TEXT, description="The test's name; omitted: one made from the run's prompt.")
]
TestConfigurations = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]] | None,
    Field(
        min_length=1,
        max_length=MAX_COLUMNS,
        description=f"1 to {MAX_COLUMNS} configurations, each PROVIDER[:MODEL][@BASE_URL] or replay; omitted: replay.",
    ),
]
Trials = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_TRIALS,
        description=f"Runs of each test on each configuration, 1 to {MAX_TRIALS:,}; within this server's runs "
        "for one call.",
    ),
]

BlameExpect = Annotated[
    str | None,
    Field(min_length=1, max_length=MAX_TEXT, description="A text each continuation's answer must hold; or `test`."),
]
BlameTest = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="A test file under the server's working folder whose expectations grade each continuation; "
        "or `expect`.",
    ),
]
BlameConfiguration = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="PROVIDER[:MODEL][@BASE_URL] the forks go on with (for scripted the model is the scenario; a "
        "base URL only one this server calls); omitted: the run's own.",
    ),
]
BlameTrials = Annotated[
    int, Field(ge=1, le=MAX_TRIALS, description="Continuations of each fork, within this server's model calls.")
]
BlameSteps = Annotated[
    list[Annotated[int, Field(ge=1, le=MAX_COUNT)]] | None,
    Field(min_length=1, max_length=100, description="Fork before these steps only; omitted: before every step."),
]
Bisect = Annotated[
    bool, Field(description="Choose the forks by bisection: about log2(steps) of them, if the rate falls once.")
]


def runs_server_class() -> type:
    """The SDK's MCPServer, with a call's refused arguments said as one line naming the first one refused."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    from ..transcript import describe_validation

    class RunsServer(MCPServer):
        """MCPServer whose refused arguments read `Error executing tool NAME: ARGUMENT: why`."""

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError:
                raise
            except ToolError as exc:
                cause = exc.__cause__
                if not isinstance(cause, ValidationError):  # the tool's own error, one line already
                    raise
                said = " ".join(describe_validation(cause).split())[:500]
                raise ToolError(f"Error executing tool {name}: {said}") from cause

    return RunsServer
