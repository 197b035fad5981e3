"""Example hooks (see agentcore.hooks.protocol), by name for the app's sidebar, `agentcore run --hook NAME` and RunConfig.hooks.

- `guardrail` (before tools): refuses a call whose arguments match a rule; the model reads the refusal as the
  call's error result. By default: an e-mail address or a card-like number in any argument (personal data does not
  leave through a tool), and a file path that climbs out of its folder or starts at the root.
- `redact` (before the model): masks e-mail addresses and card-like numbers in what is sent. The run's own
  messages keep the original; the step records that the hook changed the request.

Every pattern here is bounded and has no nested repetition, so a hostile text of any length is scanned in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..messages import Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from ..providers.base import ModelRequest
from ..registry import Registry
from ..run import Run
from .protocol import CallItem, HookPoint, Refuse

__all__ = [
    "DEFAULT_RULES",
    "HOOKS",
    "Guardrail",
    "NamedHook",
    "Rule",
    "card_numbers",
    "check_hook_names",
    "named_hooks",
    "mask",
    "redact",
]

# a local part, an @, and a domain of 2 to 9 labels; no class overlaps the character after it, so no backtracking
EMAIL = re.compile(r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,8}")
# 13 to 19 digits, single spaces or dashes between them allowed; a digit must follow each separator
CARD = re.compile(r"(?<![\d])\d(?:[ \-]?\d){12,18}(?![\d])")
EMAIL_MASK = "[email]"
CARD_MASK = "[card number]"


def _luhn(digits: str) -> bool:
    total = 0
    for k, ch in enumerate(reversed(digits)):
        d = int(ch)
        if k % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def card_numbers(text: str) -> Iterator[re.Match[str]]:
    """The card-like numbers in `text`: 13 to 19 digits, spaced or not, that pass the Luhn check."""
    for match in CARD.finditer(text):
        if _luhn(re.sub(r"[ \-]", "", match.group())):
            yield match


def mask(text: str) -> str:
    """`text` with each e-mail address and card-like number masked."""
    text = EMAIL.sub(EMAIL_MASK, text)
    if not any(ch.isdigit() for ch in text):
        return text
    pieces, at = [], 0
    for match in card_numbers(text):  # one pass, pieces joined once: linear in the text, however many numbers
        pieces += [text[at : match.start()], CARD_MASK]
        at = match.end()
    return "".join([*pieces, text[at:]]) if pieces else text


def _mask_value(value: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: _mask_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_value(v) for v in value]
    return value


def _masked(m: Message) -> Message:
    if isinstance(m, SystemMessage | UserMessage | ToolMessage):
        content = mask(m.content)
        return m if content == m.content else m.model_copy(update={"content": content})
    if m.reasoning:  # a turn with thinking goes back as it was written: its signature covers the text
        return m
    content = mask(m.content) if m.content else m.content
    calls = tuple(
        c.model_copy(update={"arguments": _mask_value(c.arguments)}) if _mask_value(c.arguments) != c.arguments else c
        for c in m.tool_calls
    )
    if content == m.content and all(a is b for a, b in zip(calls, m.tool_calls, strict=True)):
        return m
    return m.model_copy(update={"content": content, "tool_calls": calls})


def redact(run: Run, request: ModelRequest) -> ModelRequest:
    """Before the model: mask e-mail addresses and card-like numbers in what is sent (the run keeps the original)."""
    messages = tuple(map(_masked, request.messages))
    if all(a is b for a, b in zip(messages, request.messages, strict=True)):
        return request
    return request.model_copy(update={"messages": messages})


@dataclass(frozen=True)
class Rule:
    """Refuse a call to `tool` (any, when None) whose `argument` (any, when None) matches `test`, saying `why`."""

    why: str
    test: Callable[[str], bool]
    tool: str | None = None
    argument: str | None = None


def _has_personal_data(text: str) -> bool:
    return EMAIL.search(text) is not None or next(card_numbers(text), None) is not None


def _climbs_out(path: str) -> bool:
    return path.startswith(("/", "\\")) or ".." in re.split(r"[/\\]", path)


DEFAULT_RULES = (
    Rule(
        "an argument holds an e-mail address or a card number; personal data does not leave through a tool",
        _has_personal_data,
    ),
    Rule("the path climbs out of the sandbox folder or starts at the root", _climbs_out, "read_file", "path"),
)


def _leaves(value: Any, key: str | None = None) -> Iterator[tuple[str | None, str]]:
    """Each string in an argument's value, with the top-level argument's name; numbers are read as text."""
    todo = [(key, value)]
    while todo:
        name, item = todo.pop()
        if isinstance(item, dict):
            todo.extend((name, v) for v in item.values())
        elif isinstance(item, list):
            todo.extend((name, v) for v in item)
        elif isinstance(item, str | int | float) and not isinstance(item, bool):
            yield name, str(item)


@dataclass
class Guardrail:
    """Before tools: refuse each call whose arguments match one of `rules`; the model reads why as an error."""

    rules: tuple[Rule, ...] = DEFAULT_RULES
    name: str = "guardrail"

    def breach(self, call: ToolCall) -> str | None:
        """Why `call` is refused, or None when no rule matches it."""
        if call.arguments_invalid:
            leaves = [(None, call.raw_arguments or "")]
        else:
            leaves = [leaf for key, value in call.arguments.items() for leaf in _leaves(value, key)]
        for rule in self.rules:
            if rule.tool is not None and rule.tool != call.name:
                continue
            for key, text in leaves:
                if (rule.argument is None or rule.argument == key) and rule.test(text):
                    return rule.why
        return None

    def __call__(self, run: Run, calls: list[ToolCall]) -> list[CallItem]:
        items: list[CallItem] = []
        for call in calls:
            why = self.breach(call)
            items.append(call if why is None else Refuse(call, why))
        return items if any(isinstance(i, Refuse) for i in items) else calls


@dataclass(frozen=True)
class NamedHook:
    """A registered hook: where it runs, the hook, and what it does in one line."""

    point: HookPoint
    hook: Callable[..., Any]
    description: str


def _hook_of(target: str, found: Any) -> NamedHook:
    """A user's hook, `module:attribute`: a NamedHook, which says where it runs."""
    if not isinstance(found, NamedHook):
        raise UsageError(f"hook {target[:120]!r}: not a NamedHook (agentcore.hooks.examples.NamedHook: point, hook)")
    return found


# the hooks by name: the examples, and (named by whoever runs agentcore) a user's module:attribute
HOOKS: Registry[NamedHook] = Registry(
    "hook",
    {
        "guardrail": NamedHook(
            "before_tools",
            Guardrail(),
            "Refuses a tool call whose arguments hold an e-mail address or a card number, or a path out of the sandbox.",
        ),
        "redact": NamedHook(
            "before_model",
            redact,
            "Masks e-mail addresses and card numbers in what is sent to the model; the run keeps the original.",
        ),
    },
    _hook_of,
)


def check_hook_names(names: list[str], *, code: bool = False) -> None:
    """Raise a one-line UsageError for the first name that is not a registered hook (with `code`, whoever runs
    agentcore may name a `module:attribute`, loaded and registered: agentcore.registry)."""
    HOOKS.check(names, code=code)


def named_hooks(names: list[str], point: HookPoint) -> list[Any]:
    """The registered hooks of `names` that run at `point`, in the order named, each once."""
    if not names:
        return []  # most runs name none, and each step asks three times
    check_hook_names(names)
    return [HOOKS[name].hook for name in dict.fromkeys(names) if HOOKS[name].point == point]
