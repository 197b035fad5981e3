"""Untrusted JSON Schemas and regular expressions: checked before use, applied within bounds.

agentcore applies schemas it did not write: an MCP server's tool inputSchema, a pinned test's argument and
answer schemas, `--final-schema`, and the final-answer schema of an imported or replayed run. Left to itself,
jsonschema follows a `$ref` anywhere (it fetches http:// URIs and reads file:// ones, whose content then shows
in the error text a model reads), a loop of references ends in a RecursionError, and `pattern` runs in Python's
`re`, which holds the GIL with no time limit, so one catastrophic pattern stalls every session of the process.

Here a schema is first checked (`check_schema`): its size and nesting are bounded, it must fill its dialect's
meta-schema, each `$ref` must lead somewhere inside the schema itself, references must not loop back without
going into the value, and each pattern must compile within bounds. Then a value is checked against it
(`schema_errors`) with a registry that retrieves nothing, `pattern` and `patternProperties` applied through
the `regex` package (which releases the GIL while it matches) with a time limit, and the whole check bounded
in time. `search` applies one untrusted pattern with the same limits, for a pinned test's regex matchers.
Whatever cannot be applied is a SchemaError (a PatternError for a pattern): one line that says why.
"""

from __future__ import annotations

import contextvars
import functools
import json
import re
import threading
import time
from collections import OrderedDict
from typing import Any

import jsonschema
import jsonschema_specifications
import referencing
import referencing.exceptions
import referencing.jsonschema
import regex
from pydantic import BaseModel

from .errors import AgentcoreError, UsageError
from .messages import MAX_ARGUMENT_DEPTH, nesting

__all__ = [
    "MAX_PATTERN_INPUT_CHARS",
    "MAX_PATTERN_WEIGHT",
    "MAX_SCHEMA_CHARS",
    "MAX_SCHEMA_DEPTH",
    "PATTERN_TIMEOUT_S",
    "VALIDATION_TIMEOUT_S",
    "PatternError",
    "SchemaError",
    "check_schema",
    "compile_pattern",
    "schema_errors",
    "search",
]

MAX_SCHEMA_DEPTH = MAX_ARGUMENT_DEPTH  # as a tool's parameters: a request carries the schema a few levels down
MAX_SCHEMA_CHARS = 256_000  # as JSON text
PATTERN_TIMEOUT_S = 1.0
VALIDATION_TIMEOUT_S = 2.0
# what a pattern expands to when compiled: `regex` spells a counted repeat out, so `(?:a{65535}){65535}` alone
# takes minutes and gigabytes to compile; about 150 bytes a unit once compiled
MAX_PATTERN_WEIGHT = 10_000
# a catastrophic pattern's memory grows with the text it runs on (about 120 bytes a character within its time)
MAX_PATTERN_INPUT_CHARS = 100_000


class SchemaError(AgentcoreError):
    """A JSON Schema that cannot be applied safely; the message says why, in one line."""


class PatternError(SchemaError):
    """A regular expression that is not valid, too large, or ran past its time limit on a text."""


