"""What fits in the model's context. An answer's length is bounded, and a conversation that
has outgrown the context is sent without its oldest turns, so a long chat goes on instead of
failing on every message. A small model that starts repeating itself writes until the
context is full, and without these bounds that one answer would end the conversation."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace

from desktop.core.events import ProviderEvent
from desktop.core.messages import CHARS_PER_TOKEN, Message, estimated_tokens
from desktop.core.providers.base import Provider, ProviderWrapper, RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.prompt import render_tool_prompt

# An answer may take a quarter of the context, and no more than this: longer, a local
# model is almost always repeating itself.
MAX_ANSWER_TOKENS = 2048
ANSWER_SHARE = 4
MIN_ANSWER_TOKENS = 256


def answer_budget(context_size: int) -> int:
    """How many tokens one answer may take in a context of `context_size`."""
    return max(MIN_ANSWER_TOKENS, min(MAX_ANSWER_TOKENS, context_size // ANSWER_SHARE))


def fitted(messages: Sequence[Message], room: int) -> list[Message]:
    """`messages` without their oldest turns, whole ones, until the rest fits in `room`
    tokens (as estimated). The system prompt and the current turn always stay: if they
    alone do not fit, the server says so."""
    if estimated_tokens(messages) <= room:
        return list(messages)
    system = list(messages[:1]) if messages and messages[0].role == "system" else []
    body = list(messages[len(system) :])
    starts = [i for i, m in enumerate(body) if m.role == "user" and not m.from_the_loop]
    for start in starts[1:]:
        kept = [*system, *body[start:]]
        if estimated_tokens(kept) <= room or start == starts[-1]:
            return kept
    return list(messages)


class FittedHistory(ProviderWrapper):
    """Sends what fits: the answer bounded by the context's budget, the history trimmed to
    the room the tools and the answer leave."""

    def __init__(self, inner: Provider, context_size: int) -> None:
        super().__init__(inner)
        self.context_size = context_size

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: RequestOptions
    ) -> AsyncGenerator[ProviderEvent, None]:
        budget = answer_budget(self.context_size)
        tool_tokens = len(render_tool_prompt(tools)) // CHARS_PER_TOKEN if tools else 0
        room = self.context_size - budget - tool_tokens
        asked = options if options.max_tokens is not None else replace(options, max_tokens=budget)
        async for event in self.inner.stream(fitted(messages, room), tools, asked):
            yield event
