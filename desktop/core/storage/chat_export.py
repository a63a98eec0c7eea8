"""A conversation as a Markdown document: what a person reads, calls and results included
(images named, not embedded)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from desktop.core.messages import Message


def markdown_of(title: str, messages: Iterable[Message]) -> str:
    lines = [f"# {title}", ""]
    calls: dict[str, str] = {}
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            name = calls.get(message.tool_call_id or "", message.name or "tool")
            status = " (not run)" if message.rejected else ""
            fence = _fence_for(message.text)
            lines += [f"**Tool result: {name}{status}**", "", fence, message.text, fence, ""]
            continue
        speaker = "You" if message.role == "user" else "Assistant"
        if message.text:
            lines += [f"**{speaker}:**", "", message.text, ""]
        for image in message.images:
            lines += [f"*[image: {image.mime}, {len(image.data)} bytes]*", ""]
        for call in message.tool_calls:
            calls[call.id] = call.name
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            lines += [f"**Tool call:** `{call.name}({arguments})`", ""]
    return "\n".join(lines).rstrip() + "\n"


def _fence_for(text: str) -> str:
    """A code fence longer than any run of backticks in `text`, so a result that holds a
    fence of its own cannot end the block early."""
    longest, run = 0, 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)