def _shown(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


# -- patterns ------------------------------------------------------------------------------

_COUNT = re.compile(r"\{(\d*)(?:,(\d*))?\}")  # a counted repeat: {n}, {n,}, {n,m}, {,m}
_BRACED_ESCAPE = frozenset("pPxNuUgk")  # \p{L}, \x{41}, \N{name}...: their braces are not a repeat


def _weight(pattern: str) -> int:
    """About how many units the pattern compiles to: each character one, a counted repeat times its count."""
    groups = [0]  # the weight so far of each open group, innermost last
    total = 0  # of all of them
    last = 0  # the weight of the item just read, which a repeat after it multiplies
    i, n = 0, len(pattern)
    while i < n and total <= MAX_PATTERN_WEIGHT:
        c = pattern[i]
        if c == "(":
            groups.append(0)
            i += 1
            continue
        if c == ")" and len(groups) > 1:
            inner = groups.pop()
            last = max(inner, 1)
            groups[-1] += last
            total += last - inner
            i += 1
            continue
        if c == "{" and (m := _COUNT.match(pattern, i)) and (m.group(1) or m.group(2)):
            times = max(int(d) if len(d) <= 9 else 10**9 for d in (m.group(1) or "0", m.group(2) or "0"))
            added = last * (max(times, 1) - 1)
            groups[-1] += added
            total += added
            last += added
            i = m.end()
            continue
        if c == "\\":
            j = i + 2
            if pattern[i + 1 : i + 2] in _BRACED_ESCAPE and pattern[j : j + 1] == "{":
                j = pattern.find("}", j) + 1 or n
        elif c == "[":
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            j += pattern[j : j + 1] == "]"  # a ']' first in a set is the character itself
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            j += 1
        else:
            j = i + 1
        last = 1
        groups[-1] += 1
        total += 1
        i = j
    return total


@functools.lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> regex.Pattern:
    """The compiled pattern (Python's syntax, through `regex`); a PatternError when it is too large or not valid."""
    if _weight(pattern) > MAX_PATTERN_WEIGHT:
        raise PatternError(
            f"pattern {_shown(pattern)} is too large: its counted repeats spell out more than "
            f"{MAX_PATTERN_WEIGHT} items"
        )
    try:
        return regex.compile(pattern, cache_pattern=False)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise PatternError(f"pattern {_shown(pattern)} is not a valid regular expression: {exc}") from None


_SLOW: OrderedDict[tuple[str, str], None] = OrderedDict()  # (pattern, text) pairs that ran past the limit
_SLOW_LOCK = threading.Lock()
_SLOW_KEEP = 32


def _too_slow(pattern: str, text: str) -> PatternError:
    return PatternError(
        f"pattern {_shown(pattern)} took longer than {PATTERN_TIMEOUT_S:g} s on a text of {len(text)} characters"
    )


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text`, within PATTERN_TIMEOUT_S; a PatternError when it cannot tell.

    A pair that ran out of time once fails at once after that: a pinned test tries one call against
    its expectations many times over.
    """
    compiled = compile_pattern(pattern)
    if len(text) > MAX_PATTERN_INPUT_CHARS:
        raise PatternError(
            f"pattern {_shown(pattern)} was not applied to a text of {len(text)} characters "
            f"(at most {MAX_PATTERN_INPUT_CHARS})"
        )
    key = (pattern, text)
    with _SLOW_LOCK:
        if key in _SLOW:
            raise _too_slow(pattern, text)
    try:
        return compiled.search(text, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        with _SLOW_LOCK:
            _SLOW[key] = None
            while len(_SLOW) > _SLOW_KEEP:
                _SLOW.popitem(last=False)
        raise _too_slow(pattern, text) from None


# -- checking a schema ---------------------------------------------------------------------

_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")


def _refuse(uri: str) -> referencing.Resource:
    raise referencing.exceptions.NoSuchResource(ref=uri)


_NOTHING_REMOTE: referencing.Registry = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
# as jsonschema itself resolves: the meta-schemas it ships, and nothing else
_WITH_META_SCHEMAS = _NOTHING_REMOTE.combine(jsonschema_specifications.REGISTRY)


def _validator_class(schema: Any) -> type[jsonschema.protocols.Validator]:
    if isinstance(schema, dict):
        return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return jsonschema.Draft202012Validator


def check_schema(schema: Any) -> None:
    """Raise a SchemaError unless `schema` is a JSON Schema that can be applied safely (see the module's text)."""
    if not isinstance(schema, dict | bool):
        raise SchemaError(f"a JSON Schema is a JSON object, not {type(schema).__name__}")
    if nesting(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        raise SchemaError(f"the JSON Schema is nested more than {MAX_SCHEMA_DEPTH} levels deep")
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"not JSON data: {exc}") from None
    if size > MAX_SCHEMA_CHARS:
        raise SchemaError(f"the JSON Schema is {size} characters long, over the limit of {MAX_SCHEMA_CHARS}")
    cls = _validator_class(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "/".join(map(str, exc.path)) or "(top level)"
        raise SchemaError(f"not a valid JSON Schema at {path}: {_cut(exc.message)}") from None
    except RecursionError:
        raise SchemaError("the JSON Schema nests too deep to be checked") from None
    _check_references(schema, cls)


def _cut(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _pointers(schema: Any) -> dict[int, str]:
    """The JSON Pointer of every object in the schema, by identity, for naming the places a check refers to."""
    found: dict[int, str] = {}
    todo = [(schema, "#")]
    while todo:
        value, where = todo.pop()
        if isinstance(value, dict):
            found[id(value)] = where
            todo.extend((v, f"{where}/{k.replace('~', '~0').replace('/', '~1')}") for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, f"{where}/{i}") for i, v in enumerate(value))
    return found


def _in_place(node: dict[str, Any]) -> list[Any]:
    """The subschemas applied to the same value as `node`, its references aside."""
    found = [s for k in _IN_PLACE_LISTS if isinstance(node.get(k), list) for s in node[k]]
    found += [node[k] for k in _IN_PLACE_ONE if k in node]
    found += [s for k in _IN_PLACE_MAPS if isinstance(node.get(k), dict) for s in node[k].values()]
    return [s for s in found if isinstance(s, dict)]


def _check_references(schema: Any, cls: type[jsonschema.protocols.Validator]) -> None:
    """Follow every reference and pattern of the schema: each must stay inside it, and none may loop in place."""
    pointers = _pointers(schema)
    spec = referencing.jsonschema.specification_with(
        cls.ID_OF(cls.META_SCHEMA) or "", default=referencing.Specification.OPAQUE
    )
    root = spec.create_resource(schema)
    todo = [(root, _WITH_META_SCHEMAS.resolver_with_root(root))]
    edges: dict[int, list[int]] = {}
    seen: set[int] = set()
    uses_pattern_properties = uses_unevaluated = False
    while todo:
        resource, resolver = todo.pop()
        node = resource.contents
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        resolver = resolver.in_subresource(resource)
        targets = []
        for key in _REFS:
            ref = node.get(key)
            if not isinstance(ref, str):
                continue
            try:
                resolved = resolver.lookup(ref)
            except referencing.exceptions.Unresolvable as exc:
                raise SchemaError(_unresolvable(key, ref, exc)) from None
            if id(resolved.contents) in pointers:  # a meta-schema agentcore ships is trusted as it is
                targets.append(resolved.contents)
                todo.append((referencing.Resource.from_contents(resolved.contents, spec), resolved.resolver))
        edges[id(node)] = [id(s) for s in [*_in_place(node), *targets]]
        if isinstance(node.get("pattern"), str):
            compile_pattern(node["pattern"])
        if isinstance(node.get("patternProperties"), dict):
            uses_pattern_properties = True
            for pattern in node["patternProperties"]:
                compile_pattern(pattern)
        uses_unevaluated = uses_unevaluated or "unevaluatedProperties" in node
        try:
            todo.extend((sub, resolver) for sub in resource.subresources())
        except (referencing.exceptions.CannotDetermineSpecification, referencing.jsonschema.UnknownDialect) as exc:
            raise SchemaError(f"at {pointers.get(id(node), '#')}: {_cut(str(exc))}") from None
    if uses_pattern_properties and uses_unevaluated:
        # jsonschema matches patternProperties with Python's `re` (no time limit) when it works out unevaluatedProperties
        raise SchemaError("patternProperties and unevaluatedProperties together are not applied to untrusted schemas")
    loop = _loop(edges)
    if loop:
        raise SchemaError(
            f"its references go round in a loop without going into the value: {' → '.join(pointers[n] for n in loop)}"
        )


def _unresolvable(key: str, ref: str, exc: referencing.exceptions.Unresolvable) -> str:
    if isinstance(exc, referencing.exceptions.PointerToNowhere | referencing.exceptions.NoSuchAnchor):
        return f"{key} {_shown(ref, 120)} points to nothing in the schema"
    return (
        f"{key} {_shown(ref, 120)} points outside the schema: only references inside it "
        "(such as '#/$defs/name') are followed"
    )


def _loop(edges: dict[int, list[int]]) -> list[int] | None:
    """A cycle in the graph, as its nodes with the first repeated at the end; None when there is none."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if start in state:
            continue
        path, stack = [start], [iter(edges[start])]
        state[start] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(child) == 1:
                return [*path[path.index(child) :], child]
            elif child not in state:
                state[child] = 1
                path.append(child)
                stack.append(iter(edges.get(child, ())))
    return None


# -- checking a value against a schema -------------------------------------------------------

_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("schema_deadline", default=float("inf"))


class _OutOfTime(Exception):
    pass


def _within_time(keyword: Any) -> Any:
    def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if time.monotonic() > _DEADLINE.get():
            raise _OutOfTime
        return keyword(validator, value, instance, schema)

    return check


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in properties and not any(search(p, k) for p in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        verb = "does" if len(extras) == 1 else "do"
        if patterns:
            joined = ", ".join(repr(each) for each in sorted(extras))
            regexes = ", ".join(repr(each) for each in sorted(patterns))
            yield jsonschema.ValidationError(f"{joined} {verb} not match any of the regexes: {regexes}")
        else:
            shown = ", ".join(repr(each) for each in sorted(extras, key=str))
            was = "was" if len(extras) == 1 else "were"
            yield jsonschema.ValidationError(f"Additional properties are not allowed ({shown} {was} unexpected)")


_OWN_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _bounded(cls: type[jsonschema.protocols.Validator]) -> type[jsonschema.protocols.Validator]:
    """`cls` with its patterns applied through `search`, and every keyword checking the time left first."""
    keywords = {k: _OWN_KEYWORDS.get(k, v) for k, v in cls.VALIDATORS.items()}
    return jsonschema.validators.extend(cls, {k: _within_time(v) for k, v in keywords.items()})


def schema_errors(schema: Any, value: Any) -> list[jsonschema.ValidationError]:
    """Every way `value` fails `schema`, in the order of their paths; a SchemaError when the schema cannot be applied.

    Nothing outside the schema is retrieved, patterns have PATTERN_TIMEOUT_S each and the whole check
    VALIDATION_TIMEOUT_S; a reference loop that `check_schema` would have refused is an error here too.
    """
    validator = _bounded(_validator_class(schema))(schema, registry=_NOTHING_REMOTE)
    token = _DEADLINE.set(time.monotonic() + VALIDATION_TIMEOUT_S)
    try:
        return sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    except RecursionError:
        raise SchemaError("its references go round in a loop, or nest deeper than can be followed") from None
    except referencing.exceptions.Unresolvable as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, referencing.exceptions.Unresolvable) else exc
        raise SchemaError(_unresolvable("$ref", str(cause.ref), cause)) from None
    except _OutOfTime:
        raise SchemaError(f"checking a value against it took longer than {VALIDATION_TIMEOUT_S:g} s") from None
    finally:
        _DEADLINE.reset(token)


def check_final_schema(schema: Any, where: str = "final_answer_schema") -> None:
    """Raise a UsageError unless `schema` is a JSON Schema object that a final answer can be checked against.

    Its references must stay inside it and not loop, and its patterns compile within bounds (see agentcore.schemas).
    """
    if not isinstance(schema, dict):
        raise UsageError(f"{where}: a JSON Schema is a JSON object, not {type(schema).__name__}")
    try:
        check_schema(schema)
    except SchemaError as exc:
        raise UsageError(f"{where}: {exc}") from None


def resolve_schema(schema: type[BaseModel] | dict[str, Any] | None) -> dict[str, Any] | None:
    """A final-answer schema given as a pydantic model or a JSON Schema dict, as JSON Schema."""
    if schema is None or isinstance(schema, dict):
        return schema
    return schema.model_json_schema()
