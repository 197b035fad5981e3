"""The hook chain: the loop's one extension point, and the built-in hooks that run on it.

- `protocol`: what a hook is, what it may give back (a changed value, `Pause`, `Stop`, `Refuse`, `Answer`), how a
  point's hooks run (`run_hooks`) and what each change is recorded as (`HookEffect`);
- `chain`: the one function that builds each point's chain for a run, in one written order;
- the built-ins: `breakpoints` (and their specs and mock rules' in `specs`), `context_policies`, `guard` (the loop
  guard), `mocks`;
- `examples`: hooks by name for the sidebar, `agentcore run --hook NAME` and RunConfig.hooks (`redact`, `guardrail`).

Only the protocol is imported here: the built-ins read the run (agentcore.run), which itself reads the protocol.
"""

from .protocol import *  # noqa: F403 - the package's names are the protocol's
from .protocol import __all__ as __all__
