"""Emulated ("untooled") tool calling: tools described in the prompt, calls parsed from text.

`EmulatedTools` wraps any provider and has the same interface, so the loop never knows
which track it is on. It renders the tools into the system prompt, rewrites earlier calls
and results as plain messages (the backend is asked without native tools), streams prose
as it arrives while holding back anything that may be a call, and parses the answer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing

from desktop.core.events import Notice, ProviderEvent, Reply, TextChunk
from desktop.core.messages import Message
from desktop.core.providers.base import ProviderWrapper, RequestOptions, checked_call, split_calls
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.holdback import VisibleText, relay
from desktop.core.tracks.parse import parse_answer
from desktop.core.tracks.prompt import emulated_history


async def calls_from_text(
    source: AsyncGenerator[ProviderEvent, None], known: Sequence[str]
) -> AsyncGenerator[ProviderEvent, None]:
    """Stream prose through, hold back what may be a call, and parse the answer for calls.

    `<think>` blocks become thinking. Calls the backend returned structured (native) are
    kept as they are; otherwise the text is parsed, so a call written as JSON in the text
    is found either way.
    """
    visible = VisibleText()
    gate = visible.gate
    replies: list[Reply] = []
    async with aclosing(relay(source, visible, replies)) as shown:
        async for event in shown:
            yield event
    for piece in visible.flush():
        yield piece
    if visible.leak is not None and not replies:  # it ended where Loomchat's format began
        if not gate.buffer.strip():
            yield Notice(f"The model answered with {visible.leak.name} instead of words.")
        replies.append(Reply(gate.buffer, [], [], visible.guard.text, "stop"))
    if not replies:
        return
    reply = replies[-1]
    raw = reply.raw or reply.text
    if reply.tool_calls or reply.broken_calls:
        if rest := gate.rest(gate.buffer):
            yield TextChunk(rest)
        yield Reply(gate.buffer, reply.tool_calls, reply.broken_calls, raw, reply.finish_reason)
        return
    parsed = parse_answer(gate.buffer, known)
    text = parsed.text if (parsed.calls or parsed.broken) else gate.buffer
    if rest := gate.rest(text):
        yield TextChunk(rest)
    calls, broken = split_calls(checked_call(name, args) for name, args in parsed.calls)
    yield Reply(text, calls, [*broken, *parsed.broken], raw, reply.finish_reason)


def known_names(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[str]:
    return [t.name for t in tools] + [c.name for m in messages for c in m.tool_calls]


class EmulatedTools(ProviderWrapper):
    """A provider that offers tools through the prompt of another provider."""

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        source = self.inner.stream(emulated_history(messages, tools), [], options)
        return calls_from_text(source, known_names(messages, tools))
