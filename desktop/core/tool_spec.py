"""What a model is told of a tool: its name, description, argument schema and examples.

This is a tool's wire form, apart from the handler that runs it (`tools.toolbox.Tool`, a
spec with a handler): providers and tracks only ever send specs.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from desktop.core.schemas import reference_problem, validator, validator_class

# A description goes into every step's prompt and the tool selection's index: a server's
# huge description would crowd out the conversation, and stuffed keywords would get its
# tool offered for unrelated requests. Longer ones are cut when the tool is made.
MAX_DESCRIPTION_CHARS = 1_500
# Deeper parameter schemas are refused: no real tool nests so far, and every walker of a
# schema (validation, the prompt, the grammar) then stays far from Python's recursion limit.
MAX_SCHEMA_DEPTH = 64


@dataclass(frozen=True)
class Example:
    """A request and the arguments that answer it, shown in the emulated tool prompt."""

    prompt: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    examples: tuple[Example, ...] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "_-." for c in self.name):
            raise ValueError(f"tool name {self.name!r}: use letters, digits, '_', '-' or '.'")
        if self.parameters.get("type", "object") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be an object schema")
        try:
            canonical = json.dumps(self.parameters, sort_keys=True)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"tool {self.name!r}: parameter schema is not JSON: {exc}") from None
        if problem := _schema_problem(canonical):
            raise ValueError(f"tool {self.name!r}: invalid parameter schema: {problem}")
        if len(self.description) > MAX_DESCRIPTION_CHARS:
            cut = self.description[:MAX_DESCRIPTION_CHARS].rsplit(" ", 1)[0]
            object.__setattr__(self, "description", cut + " …")

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required", []))

    @property
    def properties(self) -> dict[str, Any]:
        props = self.parameters.get("properties", {})
        return dict(props) if isinstance(props, dict) else {}

    def outside(self, arguments: dict[str, Any]) -> list[str]:
        """The argument names the schema does not list, where it allows no others."""
        if self.parameters.get("additionalProperties") is True:
            return []
        return [key for key in arguments if key not in self.properties]

    def wire_definition(self) -> dict[str, Any]:
        """The OpenAI-style function definition sent to native backends."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@functools.lru_cache(maxsize=4096)
def _schema_problem(canonical: str) -> str | None:
    """Why a schema cannot judge a call (None: it can): not a valid schema, nested too
    deep, a reference to anything outside itself (never fetched: see `schemas`), or
    references that loop without end. Checking takes milliseconds, and the same schemas
    come back (each MCP listing, each calibration, each test): each text is checked once."""
    schema = json.loads(canonical)
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        return f"it is nested more than {MAX_SCHEMA_DEPTH} levels deep"
    try:
        validator_class(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return str(exc.message)[:300]
    if problem := reference_problem(schema):
        return problem
    try:  # `{"$ref": "#"}` resolves, and then recurses for ever on any value
        validator(schema).is_valid({})
    except RecursionError:
        return "its references loop without end"
    except Exception as exc:  # a pattern that is no regular expression, say
        return f"it cannot check a call ({type(exc).__name__})"
    return None


def _depth(value: Any) -> int:
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        pending.extend((child, depth + 1) for child in children)
    return deepest
