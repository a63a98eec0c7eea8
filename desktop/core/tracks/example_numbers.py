"""A call whose data are its tool's example, and the grammar that writes it again.

Asked for "a bar chart of those sales" a few turns after the person gave them, a small
model wrote the chart tool's example (`[10, 14, 9]`) instead of the person's numbers: the
example sits nearer the request than the earlier turn. The chart looks right and tells
the person nothing of theirs. Words cannot show such a copy (the example's labels, "Jan",
"Feb", were the person's words too), but the numbers do: several numbers taken from an
example, none of them said, are made up. Such a call is written once more under a grammar
whose numbers can only be ones the conversation holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Any

from desktop.core.messages import Message, ToolCall
from desktop.core.tool_spec import ToolSpec
from desktop.core.words import NUMBER

# One number copied may be a default anyone would pick; a list of them is data.
LEAST_COPIED = 2
# The numbers a grammar may choose among: the latest said, so a long result cannot make
# the grammar as long as itself.
MOST_NUMBERS_OFFERED = 100
# Longer than this, a run of digits is no datum a call could take (an id, a pasted blob),
# and as JSON it could be more than a parser takes.
MOST_DIGITS = 30
_SCHEMA_DEPTH = 8


def _decimal(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value).replace(",", ""))
    except InvalidOperation:
        return None


def data_numbers(arguments: Any) -> set[Decimal]:
    """The numbers a call's arguments hold as JSON numbers (not inside strings), however
    deeply nested (no recursion)."""
    found: set[Decimal] = set()
    stack = [arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            number = _decimal(item)
            if number is not None and number.is_finite():
                found.add(number)
    return found


def numbers_said(messages: Sequence[Message]) -> list[Decimal]:
    """The numbers the conversation's messages hold, each once, the latest kept."""
    said: dict[Decimal, None] = {}
    for message in messages:
        for match in NUMBER.findall(message.text):
            if len(match) > MOST_DIGITS:
                continue
            if (number := _decimal(match)) is not None:
                said.pop(number, None)
                said[number] = None
    return list(said)[-MOST_NUMBERS_OFFERED:]


def copies_example_numbers(call: ToolCall, tool: ToolSpec, messages: Sequence[Message]) -> bool:
    """Whether the call's numbers are several of one of its tool's examples, none said."""
    numbers = data_numbers(call.arguments)
    if len(numbers) < LEAST_COPIED:
        return False
    if not any(numbers <= data_numbers(example.arguments) for example in tool.examples):
        return False
    return not numbers & set(numbers_said(messages))


def narrowed(tool: ToolSpec, numbers: Sequence[Decimal]) -> ToolSpec:
    """The tool with each number in its parameters one of `numbers` (an integer one of
    those that are whole), for the grammar to write a call of what was said; and the
    arguments that hold numbers first, so that the others are written to fit the data (a
    grammar writes them in the schema's order: a chart's labels, written first, were the
    example's three for the person's four values)."""
    parameters = _narrowed(tool.parameters, numbers, 0)
    properties = parameters.get("properties")
    if isinstance(properties, dict):
        first = {k: v for k, v in properties.items() if _holds_numbers(v, 0)}
        parameters["properties"] = first | properties
    return replace(tool, parameters=parameters)


def _holds_numbers(schema: Any, depth: int) -> bool:
    if depth > _SCHEMA_DEPTH:
        return False
    if isinstance(schema, list):
        return any(_holds_numbers(item, depth + 1) for item in schema)
    if not isinstance(schema, dict):
        return False
    if schema.get("type") in ("number", "integer"):
        return True
    return any(_holds_numbers(value, depth + 1) for value in schema.values())


def _narrowed(schema: Any, numbers: Sequence[Decimal], depth: int) -> Any:
    if depth > _SCHEMA_DEPTH:
        return schema
    if isinstance(schema, list):
        return [_narrowed(item, numbers, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    narrowed_schema = {k: _narrowed(v, numbers, depth + 1) for k, v in schema.items()}
    kind = schema.get("type")
    if kind in ("number", "integer") and "enum" not in schema and "const" not in schema:
        allowed = list(_as_json(numbers, whole=kind == "integer"))
        if allowed:
            narrowed_schema["enum"] = allowed
    return narrowed_schema


def _as_json(numbers: Sequence[Decimal], *, whole: bool) -> Iterator[int | float]:
    for number in numbers:
        if number == number.to_integral_value():
            yield int(number)
        elif not whole:
            yield float(number)
