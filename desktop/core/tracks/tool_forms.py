"""How the tool prompt lists the tools: in one of a few forms, the one a model does best
with chosen by its calibration. Small models differ in which description of a tool they
follow; the calls are asked for the same way in every form (the JSON the grammar writes).

- `json`: each tool's name and description, its parameters as JSON Schema, one example.
- `signatures`: each tool as a function signature (`name(city: string, days?: integer)`),
  its parameters described one per line, one example.
- `tools tag`: the tools as the chat templates of tool-trained models list them (a JSON
  object per function inside `<tools></tools>`), then one example of each.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, assert_never

from desktop.core.schemas import inlined
from desktop.core.tool_spec import ToolSpec

ToolForm = Literal["json", "signatures", "tools tag"]
TOOL_FORMS: tuple[ToolForm, ...] = ("json", "signatures", "tools tag")

# Schema keywords that only bound a value: validation enforces them and names them when a
# call breaks one, so the prompt can leave them out (fewer tokens on every step).
_BOUNDS_ONLY = frozenset(
    {"minItems", "maxItems", "minLength", "maxLength", "additionalProperties", "$schema",
     "uniqueItems", "minProperties", "maxProperties"}
)  # fmt: skip


def prompt_schema(schema: Any) -> Any:
    """The schema as the prompt shows it: what a value is, without its bounds."""
    if isinstance(schema, list):
        return [prompt_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    shown = {k: prompt_schema(v) for k, v in schema.items() if k not in _BOUNDS_ONLY}
    if isinstance(schema.get("properties"), dict):  # parameter names, whatever they are
        shown["properties"] = properties_for_prompt(schema["properties"])
    return shown


def properties_for_prompt(properties: dict[str, Any]) -> dict[str, Any]:
    return {name: prompt_schema(value) for name, value in properties.items()}


def _properties(tool: ToolSpec) -> dict[str, Any]:
    # A reference means nothing to the model: what it names is shown in its place.
    shown = inlined(tool.parameters, tool.parameters)
    properties = shown.get("properties") if isinstance(shown, dict) else None
    return properties_for_prompt(properties if isinstance(properties, dict) else {})


def _example(tool: ToolSpec) -> list[str]:
    # One example shows the shape; more cost tokens on every step. A tool without one gets
    # no made-up call: small models copied its values into real calls (an interest rate of
    # 1.5 for "5%", [1.5] as the list to sort), and the head shows the shape.
    lines = []
    for example in tool.examples[:1]:
        call = json.dumps({"name": tool.name, "arguments": example.arguments}, ensure_ascii=False)
        lines.append(f'  example: "{example.prompt}" -> {call}')
    return lines


def _as_json(tool: ToolSpec) -> str:
    props = json.dumps(_properties(tool), ensure_ascii=False, separators=(", ", ": "))
    lines = [
        f"- {tool.name}: {tool.description}",
        f"  parameters: {props}",
        f"  required: {', '.join(tool.required) or 'none'}",
    ]
    return "\n".join([*lines, *_example(tool)])


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type_of(schema.get('items'))}"
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    return str(kind) if isinstance(kind, str) else "any"


def _as_signature(tool: ToolSpec) -> str:
    properties = _properties(tool)
    required = set(tool.required)
    names = [f"{n}{'' if n in required else '?'}: {_type_of(s)}" for n, s in properties.items()]
    lines = [f"- {tool.name}({', '.join(names)}): {tool.description}"]
    for name, schema in properties.items():
        said = schema.get("description") if isinstance(schema, dict) else None
        if isinstance(said, str) and said.strip():
            lines.append(f"    {name}: {said.strip()}")
    return "\n".join([*lines, *_example(tool)])


def _as_function(tool: ToolSpec) -> str:
    parameters = {**prompt_schema(inlined(tool.parameters, tool.parameters))}
    parameters["properties"] = _properties(tool)
    function = {"name": tool.name, "description": tool.description, "parameters": parameters}
    return json.dumps({"type": "function", "function": function}, ensure_ascii=False)


def render_tools(tools: Sequence[ToolSpec], form: ToolForm) -> str:
    """The tools as the tool prompt lists them, in `form`."""
    match form:
        case "json":
            return "\n".join(_as_json(t) for t in tools)
        case "signatures":
            return "\n".join(_as_signature(t) for t in tools)
        case "tools tag":
            examples = [
                f"- {t.name}{line[len('  example') :]}" for t in tools for line in _example(t)
            ]
            listed = ["<tools>", *(_as_function(t) for t in tools), "</tools>"]
            return "\n".join([*listed, *(["Examples:", *examples] if examples else [])])
        case _:
            assert_never(form)
