"""Tools: a handler and the JSON Schema of its arguments, plus the toolbox that runs them.

A handler is an async function of the validated arguments. It returns the content (a
string, or anything JSON-able) or a `ToolOutput` with images. Whatever it raises, and a
timeout, becomes an error result that the model sees: a tool never ends the session.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from desktop.core.events import Retrieval
from desktop.core.messages import Image, ToolCall, without_surrogates
from desktop.core.schemas import validator
from desktop.core.tool_spec import ToolSpec
from desktop.core.tools.images import ImageError, fit_image
from desktop.core.tools.isolation import run_isolated, workers_ready

DEFAULT_TIMEOUT_S = 60.0
# A longer result is cut, with a note: it would crowd the model's context out.
MAX_RESULT_CHARS = 16_000
# Tools that declare a cooldown without a length get this one (docs/edge-cases.md, 15).
DEFAULT_COOLDOWN_S = 30.0
# A reason a call was refused goes back to the model too: short, whatever the call was.
MAX_REASON_CHARS = 2_000
MAX_PROBLEM_CHARS = 200
MAX_PROBLEMS = 8
# Arguments beyond these are refused before validation, which would take seconds on them
# (a million chart points). No real call of a local model comes near.
MAX_ARGUMENT_NODES = 10_000
MAX_ARGUMENT_DEPTH = 32


@dataclass(frozen=True)
class ToolOutput:
    content: Any
    images: list[Image] = field(default_factory=list)
    retrieval: Retrieval | None = None  # a document search's record, for the inspector


Handler = Callable[[dict[str, Any]], Awaitable[Any]]
# Asked before a tool that needs approval runs: True runs it, False declines it.
Approver = Callable[["ToolCall", "Tool"], Awaitable[bool]]


@dataclass(frozen=True)
class Tool(ToolSpec):
    """A tool the app can run: its spec (what the model is told) and its handler, with the
    policies the loop applies to its calls. Positionally: name, description, parameters,
    handler."""

    handler: Handler
    direct_output: bool = False
    cooldown_s: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    needs_approval: bool = False  # it changes something: the user says yes first
    off_by_default: bool = False  # offered only once the user turns it on
    online: bool = False  # it reaches the internet: said wherever tools are listed
    # "Always allow" holds for one conversation only: each call is new code to look at.
    approval_per_chat: bool = False


@dataclass(frozen=True)
class Outcome:
    """What running one call gave: the text the model sees, images, and the error if any."""

    content: str
    images: list[Image]
    duration_ms: float
    error: str | None = None
    retrieval: Retrieval | None = None


def render_content(content: Any) -> str:
    """Tool content as the text every provider sends: strings as they are, the rest as JSON."""
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


class Toolbox:
    """The tools offered in a conversation, by name. One per session, no global registry."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"two tools are named {tool.name!r}")
        self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def not_found(self, name: str) -> str:
        available = ", ".join(self._tools) or "none"
        return f'Function "{name}" not found. Available functions: {available}.'

    def repaired(self, call: ToolCall) -> ToolCall:
        """The call with its arguments' unambiguous type slips fixed (see repair_arguments)."""
        tool = self._tools.get(call.name)
        if tool is None:
            return call
        arguments = repair_arguments(tool.parameters, call.arguments)
        return call if arguments == call.arguments else replace(call, arguments=arguments)

    def validate(self, name: str, arguments: Any) -> str | None:
        """None if the call may run, else the reason it may not, written for the model."""
        tool = self._tools.get(name)
        if tool is None:
            return self.not_found(name)
        return validate_arguments(tool, arguments)

    async def run(self, call: ToolCall) -> Outcome:
        """Run a call; the timeout covers the handler and the conversion of its images,
        and stops both (their CPU-bound work runs in a worker process that it kills), but
        not the worker server's start, which the first call may have to wait for."""
        tool = self._tools[call.name]
        await workers_ready()
        started = time.perf_counter()
        try:
            output = await asyncio.wait_for(_produce(tool, call), tool.timeout_s)
        except TimeoutError:
            message = f"Tool {call.name} timed out after {tool.timeout_s:g} s."
            return Outcome(f"Error: {message}", [], _ms_since(started), message)
        except Exception as exc:  # a tool's failure is data for the model, not a crash
            message = limit_content(f"{type(exc).__name__}: {exc}", MAX_REASON_CHARS)
            return Outcome(f"Error: {message}", [], _ms_since(started), message)
        return replace(output, duration_ms=_ms_since(started))


