"""JSON Schemas that come from outside (an MCP server's tools, a tools file), checked and
used without ever fetching anything.

jsonschema's default registry retrieves any `$ref` it cannot resolve (over HTTP, or a
`file://` URL), so a schema could make the app send requests, read local files or hang.
Here every schema resolves its references inside itself, or in the JSON Schema
metaschemas that ship with jsonschema; a reference to anything else makes the schema
invalid, said with the reference. References are also what the model and the backend's
grammar must see through: `inlined` shows a schema with its local definitions in place,
`relocated` moves one under another schema without its references dangling.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import jsonschema
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

# Keywords whose values are data, not schemas: a "$ref" inside them is no reference.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "example"})
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Where the nesting of references stops being shown in a prompt (a recursive definition
# would unfold forever, a wide one exponentially).
MAX_INLINED_DEPTH = 4
MAX_INLINED_NODES = 2_000


def _retrieve_nothing(uri: str) -> Any:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class


# What every validation resolves references in: the schema itself (added by jsonschema as
# the root) and the metaschemas jsonschema ships. Nothing is ever retrieved.
OFFLINE: Registry[Any] = Registry(retrieve=_retrieve_nothing)  # type: ignore[call-arg]


def validator_class(schema: dict[str, Any]) -> type[Validator]:
    """The validator for the schema's `$schema` dialect, or the latest draft's: an unknown
    or malformed `$schema` is no reason to fail (nor to look it up anywhere)."""
    if isinstance(schema.get("$schema"), str):
        found: type[Validator] = jsonschema.validators.validator_for(
            schema, default=jsonschema.Draft202012Validator
        )
        return found
    return jsonschema.Draft202012Validator


def validator(schema: dict[str, Any]) -> Validator:
    """A validator for `schema` that resolves references offline only."""
    return validator_class(schema)(schema, registry=OFFLINE)


def references(schema: Any, base: str = "") -> Iterator[tuple[str, str]]:
    """(base URI, reference) for every reference in `schema`, the base following `$id`s.
    Iterative: a schema nested thousands of levels deep is walked without recursion."""
    pending: list[tuple[Any, str]] = [(schema, base)]
    while pending:
        node, where = pending.pop()
        if isinstance(node, list):
            pending.extend((item, where) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("$id"), str):
            where = urljoin(where, node["$id"])
        for key, value in node.items():
            if key in _REF_KEYWORDS and isinstance(value, str):
                yield where, value
            elif key not in _DATA_KEYWORDS:
                pending.append((value, where))


def reference_problem(schema: dict[str, Any]) -> str | None:
    """Why a reference of `schema` does not resolve inside it (None: each one does)."""
    dialect = schema.get("$schema")
    specification = specification_with(
        dialect if isinstance(dialect, str) else "", default=DRAFT202012
    )
    found = schema.get("$id")
    root = found if isinstance(found, str) else ""
    ref = ""
    try:
        registry = OFFLINE.with_resource(root, specification.create_resource(schema)).crawl()
        for base, ref in references(schema, root):
            registry.resolver(base_uri=base).lookup(ref)
    except Unresolvable:
        return f"it refers to {_shown(ref)}, which is not inside it"
    except Exception as exc:  # a malformed $id or pointer: referencing's own errors
        return f"its references cannot be followed ({type(exc).__name__}: {_shown(str(exc))})"
    return None


def _shown(text: str) -> str:
    return repr(text[:120] + ("…" if len(text) > 120 else ""))


def _pointer(root: Any, ref: str) -> Any:
    """The part of `root` a local JSON Pointer reference ("#/$defs/Item") names, or None."""
    if not ref.startswith("#"):
        return None
    node = root
    for token in filter(None, ref[1:].split("/")):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def inlined(schema: Any, root: Any) -> Any:
    """`schema` (a part of `root`) with its local references replaced by what they name,
    as a model reading a prompt needs it. A recursive or very large definition stays a
    reference beyond MAX_INLINED_DEPTH levels or MAX_INLINED_NODES values."""
    budget = [MAX_INLINED_NODES]

    def walk(node: Any, depth: int) -> Any:
        budget[0] -= 1
        if isinstance(node, list):
            return [walk(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and depth < MAX_INLINED_DEPTH and budget[0] > 0:
            target = _pointer(root, ref)
            if isinstance(target, dict):
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **rest}, depth + 1)
        return {
            key: value if key in _DATA_KEYWORDS else walk(value, depth)
            for key, value in node.items()
            if key not in ("$defs", "definitions")
        }

    return walk(schema, 0)


def relocated(schema: Any, at: str) -> Any:
    """`schema` as it reads placed at the JSON Pointer `at` of another schema: its local
    pointer references ("#/$defs/Item", "#") now start from there, so they still name its
    own parts. A backend's grammar then follows them (llama.cpp resolves pointers)."""
    if isinstance(schema, list):
        return [relocated(item, at) for item in schema]
    if not isinstance(schema, dict):
        return schema
    moved: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _REF_KEYWORDS and isinstance(value, str) and value.startswith("#/"):
            moved[key] = f"#{at}{value[1:]}"
        elif key in _REF_KEYWORDS and value == "#":
            moved[key] = f"#{at}"
        elif key in _DATA_KEYWORDS:
            moved[key] = value
        else:
            moved[key] = relocated(value, at)
    return moved
