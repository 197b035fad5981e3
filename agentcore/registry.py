"""One way to name an extension: providers, hooks and scanners are each a Registry of names, looked up alike.

A name is one the registry holds (a built-in, or one registered since), or, where the caller is the operator of
this process (the command line, a program that imports agentcore), `module:attribute`: the module is found by
`importlib` among the installed packages and the interpreter's own path, never by editing `sys.path`, and never by a
file path. Code is never loaded from a name that a file (a test file, a transcript, an imported session), a stored
run, a page or a remote client (an MCP client) gives: those name registered entries or are refused in one line.
An operator's `module:attribute`, once loaded, is registered under that name, so a run that names it goes on
finding it in the same process, and nowhere else.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from .errors import UsageError

T = TypeVar("T")
_DOTTED = re.compile(r"[A-Za-z_]\w{0,99}(?:\.[A-Za-z_]\w{0,99}){0,19}")


def load_attribute(target: str, kind: str = "extension") -> Any:
    """`package.module:attribute` as an installed module's attribute; a one-line UsageError for anything else
    (a file path, a relative module, a module that is not installed, a missing attribute)."""
    module_name, colon, attribute = target.partition(":")
    if not colon or not _DOTTED.fullmatch(module_name) or not _DOTTED.fullmatch(attribute):
        raise UsageError(
            f"{kind} {target[:120]!r}: a name, or module:attribute of an installed module (a dotted name, no path)"
        )
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise UsageError(f"{kind} {target[:120]!r}: no installed module {module_name!r}")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"{kind} {target[:120]!r}: cannot load it: {' '.join(str(exc).split())[:200]}") from None
    return value


class Registry(Mapping[str, T]):
    """The entries of one kind of extension by name; `resolve` is the one lookup every front end uses."""

    def __init__(self, kind: str, entries: Mapping[str, T], adapt: Callable[[str, Any], T] | None = None) -> None:
        self.kind = kind
        self._entries = dict(entries)
        # the names it was made with: "every built-in" means these, never the module:attribute names loaded since
        self.built_in: tuple[str, ...] = tuple(self._entries)
        self._adapt = adapt  # what a loaded attribute becomes (None: this kind takes no code)

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def register(self, name: str, entry: T) -> T:
        """Hold `entry` under `name` from now on, in this process."""
        self._entries[name] = entry
        return entry

    def resolve(self, name: str, *, code: bool = False) -> T:
        """The entry named; with `code` (the operator's own words only), `module:attribute` loaded and registered."""
        if name in self._entries:
            return self._entries[name]
        if ":" in name and self._adapt is not None:
            if not code:
                raise UsageError(
                    f"{self.kind} {name[:120]!r}: code is loaded only when whoever runs agentcore names it; "
                    f"here the {self.kind}s are: {', '.join(self._entries)}"
                )
            return self.register(name, self._adapt(name, load_attribute(name, self.kind)))
        raise UsageError(f"unknown {self.kind} {name[:80]!r}; the {self.kind}s are: {', '.join(self._entries)}")

    def check(self, names: Iterable[str], *, code: bool = False) -> None:
        """Resolve each name (a one-line UsageError for the first that cannot be)."""
        for name in names:
            self.resolve(name, code=code)
