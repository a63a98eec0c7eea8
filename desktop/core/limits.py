"""The bound on a turn's tool calls, low in the house: the loop applies it, settings
store it and the CLI reads it from a flag."""

from __future__ import annotations

DEFAULT_MAX_TOOL_CALLS = 10


def parse_max_tool_calls(text: str) -> int:
    """A user-typed limit: a whole number of at least 1 (`2.5`, `0`, `-3`, `abc` are refused)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"max tool calls must be a whole number, not {text!r}") from None
    if value < 1:
        raise ValueError(f"max tool calls must be at least 1, not {value}")
    return value