async def _produce(tool: Tool, call: ToolCall) -> Outcome:
    raw = await tool.handler(call.arguments)
    output = raw if isinstance(raw, ToolOutput) else ToolOutput(raw)
    content = limit_content(without_surrogates(render_content(output.content)))
    images: list[Image] = []
    for image in output.images:
        try:  # an image from a tool or an MCP server may be huge or hostile: decoded apart
            images.append(await run_isolated(fit_image, image.data))
        except ImageError as exc:
            content += f"\n[An image was left out: {exc}.]"
    return Outcome(content, images, 0.0, retrieval=output.retrieval)


def limit_content(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[Truncated: {len(text) - limit} more characters not shown.]"


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


# Longer digit strings are left as text: no argument means them, and Python refuses to
# read an int of over 4,300 digits.
_MAX_NUMBER_CHARS = 100
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_FITS: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def repair_arguments(schema: Any, value: Any) -> Any:
    """`value` with the type slips a small model makes fixed where the schema leaves one
    reading: "5" or 5.0 for an integer, "2.5" for a number, "true"/"false" for a boolean,
    a number for a string. Nested objects and arrays too. Anything else is left as it is,
    for validation to report. Never raises: what it cannot read, it leaves alone."""
    if size_problem(value) is not None:
        return value  # validation refuses it, with the reason
    try:
        return _repaired(schema, value)
    except (ValueError, OverflowError, TypeError, RecursionError):
        return value


def _repaired(schema: Any, value: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        properties = schema["properties"]
        return {k: _repaired(properties.get(k), v) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_repaired(schema["items"], item) for item in value]
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or any(_FITS.get(k, lambda _: True)(value) for k in kinds):
        return value
    if isinstance(value, str) and len(value) <= _MAX_NUMBER_CHARS:
        text = value.strip()
        if "integer" in kinds and _INTEGER.fullmatch(text):
            return int(text)
        if "number" in kinds and _NUMBER.fullmatch(text):
            number = float(text)
            if not math.isfinite(number):
                return value  # "1" followed by 400 digits is no float: validation says so
            return int(text) if _INTEGER.fullmatch(text) else number
        if "boolean" in kinds and text.lower() in ("true", "false"):
            return text.lower() == "true"
    elif isinstance(value, float) and value.is_integer() and "integer" in kinds:
        return int(value)
    elif isinstance(value, int | float) and not isinstance(value, bool) and "string" in kinds:
        return str(value)
    return value


def validate_arguments(tool: ToolSpec, arguments: Any) -> str | None:
    """Strict check: an object, every required argument, nothing outside the schema, types."""
    params = ", ".join(tool.properties) or "none"
    if not isinstance(arguments, dict):
        return (
            f"Arguments for {tool.name} must be a JSON object, got {_json_type(arguments)}. "
            f"Its parameters are: {params}."
        )
    if (too_large := size_problem(arguments)) is not None:
        return f"Invalid arguments for {tool.name}: {too_large}. Its parameters are: {params}."
    problems: list[str] = []
    unknown = tool.outside(arguments)
    problems.extend(f"unknown argument '{key}'" for key in unknown)
    try:
        errors: Sequence[ValidationError] = sorted(
            validator(tool.parameters).iter_errors(arguments), key=lambda e: list(e.absolute_path)
        )
    except (Unresolvable, RecursionError) as exc:  # a schema checked when made cannot: still
        return f"The schema of {tool.name} cannot check this call ({type(exc).__name__})."
    for error in errors:
        if error.validator == "additionalProperties" and unknown:
            continue  # already said, by name
        problems.append(_describe(error))
    if not problems:
        return None
    if len(problems) > MAX_PROBLEMS:
        problems[MAX_PROBLEMS:] = [f"and {len(problems) - MAX_PROBLEMS} more problems"]
    required = ", ".join(tool.required) or "none"
    return limit_content(
        f"Invalid arguments for {tool.name}: {'; '.join(problems)}. "
        f"Its parameters are: {params} (required: {required}).",
        MAX_REASON_CHARS,
    )


def size_problem(value: Any) -> str | None:
    """Why arguments are too large or too deep to look at, or None. Iterative: a value
    nested a million levels deep is measured without recursion."""
    nodes = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        nodes += 1
        if nodes > MAX_ARGUMENT_NODES:
            return f"the arguments hold more than {MAX_ARGUMENT_NODES} values"
        if depth > MAX_ARGUMENT_DEPTH:
            return f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"
        if isinstance(item, dict):
            pending.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            pending.extend((v, depth + 1) for v in item)
    return None


def _describe(error: ValidationError) -> str:
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"missing required argument '{missing}'"
    where = ".".join(str(p) for p in error.absolute_path)[:MAX_PROBLEM_CHARS]
    message = error.message
    if len(message) > MAX_PROBLEM_CHARS:  # jsonschema quotes the whole value
        message = f"{message[: MAX_PROBLEM_CHARS // 2]} … {message[-MAX_PROBLEM_CHARS // 2 :]}"
    return f"'{where}': {message}" if where else message


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
