"""The errors agentcore raises; each prints as one clear line."""

from __future__ import annotations

from typing import Any

from .secrets import scrub, scrub_text


class AgentcoreError(Exception):
    """Base class for every error agentcore raises on purpose."""


class UsageError(AgentcoreError):
    """Bad input from the caller: an unknown tool, scenario, provider or option."""


class TranscriptError(AgentcoreError):
    """A transcript file that cannot be read: names the field and the reason."""


class MessageListError(AgentcoreError):
    """A message list a provider would reject; carries every violation found."""

    def __init__(self, violations: list) -> None:
        self.violations = list(violations)
        first = self.violations[0]
        more = f" (and {len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
        super().__init__(f"message {first.index}: {first.reason}{more}")


class ProviderError(AgentcoreError):
    """A model call that failed after retries: status, type, message and request id.

    `wire` holds what was captured of the failed exchange (a WireExchange, credentials
    removed) when there is one, and `attempts` how many requests were sent. Every known
    secret is removed from what the server sent back before it is kept here: a server may
    echo the request's key in its error body.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        type: str | None = None,
        request_id: str | None = None,
        retryable: bool = False,
        wire: Any = None,
        attempts: int = 1,
    ) -> None:
        self.message = scrub_text(message)
        self.provider = provider
        self.status = status
        self.type = scrub_text(type) if type else type
        self.request_id = scrub_text(request_id) if request_id else request_id
        self.retryable = retryable
        self.wire = scrub(wire)
        self.attempts = attempts
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """Render as `provider: 429 rate_limit_error: message (request id ...)`."""
        parts = [p for p in (self.provider, str(self.status) if self.status else "", self.type or "") if p]
        head = " ".join(parts)
        tail = f" (request id {self.request_id})" if self.request_id else ""
        return f"{head}: {self.message}{tail}" if head else f"{self.message}{tail}"
