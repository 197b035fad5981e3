"""YAML test files read and written through PyYAML's C library (libyaml) when it is built in.

A YAML file is parsed once: libyaml's events feed PyYAML's own composer, which this module can
watch, so an alias (which multiplies data) or nesting past MAX_DEPTH is refused before the node
it would build. The data then goes through `read_json`, so a YAML file is held to what a JSON
file is. Building Python objects from YAML events is still several times slower than reading
JSON (a 16 MB test: 2.3 s and 190 MB against 0.3 s), so a YAML file has its own, lower size cap.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import Node
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from ..errors import TranscriptError
from ..messages import MAX_DEPTH
from ..transcript import read_json

MAX_YAML_BYTES = 16 * 2**20  # a JSON file may be 64 MB (transcript.MAX_FILE_BYTES)
# the most values (scalars, lists, mappings) a YAML file may hold, counted as the parser meets them, before any is
# built: Python composes some tens of thousands of nodes a second, so a file of small flow mappings under the byte cap is
# refused in seconds, not minutes; a pinned test's size is in its texts, far under it
MAX_YAML_NODES = 100_000
C_LIBRARY = bool(getattr(yaml, "__with_libyaml__", False))  # False: PyYAML built without libyaml, slower

# an escaped lone surrogate (undecodable bytes of a prompt, as PyYAML writes them): libyaml refuses it
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")


class PythonEventParser(Reader, Scanner, Parser):
    """YAML text to events, in Python: for what libyaml cannot read, or where PyYAML was built without it."""

    def __init__(self, stream: Any) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


if C_LIBRARY:
    from yaml.cyaml import CParser as EventParser  # YAML text to events, in C
else:  # pragma: no cover - PyYAML's wheels ship libyaml
    EventParser = PythonEventParser


class _Events:
    """The parser's events, each checked once as the composer takes it."""

    def __init__(self, raw: str | bytes, max_nodes: int) -> None:
        text = raw if isinstance(raw, str) else raw.decode("latin-1")  # only to look for the escape
        self.parser = PythonEventParser(raw) if _SURROGATE_ESCAPE.search(text) else EventParser(raw)
        self.depth = 0
        self.nodes = 0
        self.max_nodes = max_nodes

    def take(self) -> yaml.Event:
        event = self.parser.get_event()
        if isinstance(event, yaml.AliasEvent):
            raise TranscriptError("YAML aliases are not read in test files")
        if isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent):
            self.nodes += 1
            if self.nodes > self.max_nodes:
                raise TranscriptError(f"more than {self.max_nodes:,} values: not read")
        if isinstance(event, yaml.CollectionStartEvent):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise TranscriptError(f"nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            self.depth -= 1
        return event


class _Loader(Composer, SafeConstructor, Resolver):
    """PyYAML's safe loader over checked events; a value Python cannot build is a YAML error at its line."""

    def __init__(self, raw: str | bytes, max_nodes: int = MAX_YAML_NODES) -> None:
        self.events = _Events(raw, max_nodes)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)

    def check_event(self, *choices: type) -> bool:
        return self.events.parser.check_event(*choices)

    def peek_event(self) -> yaml.Event:
        return self.events.parser.peek_event()

    def get_event(self) -> yaml.Event:
        return self.events.take()

    def dispose(self) -> None:
        self.events.parser.dispose()

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except ValueError as exc:  # an integer past Python's digit limit; a 30th of February
            raise ConstructorError(None, None, str(exc).split(";")[0], node.start_mark) from None


# a date stays the text it was written as: JSON has no dates, and an impossible one is not an error here
_Loader.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_scalar)


def read_yaml(raw: str | bytes, max_nodes: int = MAX_YAML_NODES) -> Any:
    """Data from YAML text within MAX_YAML_BYTES, `max_nodes` values, MAX_DEPTH and no aliases; every refusal is a
    TranscriptError, made before the values past the limit are built."""
    if len(raw) > MAX_YAML_BYTES:
        raise TranscriptError(
            f"larger than {MAX_YAML_BYTES // 2**20} MB, the most a YAML test file may be (a JSON one may be larger)"
        )
    try:
        loader = _Loader(raw, max_nodes)  # libyaml reads the encoding mark here
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise TranscriptError(f"not YAML: {' '.join(str(exc).split())}") from None
    try:
        text = json.dumps(data, default=str)  # binary data and sets become text, as JSON has no such types
    except (TypeError, ValueError) as exc:  # a key JSON cannot have; a number too long to write
        raise TranscriptError(f"not test data: {str(exc).split(';')[0]}") from None
    return read_json(text)


def write_yaml(data: Any) -> str:
    """Plain data as YAML text; over MAX_YAML_BYTES it is a TranscriptError, as it could not be read back."""
    try:
        text = yaml.dump(
            data, Dumper=yaml.CSafeDumper if C_LIBRARY else yaml.SafeDumper, sort_keys=False, allow_unicode=True
        )
    except UnicodeEncodeError:  # a lone surrogate, which libyaml cannot write and PyYAML's own writer escapes
        text = yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise TranscriptError(
            f"over {MAX_YAML_BYTES // 2**20} MB as YAML, the most a YAML test file may be; write it as JSON"
        )
    return text
