"""The emulated track's free answer as it streams: held at its first word for a second
look, or going on from a first token already sampled. The opening probe samples the
answer's first token as the answer itself would (the chat's temperature and seed), so
where the backend continues an answer whose start ends the messages, that token is shown
at once and the server writes the rest, instead of the whole answer being asked for and
its first token sampled again."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field, replace

from desktop.core.events import ProviderEvent, Reply, TextChunk
from desktop.core.messages import Message
from desktop.core.tracks.gate import Opened
from desktop.core.tracks.holdback import VisibleText


@dataclass
class FreeAnswer:
    """The free answer as it streamed: its text, its reply, and the prose held back.
    Held for a second look, it is paused at its first word (`rest`), not stopped: the
    server goes on writing it while the turn is asked alone in its other slot, and if the
    prose stands, the answer goes on from there instead of being asked again."""

    visible: VisibleText = field(default_factory=VisibleText)
    replies: list[Reply] = field(default_factory=list)
    held: list[ProviderEvent] = field(default_factory=list)
    opened: Opened = field(default_factory=lambda: Opened(False))
    rest: AsyncGenerator[ProviderEvent, None] | None = None

    async def close(self) -> None:
        if self.rest is not None:
            rest, self.rest = self.rest, None
            await rest.aclose()


def continuing(history: list[Message], opening: str) -> list[Message]:
    """The request that continues an answer begun with `opening` (none: `history`)."""
    return [*history, Message.assistant(opening)] if opening else history


async def continued(
    opening: str, source: AsyncGenerator[ProviderEvent, None]
) -> AsyncGenerator[ProviderEvent, None]:
    """`opening`, then `source` (the server's continuation of it) as one answer. A server
    that repeats the opening at the start of its text (llama.cpp does) has it taken out;
    its `Reply` is the whole answer either way. Without an opening, `source` as it is."""
    if not opening:
        async with aclosing(source) as events:
            async for event in events:
                yield event
        return
    yield TextChunk(opening)
    unseen = opening  # what of the opening the server may still be repeating
    echoed = False
    async with aclosing(source) as events:
        async for event in events:
            if isinstance(event, TextChunk) and unseen and event.text:
                text = event.text
                if unseen.startswith(text):  # the repeat, split over chunks
                    unseen, echoed = unseen[len(text) :], True
                    continue
                if text.startswith(unseen):
                    text, echoed = text[len(unseen) :], True
                unseen = ""
                if text:
                    yield TextChunk(text)
                continue
            if isinstance(event, Reply) and not (echoed and event.text.startswith(opening)):
                raw = event.raw or event.text
                event = replace(event, text=opening + event.text, raw=opening + raw)
            yield event
