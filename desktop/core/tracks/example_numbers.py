"""A call whose data are the tool prompt's examples, and the grammar that writes it again.

Asked for "a bar chart of those sales" a few turns after the person gave them, a small
model wrote the chart tool's example (`[10, 14, 9]`) instead of the person's numbers: the
example sits nearer the request than the earlier turn. The chart looks right and tells
the person nothing of theirs. Words cannot show such a copy (the example's labels, "Jan",
"Feb", were the person's words too), but the numbers do. The same model asked for the
total of those sales computed `12.5 + 7`, the calculator's own example, and their average
as `10 + 14 + 9 / 4`, the chart's: examples leak across tools and into strings. So a call
is made up when several of its numbers, at least half of them, are numbers the tool
prompt shows (in any offered tool's examples or descriptions) that nobody said. Such a
call is written once more under a grammar whose numbers can only be ones the person or
a tool said.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from desktop.core.messages import Message, ToolCall
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.char_class import as_class, characters, one_class
from desktop.core.words import numbers_in

# One number copied may be a default anyone would pick; a list of them is data.
LEAST_COPIED = 2
# The numbers a grammar may choose among: the latest said, so a long result cannot make
# the grammar as long as itself.
MOST_NUMBERS_OFFERED = 100
# Longer than this, a run of digits is no datum a call could take (an id, a pasted blob),
# and as JSON it could be more than a parser takes.
MOST_DIGITS = 30
_SCHEMA_DEPTH = 8
# What joins digits into one number: not a separator between two numbers said.
_JOINING = frozenset(string.digits + ".,eE_")


def _in_text(text: str) -> Iterator[Decimal]:
    return (n for n in numbers_in(text) if len(n.as_tuple().digits) <= MOST_DIGITS)


def data_numbers(value: Any) -> set[Decimal]:
    """The numbers in a call's arguments (or any JSON value): its JSON numbers and those
    written inside its strings (an expression's), however deeply nested (no recursion)."""
    found: set[Decimal] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found.update(_in_text(item))
        elif isinstance(item, int | float) and not isinstance(item, bool):
            number = Decimal(str(item))  # as written: 12.5, not the float's binary expansion
            if number.is_finite():
                found.add(number)
    return found


def _said(messages: Sequence[Message]) -> dict[Decimal, None]:
    """Every number the person and the tools said, once, in the order last said. Not the
    model's own answers: having drawn the example's chart, a small model described it with
    the example's numbers, then computed with them. Nor what the loop wrote back about a
    call it refused or a tool that failed, nor its notes on calls it could not read: those
    quote the model's own values."""
    said: dict[Decimal, None] = {}
    for message in messages:
        if not _a_source(message):
            continue
        for number in _in_text(message.text):
            said.pop(number, None)
            said[number] = None
    return said


def _a_source(message: Message) -> bool:
    """Whether a message's numbers are the person's or a tool's own."""
    if message.role == "tool":
        return not message.rejected and message.meta.error is None
    return message.role != "assistant" and not message.from_the_loop


def numbers_said(messages: Sequence[Message]) -> list[Decimal]:
    """The numbers a grammar may offer: those the person and the tools said, the latest
    kept."""
    return list(_said(messages))[-MOST_NUMBERS_OFFERED:]


def prompt_numbers(tools: Iterable[ToolSpec]) -> set[Decimal]:
    """The numbers the tool prompt shows as particulars: in the tools' examples and in
    their descriptions, defaults and examples within the schema (a description's "e.g.
    (12.5 + 7) * 3 / 4"); not a pattern's or an enum's, which say what a value may be."""
    found: set[Decimal] = set()
    for tool in tools:
        found |= data_numbers([tool.description, *_particulars(tool.parameters)])
        for example in tool.examples:
            found |= data_numbers([example.prompt, example.arguments])
    return found


def _particulars(schema: Any) -> Iterator[Any]:
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > _SCHEMA_DEPTH:
            continue
        if isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)
        elif isinstance(item, dict):
            for key, value in item.items():
                # A parameter named "description" is a schema, not a description.
                if key in ("default", "examples") or (
                    key == "description" and isinstance(value, str)
                ):
                    yield value
                else:
                    stack.append((value, depth + 1))


def copies_example_numbers(
    call: ToolCall, offered: Iterable[ToolSpec], messages: Sequence[Message]
) -> bool:
    """Whether several of the call's numbers, at least half of them, are the tool prompt's
    own (`prompt_numbers` of the offered tools) and were never said."""
    numbers = data_numbers(call.arguments)
    if len(numbers) < LEAST_COPIED:  # most calls: no need to read the prompt or the chat
        return False
    copied = (numbers & prompt_numbers(offered)) - _said(messages).keys()
    return len(copied) >= LEAST_COPIED and 2 * len(copied) >= len(numbers)


def narrowed(tool: ToolSpec, numbers: Sequence[Decimal]) -> ToolSpec:
    """The tool with each number in its parameters one of `numbers` (an integer one of
    those that are whole; in a string of digits and operators, one of them or a single
    digit), for the grammar to write a call of what was said; and the
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
    if kind == "string" and (pattern := _numbers_pattern(schema.get("pattern"), numbers)):
        narrowed_schema["pattern"] = pattern
    return narrowed_schema


def _numbers_pattern(pattern: Any, numbers: Sequence[Decimal]) -> str | None:
    """A string pattern of one class that takes digits (an expression's), narrowed to the
    numbers said, or a single digit (a count anyone may write: the four months of an
    average), with the class's other characters between them (None: not such a pattern).
    Groups are plain parentheses: llama.cpp's converter reads no `(?:`."""
    char = one_class(pattern)
    if char is None or not any(char.fullmatch(d) for d in string.digits):
        return None
    gap = as_class([c for c in characters(char) if c not in _JOINING])
    if gap is None:
        return None
    written = {_written(n) for n in numbers if n >= 0}
    fits = sorted((w for w in written if all(char.fullmatch(c) for c in w)), key=len)
    number = "(" + "|".join([*(re.escape(w) for w in reversed(fits)), "[0-9]"]) + ")"
    return f"^{gap}*{number}({gap}+{number})*{gap}*$"


def _written(number: Decimal) -> str:
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def _as_json(numbers: Sequence[Decimal], *, whole: bool) -> Iterator[int | float]:
    for number in numbers:
        if number == number.to_integral_value():
            yield int(number)
        elif not whole:
            yield float(number)
