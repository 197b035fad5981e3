"""A recording proxy between any agent and its model provider: each call a step of a live, stored run.

An agent points its base URL at the proxy (`agentcore proxy`, docs/proxy.md); the proxy speaks OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages and Ollama's /api/chat, forwards each request to the one
upstream it was started with, passes the reply back as it comes, and records the call as the next step of its
conversation's run. It can hold a request until a person sends it, edits it or answers it (agentcore.proxy.holds).

`dialects` reads requests and replies through the provider modules, `recorder` builds the runs through the
sessions' builder, `handler` serves one call, `server` holds the rest together.
"""

from .holds import DEFAULT_HOLD_LIMIT, Decision, Holds
from .server import UPSTREAMS, ProxyConfig, ProxyServer

__all__ = ["DEFAULT_HOLD_LIMIT", "UPSTREAMS", "Decision", "Holds", "ProxyConfig", "ProxyServer"]
