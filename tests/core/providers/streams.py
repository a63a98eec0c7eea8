"""What the provider tests share: a tool to offer, and the events of one streamed answer."""

from __future__ import annotations

from typing import Any

from desktop.core.events import ProviderEvent, Reply, TextChunk
from desktop.core.messages import Message
from desktop.core.providers.base import Provider, RequestOptions
from desktop.core.tools.toolbox import Tool


async def noop(arguments: dict[str, Any]) -> str:
    return ""


WEATHER = Tool(
    "get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}, noop
)


async def collect(
    provider: Provider,
    messages: list[Message] | None = None,
    tools: list[Tool] | None = None,
    options: RequestOptions | None = None,
) -> list[ProviderEvent]:
    """Every event of one answer (to "hi", with no tools, by default)."""
    stream = provider.stream(
        messages or [Message.user("hi")], tools or [], options or RequestOptions()
    )
    return [event async for event in stream]


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def reply_of(events: list[ProviderEvent]) -> Reply:
    assert isinstance(events[-1], Reply)
    return events[-1]
