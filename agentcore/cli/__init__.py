"""The `agentcore` command: argument parsing (main), the smaller commands, pinned-test commands, terminal output."""

from .main import main

__all__ = ["main"]
