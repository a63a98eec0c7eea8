"""Tools and data the track tests share."""

from typing import Any

from desktop.core.tool_spec import Example
from desktop.core.tools.toolbox import Tool
from desktop.core.tracks.parse import parse_answer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


async def noop(arguments: dict[str, Any]) -> str:
    return ""


SEARCH = Tool(
    "search",
    "Search the notes",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
    noop,
    examples=(Example("find my notes on rust", {"query": "rust"}),),
)
CLOCK = Tool("current_time", "The time now", {"type": "object", "properties": {}}, noop)


def calls(text: str, known: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    return parse_answer(text, known).calls
