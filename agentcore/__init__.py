"""agentcore: the ReAct agent loop, typed, steppable and measurable."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _installed_version

try:  # the one version string: pyproject.toml's, as installed; every part that says a version reads this
    __version__ = _installed_version("agentcore")
except PackageNotFoundError:  # a source tree never installed
    __version__ = "0+unknown"

from .errors import AgentcoreError, MessageListError, ProviderError, TranscriptError, UsageError
from .hooks import Answer, Pause, Refuse, Stop
from .hooks.protocol import HookEffect
from .hooks.specs import MockRule, parse_breakpoint
from .loop import Agent, Event, ToolDecision, resolve_schema
from .messages import (
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserAuthor,
    UserMessage,
    Violation,
    pending_tool_calls,
    validate_messages,
)
from .providers import create_provider, default_provider
from .providers.base import ModelRequest, ModelResponse, Provider, Settings, WireExchange
from .providers.scripted import SCENARIOS, ScriptedProvider
from .run import ForkOrigin, ImportOrigin, Run, RunConfig, SubagentLink
from .steps import Conversation, Halt, StepRecord, ToolRun, UserSpec
from .tools import Tool, ToolOutcome, ToolSpec, tool

__all__ = [
    "SCENARIOS",
    "Agent",
    "AgentcoreError",
    "Answer",
    "AssistantMessage",
    "Conversation",
    "Event",
    "ForkOrigin",
    "Halt",
    "HookEffect",
    "ImportOrigin",
    "Message",
    "MessageListError",
    "MockRule",
    "ModelRequest",
    "ModelResponse",
    "Pause",
    "Provider",
    "ProviderError",
    "ReasoningPart",
    "Refuse",
    "Run",
    "RunConfig",
    "ScriptedProvider",
    "Settings",
    "StepRecord",
    "Stop",
    "SubagentLink",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolDecision",
    "ToolMessage",
    "ToolOutcome",
    "ToolRun",
    "ToolSpec",
    "TranscriptError",
    "Usage",
    "UsageError",
    "UserAuthor",
    "UserMessage",
    "UserSpec",
    "Violation",
    "WireExchange",
    "create_provider",
    "default_provider",
    "parse_breakpoint",
    "pending_tool_calls",
    "resolve_schema",
    "tool",
    "validate_messages",
]
