"""What the calls of one step may be: their JSON Schema under the grammar, the offered
tool a name the model wrote means."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from desktop.core.schemas import relocated
from desktop.core.tool_spec import ToolSpec

# At most this many calls in one step: bounds what the grammar lets a looping model write.
MAX_CALLS_PER_STEP = 10
# How alike a name the model wrote must be to an offered tool's to mean it (difflib's
# ratio): a separator, a prefix or a plural apart ("get_current_time" for "current_time"),
# but not a name made up where no tool fitted ("calculate_sin" beside create_polygon).
_SAME_NAME = 0.8
_SEPARATORS = re.compile(r"[^0-9a-z]+")


def offered_tool(name: str, tools: Sequence[ToolSpec]) -> str | None:
    """The offered tool a name the model wrote means, or None: it named a tool that is
    not there. A small model that finds no tool for a request often makes one up ("joke"
    for "Tell me a short joke.") or writes an object whose "name" is data ("The
    Godfather"), and hardly ever does so where a tool fits."""
    names = [t.name for t in tools]
    if name in names:
        return name

    def plain(text: str) -> str:
        return _SEPARATORS.sub("_", text.casefold()).strip("_")

    by_plain = {plain(n): n for n in names}
    if plain(name) in by_plain:  # "math.factorial" for "math_factorial"
        return by_plain[plain(name)]
    close = difflib.get_close_matches(plain(name), list(by_plain), n=1, cutoff=_SAME_NAME)
    return by_plain[close[0]] if close else None


def call_schema(tools: Sequence[ToolSpec], first: str | None = None) -> dict[str, Any]:
    """The JSON Schema of the calls of one step, always a list: under it, a backend's
    grammar cannot produce an unknown name, a missing argument or broken JSON.

    A list, not one call, because a small model given the choice writes one call even when
    asked about three cities; made to write a list, it lists them, and single calls stay
    as they were (docs/experiments/tool-call-modes.md).

    `first` pins the list's first call to the tool the model's free answer opened with:
    unpinned, a model whose free answer was one fitting call could start its list by
    copying an example call to another tool. Each call's schema is written once, in
    `$defs`, and referenced (llama.cpp turns a $ref into one grammar rule)."""
    names = [t.name for t in tools]
    defs: dict[str, Any] = {
        f"call{i}": {
            "type": "object",
            "properties": {
                "name": {"const": t.name},
                # Its own references ("#/$defs/Item") name its parts where it now is.
                "arguments": relocated(t.parameters, f"/$defs/call{i}/properties/arguments"),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for i, t in enumerate(tools)
    }
    defs["call"] = {"anyOf": [{"$ref": f"#/$defs/call{i}"} for i in range(len(tools))]}
    any_call = {"$ref": "#/$defs/call"}
    if first not in names:
        return {"$defs": defs, "type": "array", "items": any_call, "minItems": 1,
                "maxItems": MAX_CALLS_PER_STEP}  # fmt: skip
    pinned = {"$ref": f"#/$defs/call{names.index(first)}"}
    # One exact length per alternative: llama.cpp reads `prefixItems` as a whole tuple.
    lists = [
        {"type": "array", "prefixItems": [pinned, *[any_call] * more],
         "minItems": more + 1, "maxItems": more + 1}
        for more in range(MAX_CALLS_PER_STEP)
    ]  # fmt: skip
    return {"$defs": defs, "anyOf": lists}
