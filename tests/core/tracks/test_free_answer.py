"""The free answer going on from a first token already sampled (tracks/free_answer.py)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from desktop.core.events import ProviderEvent, Reply, TextChunk, UsageReport
from desktop.core.messages import Message
from desktop.core.tracks.free_answer import continued, continuing


async def server(chunks: Sequence[str]) -> AsyncGenerator[ProviderEvent, None]:
    for chunk in chunks:
        yield TextChunk(chunk)
    yield UsageReport(3, 4)
    text = "".join(chunks)
    yield Reply(text, raw=text)


async def answer(opening: str, chunks: Sequence[str]) -> tuple[str, Reply, list[ProviderEvent]]:
    events = [e async for e in continued(opening, server(chunks))]
    shown = "".join(e.text for e in events if isinstance(e, TextChunk))
    reply = next(e for e in events if isinstance(e, Reply))
    return shown, reply, events


async def test_the_opening_is_shown_once_whether_or_not_the_server_repeats_it() -> None:
    for chunks in (["The sky", " is blue."], ["The", " sky is blue."], ["Th", "e sky", " is blue."],
                   [" sky", " is blue."]):  # fmt: skip
        shown, reply, events = await answer("The", chunks)
        assert shown == reply.text == reply.raw == "The sky is blue.", chunks
        assert events[0] == TextChunk("The")  # before the server says anything
        assert any(isinstance(e, UsageReport) for e in events)


async def test_without_an_opening_the_answer_is_the_servers_as_it_is() -> None:
    shown, reply, _ = await answer("", ["Hello", "."])
    assert shown == reply.text == "Hello."
    history = [Message.user("Hi")]
    assert continuing(history, "") == history
    assert continuing(history, "Hel")[-1] == Message.assistant("Hel")
