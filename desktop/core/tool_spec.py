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

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required", []))

    @property
    def properties(self) -> dict[str, Any]:
        props = self.parameters.get("properties", {})
        return dict(props) if isinstance(props, dict) else {}

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
    """Checking a schema against its metaschema takes milliseconds, and the same schemas
    come back (each MCP listing, each calibration, each test): check each text once."""
    schema = json.loads(canonical)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return None
